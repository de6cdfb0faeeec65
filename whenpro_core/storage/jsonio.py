"""JSON bytes in and out: orjson's fast path with a lossless stdlib fallback.

orjson refuses two things that are valid JSON and common in agent traces: a lone
surrogate in a string (``"\\ud800"``, frequent in LLM output cut mid-character) and an
integer beyond 64 bits. :func:`dumps` and :func:`loads` try orjson first and fall back
to the stdlib :mod:`json` module, which reads both and writes them back as ``\\uXXXX``
escapes and exact integers, so a trace whenpro read is always written back equal.

orjson also stops at 255 levels of nesting, and the stdlib's recursive encoder at the
interpreter's recursion limit: :func:`dumps` writes deeper values with an iterative
encoder (same JSON text), up to :data:`MAX_DEPTH` levels, the most :func:`loads` (and
orjson) reads back; deeper is a :class:`~whenpro_core.errors.TraceFormatError` naming the
JSON path, never a traceback. :func:`cap_depth` turns what is nested deeper than a limit
into its JSON text, for stores that must accept any value (the OTLP receiver).

Depth has one home here: what is read (:data:`MAX_DEPTH`) and what is shown. Every
renderer (the TUI, ``export``, ``diff``) pretty-prints JSON through :func:`pretty`,
which indents the first :data:`SHOWN_DEPTH` levels and shows deeper containers as their
compact JSON text, so any value a reader accepts is shown whole, in bounded width and
without recursing past that depth.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable
from typing import Any

import orjson

from whenpro_core.errors import TraceFormatError

#: A decoded JSON object whose keys and values have no fixed shape (a trace's free-form fields,
#: a source file's raw record). Where a dict has a known shape, use a TypedDict or a dataclass.
JSONObject = dict[str, Any]

#: The deepest nesting :func:`loads` reads (orjson's limit); :func:`dumps` refuses deeper.
MAX_DEPTH = 1024
#: Levels :func:`pretty` indents; deeper containers are shown as their compact JSON text.
SHOWN_DEPTH = 32
#: Above this depth :func:`dumps` uses its iterative encoder (orjson stops at 255).
_RECURSIVE_DEPTH = 200
_SCALARS = (str, int, float, bool, type(None))


def dumps(
    value: Any, *, indent: bool = False, sort_keys: bool = False, default: Callable[[Any], Any] | None = None
) -> bytes:
    """Serialise ``value`` to UTF-8 JSON bytes (no trailing newline).

    ``indent`` gives two-space indentation, ``sort_keys`` sorted object keys, ``default``
    converts values JSON has no type for. Non-string dict keys are written as strings.
    Lone surrogates and integers beyond 64 bits are written losslessly (stdlib fallback,
    all non-ASCII text then escaped). Values nested deeper than orjson writes go through
    an iterative encoder; deeper than :data:`MAX_DEPTH` is a TraceFormatError (JSON path
    of the too-deep value). Raises TypeError for a value neither encoder takes.
    """
    option = orjson.OPT_NON_STR_KEYS
    if indent:
        option |= orjson.OPT_INDENT_2
    if sort_keys:
        option |= orjson.OPT_SORT_KEYS
    try:
        return orjson.dumps(value, option=option, default=default)
    except TypeError:  # orjson.JSONEncodeError: lone surrogate, int > 64 bits, too deep...
        where = too_deep(value, _RECURSIVE_DEPTH)
        if where is not None:
            deepest = too_deep(value, MAX_DEPTH)
            if deepest is not None:
                raise TraceFormatError(
                    f"a value is nested more than {MAX_DEPTH} levels deep",
                    json_path=deepest if len(deepest) <= 120 else f"{deepest[:80]}…{deepest[-30:]}",
                    expected=f"at most {MAX_DEPTH} levels, what JSON readers take",
                ) from None
            return _dumps_iterative(value, indent=indent, sort_keys=sort_keys, default=default)
        text = json.dumps(
            value,
            indent=2 if indent else None,
            sort_keys=sort_keys,
            separators=(",", ": ") if indent else (",", ":"),
            default=default,
            ensure_ascii=True,
        )
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


#: A JSON string (escapes included), for :func:`containers`.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def containers(data: bytes, at_most: int | None = None) -> int:
    """How many JSON arrays and objects ``data`` (JSON text) holds: its ``[`` and ``{``
    outside strings, counted without parsing (C-speed byte counts). With ``at_most``,
    a count of every bracket that is not over it is returned as is (strings are only
    looked into when the quick count is over ``at_most``)."""
    quick = data.count(b"[") + data.count(b"{")
    if at_most is not None and quick <= at_most:
        return quick
    bare = _JSON_STRING.sub(b"", data)
    return bare.count(b"[") + bare.count(b"{")


def pretty(value: Any) -> str:
    """``value`` as indented JSON text for people (two spaces a level, keys as given,
    values JSON has no type for as their ``str``), its containers below
    :data:`SHOWN_DEPTH` levels as compact JSON text, unquoted (so the result is still the
    value's JSON and never looks like JSON passed as a string). Any depth."""
    token = secrets.token_hex(8)
    deep: list[str] = []

    def leaf(v: Any, _where: str) -> str:
        deep.append(_compact(v))
        return f"whenpro-deep-{token}-{len(deep) - 1}"

    text = dumps(_replace_deep(value, SHOWN_DEPTH, leaf), indent=True, default=str).decode("utf-8")
    if not deep:
        return text
    return re.sub(f'"whenpro-deep-{token}-([0-9]+)"', lambda m: deep[int(m.group(1))], text)


def as_text(value: Any) -> str:
    """``str(value)`` (Python's form of containers, which judge prompts and the heuristic's
    signals have always used), or, for a container nested too deep for ``str``
    (RecursionError), its compact JSON text: any depth the readers take."""
    try:
        return str(value)
    except RecursionError:
        return dumps(value, default=str).decode("utf-8")


def too_deep(value: Any, limit: int) -> str | None:
    """The JSON path (``$.a[3].b``) of the first container nested deeper than ``limit``
    levels in ``value`` (the top-level container is level 1), or ``None``. Iterative:
    any depth."""
    todo: list[tuple[Any, int, str]] = [(value, 1, "$")]
    while todo:
        v, level, where = todo.pop()
        if isinstance(v, dict):
            children = [(c, f"{where}.{k}") for k, c in v.items()]
        elif isinstance(v, (list, tuple)):
            children = [(c, f"{where}[{i}]") for i, c in enumerate(v)]
        else:
            continue
        if level > limit:
            return where
        todo.extend((c, level + 1, w) for c, w in reversed(children) if isinstance(c, (dict, list, tuple)))
    return None


#: A JSON string or a structural character, for :func:`path_past_depth`.
_JSON_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]')
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def path_past_depth(data: bytes, limit: int) -> str | None:
    """The JSON path of the first container nested deeper than ``limit`` levels in the
    JSON text ``data`` (the top level is level 1), read from its brackets without parsing
    (so it works where the parser gave up), or ``None``. Keys that are not names are
    written ``["..."]``; a run of four or more equal segments as ``([0] xN)``."""
    stack: list[list[Any]] = []  # per open container: [is an object, its current key or index]
    last = b""
    for m in _JSON_TOKEN.finditer(data):
        tok = m.group()
        if tok[:1] == b'"':
            last = tok
        elif tok in (b"[", b"{"):
            if len(stack) >= limit:
                return _compact_path([_segment(c) for c in stack])
            stack.append([tok == b"{", None if tok == b"{" else 0])
        elif tok in (b"]", b"}") and stack:
            stack.pop()
        elif tok == b":" and stack and stack[-1][0]:
            stack[-1][1] = _key_text(last)
        elif tok == b"," and stack:
            stack[-1][1] = None if stack[-1][0] else stack[-1][1] + 1
    return None


def _key_text(token: bytes) -> str:
    try:
        return str(json.loads(token))
    except ValueError:
        return token.decode("utf-8", "replace").strip('"')


def _segment(container: list[Any]) -> str:
    is_object, at = container
    if not is_object:
        return f"[{at}]"
    key = str(at)
    return f".{key}" if _NAME.match(key) else f"[{json.dumps(key)}]"


def _compact_path(segments: list[str]) -> str:
    """``$`` and ``segments``, each run of four or more equal segments as ``(seg xN)``."""
    out, i = ["$"], 0
    while i < len(segments):
        j = i
        while j < len(segments) and segments[j] == segments[i]:
            j += 1
        out.append(f"({segments[i]} x{j - i})" if j - i >= 4 else segments[i] * (j - i))
        i = j
    return "".join(out)


def cap_depth(value: Any, limit: int) -> tuple[Any, list[str]]:
    """``value`` with every container that sits deeper than ``limit`` levels replaced by
    its compact JSON text (a string), and the JSON paths replaced (``[]``: unchanged,
    ``value`` returned as is). Nothing is lost: the text holds the whole subtree."""
    paths: list[str] = []

    def leaf(v: Any, where: str) -> str:
        paths.append(where)
        return _compact(v)

    return _replace_deep(value, limit, leaf), paths


def _compact(value: Any) -> str:
    return _dumps_iterative(value, indent=False, sort_keys=False, default=str).decode("utf-8")


def _replace_deep(value: Any, limit: int, leaf: Callable[[Any, str], Any]) -> Any:
    """``value`` with each container deeper than ``limit`` levels replaced by
    ``leaf(container, json_path)``; ``value`` itself when nothing is that deep."""
    if too_deep(value, limit) is None:
        return value

    def cap(v: Any, level: int, where: str) -> Any:  # recursion bounded by ``limit``
        if not isinstance(v, (dict, list, tuple)):
            return v
        if level > limit:
            return leaf(v, where)
        if isinstance(v, dict):
            return {k: cap(c, level + 1, f"{where}.{k}") for k, c in v.items()}
        return [cap(c, level + 1, f"{where}[{i}]") for i, c in enumerate(v)]

    return cap(value, 1, "$")


def _scalar(v: Any) -> str:
    try:
        return orjson.dumps(v).decode("utf-8")
    except TypeError:  # a lone surrogate or an integer beyond 64 bits
        return json.dumps(v, ensure_ascii=True)


def _dumps_iterative(value: Any, *, indent: bool, sort_keys: bool, default: Callable[[Any], Any] | None) -> bytes:
    """The JSON text :func:`dumps` writes, built with an explicit stack (no recursion),
    for values nested deeper than the recursive encoders go."""
    out: list[str] = []
    todo: list[Any] = [(value, 0)]  # (value, level) to encode, or a str to copy out
    colon = ": " if indent else ":"
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        v, level = item
        if isinstance(v, _SCALARS):
            out.append(_scalar(v))
            continue
        if not isinstance(v, (dict, list, tuple)):
            if default is None:
                raise TypeError(f"Type is not JSON serializable: {type(v).__name__}")
            todo.append((default(v), level))
            continue
        inner = "\n" + "  " * (level + 1) if indent else ""
        outer = "\n" + "  " * level if indent else ""
        if isinstance(v, dict):
            keys = sorted(v, key=str) if sort_keys else list(v)
            entries = [(_scalar(k if isinstance(k, str) else str(k)) + colon, v[k]) for k in keys]
            opening, closing = "{", "}"
        else:
            entries = [("", c) for c in v]
            opening, closing = "[", "]"
        if not entries:
            out.append(opening + closing)
            continue
        out.append(opening)
        todo.append(outer + closing)
        for n in range(len(entries) - 1, -1, -1):
            prefix, child = entries[n]
            todo.append((child, level + 1))
            todo.append(("," if n else "") + inner + prefix)
    return "".join(out).encode("utf-8")
