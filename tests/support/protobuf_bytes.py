"""Hand-written protobuf wire bytes, for OTLP exports deeper than the protobuf library
will build (tests of the receiver's depth limits)."""

from __future__ import annotations


def varint(n: int) -> bytes:
    """``n`` (>= 0) as a protobuf base-128 varint."""
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field ``number`` holding ``payload``."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload
