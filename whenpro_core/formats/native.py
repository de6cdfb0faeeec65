"""whenpro's native trace format: the :class:`~whenpro_core.trace.model.Trace` model as JSON.

A native file is one JSON object whose ``format`` is ``"whenpro.trace/1"``; its JSON
Schema is ``Trace.model_json_schema()`` (``whenpro schema``). Writing then reading gives
back an equal model (round trip). ``source`` is rewritten on read to say where the file
was actually found.
"""

from __future__ import annotations

import re
import uuid
from operator import attrgetter
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import BaseModel, ValidationError

from whenpro_core.errors import TraceFormatError, json_path
from whenpro_core.formats.base import DocumentImporter, LoadContext, read_json_file
from whenpro_core.safety.textsafe import clean
from whenpro_core.storage import jsonio
from whenpro_core.storage.fsutil import atomic_write_bytes
from whenpro_core.trace.coords import normalize_coord, round_of
from whenpro_core.trace.gt_map import describe_coords
from whenpro_core.trace.model import NATIVE_FORMAT, Source, Trace


def dumps_trace(trace: Trace, *, indent: bool = True) -> bytes:
    """Serialise a trace to native JSON bytes (UTF-8), losslessly (:mod:`whenpro_core.storage.jsonio`).

    Free-form values (``meta``, ``raw``, ``extras``...) may nest deeper than pydantic
    serialises (about 255 levels): those are set aside before ``model_dump`` and put back
    after, so any depth up to :data:`~whenpro_core.storage.jsonio.MAX_DEPTH` is written; deeper
    is a TraceFormatError naming the JSON path."""
    return jsonio.dumps(model_json(trace), indent=indent)


def model_json(model: BaseModel, include: set[str] | None = None) -> Any:
    """``model.model_dump(mode="json", include=include)`` at any depth: free-form values
    nested deeper than pydantic serialises are set aside and put back (see
    :func:`dumps_trace`)."""
    try:
        return model.model_dump(mode="json", include=include)
    except ValueError:  # pydantic-core: "Circular reference detected (depth exceeded)"
        stash: list[Any] = []
        token = f"\x00whenpro-deep-{uuid.uuid4().hex}:"
        shallow = _set_aside_deep(model, stash, token).model_dump(mode="json", include=include)
        return _put_back(shallow, stash, token)


#: Free-form values nested deeper than this are serialised outside pydantic.
_PYDANTIC_SAFE_DEPTH = 64


def _set_aside_deep(model: BaseModel, stash: list[Any], token: str) -> BaseModel:
    """A shallow copy of ``model`` where each free-form value deeper than
    :data:`_PYDANTIC_SAFE_DEPTH` is replaced by ``token + <index into stash>``."""
    update: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        new: Any
        if isinstance(value, BaseModel):
            new = _set_aside_deep(value, stash, token)
        elif isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
            new = [_set_aside_deep(v, stash, token) for v in value]
        elif isinstance(value, dict) and not any(isinstance(v, BaseModel) for v in value.values()):
            new = {k: _stash(v, stash, token) for k, v in value.items()}
        else:
            new = _stash(value, stash, token)
        if new is not value:
            update[name] = new
    return model.model_copy(update=update) if update else model


def _stash(value: Any, stash: list[Any], token: str) -> Any:
    if not isinstance(value, (dict, list)) or jsonio.too_deep(value, _PYDANTIC_SAFE_DEPTH) is None:
        return value
    stash.append(value)
    return f"{token}{len(stash) - 1}"


def _put_back(doc: Any, stash: list[Any], token: str) -> Any:
    """``doc`` (a model dump, shallow) with every stash token replaced by its value."""
    if isinstance(doc, str):
        return stash[int(doc[len(token) :])] if doc.startswith(token) else doc
    if isinstance(doc, dict):
        return {k: _put_back(v, stash, token) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_put_back(v, stash, token) for v in doc]
    return doc


def write_trace(trace: Trace, path: str | Path, *, indent: bool = True) -> Path:
    """Write ``trace`` to ``path`` in the native format, atomically."""
    return atomic_write_bytes(path, dumps_trace(trace, indent=indent) + b"\n")


def trace_from_dict(doc: Any, ctx: LoadContext) -> Trace:
    """Validate a native document into a :class:`Trace`; TraceFormatError names the
    first invalid field as a JSON path."""
    try:
        trace = Trace.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ctx.error(err["msg"], json_path(err["loc"]), expected="a whenpro.trace/1 document") from None
    return _checked(trace, ctx)


def _checked(trace: Trace, ctx: LoadContext) -> Trace:
    """``trace`` after the checks no field validator makes (step indices in order, the
    ground truth's step a step of the trace), with ``source`` set to where it was read."""
    indices = list(map(attrgetter("index"), trace.steps))
    if indices != list(range(len(indices))):  # compared in C: 100,000-step traces open in the TUI
        i = next(i for i, index in enumerate(indices) if index != i)
        raise ctx.error(f"step index {indices[i]} out of order", f"$.steps[{i}].index", expected=str(i))
    _check_gt_step(trace, ctx)
    trace.source = Source(format="native", path=str(ctx.path), root=str(ctx.root) if ctx.root else None)
    return trace


#: Native files at least this large open with a preview of their first steps (the TUI
#: shows it while the whole file loads: a 100,000-step trace is ~100 MB, over a second;
#: below 32 MB the whole load takes under half a second, and a preview would only add
#: its own paint to it).
PREVIEW_MIN_BYTES = 32 << 20
#: How much of such a file the preview reads (about a thousand steps).
PREVIEW_BYTES = 1 << 20
#: The start of a native file as whenpro writes it (``format`` is the model's first field).
_NATIVE_HEAD = re.compile(rb'\s*\{\s*"format"\s*:\s*"whenpro\.trace/1"')


def is_previewable(path: Path, *, min_bytes: int | None = None) -> bool:
    """Whether ``path`` is a native trace file large enough (``min_bytes``, default
    :data:`PREVIEW_MIN_BYTES`) to open with a preview of its first steps
    (:func:`read_native_prefix`): its size and first bytes only."""
    return _large_native_head(path, min_bytes, 256) is not None


def _large_native_head(path: Path, min_bytes: int | None, size: int) -> bytes | None:
    """The first ``size`` bytes of ``path`` when it is a native trace file of at least
    ``min_bytes`` (default :data:`PREVIEW_MIN_BYTES`), else ``None``; never raises."""
    try:
        if not path.is_file() or path.stat().st_size < (PREVIEW_MIN_BYTES if min_bytes is None else min_bytes):
            return None
        with path.open("rb") as fh:
            head = fh.read(size)
    except OSError:
        return None
    return head if _NATIVE_HEAD.match(head) else None


def read_native_prefix(path: Path, *, min_bytes: int | None = None, head_bytes: int | None = None) -> Trace | None:
    """The first steps of a large native trace file, read from its first ``head_bytes``
    (default :data:`PREVIEW_BYTES`; a partial JSON parse; a step cut at the end is left
    out), for a viewer to show while the whole file loads. Only the fields written
    before ``steps`` are there (no ground truth, outcome or final answer). ``None`` for a
    file under ``min_bytes`` (default :data:`PREVIEW_MIN_BYTES`), another format, or a
    head that does not read or validate: the whole load then says what is wrong, as
    ever. Never raises."""
    head = _large_native_head(path, min_bytes, head_bytes or PREVIEW_BYTES)
    try:
        doc = pydantic_core.from_json(head, allow_partial=True) if head is not None else None
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        return None
    keys = list(doc)
    doc = {k: doc[k] for k in keys[: keys.index("steps") + 1]}
    if keys[-1] == "steps":  # the list was cut: its last step may be too
        doc["steps"] = doc["steps"][:-1]
    try:
        trace = _checked(Trace.model_validate(doc), LoadContext(path=path))
    except (ValidationError, TraceFormatError):
        return None
    return trace if trace.steps else None


def _check_gt_step(trace: Trace, ctx: LoadContext) -> None:
    """TraceFormatError (at ``$.ground_truth.step``, listing the valid coordinates)
    unless the ground truth's step is a step's coordinate, or for a round-only ground
    truth a round of one (docs/architecture.md, 'Formats and step coordinates'), as the Who&When importers require."""
    gt = trace.ground_truth
    if gt is None or gt.step is None:
        return
    coords = [s.coord for s in trace.steps if s.coord is not None]
    valid = [round_of(c) for c in coords] if gt.round_only else coords
    if normalize_coord(gt.step) not in valid:
        raise ctx.error(
            f"step {gt.step!r} is not a step of the trajectory",
            "$.ground_truth.step",
            expected=(
                f"{'a round' if gt.round_only else 'a step coordinate'} in {describe_coords(valid)}"
                if valid
                else "no ground-truth step: the trajectory has no steps"
            ),
        )


class NativeImporter(DocumentImporter):
    """Reads files written by :func:`write_trace` (``format: whenpro.trace/1``), and a
    JSON list of them."""

    name = "native"
    priority = 100

    def matches(self, doc: Any) -> bool:
        """Native documents of any version: :meth:`load` refuses versions it cannot read."""
        if isinstance(doc, list) and doc and isinstance(doc[0], dict):
            doc = doc[0]
        fmt = doc.get("format") if isinstance(doc, dict) else None
        return isinstance(fmt, str) and fmt.startswith(NATIVE_FORMAT.split("/")[0] + "/")

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        docs = doc if isinstance(doc, list) else [doc]
        traces = []
        for i, d in enumerate(docs):
            if not isinstance(d, dict):
                raise ctx.error("wrong type", f"$[{i}]", expected="a trace object")
            if d.get("format") != NATIVE_FORMAT:
                where = f"$[{i}].format" if isinstance(doc, list) else "$.format"
                raise ctx.error(
                    f"unsupported native format {clean(str(d.get('format')))!r}",
                    where,
                    expected=f"{NATIVE_FORMAT}; a newer file needs a newer whenpro",
                )
            t = trace_from_dict(d, ctx)
            if isinstance(doc, list):
                t.source.key = str(i + 1)
            traces.append(t)
        return traces


def load_native(path: str | Path) -> Trace:
    """Read one native trace file (TraceFormatError on anything else)."""
    p = Path(path)
    doc = read_json_file(p)
    if not NativeImporter().matches(doc):
        raise TraceFormatError("not a whenpro trace", path=p, json_path="$.format", expected=f'"{NATIVE_FORMAT}"')
    return NativeImporter().load(doc, LoadContext(path=p))[0]
