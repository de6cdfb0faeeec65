"""What every importer implements, and the helpers they share to read untrusted JSON.

Two kinds of importer (docs/architecture.md, 'Module map', ``formats/``):

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
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import orjson

from whenpro_core.errors import TraceFormatError
from whenpro_core.safety.redact import redact_secrets as redact_secrets  # re-exported: the importers take it from here
from whenpro_core.storage import jsonio
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.evidence import answer_matches
from whenpro_core.trace.model import SUMMARY_TEXT, Outcome, Source, Step, Trace, TraceSummary


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

    def source(self, fmt: str, **fields: Any) -> Source:
        """The :class:`Source` of a trace read by importer ``fmt`` from this file (its path,
        the dataset root when known, and ``fields`` such as ``key`` or ``row``)."""
        return Source(format=fmt, path=str(self.path), root=str(self.root) if self.root else None, **fields)


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
    #: True for files that hold no traces (whenpro's own results and verdict files):
    #: opened by themselves, they give the error :meth:`load` raises, not a dataset.
    not_a_trace: ClassVar[bool] = False
    #: True for files that always hold exactly one trace (a coding-agent session): the
    #: viewer opens the trace itself instead of a one-row library.
    single_trace: ClassVar[bool] = False

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


def merged_path(child: Path, parent: Path) -> str:
    """``Step.meta["subagent_path"]`` of a step read from the sub-agent file ``child``
    merged into the session file ``parent``: ``child`` relative to ``parent``'s folder."""
    return os.path.relpath(child, parent.parent)


def merged_files(trace: Trace) -> list[str]:
    """The normalised paths of the sub-agent files merged into ``trace`` (from its steps'
    ``meta["subagent_path"]``, relative to the trace's file), sorted."""
    if not trace.source.path:
        return []
    folder = Path(trace.source.path).parent
    rel = {s.meta["subagent_path"] for s in trace.steps if isinstance(s.meta.get("subagent_path"), str)}
    return sorted(os.path.normpath(folder / r) for r in rel)


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
        warnings=[str(w) for w in trace.extras.get("whenpro_warnings") or ()],
        outcome=trace.outcome.value,
        task=summary_text(trace.task.query),
        final_answer=summary_text(trace.final_answer),
        gold=summary_text(trace.task.answer),
        agent_count=len(trace.agents) or len({s.agent for s in trace.steps}),
        merged=merged_files(trace),
    )


def summary_text(text: str | None) -> str | None:
    """The first :data:`~whenpro_core.trace.model.SUMMARY_TEXT` characters of ``text`` on one
    line (whitespace collapsed), or ``None`` for no text."""
    if text is None:
        return None
    return " ".join(str(text)[: SUMMARY_TEXT * 4].split())[:SUMMARY_TEXT]


# --------------------------------------------------------------------------- JSON helpers


def decode_text(data: bytes, path: Path | None = None) -> bytes:
    """Return UTF-8 bytes for ``data``: strips a UTF-8 BOM, transcodes UTF-16/32 with a
    BOM, and raises TraceFormatError (naming the byte offset) for anything not UTF-8."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :]
    for bom, enc in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return data.decode(enc).encode("utf-8")
            except (UnicodeDecodeError, UnicodeEncodeError) as exc:
                raise TraceFormatError(
                    f"invalid {enc.upper()} text: {exc.reason}", path=path, expected="UTF-8 or UTF-16 text"
                ) from None
    return data


def parse_json(data: bytes, path: Path | None = None, row: int | None = None) -> Any:
    """Parse JSON bytes with orjson; on failure raise TraceFormatError that says where
    (line and column, or byte offset) and whether the file looks truncated or binary."""
    data = decode_text(data, path)
    try:
        # NaN/Infinity (MAD has NaN annotator votes) read as null; lone surrogates and
        # big integers through the stdlib fallback (jsonio).
        return jsonio.loads(data)
    except orjson.JSONDecodeError as exc:
        deep = jsonio.path_past_depth(data, jsonio.MAX_DEPTH) if "depth" in str(exc) else None
        if deep is not None:  # valid JSON, but deeper than any reader here takes
            raise TraceFormatError(
                f"a value is nested more than {jsonio.MAX_DEPTH} levels deep",
                path=path,
                row=row,
                json_path=deep,
                expected=f"at most {jsonio.MAX_DEPTH} levels",
            ) from None
        raise TraceFormatError(_json_problem(data, exc), path=path, row=row, expected="a JSON document") from None


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


_NOT_REGULAR = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def require_regular_file(path: Path) -> None:
    """Raise TraceFormatError unless ``path`` is a regular file (or a folder, which the
    caller reports itself). A named pipe, socket or device is refused before any
    ``open()``: opening a pipe blocks until something writes to it, and a device may
    never end."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # the open() that follows says why
    for test, what in _NOT_REGULAR:
        if test(mode):
            raise TraceFormatError(f"not a regular file ({what})", path=path, expected="a trace file")


def read_json_file(path: Path) -> Any:
    """Read and parse a whole JSON file (TraceFormatError on unreadable or bad JSON, or
    a path that is not a regular file: :func:`require_regular_file`)."""
    require_regular_file(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"cannot read file: {exc.strerror}", path=path) from None
    return parse_json(data, path)


def expect(value: Any, types: type | tuple[type, ...], ctx: LoadContext, json_path: str, expected: str) -> Any:
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
    return jsonio.pretty(value)


def maybe_json(value: Any) -> Any:
    """Decode ``value`` if it is a string holding a JSON object or list (twice-encoded
    fields); otherwise return it unchanged. Never raises."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return jsonio.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


# --------------------------------------------------------------------------- shared by importers

_STRUCTURE = re.compile(rb'["{}\[\],]')
_STRING_END = re.compile(rb'(?:[^"\\]|\\.)*+"', re.DOTALL)


def top_level_keys(head: bytes, limit: int = 64) -> list[str]:
    """The member names of the top-level JSON object that starts ``head`` (which may be
    cut anywhere), in order, up to ``limit`` names. Empty when ``head`` does not start
    with an object. Used to sniff JSON lines whose first line is longer than the head.
    Never raises."""
    text = head.lstrip()
    if text.startswith(codecs.BOM_UTF8):
        text = text[3:].lstrip()
    if not text.startswith(b"{"):
        return []
    keys: list[str] = []
    depth, i, n = 0, 0, len(text)
    expect_key = False
    while i < n and len(keys) < limit:
        m = _STRUCTURE.search(text, i)  # jump to the next quote or bracket (C speed)
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c == 0x22:  # '"'
            end = _STRING_END.match(text, i + 1)
            if end is None:
                break
            j = end.end() - 1
            if depth == 1 and expect_key:
                try:
                    keys.append(orjson.loads(text[i : j + 1]))
                except orjson.JSONDecodeError:
                    return keys
                expect_key = False
            i = j + 1
            continue
        if c in b"{[":
            depth += 1
            expect_key = depth == 1 and c == 0x7B
        elif c in b"}]":
            depth -= 1
            if depth <= 0:
                break
        elif c == 0x2C and depth == 1:  # ','
            expect_key = True
        i += 1
    return keys


def first_line(head: bytes) -> tuple[bytes, bool]:
    """The first non-blank line of ``head`` (a UTF-8 BOM dropped) and whether it is
    complete (ends before the head does)."""
    text = head[len(codecs.BOM_UTF8) :] if head.startswith(codecs.BOM_UTF8) else head
    text = text.lstrip(b"\r\n\t ")
    end = text.find(b"\n")
    if end < 0:
        return text, False
    return text[:end].rstrip(b"\r"), True


def is_json_lines_head(head: bytes) -> bool:
    """True when ``head`` starts JSON Lines, never one JSON document: its first non-blank
    line (a UTF-8 BOM dropped) is a whole JSON object or list and more non-blank text
    follows it. Never raises."""
    text = head.removeprefix(codecs.BOM_UTF8).lstrip()
    first, newline, rest = text.partition(b"\n")
    if not newline or not rest.strip() or first[:1] not in (b"{", b"["):
        return False
    try:
        jsonio.loads(first)
    except orjson.JSONDecodeError:
        return False
    return True


class JsonLinesImporter(FileImporter):
    """Base of importers for JSON-lines files with one trace per line (OpenHands
    evaluation output, chat JSONL, OTLP JSON lines). The key of a trace is its 1-based
    row number. Subclasses implement :meth:`line_matches` (the parsed first line),
    optionally :meth:`keys_match` (top-level keys, when the first line is longer than
    the 64 KiB head) and :meth:`load_row`.

    Limits: a line is at most :attr:`max_line_bytes` (TraceFormatError beyond), so a
    corrupt file cannot exhaust memory.
    """

    max_line_bytes: ClassVar[int] = 256 * 1024 * 1024

    def line_matches(self, obj: Any) -> bool:
        """True if the parsed first line is this format. Cheap, never raises."""
        raise NotImplementedError

    def keys_match(self, keys: list[str]) -> bool:
        """True if a first line with these top-level keys (line cut by the head) is
        this format. Default: never."""
        return False

    def load_row(self, obj: Any, ctx: LoadContext) -> Trace:
        """The trace of one parsed line; ``ctx.key`` is the row number."""
        raise NotImplementedError

    def match_head(self, head: bytes, path: Path) -> bool:
        if b"\n" not in head.strip() and len(head) < 65536:
            return False  # the whole file is one line: a JSON document, for document importers
        line, complete = first_line(head)
        if complete:
            try:
                return self.line_matches(orjson.loads(line))
            except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError, KeyError):
                return False
        return self.keys_match(top_level_keys(line))

    def rows(self, path: Path) -> Iterator[tuple[int, bytes]]:
        """``(row number, line bytes without its line end)`` for each non-blank line
        (1-based numbers count every line, blank ones too, so they match an editor's line
        numbers; without the newline a parse error's place is the line's own column)."""
        try:
            fh = path.open("rb")
        except OSError as exc:
            raise TraceFormatError(f"cannot read file: {exc.strerror}", path=path) from None
        with fh:
            for row, line in enumerate(iter(lambda: fh.readline(self.max_line_bytes + 1), b""), 1):
                if len(line) > self.max_line_bytes:
                    raise TraceFormatError(
                        "line too long", path=path, row=row, expected=f"at most {self.max_line_bytes} bytes a line"
                    )
                if line.strip():
                    yield row, line.rstrip(b"\r\n")

    def _row_trace(self, path: Path, row: int, line: bytes, root: Path | None) -> Trace:
        obj = parse_json(line, path, row)
        try:
            return self.load_row(obj, LoadContext(path=path, root=root, key=str(row)))
        except TraceFormatError as exc:
            raise exc.located(path=path, row=row) from None

    def summaries(self, path: Path, root: Path | None) -> Iterator[TraceSummary]:
        try:
            for row, line in self.rows(path):
                try:
                    yield summarize(self._row_trace(path, row, line, root))
                except TraceFormatError as exc:
                    yield TraceSummary(
                        id=f"{path.stem}#{row}", path=str(path), key=str(row), format=self.name, error=exc.one_line()
                    )
        except TraceFormatError as exc:
            yield TraceSummary(id=path.stem, path=str(path), format=self.name, error=exc.one_line())

    def load(self, path: Path, key: str | None, root: Path | None) -> Trace:
        first: tuple[int, bytes] | None = None
        for row, line in self.rows(path):
            if key is None or str(row) == key:
                return self._row_trace(path, row, line, root)
            first = first or (row, line)
        if key is None:
            raise TraceFormatError("file holds no traces", path=path, expected="JSON lines")
        raise TraceFormatError(
            f"no row {key} in this file", path=path, expected="a 1-based row number of a non-blank line"
        )

    def load_all(self, path: Path, root: Path | None) -> list[Trace]:
        return [self._row_trace(path, row, line, root) for row, line in self.rows(path)]


def is_message_list(value: Any, keys: tuple[str, ...] = ("role",)) -> bool:
    """True if ``value`` is a non-empty list of objects that each have all ``keys``."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and all(k in m for k in keys) for m in value)
    )


def dict_or_empty(value: Any) -> JSONObject:
    """``value`` if it is a JSON object, else a new empty dict (an optional sub-object)."""
    return value if isinstance(value, dict) else {}


def list_or_empty(value: Any) -> list[Any]:
    """``value`` if it is a JSON list, else a new empty list (an optional list)."""
    return value if isinstance(value, list) else []


def text_or_none(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None


def sibling_json(path: Path, name: str, levels: int = 2) -> tuple[Path, Any] | None:
    """Find ``name`` (a labels file such as ``ground_truth.json``) next to ``path`` or in
    up to ``levels`` folders above it, parse it and return ``(its path, value)``;
    ``None`` when absent. A labels file that is not valid JSON raises TraceFormatError
    naming it. Parsed files are cached by path, size and modification time."""
    folder = path.parent
    for _ in range(levels):
        candidate = folder / name
        if candidate.is_file():
            st = candidate.stat()
            return candidate, _cached_json(str(candidate), st.st_size, st.st_mtime_ns)
        folder = folder.parent
    return None


def label_file_note(path: Path, json_path: str | None, what: str, expected: str) -> str:
    """The one-line warning for a label file (or a row of it) that could not be read:
    ``labels not read: <file> at <json path>: <what> (expected <expected>)``. The label
    readers put it in ``Trace.extras["whenpro_warnings"]`` of each trace that looks there,
    so a bad label never goes silently missing."""
    err = TraceFormatError(what, path=path, json_path=json_path, expected=expected)
    return f"labels not read: {err.one_line()}"


def wrong_type(value: Any) -> str:
    """``"missing"`` or ``"wrong type (got int)"``: the *what* of a field of the wrong type."""
    return "missing" if value is None else f"wrong type (got {type(value).__name__})"


@lru_cache(maxsize=16)
def _cached_json(path: str, size: int, mtime_ns: int) -> Any:
    return read_json_file(Path(path))


def final_answer_from_steps(steps: list[Step]) -> str | None:
    """The content of the last ``final_answer`` step (the rule of the OpenHands and
    native step-lines importers), ``None`` when no such step states anything."""
    return next((s.content for s in reversed(steps) if s.kind == "final_answer" and s.content), None)


def outcome_from_gold(final: str | None, gold: str | None, has_ground_truth: bool) -> Outcome:
    """The outcome of a run whose source does not state one: ``failure`` when it carries
    a ground truth (labelled traces are failures, as in Who&When Pro), else the final
    answer judged against the gold answer by the heuristic's lenient rule
    (:func:`whenpro_core.trace.evidence.answer_matches`), else ``unknown``."""
    if has_ground_truth:
        return Outcome.failure
    if final and gold:
        return Outcome.success if answer_matches(final, gold) else Outcome.failure
    return Outcome.unknown
