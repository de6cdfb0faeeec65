"""Video keyframes: hard-cut detection plus uniform fill, in one sequential decode.

Algorithm (CRAFT "Video facts"):

* Decode **sequentially** with ``grab()``; ``retrieve()`` (the BGR conversion, about a
  third of the per-frame cost) runs only on frames that are analysed or sampled. Each
  frame's timestamp is ``CAP_PROP_POS_MSEC`` right after its ``grab()``, which is the
  frame's presentation time and stays right on variable-frame-rate files; seeking by
  frame index or time is never used, and ``CAP_PROP_FRAME_COUNT`` is only a hint.
* Each analysed frame is downscaled early to :data:`ANALYSIS_WIDTH` px wide (nearest
  neighbour: a histogram only needs a pixel sample, and on bikes.mp4 it separates cuts
  from motion as well as area averaging at a quarter of the cost), converted to HSV,
  and summarised by a 3-D H×S×V histogram (:data:`HIST_BINS`). The score of a frame is
  the Bhattacharyya distance (0 same, 1 disjoint) between its histogram and the
  previous analysed frame's. A frame is a **cut** (first frame of a new scene) when
  its score is at least ``threshold`` and at least ``min_scene_len`` frames have passed
  since the previous cut (or the start). Histograms ignore motion inside a shot, which
  makes the cut signal robust; gradual transitions (fades, dissolves) are not cuts.
* Keyframes are the highest-scoring cuts (at most ``max_frames``), filled up to
  ``max_frames`` with frames from an evenly spaced sample of the whole video, picked
  farthest-first in time from those already chosen. The sample is kept in bounded
  memory without knowing the frame count: every ``step``-th frame is kept and the step
  doubles whenever more than ``2 * max_frames`` are held.

Results are cached on disk by file content and parameters (:mod:`.cache`). Work can
be cancelled from another thread (``cancelled``) and reports ``progress``.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whenpro_core.errors import ConfigError, MediaError
from whenpro_core.media import cache as _cache
from whenpro_core.media._cv import cv2
from whenpro_core.media.images import JPEG_QUALITY, encode_jpeg, fit_max_side
from whenpro_core.media.video import (
    CHECK_EVERY,
    DEFAULT_MAX_SIDE,
    CancelCheck,
    KeyframesCancelled,
    Progress,
    cancel_fn,
    open_video,
)

if TYPE_CHECKING:
    import numpy as np

#: Width in pixels frames are downscaled to before analysis.
ANALYSIS_WIDTH = 160
#: Histogram bins for hue (0–180), saturation and value (0–256) in OpenCV's HSV.
HIST_BINS = (16, 4, 8)
#: Bhattacharyya distance at or above which a frame starts a new scene. On bikes.mp4
#: (real_traces/sample-videos) true cuts score 0.46–0.84 and in-shot motion at most 0.19.
DEFAULT_THRESHOLD = 0.3
#: Fewest frames between two cuts (suppresses the second edge of a one-frame flash).
DEFAULT_MIN_SCENE_LEN = 10
#: Keyframes returned by default.
DEFAULT_MAX_FRAMES = 8
#: Version of the analysis; part of every cache key.
ALGORITHM_VERSION = 1


@dataclass(frozen=True)
class Keyframe:
    """One selected (or detected) frame.

    Attributes:
        frame: 0-based index in decode (presentation) order.
        time_s: presentation time in seconds, from ``CAP_PROP_POS_MSEC``.
        cut: True if the frame starts a new scene (hard cut), False for uniform fill.
        score: Bhattacharyya distance to the previous analysed frame (0–1; 0 for the
            first frame and for frames that were not analysed).
    """

    frame: int
    time_s: float
    cut: bool
    score: float

    @property
    def kind(self) -> str:
        """``"cut"`` or ``"uniform"``."""
        return "cut" if self.cut else "uniform"


@dataclass
class CutScan:
    """What one pass over a video found (no images).

    Attributes:
        cuts: every detected cut, in order.
        frames: frames decoded (the true count; the container's is only a hint).
        duration_s: last timestamp plus one nominal frame duration.
        width, height: frame size in pixels.
        fps_hint, frame_count_hint: what the container claims (``None`` if nothing).
        seconds: wall-clock time of the pass.
        warnings: truncation or timestamp notices.
    """

    cuts: list[Keyframe]
    frames: int
    duration_s: float
    width: int
    height: int
    fps_hint: float | None
    frame_count_hint: int | None
    seconds: float
    warnings: list[str] = field(default_factory=list)

    @property
    def fps(self) -> float:
        """Frames analysed per wall-clock second in this pass."""
        return self.frames / self.seconds if self.seconds > 0 else 0.0


@dataclass
class KeyframeResult:
    """Keyframes of one video, with their JPEG images (aligned with ``keyframes``).

    ``scan`` describes the pass that produced them (on a cache hit: the original pass,
    with ``cache_hit`` True and nothing decoded now). ``params`` are the parameters the
    result depends on (they are part of the cache key).
    """

    video: str
    keyframes: list[Keyframe]
    images: list[bytes]
    scan: CutScan
    params: dict[str, Any]
    sha256: str | None = None
    cache_hit: bool = False

    def to_index(self) -> dict[str, Any]:
        """A JSON-serialisable description (no image bytes)."""
        scan = asdict(self.scan)
        return {
            "video": self.video,
            "sha256": self.sha256,
            "params": self.params,
            "frames": scan["frames"],
            "duration_s": scan["duration_s"],
            "width": scan["width"],
            "height": scan["height"],
            "fps_hint": scan["fps_hint"],
            "frame_count_hint": scan["frame_count_hint"],
            "warnings": scan["warnings"],
            "cuts": scan["cuts"],
            "keyframes": [asdict(k) for k in self.keyframes],
        }


@dataclass
class _Held:
    kf: Keyframe
    img: np.ndarray


def _own(frame: np.ndarray, max_side: int) -> np.ndarray:
    """``frame`` fitted to ``max_side``, as an array the decoder will not overwrite."""
    small = fit_max_side(frame, max_side)
    return small.copy() if small is frame else small


class _Clock:
    """Presentation times in seconds, one per grabbed frame, always increasing.

    A missing or non-increasing ``CAP_PROP_POS_MSEC`` (NaN too) is replaced by the
    previous time plus one nominal frame duration (0.0 for the first frame) and counted
    in ``bad``. ``last`` is the latest time handed out (-1.0 before the first frame).
    """

    def __init__(self, frame_dt: float) -> None:
        self.frame_dt = frame_dt
        self.last = -1.0
        self.bad = 0

    def tick(self, pos_msec: float) -> float:
        """The presentation time (s) of the frame just grabbed, given its ``pos_msec``."""
        t = pos_msec / 1000.0
        if not t > self.last:  # missing or non-increasing timestamp (NaN fails too)
            self.bad += 1
            t = self.last + self.frame_dt if self.last >= 0 else 0.0
        self.last = t
        return t


class _CutDetector:
    """Hard-cut decision over the analysed frames (HSV histogram, Bhattacharyya distance).

    ``frame_size`` is ``(width, height)`` of the first analysed frame in pixels, ``None``
    until a frame has been analysed.
    """

    def __init__(self, cv: Any, threshold: float, min_scene_len: int) -> None:
        self.cv = cv
        self.threshold = threshold
        self.min_scene_len = min_scene_len
        self.frame_size: tuple[int, int] | None = None
        self.small_size: tuple[int, int] | None = None
        self.prev_hist: Any = None
        self.last_cut = 0

    def _histogram(self, frame: np.ndarray) -> Any:
        """The H×S×V histogram (:data:`HIST_BINS`) of ``frame`` downscaled to :data:`ANALYSIS_WIDTH`."""
        cv = self.cv
        if self.small_size is None:
            h, w = frame.shape[:2]
            self.frame_size = (w, h)
            sw = min(ANALYSIS_WIDTH, w)
            self.small_size = (sw, max(1, round(h * sw / w)))
        small = frame
        if self.small_size[0] != frame.shape[1]:
            small = cv.resize(frame, self.small_size, interpolation=cv.INTER_NEAREST)
        hsv = cv.cvtColor(small, cv.COLOR_BGR2HSV)
        return cv.calcHist([hsv], [0, 1, 2], None, list(HIST_BINS), [0, 180, 0, 256, 0, 256])

    def analyse(self, frame: np.ndarray, idx: int) -> tuple[float, bool]:
        """``(score, is_cut)`` of frame ``idx``: its distance to the previous analysed
        frame (0.0 for the first) and whether it starts a new scene."""
        hist = self._histogram(frame)
        prev, self.prev_hist = self.prev_hist, hist
        if prev is None:
            return 0.0, False
        score = float(self.cv.compareHist(prev, hist, self.cv.HISTCMP_BHATTACHARYYA))
        if score >= self.threshold and idx - self.last_cut >= self.min_scene_len:
            self.last_cut = idx
            return score, True
        return score, False


class _BestCuts:
    """The ``keep`` highest-scoring cuts with their images (ties: the earlier frame wins)."""

    def __init__(self, keep: int, max_side: int) -> None:
        self.keep = keep
        self.max_side = max_side
        self.heap: list[tuple[float, int, _Held]] = []

    def offer(self, kf: Keyframe, score: float, frame: np.ndarray) -> None:
        """Hold ``frame`` (fitted to ``max_side``) if cut ``kf`` with its unrounded ``score``
        is among the best cuts so far."""
        if self.keep <= 0:
            return
        item = (score, -kf.frame, _Held(kf, _own(frame, self.max_side)))
        if len(self.heap) < self.keep:
            heapq.heappush(self.heap, item)
        elif item[:2] > self.heap[0][:2]:
            heapq.heapreplace(self.heap, item)

    def held(self) -> list[_Held]:
        """The held cuts (in heap order, not sorted)."""
        return [h for _, _, h in self.heap]


class _Sample:
    """An evenly spaced sample of ``size``–``2*size`` frames in bounded memory.

    Every ``step``-th frame is kept; the step doubles (dropping the odd picks) whenever
    more than ``2 * size`` frames are held. The first step comes from the frame-count hint
    (a power of two, so doubling keeps earlier picks); a wrong hint only makes the sample
    sparser. ``size`` 0 samples nothing.
    """

    def __init__(self, size: int, count_hint: int | None, max_side: int) -> None:
        self.size = size
        self.max_side = max_side
        self.step = 1
        while count_hint and size and self.step * 2 <= count_hint // (4 * size):
            self.step *= 2
        self.pool: list[_Held] = []

    def wants(self, idx: int) -> bool:
        """Whether frame ``idx`` belongs to the sample at the current step."""
        return self.size > 0 and idx % self.step == 0

    def add(self, kf: Keyframe, frame: np.ndarray) -> None:
        """Hold ``frame`` (fitted to ``max_side``), thinning the sample when it is full."""
        self.pool.append(_Held(kf, _own(frame, self.max_side)))
        if len(self.pool) > 2 * self.size:
            self.step *= 2
            self.pool = [p for p in self.pool if p.kf.frame % self.step == 0]


def _check_in(
    path: Path, idx: int, count_hint: int | None, is_cancelled: Callable[[], bool] | None, progress: Progress
) -> None:
    """Every call: raise :class:`KeyframesCancelled` if cancelled, else report progress."""
    if is_cancelled is not None and is_cancelled():
        raise KeyframesCancelled("keyframe extraction cancelled", path=path)
    if progress is not None:
        progress(idx, count_hint)


def _container_hints(cap: Any, cv: Any) -> tuple[float, int | None, float]:
    """``(fps, frame_count_hint, frame_dt)`` the container claims: fps 0.0 and count
    ``None`` when unknown, ``frame_dt`` the nominal frame duration in s (0.0 if unknown)."""
    fps = cap.get(cv.CAP_PROP_FPS) or 0.0
    count = int(cap.get(cv.CAP_PROP_FRAME_COUNT) or 0)
    frame_dt = 1.0 / fps if 0 < fps < 10_000 else 0.0
    return fps, (count if count > 0 else None), frame_dt


def _scan_warnings(frames: int, count_hint: int | None, bad_frames: int, bad_times: int) -> list[str]:
    """The notices of one pass: truncation, unconvertible frames, estimated timestamps."""
    warnings: list[str] = []
    if count_hint and frames < 0.9 * count_hint:
        warnings.append(
            f"decoded {frames} of the {count_hint} frames the container announces (truncated or damaged file?)"
        )
    if bad_frames:
        warnings.append(f"{bad_frames} frames could not be converted and were skipped")
    if bad_times:
        warnings.append(f"{bad_times} frames had no increasing timestamp; estimated from the frame rate")
    return warnings


def _scan(
    path: Path,
    *,
    threshold: float,
    min_scene_len: int,
    stride: int,
    pool_size: int,
    keep_cuts: int,
    max_side: int,
    cancelled: CancelCheck,
    progress: Progress,
    check_every: int = CHECK_EVERY,
) -> tuple[CutScan, list[_Held], list[_Held]]:
    """One sequential pass: detect cuts, hold the best ``keep_cuts`` cut images and an
    evenly spaced sample of about ``pool_size``–``2*pool_size`` frames."""
    cv = cv2()
    is_cancelled = cancel_fn(cancelled)
    start = time.perf_counter()
    cap = open_video(path)
    try:
        fps, count_hint, frame_dt = _container_hints(cap, cv)
        clock = _Clock(frame_dt)
        detector = _CutDetector(cv, threshold, min_scene_len)
        best_cuts = _BestCuts(keep_cuts, max_side)
        sample = _Sample(pool_size, count_hint, max_side)
        cuts: list[Keyframe] = []
        grab, retrieve, get, pos_msec = cap.grab, cap.retrieve, cap.get, cv.CAP_PROP_POS_MSEC
        buf = None
        idx = -1
        bad_frames = 0
        while grab():
            idx += 1
            t = clock.tick(get(pos_msec))
            if idx % check_every == 0 and idx:
                _check_in(path, idx, count_hint, is_cancelled, progress)
            analyse = idx % stride == 0
            pooled = sample.wants(idx)
            if not (analyse or pooled):
                continue
            ok, frame = retrieve(buf)  # into the previous frame's array: no new allocation
            if not ok or frame is None:
                bad_frames += 1
                continue
            buf = frame
            score, is_cut = detector.analyse(frame, idx) if analyse else (0.0, False)
            if is_cut:
                kf = Keyframe(idx, round(t, 6), True, round(score, 6))
                cuts.append(kf)
                best_cuts.offer(kf, score, frame)
            if pooled:
                sample.add(Keyframe(idx, round(t, 6), False, round(score, 6)), frame)
        frames = idx + 1
        if progress is not None:
            progress(frames, count_hint)
    finally:
        cap.release()
    if frames == 0 or detector.frame_size is None:
        raise MediaError(
            "no decodable video frames", path=path, expected="a video FFmpeg can decode (mp4, mkv, webm, avi, mov)"
        )
    width, height = detector.frame_size
    scan = CutScan(
        cuts=cuts,
        frames=frames,
        duration_s=round(max(clock.last, 0.0) + frame_dt, 6),
        width=width,
        height=height,
        fps_hint=fps or None,
        frame_count_hint=count_hint,
        seconds=time.perf_counter() - start,
        warnings=_scan_warnings(frames, count_hint, bad_frames, clock.bad),
    )
    return scan, best_cuts.held(), sample.pool


def _check_params(max_frames: int, threshold: float, min_scene_len: int, stride: int, max_side: int) -> None:
    if not 1 <= max_frames <= 1000:
        raise ConfigError(f"max frames {max_frames} out of range", expected="1 to 1000")
    if not 0.0 < threshold <= 1.0:
        raise ConfigError(f"cut threshold {threshold} out of range", expected="a Bhattacharyya distance in (0, 1]")
    if min_scene_len < 1:
        raise ConfigError(f"min scene length {min_scene_len} out of range", expected="at least 1 frame")
    if not 1 <= stride <= 100:
        raise ConfigError(f"stride {stride} out of range", expected="1 to 100")
    if not 16 <= max_side <= 8192:
        raise ConfigError(f"max side {max_side} out of range", expected="16 to 8192 pixels")


def detect_cuts(
    video_path: str | Path,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    min_scene_len: int = DEFAULT_MIN_SCENE_LEN,
    stride: int = 1,
    cancelled: CancelCheck = None,
    progress: Progress = None,
) -> CutScan:
    """Detect hard cuts in a video (no images kept, no cache).

    Args:
        video_path: a local video file (trusted: resolve trace paths first with
            :func:`whenpro_core.media.paths.resolve_media`).
        threshold: Bhattacharyya distance that makes a cut (see module doc).
        min_scene_len: fewest frames between cuts.
        stride: analyse every ``stride``-th frame (1 = every frame, exact cut frames;
            larger is faster and reports a cut up to ``stride - 1`` frames late).
        cancelled: a callable returning True, or a :class:`threading.Event`, checked
            every :data:`CHECK_EVERY` frames.
        progress: ``progress(frames_done, frame_count_hint_or_None)``.

    Raises:
        MediaError: missing, unopenable or frameless video; KeyframesCancelled.
        ConfigError: parameters out of range.
    """
    _check_params(1, threshold, min_scene_len, stride, 640)
    scan, _, _ = _scan(
        Path(video_path),
        threshold=threshold,
        min_scene_len=min_scene_len,
        stride=stride,
        pool_size=0,
        keep_cuts=0,
        max_side=640,
        cancelled=cancelled,
        progress=progress,
    )
    return scan


def _select(cut_items: list[_Held], pool: list[_Held], max_frames: int) -> list[_Held]:
    chosen: dict[int, _Held] = {}
    for h in sorted(cut_items, key=lambda h: (-h.kf.score, h.kf.frame))[:max_frames]:
        chosen[h.kf.frame] = h
    candidates = [p for p in pool if p.kf.frame not in chosen]
    if not chosen and candidates:
        first = candidates.pop(0)
        chosen[first.kf.frame] = first
    while len(chosen) < max_frames and candidates:

        def gap(c: _Held) -> float:
            return min(abs(c.kf.time_s - s.kf.time_s) for s in chosen.values())

        best = max(candidates, key=lambda c: (gap(c), -c.kf.frame))
        if gap(best) <= 0.0:
            break
        chosen[best.kf.frame] = best
        candidates.remove(best)
    return [chosen[k] for k in sorted(chosen)]


def keyframes(
    video_path: str | Path,
    max_frames: int = DEFAULT_MAX_FRAMES,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    min_scene_len: int = DEFAULT_MIN_SCENE_LEN,
    stride: int = 1,
    max_side: int = DEFAULT_MAX_SIDE,
    quality: int = JPEG_QUALITY,
    use_cache: bool = True,
    cancelled: CancelCheck = None,
    progress: Progress = None,
) -> KeyframeResult:
    """Pick up to ``max_frames`` keyframes of a video: its strongest hard cuts, filled
    with evenly spread frames, each as a JPEG (long side ≤ ``max_side``).

    Args:
        video_path: a local video file (resolve trace paths first, see
            :func:`whenpro_core.media.paths.resolve_media`).
        max_frames: how many keyframes at most (fewer only if the video is shorter).
        threshold, min_scene_len, stride: cut detection, see :func:`detect_cuts`.
        max_side, quality: size and JPEG quality of the keyframe images.
        use_cache: read and write the on-disk cache (keyed by the file's sha256 and
            every parameter above); a hit decodes nothing.
        cancelled: callable or :class:`threading.Event`, checked every
            :data:`~whenpro_core.media.video.CHECK_EVERY` frames (for Textual thread workers).
        progress: ``progress(frames_done, frame_count_hint_or_None)``.

    Returns:
        A :class:`KeyframeResult`: keyframes in time order, their JPEGs, the scan
        (all cuts, frame count, duration, warnings) and ``cache_hit``.

    Raises:
        MediaError: missing, unopenable or frameless video; KeyframesCancelled.
        ConfigError: parameters out of range.
    """
    _check_params(max_frames, threshold, min_scene_len, stride, max_side)
    path = Path(video_path)
    params = {
        "max_frames": max_frames,
        "threshold": threshold,
        "min_scene_len": min_scene_len,
        "stride": stride,
        "max_side": max_side,
        "quality": quality,
        "analysis": [ALGORITHM_VERSION, ANALYSIS_WIDTH, list(HIST_BINS)],
    }
    digest = key = None
    if use_cache and path.is_file():
        try:
            digest = _cache.file_digest(path)
        except OSError as exc:
            raise MediaError(f"cannot read video: {exc.strerror or exc}", path=path) from None
        key = _cache.entry_key("keyframes", digest, params)
        cached = _from_cache(key, path, params, digest)
        if cached is not None:
            return cached
    scan, held_cuts, pool = _scan(
        path,
        threshold=threshold,
        min_scene_len=min_scene_len,
        stride=stride,
        pool_size=max_frames,
        keep_cuts=max_frames,
        max_side=max_side,
        cancelled=cancelled,
        progress=progress,
    )
    chosen = _select(held_cuts, pool, max_frames)
    result = KeyframeResult(
        video=str(path),
        keyframes=[h.kf for h in chosen],
        images=[encode_jpeg(h.img, quality) for h in chosen],
        scan=scan,
        params=params,
        sha256=digest,
    )
    if key is not None:
        _cache.put_bytes(key, _cache.pack(result.to_index() | {"seconds": scan.seconds}, result.images))
    return result


def _from_cache(key: str, path: Path, params: dict[str, Any], digest: str) -> KeyframeResult | None:
    raw = _cache.get_bytes(key)
    if raw is None:
        return None
    unpacked = _cache.unpack(raw)
    try:
        if unpacked is None:
            raise ValueError("bad pack")
        head, images = unpacked
        kfs = [Keyframe(**k) for k in head["keyframes"]]
        if len(kfs) != len(images):
            raise ValueError("image count")
        scan = CutScan(
            cuts=[Keyframe(**c) for c in head["cuts"]],
            frames=head["frames"],
            duration_s=head["duration_s"],
            width=head["width"],
            height=head["height"],
            fps_hint=head["fps_hint"],
            frame_count_hint=head["frame_count_hint"],
            seconds=head.get("seconds", 0.0),
            warnings=list(head["warnings"]),
        )
    except (KeyError, TypeError, ValueError):
        _cache.delete(key)
        return None
    return KeyframeResult(
        video=str(path), keyframes=kfs, images=images, scan=scan, params=params, sha256=digest, cache_hit=True
    )
