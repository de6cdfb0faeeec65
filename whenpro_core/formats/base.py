"""What every importer implements, and the helpers they share to read untrusted JSON.

Two kinds of importer (DESIGN §2, ``formats/``):

* :class:`DocumentImporter` — the file is one JSON document (object or list). The
  registry parses it once and asks each document importer whether it ``matches`` the
  parsed value; the winner turns it into traces.
* :class:`FileImporter` — the file needs its own reading (JSONL releases indexed by byte
  offset, zip archives, line streams). It decides from the first bytes (``match_head``).

Importers must raise only :class:`~whenpro_core.errors.TraceFormatError` on bad input,
naming the JSON path (``$.trajectory[3].kind``) and what was expected.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterator

import orjson

from whenpro_core.errors import TraceFormatError
from whenpro_core.model import Trace, TraceSummary


@dataclass(frozen=True)
class LoadContext:
    """Where a document came from: the file ``path``, the dataset ``root`` (for media
    paths relative to the dataset, found by the registry), and the ``key`` of the trace
    inside a multi-trace file."""

    path: Path
    root: Path | None = None
    key: str | None = None

    def error(self, what: str, json_path: str = "$", expected: str | None = None) -> TraceFormatError:
        """A :class:`TraceFormatError` located at this file and ``json_path``."""
        return TraceFormatError(what, path=self.path, json_path=json_path, expected=expected)


class DocumentImporter:
    """An importer for files holding one JSON document.

    Subclasses set ``name`` and implement :meth:`matches` and :meth:`load`; they may
    override :meth:`summaries` with something cheaper than building every trace.
    """

    name: ClassVar[str] = ""
    #: Higher wins when several importers match the same document.
    priority: ClassVar[int] = 0

    def matches(self, doc: Any) -> bool:
        """True if ``doc`` (the parsed JSON value) is this importer's format. Must be
        cheap and never raise."""
        raise NotImplementedError

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        """All traces in ``doc``, in order. Raises TraceFormatError on bad content."""
        raise NotImplementedError

    def summaries(self, doc: Any, ctx: LoadContext) -> list[TraceSummary]:
        """Listing rows for the traces in ``doc`` (default: build them and summarise)."""
        return [summarize(t) for t in self.load(doc, ctx)]


class FileImporter:
    """An importer that reads the file itself (JSONL release, zip archive, line stream)."""

    name: ClassVar[str] = ""
    priority: ClassVar[int] = 0

    def match_head(self, head: bytes, path: Path) -> bool:
        """True if the file, whose first bytes are ``head`` (up to 64 KiB), is this
        importer's format. Must be cheap and never raise."""
        raise NotImplementedError

    def summaries(self, path: Path, root: Path | None) -> Iterator[TraceSummary]:
        """Listing rows, one per trace in the file, without decoding more than needed."""
        raise NotImplementedError

    def load(self, path: Path, key: str | None, root: Path | None) -> Trace:
        """The trace selected by ``key`` (the first one when ``None``)."""
        raise NotImplementedError

    def load_all(self, path: Path, root: Path | None) -> list[Trace]:
        """Every trace in the file."""
        return [self.load(path, s.key, root) for s in self.summaries(path, root) if s.error is None]


def summarize(trace: Trace) -> TraceSummary:
    """The listing row of a built trace."""
    gt = trace.ground_truth
    return TraceSummary(
        id=trace.id,
        path=trace.source.path or "",
        key=trace.source.key,
        format=trace.source.format,
        framework=trace.framework,
        benchmark=trace.benchmark,
        modality=trace.modality.value,
        step_count=len(trace.steps),
        gt_mode=gt.mode if gt else None,
        gt_step=gt.step if gt else None,
    )


# --------------------------------------------------------------------------- JSON helpers


def decode_text(data: bytes, path: Path | None = None) -> bytes:
    """Return UTF-8 bytes for ``data``: strips a UTF-8 BOM, transcodes UTF-16/32 with a
    BOM, and raises TraceFormatError (naming the byte offset) for anything not UTF-8."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8):]
    for bom, enc in ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                     (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            try:
                return data.decode(enc).encode("utf-8")
            except UnicodeError as exc:
                raise TraceFormatError(f"invalid {enc.upper()} text: {exc.reason}", path=path,
                                       expected="UTF-8 or UTF-16 text") from None
    return data


def parse_json(data: bytes, path: Path | None = None, row: int | None = None) -> Any:
    """Parse JSON bytes with orjson; on failure raise TraceFormatError that says where
    (line and column, or byte offset) and whether the file looks truncated or binary."""
    data = decode_text(data, path)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise TraceFormatError(_json_problem(data, exc), path=path, row=row,
                               expected="a JSON document") from None


def _json_problem(data: bytes, exc: orjson.JSONDecodeError) -> str:
    if not data.strip():
        return "file is empty"
    if b"\x00" in data[:4096]:
        return "file is binary, not JSON"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as ude:
        return f"file is not UTF-8 text (bad byte at offset {ude.start})"
    pos = getattr(exc, "pos", None)
    lineno, colno = getattr(exc, "lineno", None), getattr(exc, "colno", None)
    at = f" at line {lineno} column {colno}" if lineno else ""
    if pos is not None and pos >= len(data.rstrip()) - 1:
        return f"JSON ends too early{at} (truncated file?)"
    msg = str(exc.msg if hasattr(exc, "msg") else exc).split(":")[0]
    return f"not valid JSON{at}: {msg}"


def read_json_file(path: Path) -> Any:
    """Read and parse a whole JSON file (TraceFormatError on unreadable or bad JSON)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"cannot read file: {exc.strerror}", path=path) from None
    return parse_json(data, path)


def expect(value: Any, types: type | tuple[type, ...], ctx: LoadContext, json_path: str,
           expected: str) -> Any:
    """Return ``value`` if it is an instance of ``types``; else raise TraceFormatError
    naming ``json_path`` and ``expected`` (and the type found)."""
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in _as_tuple(types)):
        return value
    found = "missing" if value is None else f"got {type(value).__name__}"
    raise ctx.error(f"wrong type ({found})", json_path, expected)


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def as_text(value: Any) -> str:
    """Display text of a JSON value: strings as they are, ``None`` as ``""``, lists of
    strings joined with newlines (MAD stores content as a list of lines), anything else
    as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return str(value)


def maybe_json(value: Any) -> Any:
    """Decode ``value`` if it is a string holding a JSON object or list (twice-encoded
    fields); otherwise return it unchanged. Never raises."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value
