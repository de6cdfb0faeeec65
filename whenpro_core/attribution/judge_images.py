"""Images for multimodal judges: the image loader protocols pass to the renderer."""

from __future__ import annotations

from whenpro_core.attribution.render import ImageLoader, ImagePart
from whenpro_core.model import MediaRef, Trace

#: Longest side, pixels, of an image sent to a judge.
JUDGE_IMAGE_MAX_SIDE = 1024
#: JPEG quality of images sent to a judge.
JUDGE_IMAGE_QUALITY = 80


def load_judge_image(ref: MediaRef, trace: Trace) -> ImagePart | None:
    """A MediaRef as a re-encoded JPEG part (capped size), or ``None`` when it cannot be
    read (missing file, path outside the dataset, corrupt data, a whole video)."""
    from whenpro_core import media
    from whenpro_core.errors import MediaError

    if ref.kind == "video":
        return None
    try:
        data = media.judge_jpeg(ref, trace, max_side=JUDGE_IMAGE_MAX_SIDE, quality=JUDGE_IMAGE_QUALITY)
    except MediaError:
        return None
    label = ref.label or ref.path or "image"
    if ref.time_s is not None:
        label += f" at {ref.time_s:g}s"
    return ImagePart(data=data, mime="image/jpeg", label=label)


def image_loader_for(judge) -> ImageLoader | None:
    """The image loader for ``judge``: ``None`` for text-only models."""
    return load_judge_image if getattr(judge, "multimodal", False) else None
