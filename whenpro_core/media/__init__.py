"""Media for traces: confined media paths, images for judges and the TUI, video
keyframes, and their on-disk cache (docs/architecture.md, 'Module map' ``media``).

Modules:

* :mod:`.paths` — :func:`resolve_media`: inline base64 or a path confined to the
  dataset root / trace folder (untrusted trace content, docs/architecture.md, 'Untrusted content').
* :mod:`.images` — decode, resize, capped JPEG re-encoding, thumbnails.
* :mod:`.keyframes` — hard-cut detection + uniform fill in one sequential decode.
* :mod:`.video` — opening videos, cancellation checks, frames at given times.
* :mod:`.cache` — content-keyed on-disk cache (``$WHENPRO_CACHE_DIR``).
* :mod:`.export` — the ``whenpro keyframes`` command's work (files + table).
* :mod:`.preview` — what a viewer shows of a step: its media (task media on the task
  step), thumbnails and full-size images with sizes, keyframes of a video.

Importing this package is cheap: OpenCV, NumPy, Pillow and diskcache are imported
inside the functions that need them.
"""

from whenpro_core.media.images import (
    cached_thumbnail,
    decode_image,
    encode_jpeg,
    fit_max_side,
    image_info,
    image_size,
    jpeg_for_ref,
    thumbnail,
    to_jpeg,
)
from whenpro_core.media.keyframes import CutScan, Keyframe, KeyframeResult, detect_cuts, keyframes
from whenpro_core.media.paths import (
    decode_inline,
    media_bases,
    read_media_bytes,
    resolve_for_trace,
    resolve_media,
    resolve_path,
)
from whenpro_core.media.video import FrameGrab, KeyframesCancelled, frames_at

__all__ = [
    "CutScan",
    "FrameGrab",
    "Keyframe",
    "KeyframeResult",
    "KeyframesCancelled",
    "cached_thumbnail",
    "decode_image",
    "decode_inline",
    "detect_cuts",
    "encode_jpeg",
    "fit_max_side",
    "frames_at",
    "image_info",
    "image_size",
    "jpeg_for_ref",
    "keyframes",
    "media_bases",
    "read_media_bytes",
    "resolve_for_trace",
    "resolve_media",
    "resolve_path",
    "thumbnail",
    "to_jpeg",
]
