"""Labelled failure traces stored as Parquet rows in the Who&When shape: AgenTracer's
TracerTraj (fault-injected runs with agent and step labels, arXiv 2509.03312) and the
Hugging Face copies of Who&When (``Kevin355/Who_and_When``).

A file is a Parquet table (magic ``PAR1``), one trace a row (key = the 1-based row). A row
holds ``history`` (a list of ``{content, role, name?}`` structs, or that list as a JSON
string), the labels ``mistake_agent`` and ``mistake_step`` (a 0-based index into
``history``), and optionally ``question``, ``ground_truth`` (the gold answer),
``mistake_reason``, ``question_ID``, ``system_prompt`` (a struct or a JSON string) and
any other column (kept in ``extras``). Each row is read by the Who&When rules
(:mod:`whenpro_core.formats.whowhen`: speaker from ``name``, else the decorated
``role``; coordinate = the 0-based ``history`` index); its trace id is
``<file stem>-<row>``.

Reading Parquet needs ``pyarrow`` (the ``parquet`` extra: ``pip install 'whenpro[parquet]'``);
without it, opening such a file is one clear error. Rows are read one record batch at a
time, so a large table lists in bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import FileImporter, LoadContext, maybe_json, parse_json, summarize
from whenpro_core.formats.whowhen import WhoWhenImporter
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.coords import small_int
from whenpro_core.trace.model import Trace, TraceSummary

MAGIC = b"PAR1"
#: Columns a row needs to be a Who&When-shaped trace.
REQUIRED = ("history",)
LABELS = ("mistake_agent", "mistake_step")
#: Columns holding JSON that some exports store as a string.
_JSON_COLUMNS = ("history", "system_prompt")
_BATCH_ROWS = 64


def _parquet_file(path: Path) -> Any:
    """An open ``pyarrow.parquet.ParquetFile``; TraceFormatError when pyarrow is missing
    or the file is not a readable Parquet table."""
    try:
        import pyarrow.parquet as pq  # noqa: PLC0415 (optional: only Parquet files need it)
    except ImportError:
        raise TraceFormatError(
            "reading Parquet needs pyarrow", path=path, expected="pip install 'whenpro[parquet]'"
        ) from None
    try:
        return pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        raise TraceFormatError(f"not a readable Parquet table: {exc}", path=path) from None


def _check_columns(names: list[str], path: Path) -> None:
    missing = [c for c in REQUIRED if c not in names]
    if missing or not any(c in names for c in LABELS):
        raise TraceFormatError(
            f"not Who&When-shaped rows (columns: {', '.join(names[:12]) or 'none'})",
            path=path,
            json_path="$.columns",
            expected="Who&When-shaped rows: history, mistake_agent, mistake_step (TracerTraj, Who&When)",
        )


def iter_rows(path: Path) -> Iterator[JSONObject]:
    """Each row of the table as a dict, in order (columns checked first)."""
    table = _parquet_file(path)
    _check_columns(list(table.schema_arrow.names), path)
    for batch in table.iter_batches(batch_size=_BATCH_ROWS):
        yield from batch.to_pylist()


def row_document(row: JSONObject) -> JSONObject:
    """A row as a Who&When document: JSON-string columns decoded, message fields a
    struct column filled with null left out (Hand-Crafted messages have no ``name``), a
    step label as text. A ``history`` string that does not parse as JSON is a
    TraceFormatError at ``$.history`` saying where the string breaks."""
    doc = dict(row)
    for name in _JSON_COLUMNS:
        if isinstance(doc.get(name), str):
            doc[name] = maybe_json(doc[name])
    if isinstance(doc.get("history"), str):  # a JSON string that does not parse
        try:
            parse_json(doc["history"].encode("utf-8"))
        except TraceFormatError as exc:
            raise TraceFormatError(
                f"the JSON string does not parse ({exc.what.replace(' (truncated file?)', '')})",
                json_path="$.history",
                expected="a list of messages, or that list as a JSON string",
            ) from None
    if doc.get("system_prompt") is None:
        doc.pop("system_prompt", None)
    if isinstance(doc.get("history"), list):  # a struct column gives every row every field, absent ones null
        doc["history"] = [
            {k: v for k, v in h.items() if v is not None} if isinstance(h, dict) else h for h in doc["history"]
        ]
    if isinstance(doc.get("mistake_step"), (int, float)) and not isinstance(doc["mistake_step"], bool):
        doc["mistake_step"] = str(int(doc["mistake_step"]))
    return doc


def row_trace(row: JSONObject, path: Path, key: int, root: Path | None) -> Trace:
    """The trace of row ``key`` (1-based); TraceFormatError names the row and field."""
    ctx = LoadContext(path=path, root=root, key=str(key))
    try:
        trace = WhoWhenImporter().load(row_document(row), ctx)[0]
    except TraceFormatError as exc:
        exc.located(path=path, row=key)
        raise
    trace.id = f"{path.stem}-{key}"
    trace.source = ctx.source(ParquetRowsImporter.name, key=str(key))
    return trace


class ParquetRowsImporter(FileImporter):
    """Who&When-shaped Parquet rows (TracerTraj; see the module doc)."""

    name = "whowhen-parquet"
    priority = 10

    def match_head(self, head: bytes, path: Path) -> bool:
        return head.startswith(MAGIC)

    def summaries(self, path: Path, root: Path | None) -> Iterator[TraceSummary]:
        for key, row in enumerate(iter_rows(path), start=1):
            try:
                yield summarize(row_trace(row, path, key, root))
            except TraceFormatError as exc:
                yield TraceSummary(
                    id=f"{path.stem}-{key}", path=str(path), key=str(key), format=self.name, error=exc.one_line()
                )

    def load(self, path: Path, key: str | None, root: Path | None) -> Trace:
        want = 1 if key is None else _row_number(key, path)
        rows = 0
        for rows, row in enumerate(iter_rows(path), start=1):
            if rows == want:
                return row_trace(row, path, rows, root)
        raise TraceFormatError(f"no row {want}: the table has {rows}", path=path, expected="a row number after #")

    def load_all(self, path: Path, root: Path | None) -> list[Trace]:
        return [row_trace(row, path, n, root) for n, row in enumerate(iter_rows(path), start=1)]


def _row_number(key: str, path: Path) -> int:
    number = small_int(key)
    if number is None or number < 1:
        raise TraceFormatError(f"not a row number: {key!r}", path=path, expected="a 1-based row number after #")
    return number


__all__ = ["ParquetRowsImporter", "iter_rows", "row_document", "row_trace"]
