"""Files whenpro itself writes next to a dataset's traces, recognised by content (never by
name) so that a dataset walk (``whenpro ls``, ``info``, ``bench``, the TUI library) lists
nothing for them instead of an "unknown format" error row, and opening one directly says
in one line what it is:

* **verdict sidecars** (``<trace file>.verdicts.jsonl``,
  :mod:`whenpro_core.attribution.verdicts`): JSON lines
  ``{"key", "trace_id", "saved_at", "attribution"}``, written by ``whenpro attribute``
  and the TUI;
* **bench results** (``whenpro bench --out``, :mod:`whenpro_core.bench.records`): JSON
  lines whose objects have ``"format": "whenpro.bench.record/1"`` (whatever the spacing and
  key order, so a file re-saved by another JSON writer still is one). ``whenpro view`` still opens
  them in the results screen (:func:`whenpro_core.library.opening.open_target` checks for them
  before importing);
* **bench reports** (``report.json``, :mod:`whenpro_core.bench.report`): one object with
  ``format: whenpro.bench.report/1`` and a ``groups`` list.

Build manifests and validation logs are handled by :mod:`.build_meta`; the build journal
lives in the hidden ``.whenpro-build/`` folder that walks skip.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import orjson

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import DocumentImporter, FileImporter, LoadContext, first_line, top_level_keys
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import Trace, TraceSummary

#: Tag of a bench results record (:mod:`whenpro_core.bench.records`), the first field of every record line.
RECORD_FORMAT = "whenpro.bench.record/1"
#: Tag of a bench report (:data:`whenpro_core.bench.aggregate.REPORT_FORMAT`).
REPORT_FORMAT = "whenpro.bench.report/1"
#: Suffix of a verdicts sidecar's name (:func:`whenpro_core.attribution.verdicts.verdicts_path`).
VERDICTS_SUFFIX = ".verdicts.jsonl"
VERDICT_KEYS = frozenset({"key", "trace_id", "saved_at", "attribution"})

#: Every bench record line whenpro writes starts with these bytes (``format`` is the first
#: field written); used to tell a torn record of an interrupted write. Whether a file is a
#: results file is decided by content: :func:`is_results_head`.
RECORD_PREFIX = b'{"format":"' + RECORD_FORMAT.encode() + b'"'
_JSON_STRING = rb'"(?:[^"\\]|\\.)*"'
#: ``"format": "whenpro.bench.record/1"`` with any blank space around the colon.
_RECORD_TAG = re.compile(rb'"format"\s*:\s*"' + re.escape(RECORD_FORMAT.encode()) + rb'"')
#: The start of a verdict line as orjson writes it, for a first line longer than the head.
_VERDICT_START = re.compile(
    rb'\{"key":' + _JSON_STRING + rb',"trace_id":' + _JSON_STRING + rb',"saved_at":-?[0-9][0-9.eE+-]*,"attribution":\{'
)


def _first_line(head: bytes) -> tuple[bytes, bool]:
    """The first non-blank line of ``head`` (BOM removed) and whether it is complete."""
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    line, nl, _ = text.partition(b"\n")
    return line.rstrip(b"\r"), bool(nl)


def is_verdict_record(obj: Any) -> bool:
    """True for one verdicts-sidecar line: exactly ``{key, trace_id, saved_at,
    attribution}`` with a string key and trace id, a numeric time and an object."""
    return (
        isinstance(obj, dict)
        and set(obj) == VERDICT_KEYS
        and isinstance(obj["key"], str)
        and isinstance(obj["trace_id"], str)
        and isinstance(obj["saved_at"], (int, float))
        and not isinstance(obj["saved_at"], bool)
        and isinstance(obj["attribution"], dict)
    )


def is_verdicts_head(head: bytes) -> bool:
    """True when the first line of ``head`` is a verdict record (a first line longer than
    ``head`` is judged by its start, as whenpro writes it)."""
    line, complete = _first_line(head)
    if not complete:
        return _VERDICT_START.match(line) is not None
    try:
        return is_verdict_record(jsonio.loads(line))
    except orjson.JSONDecodeError:
        return False


def is_results_head(head: bytes) -> bool:
    """True when the first non-blank line of ``head`` (a UTF-8 BOM allowed) is a bench
    record: a JSON object whose ``format`` is :data:`RECORD_FORMAT`, whatever its spacing
    and key order. A first line longer than ``head`` is judged by its start: ``format``
    among its top-level keys and the tag written as that key's value. Never raises."""
    line, complete = first_line(head)
    if not complete:
        return "format" in top_level_keys(line) and _RECORD_TAG.search(line) is not None
    try:
        obj = jsonio.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and obj.get("format") == RECORD_FORMAT


def is_results_file(path: str | Path) -> bool:
    """True when ``path`` is a file whose first line is a whenpro bench record
    (:func:`is_results_head`). Reads at most 4 KiB; never raises."""
    try:
        p = Path(path)
        if not p.is_file():
            return False
        with p.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return is_results_head(head)


def is_report_doc(doc: Any) -> bool:
    """True for a parsed ``report.json`` of ``whenpro bench`` / ``whenpro report``."""
    return isinstance(doc, dict) and doc.get("format") == REPORT_FORMAT and isinstance(doc.get("groups"), list)


class _NotTraces(FileImporter):
    """A whenpro file that holds no traces: no listing rows; loading it raises a
    TraceFormatError saying what it is."""

    priority = 200
    not_a_trace = True
    what: ClassVar[str] = ""

    def expected(self, path: Path) -> str:
        """What to open instead."""
        raise NotImplementedError

    def summaries(self, path: Path, root: Path | None) -> Iterator[TraceSummary]:
        return iter(())

    def load(self, path: Path, key: str | None, root: Path | None) -> Trace:
        raise TraceFormatError(f"this is {self.what}, not a trace", path=path, expected=self.expected(path))

    def load_all(self, path: Path, root: Path | None) -> list[Trace]:
        return [self.load(path, None, root)]


class VerdictsImporter(_NotTraces):
    """A verdicts sidecar (``<trace>.verdicts.jsonl``)."""

    name = "whenpro-verdicts"
    what = "a whenpro verdicts file"

    def match_head(self, head: bytes, path: Path) -> bool:
        return is_verdicts_head(head)

    def expected(self, path: Path) -> str:
        name = path.name
        if name.endswith(VERDICTS_SUFFIX) and len(name) > len(VERDICTS_SUFFIX):
            return f"the trace it belongs to, {name[: -len(VERDICTS_SUFFIX)]} (its saved verdicts open with it)"
        return "the trace it belongs to (its saved verdicts open with it)"


class BenchResultsImporter(_NotTraces):
    """A ``whenpro bench`` results file."""

    name = "whenpro-bench-results"
    what = "a whenpro bench results file"

    def match_head(self, head: bytes, path: Path) -> bool:
        return is_results_head(head)

    def expected(self, path: Path) -> str:
        return "a trace; see the results with whenpro report FILE or whenpro view FILE"


class _NotTraceDocument(DocumentImporter):
    """A JSON document whenpro writes that holds no trace: no listing rows in a dataset
    walk; loading it raises a TraceFormatError saying what it is and what to open instead."""

    priority = 200
    what: ClassVar[str] = ""
    instead: ClassVar[str] = ""

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        raise ctx.error(f"this is {self.what}, not a trace", "$", self.instead)

    def summaries(self, doc: Any, ctx: LoadContext) -> list[TraceSummary]:
        return []


class BenchReportImporter(_NotTraceDocument):
    """A ``report.json`` written by ``whenpro bench`` / ``whenpro report``."""

    name = "whenpro-bench-report"
    what = "a whenpro bench report"
    instead = "a trace; whenpro report RESULTS.jsonl re-renders the report"

    def matches(self, doc: Any) -> bool:
        return is_report_doc(doc)


#: The keys of the ``index.json`` that ``whenpro keyframes`` writes beside its JPEGs
#: (:func:`whenpro_core.media.export.write_keyframes`).
KEYFRAMES_INDEX_KEYS = frozenset({"video", "sha256", "params", "cuts", "keyframes"})


class KeyframesIndexImporter(_NotTraceDocument):
    """The ``index.json`` of a ``whenpro keyframes`` folder."""

    name = "whenpro-keyframes-index"
    what = "the index of a whenpro keyframes folder"
    instead = "a trace; the keyframes belong to the video named in its 'video' field"

    def matches(self, doc: Any) -> bool:
        return isinstance(doc, dict) and doc.keys() >= KEYFRAMES_INDEX_KEYS and isinstance(doc["keyframes"], list)


__all__ = [
    "BenchReportImporter",
    "KeyframesIndexImporter",
    "BenchResultsImporter",
    "VerdictsImporter",
    "is_report_doc",
    "is_results_head",
    "is_verdict_record",
    "is_verdicts_head",
]
