"""What a viewer shows of a step's media (docs/architecture.md, 'Module map' ``media``, issue "The trace debugger
TUI" items 4–5): which images, frames and videos belong to a step, thumbnails and
full-size images with their sizes, and a video's keyframes.

UI-free. Every byte read goes through the confined readers of
:mod:`whenpro_core.media.paths` (untrusted paths, size caps) and the decoders of
:mod:`whenpro_core.media.images` (header-checked pixel counts, so a decompression bomb
is refused before any pixel buffer exists). Functions that decode are blocking: call
them from a worker thread. Every failure is a :class:`~whenpro_core.errors.MediaError`.

Rules:

* A step's media are its own ``Step.media``; the task's media (``Task.images``:
  question images, the task video) are shown on the **task step**, the first step of
  kind ``user`` (else step 0), where the task is presented. A task item whose source
  (path or inline data, or a file with the same bytes) the step already carries is not
  repeated.
* ``image`` refs are images; ``frame`` refs are frames the trace took from a video
  (with ``time_s``); ``video`` refs are whole video files, shown as keyframes
  (:func:`whenpro_core.media.keyframes.keyframes`: hard cuts plus uniform fill).
* A frame with neither ``path`` nor ``data`` but a ``time_s`` is taken from the trace's
  video (the first ``video`` ref of the task, else of any step) with
  :func:`whenpro_core.media.video.frames_at`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from whenpro_core.errors import MediaError, WhenproError
from whenpro_core.media.cache import file_digest
from whenpro_core.media.images import cached_thumbnail, image_info, image_size, to_jpeg
from whenpro_core.media.keyframes import keyframes
from whenpro_core.media.paths import read_media_bytes, resolve_for_trace, safe_text
from whenpro_core.media.video import frames_at
from whenpro_core.safety.textsafe import clean

if TYPE_CHECKING:
    from whenpro_core.media.keyframes import Keyframe, KeyframeResult
    from whenpro_core.media.video import CancelCheck, Progress
    from whenpro_core.trace.model import MediaRef, Trace

Origin = Literal["task", "step"]

#: Longest side of a full-size image when the caller gives no limit, in pixels.
FULL_MAX_SIDE = 2048


@dataclass(frozen=True)
class MediaItem:
    """One media reference as a viewer lists it.

    Attributes:
        ref: the reference (never modified).
        origin: ``"task"`` (from ``Task.images``) or ``"step"``.
        label: a short safe caption: the ref's label, else its file name, prefixed
            with ``task:`` for task media (``task: query #1``).
    """

    ref: MediaRef
    origin: Origin
    label: str


@dataclass(frozen=True)
class StepMedia:
    """The media of one step, split the way a viewer shows them: ``images``
    (thumbnails), ``frames`` (frames referenced by the trace, in time order when
    timed) and ``videos`` (video files, shown as keyframes)."""

    images: tuple[MediaItem, ...] = ()
    frames: tuple[MediaItem, ...] = ()
    videos: tuple[MediaItem, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the step has nothing to show."""
        return not (self.images or self.frames or self.videos)


def item_label(ref: MediaRef, origin: Origin = "step") -> str:
    """The caption of a media reference: its ``label``, else the file name of its
    ``path``, else ``inline``; ``task: `` in front for task media. Cleaned (no
    terminal escapes) and capped at 60 characters."""
    name = ref.label or (ref.path.replace("\\", "/").rsplit("/", 1)[-1] if ref.path else "inline")
    name = " ".join(clean(name).split())
    if len(name) > 60:
        name = name[:59] + "…"
    return f"task: {name}" if origin == "task" else name


def task_step_index(trace: Trace) -> int | None:
    """The step that presents the task: the first step of kind ``user``, else step 0;
    ``None`` for a trace without steps."""
    if not trace.steps:
        return None
    for step in trace.steps:
        if step.kind == "user":
            return step.index
    return trace.steps[0].index


def _source_key(ref: MediaRef) -> tuple[str, str] | None:
    if ref.path:
        return ("path", ref.path.replace("\\", "/").lstrip("./"))
    if ref.data:
        return ("data", hashlib.sha1(ref.data.encode("utf-8", "replace")).hexdigest())
    return None


def _file_key(ref: MediaRef, trace: Trace) -> str | None:
    """sha256 of the file a path ref names (memoised per file), ``None`` when it cannot
    be read."""
    try:
        where = resolve_for_trace(ref, trace)
        return hashlib.sha256(where).hexdigest() if isinstance(where, bytes) else file_digest(where)
    except (MediaError, OSError):
        return None


def _same_picture_as(ref: MediaRef, others: list[MediaRef], trace: Trace) -> bool:
    """True when the file ``ref`` names holds the same bytes as one of ``others`` (the same
    picture under another name: ``query_0.jpg`` and ``turn_img_0.jpg``)."""
    paths = [r for r in others if r.path]
    if not ref.path or not paths:
        return False
    digest = _file_key(ref, trace)
    return digest is not None and digest in {_file_key(r, trace) for r in paths}


def step_media(trace: Trace, index: int) -> StepMedia:
    """The media a viewer shows on step ``index`` of ``trace`` (see module rules).

    Raises:
        IndexError: ``index`` is not a step of ``trace``.
    """
    step = trace.steps[index]
    refs = list(step.media)
    task: list[MediaItem] = []
    if trace.task.images and task_step_index(trace) == step.index:  # the scan only with task images
        seen = {_source_key(r) for r in refs} - {None}
        task = [
            MediaItem(ref, "task", item_label(ref, "task"))
            for ref in trace.task.images
            if _source_key(ref) is None or _source_key(ref) not in seen
        ]  # the step shows that one
        refs = [r for r in refs if not _same_picture_as(r, [i.ref for i in task], trace)]
    items = task + [MediaItem(ref, "step", item_label(ref)) for ref in refs]
    images = tuple(i for i in items if i.ref.kind == "image")
    frames = [i for i in items if i.ref.kind == "frame"]
    if all(i.ref.time_s is not None for i in frames):
        frames.sort(key=lambda i: i.ref.time_s or 0.0)  # every time_s is known here
    videos = tuple(i for i in items if i.ref.kind == "video")
    return StepMedia(images=images, frames=tuple(frames), videos=videos)


def media_step_near(trace: Trace, index: int, shown: Sequence[int] | None = None) -> tuple[int, str] | None:
    """Where a viewer shows media when step ``index`` has none: ``(step index, why)``
    with ``why`` ``"task"`` (the step presenting the task, for task images or a task
    video) or ``"next"`` (the next step after ``index`` with media, wrapping round);
    ``None`` when no other step has any. ``shown`` limits the choice to the steps a
    list shows (a filter); ``None`` is every step. Looks at ``Step.media`` only, so it
    is cheap on long traces."""
    allowed = set(range(len(trace.steps))) if shown is None else set(shown)
    task_at = task_step_index(trace)
    if trace.task.images and task_at is not None and task_at != index and task_at in allowed:
        return task_at, "task"
    count = len(trace.steps)
    for offset in range(1, count):
        at = (index + offset) % count
        if at in allowed and trace.steps[at].media:
            return at, "next"
    return None


def trace_video(trace: Trace) -> MediaRef | None:
    """The video a trace's frames come from: the first ``video`` ref of the task, else
    of any step; ``None`` if the trace names none."""
    for ref in trace.task.images:
        if ref.kind == "video":
            return ref
    for step in trace.steps:
        for ref in step.media:
            if ref.kind == "video":
                return ref
    return None


# ----------------------------------------------------------------------------- images


@dataclass(frozen=True)
class ImagePreview:
    """An image ready to show.

    Attributes:
        jpeg: the image re-encoded as JPEG, long side at most the requested size.
        width, height: the original image's size in pixels.
        nbytes: the original encoded size in bytes.
        format: the original format as Pillow names it (``JPEG``, ``PNG``) or ``None``.
        cache_hit: the JPEG came from the on-disk media cache.
    """

    jpeg: bytes
    width: int
    height: int
    nbytes: int
    format: str | None = None
    cache_hit: bool = False

    def size_text(self) -> str:
        """``"900×532 · 61 KB"`` (pixels, then the original encoded size)."""
        return f"{self.width}×{self.height} · {byte_size(self.nbytes)}"


def byte_size(n: int) -> str:
    """A byte count for people: ``"812 B"``, ``"61 KB"``, ``"3.4 MB"`` (powers of 1024)."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def format_time(t: float | None) -> str:
    """A video timestamp: ``"1.60 s"`` under a minute, ``"1:05.2"`` above, ``"?"`` if unknown."""
    if t is None:
        return "?"
    if t < 60:
        return f"{t:.2f} s"
    minutes, seconds = divmod(t, 60)
    return f"{int(minutes)}:{seconds:04.1f}"


def _where(ref: MediaRef) -> str:
    return safe_text(ref.path or ref.label or ref.kind)


def _frame_from_video(ref: MediaRef, trace: Trace, cancelled: CancelCheck) -> bytes:
    video = trace_video(trace)
    if ref.time_s is None or video is None:
        raise MediaError(
            "frame has no image data, and no video and time to take it from",
            path=_where(ref),
            expected="a frame path, inline data, or time_s and a trace video",
        )
    where = resolve_for_trace(video, trace)
    if isinstance(where, bytes):
        raise MediaError("cannot take a frame from inline video data", path=_where(video), expected="a video file path")
    grabs = frames_at(where, [ref.time_s], cancelled=cancelled)
    if not grabs:
        raise MediaError(f"the video ends before {format_time(ref.time_s)}", path=_where(video))
    return grabs[0].jpeg


def load_image(
    ref: MediaRef, trace: Trace, *, max_side: int, thumbnail: bool = True, cancelled: CancelCheck = None
) -> ImagePreview:
    """Read, check and shrink the image of an ``image`` or ``frame`` reference.

    Args:
        ref: the reference; paths resolve against ``trace.source.root`` and the
            trace's folder and must stay inside them.
        trace: the trace the reference belongs to.
        max_side: longest side of the returned JPEG, in pixels.
        thumbnail: use the on-disk thumbnail cache (keyed by the image bytes);
            ``False`` re-encodes at ``max_side`` without caching (full-size views).
        cancelled: checked while a frame is taken from a video.

    Returns:
        An :class:`ImagePreview` (original size and bytes, JPEG at ``max_side``).

    Raises:
        MediaError: a video reference, a path outside the dataset, a missing or
        oversize file, invalid base64, corrupt data, or too many pixels
        (decompression bomb).
    """
    if ref.kind == "video":
        raise MediaError(
            "a video is not an image; its keyframes are shown instead", path=_where(ref), expected="an image or frame"
        )
    if ref.kind == "frame" and not ref.path and not ref.data:
        data = _frame_from_video(ref, trace, cancelled)
    else:
        data = read_media_bytes(ref, trace.source.path, trace.source.root)
    source = _where(ref)
    info = image_info(data, source=source)
    if thumbnail:
        jpeg, hit = cached_thumbnail(data, max_side=max_side, source=source)
    else:
        jpeg, hit = to_jpeg(data, max_side=max_side, max_bytes=None, source=source), False
    return ImagePreview(
        jpeg=jpeg,
        width=info["width"],
        height=info["height"],
        nbytes=info["bytes"],
        format=info["format"],
        cache_hit=hit,
    )


def jpeg_size(jpeg: bytes) -> tuple[int, int]:
    """``(width, height)`` of JPEG bytes from the header. Raises MediaError."""
    return image_size(jpeg)


# ----------------------------------------------------------------------------- video


def video_keyframes(
    ref: MediaRef,
    trace: Trace,
    *,
    max_frames: int = 8,
    cancelled: CancelCheck = None,
    progress: Progress = None,
) -> KeyframeResult:
    """The keyframes of a ``video`` reference (hard cuts plus uniform fill, see
    :func:`whenpro_core.media.keyframes.keyframes`), cached on disk by the video's
    content: a second call decodes nothing (``result.cache_hit``).

    Raises:
        MediaError: a path outside the dataset, a missing or undecodable video, inline
        video data (not supported), or cancellation
        (:class:`~whenpro_core.media.video.KeyframesCancelled`).
    """
    if ref.kind != "video":
        raise MediaError(f"a {ref.kind} is not a video", path=_where(ref), expected="a video reference")
    where = resolve_for_trace(ref, trace)
    if isinstance(where, bytes):
        raise MediaError("inline video data is not shown", path=_where(ref), expected="a video file path")
    return keyframes(where, max_frames, cancelled=cancelled, progress=progress)


def keyframe_caption(kf: Keyframe) -> str:
    """``"1.60 s ✂"`` for a cut (first frame of a new scene), ``"3.00 s"`` for a
    uniform-fill frame."""
    return format_time(kf.time_s) + (" ✂" if kf.cut else "")


def frame_caption(item: MediaItem) -> str:
    """The timestamp line of a frame referenced by a trace: ``"11.00 s"``, else its
    index (``"#3"``), else ``""``."""
    if item.ref.time_s is not None:
        return format_time(item.ref.time_s)
    if item.ref.index is not None:
        return f"#{item.ref.index}"
    return ""


def error_line(label: str, exc: BaseException) -> str:
    """One safe line for a media item that failed: ``"✗ obs #3: media file not found
    (…)"``. ``WhenproError`` messages are used as they are; anything else (a decoder
    bug) shows its type."""
    msg = exc.one_line() if isinstance(exc, WhenproError) else f"{type(exc).__name__}: {exc}"
    return "✗ " + safe_text(f"{label}: {msg}", 400)
