"""Shared video plumbing: opening a file with OpenCV's FFmpeg backend, cancellation
checks for thread workers, and :func:`frames_at` (the frames at given times, by
sequential decode).

Timestamps always come from ``CAP_PROP_POS_MSEC`` read right after ``grab()`` (the
decoded frame's presentation time), never from seeking or ``index / fps``: both are
wrong on variable-frame-rate files (CRAFT, "Video facts").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whenpro_core.errors import MediaError
from whenpro_core.media._cv import cv2
from whenpro_core.media.images import JPEG_QUALITY, encode_jpeg, fit_max_side

#: Longest side of frame JPEGs, in pixels.
DEFAULT_MAX_SIDE = 640
#: Cancellation and progress are checked every this many frames.
CHECK_EVERY = 16

#: ``cancelled``: a callable returning True, or a :class:`threading.Event`. From a
#: Textual thread worker: ``cancelled=lambda: get_current_worker().is_cancelled``.
CancelCheck = Callable[[], bool] | threading.Event | None
#: ``progress(frames_done, frame_count_hint_or_None)``.
Progress = Callable[[int, int | None], None] | None


class KeyframesCancelled(MediaError):
    """Keyframe extraction was cancelled through its ``cancelled`` check."""


def cancel_fn(cancelled: CancelCheck) -> Callable[[], bool] | None:
    if cancelled is None:
        return None
    if isinstance(cancelled, threading.Event):
        return cancelled.is_set
    return cancelled


def open_video(path: Path) -> Any:
    cv = cv2()
    if not path.exists():
        raise MediaError("video file not found", path=path)
    if not path.is_file():
        raise MediaError("not a regular file", path=path, expected="a video file")
    cap = cv.VideoCapture(str(path), cv.CAP_FFMPEG)
    if not cap.isOpened():
        cap.release()
        raise MediaError(
            "cannot open video (not a video, truncated, or unsupported codec)",
            path=path,
            expected="a video FFmpeg can decode (mp4, mkv, webm, avi, mov)",
        )
    return cap


@dataclass(frozen=True)
class FrameGrab:
    """A frame taken at a requested time: its index, real timestamp and JPEG."""

    frame: int
    time_s: float
    jpeg: bytes


def frames_at(
    video_path: str | Path,
    times_s: list[float],
    *,
    max_side: int = DEFAULT_MAX_SIDE,
    quality: int = JPEG_QUALITY,
    cancelled: CancelCheck = None,
) -> list[FrameGrab]:
    """The first frame at or after each requested time (within half a nominal frame),
    by sequential decode (correct on variable-frame-rate files); only the frames taken
    are converted (``retrieve``). Results follow the sorted, de-duplicated request
    times; times after the last frame are dropped, so the list may be shorter.

    Raises:
        MediaError: missing, unopenable or frameless video; KeyframesCancelled.
    """
    cv = cv2()
    is_cancelled = cancel_fn(cancelled)
    wanted = sorted({max(0.0, float(t)) for t in times_s})
    path = Path(video_path)
    cap = open_video(path)
    if not wanted:
        cap.release()
        return []
    out: list[FrameGrab] = []
    frames = 0
    try:
        fps = cap.get(cv.CAP_PROP_FPS) or 0.0
        eps = 0.5 / fps if 0 < fps < 10_000 else 0.0
        idx, prev_t = -1, -1.0
        while wanted and cap.grab():
            idx += 1
            frames += 1
            t = cap.get(cv.CAP_PROP_POS_MSEC) / 1000.0
            t = t if t > prev_t else max(prev_t, 0.0)
            prev_t = t
            if idx % CHECK_EVERY == 0 and is_cancelled is not None and is_cancelled():
                raise KeyframesCancelled("frame extraction cancelled", path=path)
            if wanted[0] > t + eps:
                continue
            ok, frame = cap.retrieve()
            if not ok or frame is None:
                continue
            jpeg = encode_jpeg(fit_max_side(frame, max_side), quality)
            while wanted and wanted[0] <= t + eps:
                wanted.pop(0)
                out.append(FrameGrab(idx, round(t, 6), jpeg))
    finally:
        cap.release()
    if frames == 0:
        raise MediaError("no decodable video frames", path=path)
    return out
