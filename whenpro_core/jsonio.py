"""JSON bytes in and out: orjson's fast path with a lossless stdlib fallback.

orjson refuses two things that are valid JSON and common in agent traces: a lone
surrogate in a string (``"\\ud800"``, frequent in LLM output cut mid-character) and an
integer beyond 64 bits. :func:`dumps` and :func:`loads` try orjson first and fall back
to the stdlib :mod:`json` module, which reads both and writes them back as ``\\uXXXX``
escapes and exact integers, so a trace whenpro read is always written back equal.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import orjson


def dumps(value: Any, *, indent: bool = False, sort_keys: bool = False,
          default: Callable[[Any], Any] | None = None) -> bytes:
    """Serialise ``value`` to UTF-8 JSON bytes (no trailing newline).

    ``indent`` gives two-space indentation, ``sort_keys`` sorted object keys, ``default``
    converts values JSON has no type for. Non-string dict keys are written as strings.
    Lone surrogates and integers beyond 64 bits are written losslessly (stdlib fallback,
    all non-ASCII text then escaped). Raises TypeError for a value neither encoder takes.
    """
    option = orjson.OPT_NON_STR_KEYS
    if indent:
        option |= orjson.OPT_INDENT_2
    if sort_keys:
        option |= orjson.OPT_SORT_KEYS
    try:
        return orjson.dumps(value, option=option, default=default)
    except TypeError:  # orjson.JSONEncodeError: lone surrogate, int > 64 bits, ...
        text = json.dumps(value, indent=2 if indent else None, sort_keys=sort_keys,
                          separators=(",", ": ") if indent else (",", ":"),
                          default=default, ensure_ascii=True)
        return text.encode("ascii")


def loads(data: bytes | str) -> Any:
    """Parse JSON text; orjson first, then the stdlib for lone surrogates and integers
    beyond 64 bits. Raises :class:`orjson.JSONDecodeError` (orjson's message and
    position) when the text is not JSON at all. ``NaN``/``Infinity`` read as ``null``."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            return json.loads(data, parse_constant=lambda _name: None)
        except (ValueError, RecursionError):
            raise exc from None
