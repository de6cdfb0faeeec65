"""Image decoding, resizing and JPEG re-encoding with size caps (docs/architecture.md, 'Module map' ``media``).

Judges get images inline as content parts: re-encoded JPEG with a capped side and byte
size (:func:`to_jpeg`, :func:`jpeg_for_ref`); the TUI shows thumbnails
(:func:`thumbnail`, cached on disk by :func:`cached_thumbnail`). Image bytes come from
untrusted traces, so the size is read from the header first (Pillow's lazy
``Image.open``, no pixel decode) and images over :data:`MAX_PIXELS` are refused before
any pixel buffer is allocated. Decoding uses OpenCV (``cv2.imdecode``); JPEGs that are
only needed small are decoded at 1/2, 1/4 or 1/8 scale (``IMREAD_REDUCED_COLOR_*``).
Every failure is a :class:`~whenpro_core.errors.MediaError`.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whenpro_core.errors import MediaError
from whenpro_core.media import cache as _cache
from whenpro_core.media._cv import cv2
from whenpro_core.media.paths import MAX_MEDIA_BYTES, read_media_bytes, safe_text

if TYPE_CHECKING:
    import numpy as np

    from whenpro_core.trace.model import MediaRef

#: Largest image accepted, in pixels (width × height): about 8k × 6k.
MAX_PIXELS = 50_000_000
#: Default longest side of images sent to judges, in pixels.
JUDGE_MAX_SIDE = 1024
#: Default byte cap of one re-encoded judge image.
JUDGE_MAX_BYTES = 400_000
#: Default JPEG quality (0–100).
JPEG_QUALITY = 85
#: Default longest side of thumbnails, in pixels.
THUMB_MAX_SIDE = 256


def _where(source: str | Path | None) -> str | None:
    return safe_text(str(source)) if source is not None else None


def image_size(data: bytes, *, source: str | Path | None = None) -> tuple[int, int]:
    """``(width, height)`` of an encoded image read from its header, without decoding
    the pixels (Pillow's lazy open; falls back to a full OpenCV decode for formats
    Pillow cannot identify).

    Raises:
        MediaError: the bytes are not an image either library can read, or the header
        claims more pixels than Pillow's decompression-bomb limit (~179 M).
    """
    try:
        from PIL import Image  # lazy: Pillow is loaded with the first image
    except ImportError:  # pragma: no cover - Pillow comes with textual-image
        Image = None  # type: ignore[assignment]
    if Image is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # DecompressionBombWarning: we check sizes ourselves
                with Image.open(io.BytesIO(data)) as im:
                    return int(im.size[0]), int(im.size[1])
        except Image.DecompressionBombError:
            raise MediaError(
                "image too large (decompression bomb)", path=_where(source), expected=f"at most {MAX_PIXELS} pixels"
            ) from None
        except Exception:
            pass
    img = _imdecode(data, source=source, flags=None)
    return int(img.shape[1]), int(img.shape[0])


def _imdecode(data: bytes, *, source: str | Path | None, flags: int | None) -> np.ndarray:
    import numpy as np  # lazy: loaded with the first image

    cv = cv2()
    if not data:
        raise MediaError("empty image data", path=_where(source), expected="JPEG, PNG, WebP, BMP or TIFF bytes")
    img: np.ndarray | None
    try:
        img = cv.imdecode(np.frombuffer(data, dtype=np.uint8), cv.IMREAD_COLOR if flags is None else flags)
    except cv.error:
        img = None
    if img is None or img.size == 0:
        raise MediaError(
            "not a decodable image (corrupt or unsupported format)",
            path=_where(source),
            expected="JPEG, PNG, WebP, BMP or TIFF bytes",
        )
    return img


def decode_image(
    data: bytes,
    *,
    max_side: int | None = None,
    max_pixels: int = MAX_PIXELS,
    max_bytes: int = MAX_MEDIA_BYTES,
    source: str | Path | None = None,
) -> np.ndarray:
    """Decode encoded image bytes to a BGR ``uint8`` array of shape ``(h, w, 3)``.

    Args:
        data: encoded bytes (JPEG, PNG, WebP, BMP, TIFF, ...).
        max_side: if given, the caller only needs the image this small: large JPEGs are
            decoded at a reduced scale that is still at least ``max_side`` on the long
            side (the result is *not* resized to ``max_side``; see :func:`fit_max_side`).
        max_pixels: refuse images with more pixels than this (checked from the header).
        max_bytes: refuse inputs larger than this.
        source: a name for error messages (file path or label).

    Raises:
        MediaError: empty, oversize, corrupt or unsupported image.
    """
    if len(data) > max_bytes:
        raise MediaError(
            f"image larger than {max_bytes} bytes", path=_where(source), expected=f"at most {max_bytes} bytes"
        )
    w, h = image_size(data, source=source)
    if w <= 0 or h <= 0:
        raise MediaError("image has no pixels", path=_where(source))
    if w * h > max_pixels:
        raise MediaError(f"image too large ({w}x{h})", path=_where(source), expected=f"at most {max_pixels} pixels")
    cv = cv2()
    flags = cv.IMREAD_COLOR
    if max_side and data[:3] == b"\xff\xd8\xff":
        for factor, flag in (
            (8, cv.IMREAD_REDUCED_COLOR_8),
            (4, cv.IMREAD_REDUCED_COLOR_4),
            (2, cv.IMREAD_REDUCED_COLOR_2),
        ):
            if max(w, h) // factor >= max_side:
                flags = flag
                break
    return _imdecode(data, source=source, flags=flags)


def fit_max_side(img: np.ndarray, max_side: int) -> np.ndarray:
    """Downscale ``img`` (area interpolation) so its longer side is at most
    ``max_side`` pixels, keeping the aspect ratio. Never upscales; returns ``img``
    itself when it already fits."""
    h, w = img.shape[:2]
    if max(h, w) <= max_side:
        return img
    scale = max_side / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    cv = cv2()
    resized: np.ndarray = cv.resize(img, size, interpolation=cv.INTER_AREA)
    return resized


def encode_jpeg(img: np.ndarray, quality: int = JPEG_QUALITY) -> bytes:
    """Encode a BGR (or grayscale) array as baseline JPEG bytes at ``quality`` (1–100).

    Raises MediaError if OpenCV cannot encode it (empty array, wrong dtype).
    """
    cv = cv2()
    try:
        ok, buf = cv.imencode(".jpg", img, [cv.IMWRITE_JPEG_QUALITY, int(max(1, min(100, quality)))])
    except cv.error:
        ok = False
    if not ok:
        raise MediaError("could not encode JPEG", expected="a non-empty 8-bit image")
    jpeg: bytes = buf.tobytes()
    return jpeg


def jpeg_capped(img: np.ndarray, *, max_side: int, quality: int = JPEG_QUALITY, max_bytes: int | None = None) -> bytes:
    """Resize ``img`` to ``max_side`` and encode JPEG; if the result exceeds
    ``max_bytes``, lower the quality (down to 40) and then the side (×0.75 per try)
    until it fits (or the image is 64 px)."""
    side = max_side
    img = fit_max_side(img, side)
    q = quality
    while True:
        out = encode_jpeg(img, q)
        if max_bytes is None or len(out) <= max_bytes:
            return out
        if q > 40:
            q = max(40, q - 15)
            continue
        if max(img.shape[:2]) <= 64:
            return out
        side = max(64, int(max(img.shape[:2]) * 0.75))
        img = fit_max_side(img, side)


def to_jpeg(
    data: bytes,
    *,
    max_side: int = JUDGE_MAX_SIDE,
    quality: int = JPEG_QUALITY,
    max_bytes: int | None = JUDGE_MAX_BYTES,
    source: str | Path | None = None,
) -> bytes:
    """Re-encode any image as a JPEG whose long side is at most ``max_side`` px and
    whose size is at most ``max_bytes`` (quality is lowered, then the side, to fit).

    This is the form judges receive images in (docs/architecture.md, 'Attribution protocols', all-at-once: "images
    inline"). Raises MediaError for bad or oversize images.
    """
    img = decode_image(data, max_side=max_side, source=source)
    return jpeg_capped(img, max_side=max_side, quality=quality, max_bytes=max_bytes)


def thumbnail(
    data: bytes, *, max_side: int = THUMB_MAX_SIDE, quality: int = 80, source: str | Path | None = None
) -> bytes:
    """A small JPEG thumbnail (long side ≤ ``max_side``). Raises MediaError."""
    img = decode_image(data, max_side=max_side, source=source)
    return encode_jpeg(fit_max_side(img, max_side), quality)


def cached_thumbnail(
    data: bytes, *, max_side: int = THUMB_MAX_SIDE, quality: int = 80, source: str | Path | None = None
) -> tuple[bytes, bool]:
    """:func:`thumbnail`, memoised in the on-disk media cache by the sha256 of ``data``
    plus the parameters. Returns ``(jpeg_bytes, cache_hit)``. Raises MediaError."""
    digest = hashlib.sha256(data).hexdigest()
    key = _cache.entry_key("thumb", digest, {"max_side": max_side, "quality": quality})
    hit = _cache.get_bytes(key)
    if hit is not None:
        return hit, True
    out = thumbnail(data, max_side=max_side, quality=quality, source=source)
    _cache.put_bytes(key, out)
    return out, False


def jpeg_for_ref(
    ref: MediaRef,
    trace_path: str | Path | None = None,
    root: str | Path | None = None,
    *,
    max_side: int = JUDGE_MAX_SIDE,
    quality: int = JPEG_QUALITY,
    max_bytes: int | None = JUDGE_MAX_BYTES,
) -> bytes:
    """The capped JPEG of an ``image`` or ``frame`` reference, resolved and confined as
    in :func:`whenpro_core.media.paths.resolve_media`.

    Raises:
        MediaError: a ``video`` reference (use :func:`whenpro_core.media.keyframes`), a
        refused or missing path, or bad image bytes.
    """
    if ref.kind == "video":
        raise MediaError(
            "a video is not an image; extract keyframes first",
            path=safe_text(ref.path or ref.label or "video"),
            expected="an image or frame",
        )
    data = read_media_bytes(ref, trace_path, root)
    return to_jpeg(
        data, max_side=max_side, quality=quality, max_bytes=max_bytes, source=ref.path or ref.label or ref.kind
    )


def image_info(data: bytes, *, source: str | Path | None = None) -> dict[str, Any]:
    """``{"width", "height", "format", "bytes"}`` of encoded image bytes from the
    header only (format from Pillow, ``None`` if unknown). Raises MediaError."""
    w, h = image_size(data, source=source)
    fmt = None
    try:
        from PIL import Image  # lazy: Pillow is loaded with the first image

        with Image.open(io.BytesIO(data)) as im:
            fmt = im.format
    except Exception:
        pass
    return {"width": w, "height": h, "format": fmt, "bytes": len(data)}
