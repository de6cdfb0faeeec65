"""Image sizes from file headers (whenpro_core.imagehead)."""

from __future__ import annotations

import base64
import struct

from tests.conftest import tiny_png
from whenpro_core.imagehead import image_header_size, inline_image_size


def test_image_sizes_from_headers() -> None:
    assert inline_image_size(tiny_png(640, 480)) == (640, 480)
    gif = b"GIF89a" + struct.pack("<HH", 32, 16) + b"\x00" * 10
    assert image_header_size(gif) == (32, 16)
    jpeg = (b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"\x00" * 14
            + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 200, 300) + b"\x00" * 10)
    assert image_header_size(jpeg) == (300, 200)
    assert inline_image_size(base64.b64encode(b"not an image").decode()) is None
    assert inline_image_size("%%%not base64") is None


def test_large_inline_image_reads_only_its_head() -> None:
    png = base64.b64decode(tiny_png(1920, 1080)) + b"\x00" * 500_000
    data = base64.b64encode(png).decode()
    assert len(data) > 600_000
    assert inline_image_size(data) == (1920, 1080)
    assert inline_image_size("data:image/png;base64," + data) == (1920, 1080)
