"""Image decoding, capped JPEG re-encoding and thumbnails (judges get images inline as
re-encoded JPEG with a capped size; the TUI shows thumbnails)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest

from whenpro_core.errors import MediaError
from whenpro_core.media import (
    cached_thumbnail,
    decode_image,
    image_info,
    image_size,
    jpeg_for_ref,
    thumbnail,
    to_jpeg,
)
from whenpro_core.trace.model import MediaRef


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WHENPRO_CACHE_DIR", str(tmp_path / "cache"))


def _photo(w: int, h: int, seed: int = 0) -> np.ndarray:
    """A photo-like BGR image: smooth gradients plus noise (JPEG cannot shrink it to
    nothing)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([xx / w * 255, yy / h * 255, (xx + yy) / (w + h) * 255], axis=-1)
    img += rng.normal(0, 20, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def _encode(img: np.ndarray, ext: str = ".png") -> bytes:
    ok, buf = cv2.imencode(ext, img)
    assert ok
    return buf.tobytes()


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims ``width`` x ``height`` but holds no pixel data."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", len(ihdr))
        + chunk
        + struct.pack(">I", zlib.crc32(chunk))
        + b"\x00\x00\x00\x00IEND\xaeB`\x82"
    )


def test_decode_png_and_jpeg_to_bgr_arrays():
    img = _photo(120, 80)
    png = decode_image(_encode(img, ".png"))
    assert png.shape == (80, 120, 3) and png.dtype == np.uint8
    assert np.array_equal(png, img)  # lossless round trip
    jpg = decode_image(_encode(img, ".jpg"))
    assert jpg.shape == (80, 120, 3)
    assert np.abs(jpg.astype(int) - img.astype(int)).mean() < 20


def test_image_size_reads_the_header_without_decoding():
    assert image_size(_encode(_photo(64, 48), ".jpg")) == (64, 48)
    # a header claiming 9000x6000 pixels with no pixel data at all: size is known
    assert image_size(_png_header_only(9000, 6000)) == (9000, 6000)
    with pytest.raises(MediaError, match="too large"):  # a decompression bomb header
        image_size(_png_header_only(30000, 20000))
    info = image_info(_encode(_photo(10, 20), ".png"))
    assert info["width"] == 10 and info["height"] == 20 and info["format"] == "PNG"


def test_to_jpeg_caps_the_side_and_the_byte_size():
    big = _encode(_photo(1600, 1200), ".png")
    out = to_jpeg(big, max_side=512, max_bytes=None)
    assert out[:3] == b"\xff\xd8\xff"
    assert image_size(out) == (512, 384)
    capped = to_jpeg(big, max_side=1024, max_bytes=30_000)
    assert len(capped) <= 30_000
    w, h = image_size(capped)
    assert max(w, h) <= 1024 and abs(w / h - 4 / 3) < 0.02
    small = _encode(_photo(100, 50), ".png")
    assert image_size(to_jpeg(small, max_side=1024)) == (100, 50)  # never upscaled


def test_large_jpeg_uses_reduced_decode_and_still_fits_exactly():
    jpg = _encode(_photo(2400, 1600), ".jpg")
    # for a 256 px target the JPEG is read at 1/8 scale (300x200 >= 256), not full size
    assert decode_image(jpg, max_side=256).shape[:2] == (200, 300)
    assert decode_image(jpg, max_side=500).shape[:2] == (400, 600)  # 1/4
    assert decode_image(jpg).shape[:2] == (1600, 2400)
    assert image_size(thumbnail(jpg, max_side=256)) == (256, 171)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not an image at all",
        b"\xff\xd8\xff\xe0garbage" * 3,
        bytes(np.random.default_rng(1).integers(0, 256, 4000, dtype=np.uint8)),
    ],
)
def test_corrupt_image_bytes_raise_media_error(data):
    with pytest.raises(MediaError):
        to_jpeg(data)


def test_truncated_png_raises_media_error():
    png = _encode(_photo(200, 100), ".png")
    with pytest.raises(MediaError, match="not a decodable image"):
        decode_image(png[: len(png) // 3], source="half.png")


def test_huge_image_is_refused_before_decoding():
    with pytest.raises(MediaError, match="too large") as exc:
        decode_image(_png_header_only(9000, 6000), source="bomb.png")  # 54 M > 50 M pixels
    assert "bomb.png" in exc.value.one_line()
    with pytest.raises(MediaError, match="larger than 100 bytes"):
        decode_image(_encode(_photo(50, 50)), max_bytes=100)


def test_cached_thumbnail_hits_on_the_second_call(tmp_path):
    data = _encode(_photo(300, 200), ".png")
    first, hit1 = cached_thumbnail(data, max_side=64)
    second, hit2 = cached_thumbnail(data, max_side=64)
    assert (hit1, hit2) == (False, True)
    assert first == second and image_size(first) == (64, 43)
    assert any((tmp_path / "cache" / "media").iterdir())
    _, hit3 = cached_thumbnail(data, max_side=96)  # other parameters: other entry
    assert hit3 is False


def test_jpeg_for_ref_confines_and_reencodes(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.png").write_bytes(_encode(_photo(800, 600), ".png"))
    trace = tmp_path / "trace.json"
    out = jpeg_for_ref(MediaRef(path="img/a.png"), trace, None, max_side=400)
    assert image_size(out) == (400, 300)
    with pytest.raises(MediaError, match="not an image"):
        jpeg_for_ref(MediaRef(kind="video", path="clip.mp4"), trace)
    with pytest.raises(MediaError, match="refused"):
        jpeg_for_ref(MediaRef(path="../../etc/passwd"), trace)


@pytest.mark.real_traces
def test_real_trace_images_reencode_for_judges(real_traces: Path):
    root = real_traces / "who-when-pro-samples"
    trace = root / "data" / "traces" / "mmsearch_car.json"
    out = jpeg_for_ref(MediaRef(path="assets/examples/mmsearch_car/query_0.jpg"), trace, root, max_side=512)
    w, h = image_size(out)
    assert max(w, h) <= 512 and out[:3] == b"\xff\xd8\xff"
