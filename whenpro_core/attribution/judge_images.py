"""Images for multimodal judges: the image loader protocols pass to the renderer
(docs/architecture.md, 'Attribution protocols': images inline as re-encoded, capped JPEG parts; a video as up to 8
keyframes)."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from whenpro_core import media
from whenpro_core.errors import MediaError
from whenpro_core.trace.model import MediaRef, Trace
from whenpro_core.views.transcript import MAX_FRAMES_PER_STEP, ImageLoader, ImagePart

if TYPE_CHECKING:
    from whenpro_core.attribution.judge import Judge

#: Longest side, pixels, of an image sent to a judge.
JUDGE_IMAGE_MAX_SIDE = 1024
#: JPEG quality of images sent to a judge.
JUDGE_IMAGE_QUALITY = 80


def _label(ref: MediaRef, time_s: float | None = None) -> str:
    label = ref.label or ref.path or ref.kind
    t = ref.time_s if time_s is None else time_s
    return f"{label} at {t:.1f}s" if t is not None else label


def load_judge_images(ref: MediaRef, trace: Trace) -> list[ImagePart]:
    """A MediaRef as JPEG parts: one for an image or frame, up to 8 keyframes for a
    video file. Empty when it cannot be read (missing file, a path outside the dataset,
    corrupt data)."""
    try:
        if ref.kind != "video":
            data = media.jpeg_for_ref(
                ref, trace.source.path, trace.source.root, max_side=JUDGE_IMAGE_MAX_SIDE, quality=JUDGE_IMAGE_QUALITY
            )
            return [ImagePart(base64.b64encode(data).decode(), "image/jpeg", _label(ref))]
        path = media.resolve_for_trace(ref, trace)
        if isinstance(path, bytes):
            return []
        result = media.keyframes(path, MAX_FRAMES_PER_STEP, max_side=JUDGE_IMAGE_MAX_SIDE, quality=JUDGE_IMAGE_QUALITY)
    except MediaError:
        return []
    return [
        ImagePart(base64.b64encode(img).decode(), "image/jpeg", _label(ref, kf.time_s))
        for kf, img in zip(result.keyframes, result.images, strict=False)
    ]


def image_loader_for(judge: Judge | None) -> ImageLoader | None:
    """The image loader for ``judge``: ``None`` for text-only models."""
    return load_judge_images if getattr(judge, "multimodal", False) else None
