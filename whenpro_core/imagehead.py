"""Image width and height from the first bytes of PNG, GIF, JPEG and WebP data, without
decoding the image (the TUI's media placeholders; phase 2 decodes in ``media.py``).

Never raises: malformed or unknown data gives ``None``.
"""

from __future__ import annotations

import base64
import struct


def inline_image_size(data: str) -> tuple[int, int] | None:
    """Width and height of a base64 PNG, GIF, JPEG or WebP from its first bytes only;
    ``None`` when unknown or malformed. Never raises."""
    try:
        head = base64.b64decode(data[:65536].split(",", 1)[-1][: 65536 // 4 * 4] + "==",
                                validate=False)
    except (ValueError, TypeError):
        return None
    return image_header_size(head)


def image_header_size(head: bytes) -> tuple[int, int] | None:
    """Image size from the leading bytes of a PNG, GIF, JPEG or WebP file, or ``None``."""
    try:
        if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
            w, h = struct.unpack(">II", head[16:24])
            return w, h
        if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
            w, h = struct.unpack("<HH", head[6:10])
            return w, h
        if head[:4] == b"RIFF" and head[8:12] == b"WEBP" and len(head) >= 30:
            chunk = head[12:16]
            if chunk == b"VP8X":
                w = int.from_bytes(head[24:27], "little") + 1
                h = int.from_bytes(head[27:30], "little") + 1
                return w, h
            if chunk == b"VP8 ":
                w, h = struct.unpack("<HH", head[26:30])
                return w & 0x3FFF, h & 0x3FFF
            if chunk == b"VP8L":
                b = head[21:25]
                w = 1 + (((b[1] & 0x3F) << 8) | b[0])
                h = 1 + (((b[3] & 0xF) << 10) | (b[2] << 2) | ((b[1] & 0xC0) >> 6))
                return w, h
        if head[:2] == b"\xff\xd8":
            i = 2
            while i + 9 < len(head):
                if head[i] != 0xFF:
                    i += 1
                    continue
                marker = head[i + 1]
                if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                    i += 2
                    continue
                length = struct.unpack(">H", head[i + 2:i + 4])[0]
                if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                    h, w = struct.unpack(">HH", head[i + 5:i + 9])
                    return w, h
                i += 2 + length
    except (struct.error, IndexError):
        return None
    return None
