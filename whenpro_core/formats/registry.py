"""Pick the importer for a path by sniffing its content (never its name), load traces,
and walk datasets cheaply.

A trace reference is a path, optionally followed by ``#key`` to select one trace inside
a file that holds several (``data/text.jsonl#12`` is row 12, 1-based; ``log.eval#s1``
is a sample id). Folders and globs are datasets: :func:`walk` lists their traces as
:class:`~whenpro_core.trace.model.TraceSummary` rows, reporting bad files as error rows and
carrying on.
"""

from __future__ import annotations

import glob as globlib
import importlib
import os
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from whenpro_core.errors import TraceFormatError, UnknownFormatError, WhenproError
from whenpro_core.formats.base import (
    DocumentImporter,
    FileImporter,
    LoadContext,
    is_json_lines_head,
    read_json_file,
    require_regular_file,
)
from whenpro_core.storage.fsutil import exists
from whenpro_core.storage.gcpause import paused_gc
from whenpro_core.trace.coords import small_int
from whenpro_core.trace.model import Trace, TraceSummary

HEAD_BYTES = 64 * 1024

#: Where :func:`load_trace` and :func:`load_traces` send each recoverable import problem
#: (``Trace.extras["whenpro_warnings"]``, e.g. skipped bad lines) as ``PATH: note``, once
#: per file and note. ``None`` (the default, the library) stays silent; the CLI prints
#: them on stderr.
warning_sink: Callable[[str], None] | None = None
_reported: set[str] = set()


def _report_warnings(traces: list[Trace]) -> None:
    for trace in traces:
        _report(trace.source.path or trace.id, trace.extras.get("whenpro_warnings") or ())


def _report(where: str, notes: Iterable[str]) -> None:
    if warning_sink is None:
        return
    for note in notes:
        line = f"{where}: {note}"
        if line not in _reported:
            _reported.add(line)
            warning_sink(line)


#: ``module:Class`` of every importer. Modules are imported on first use only.
IMPORTERS: list[str] = [
    "whenpro_core.formats.native:NativeImporter",
    "whenpro_core.formats.build_meta:BuildManifestImporter",
    "whenpro_core.formats.build_meta:BuildRootManifestImporter",
    "whenpro_core.formats.build_meta:BuildProvenanceImporter",
    "whenpro_core.formats.build_meta:ValidationLogImporter",
    "whenpro_core.formats.whenpro_files:VerdictsImporter",
    "whenpro_core.formats.whenpro_files:BenchResultsImporter",
    "whenpro_core.formats.whenpro_files:BenchReportImporter",
    "whenpro_core.formats.whenpro_files:KeyframesIndexImporter",
    "whenpro_core.formats.whowhen:WhoWhenImporter",
    "whenpro_core.formats.parquet_rows:ParquetRowsImporter",
    "whenpro_core.formats.whowhen_pro:WhoWhenProImporter",
    "whenpro_core.formats.whowhen_pro_jsonl:WhoWhenProJsonlImporter",
    "whenpro_core.formats.auxiliary:AuxiliaryImporter",
    "whenpro_core.formats.agentrx:MagenticListImporter",
    "whenpro_core.formats.agentrx:TauBenchImporter",
    "whenpro_core.formats.mast:MastImporter",
    "whenpro_core.formats.otel:OtlpImporter",
    "whenpro_core.formats.trail:TrailImporter",
    "whenpro_core.formats.traceelephant:TraceElephantImporter",
    "whenpro_core.formats.inspect_ai:InspectJsonImporter",
    "whenpro_core.formats.inspect_ai:InspectEvalImporter",
    "whenpro_core.formats.openhands:OpenHandsImporter",
    "whenpro_core.formats.openhands:OpenHandsJsonlImporter",
    "whenpro_core.formats.swe_agent:SweAgentImporter",
    "whenpro_core.formats.swe_agent:MiniSweAgentImporter",
    "whenpro_core.formats.claude_code:ClaudeCodeImporter",
    "whenpro_core.formats.codex_cli:CodexRolloutImporter",
    "whenpro_core.formats.gemini_cli:GeminiJsonImporter",
    "whenpro_core.formats.atif:AtifImporter",
    "whenpro_core.formats.langsmith:LangSmithImporter",
    "whenpro_core.formats.gemini_cli:GeminiJsonlImporter",
    "whenpro_core.formats.native_lines:NativeLinesImporter",
    "whenpro_core.formats.chat:ChatImporter",
    "whenpro_core.formats.chat:ChatJsonlImporter",
]

#: What JSON lines whenpro reads, for the error of JSON lines no importer recognises.
JSON_LINES_FORMATS = (
    "JSON lines of a supported format: whenpro step lines, a Who&When Pro JSONL release, OpenAI chat "
    "messages, OpenHands output, OTLP exports, or a Claude Code, Codex CLI or Gemini CLI session "
    "(see docs/formats.md, Supported formats)"
)
#: File suffixes a dataset walk looks at (content still decides the format).
WALK_SUFFIXES = {".json", ".jsonl", ".traj", ".eval", ".ndjson", ".parquet"}
#: Folder names a dataset walk never enters.
SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "venv", "assets", "video_assets"}
#: Marker files/folders of a dataset root (media paths resolve from here).
ROOT_MARKERS = ("taxonomy.yaml", "video_assets", "assets", "data_release")


def register(spec: str) -> None:
    """Add an importer (``"package.module:Class"``) to the registry (plugins, tests)."""
    if spec not in IMPORTERS:
        IMPORTERS.append(spec)


@cache
def _importers_for(specs: tuple[str, ...]) -> tuple[list[DocumentImporter], list[FileImporter]]:
    docs: list[DocumentImporter] = []
    files: list[FileImporter] = []
    for spec in specs:
        module, _, cls = spec.partition(":")
        try:
            obj = getattr(importlib.import_module(module), cls)()
        except (ImportError, AttributeError):
            continue
        (files if isinstance(obj, FileImporter) else docs).append(obj)
    docs.sort(key=lambda i: -i.priority)
    files.sort(key=lambda i: -i.priority)
    return docs, files


def _importers() -> tuple[list[DocumentImporter], list[FileImporter]]:
    return _importers_for(tuple(IMPORTERS))


def split_ref(ref: str | Path) -> tuple[Path, str | None]:
    """Split ``path#key`` (at the last ``#``) into the path and the key (``None`` when
    absent). The key never reaches the file system, so a key of any length is a key:
    only when the part before the ``#`` is not an existing file is the whole text tried
    as a file name (a ``#`` in an existing file's name is kept)."""
    text = str(ref)
    if "#" not in text:
        return Path(text), None
    path, _, key = text.rpartition("#")
    if exists(path) or not exists(text):
        return Path(path), key or None
    return Path(text), None


def find_root(path: Path, stop: Path | None = None) -> Path:
    """The dataset root for ``path``: the nearest ancestor folder holding a
    ``taxonomy.yaml``, ``assets/``, ``video_assets/`` or ``data_release/`` (at most six
    levels up, never above ``stop``), else the file's own folder.

    The climb follows the path as given (made absolute, ``..`` folded), not the target
    of a symlink on the way: the root stays an ancestor of the trace's
    ``source.path``. Media lookups resolve links themselves (:mod:`whenpro_core.media.paths`)."""
    folder = path if path.is_dir() else path.parent
    folder = Path(os.path.abspath(folder))
    stop = Path(os.path.abspath(stop)) if stop else None
    for candidate in [folder, *list(folder.parents)[:6]]:
        if any((candidate / m).exists() for m in ROOT_MARKERS):
            return candidate
        if stop is not None and candidate == stop:
            break
    return folder


def _read_head(path: Path) -> bytes:
    require_regular_file(path)
    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except IsADirectoryError:
        raise TraceFormatError("is a folder, not a trace file", path=path) from None
    except FileNotFoundError:
        raise TraceFormatError("no such file", path=path) from None
    except OSError as exc:
        raise TraceFormatError(f"cannot read file: {exc.strerror}", path=path) from None


def sniff(path: Path) -> FileImporter | tuple[DocumentImporter, Any]:
    """Choose the importer for ``path`` from its content.

    Returns a :class:`FileImporter`, or a :class:`DocumentImporter` together with the
    parsed document (so the file is parsed once). Raises :class:`UnknownFormatError`
    when nothing matches (JSON lines no line importer takes included: they are never read
    whole as a document), TraceFormatError when the file is unreadable or not JSON.
    """
    head = _read_head(path)
    docs, files = _importers()
    for imp in files:
        if imp.match_head(head, path):
            return imp
    if is_json_lines_head(head):
        raise UnknownFormatError("no importer recognises these JSON lines", path=path, expected=JSON_LINES_FORMATS)
    doc = read_json_file(path)
    for dimp in docs:
        if dimp.matches(doc):
            return dimp, doc
    raise UnknownFormatError(
        "no importer recognises this content",
        path=path,
        expected="a Who&When, Who&When Pro or whenpro trace, or another supported format "
        "(see docs/formats.md, Supported formats)",
    )


@paused_gc()
def load_trace(ref: str | Path, *, root: Path | None = None) -> Trace:
    """Load one trace from ``path`` or ``path#key``.

    Raises TraceFormatError (or a subclass) naming the file, the JSON path or row, and
    what was expected; ``UnknownFormatError`` when no importer recognises the content.
    """
    path, key = split_ref(ref)
    root = root or find_root(path)
    chosen = sniff(path)
    try:
        if isinstance(chosen, FileImporter):
            trace = chosen.load(path, key, root)
        else:
            imp, doc = chosen
            trace = _select(imp.load(doc, LoadContext(path=path, root=root, key=key)), key, path)
    except WhenproError as exc:
        raise exc.located(path=path) from None
    _report_warnings([trace])
    return trace


@paused_gc()
def load_traces(path: str | Path, *, root: Path | None = None) -> list[Trace]:
    """Every trace in one file."""
    path = Path(path)
    root = root or find_root(path)
    chosen = sniff(path)
    if isinstance(chosen, FileImporter):
        traces = chosen.load_all(path, root)
    else:
        imp, doc = chosen
        traces = imp.load(doc, LoadContext(path=path, root=root))
    _report_warnings(traces)
    return traces


def _select(traces: list[Trace], key: str | None, path: Path) -> Trace:
    if not traces:
        raise TraceFormatError("file holds no traces", path=path)
    if key is None:
        return traces[0]
    for t in traces:
        if t.source.key == key or t.id == key:
            return t
    position = small_int(key)
    if position is not None and 1 <= position <= len(traces):
        return traces[position - 1]
    raise TraceFormatError(
        f"no trace {key!r} in this file", path=path, expected=f"a key 1..{len(traces)} or a trace id"
    )


@paused_gc()
def summarize_file(path: Path, root: Path | None = None, *, direct: bool = False) -> list[TraceSummary]:
    """Listing rows for one file; a bad file gives one error row instead of raising.

    A file that holds no traces (whenpro's own results and verdict files, label files)
    gives no rows in a dataset walk; ``direct`` (the file was named by itself, as in
    ``whenpro ls FILE``) gives one error row saying what it is instead."""
    root = root or find_root(path)
    try:
        chosen = sniff(path)
        if isinstance(chosen, FileImporter):
            rows = list(chosen.summaries(path, root))
            if not rows and direct:
                chosen.load(path, None, root)
            return _reported_rows(rows)
        imp, doc = chosen
        ctx = LoadContext(path=path, root=root)
        rows = imp.summaries(doc, ctx)
        if not rows and direct:
            imp.load(doc, ctx)
        return _reported_rows(rows)
    except WhenproError as exc:
        return [error_summary(path, exc.located(path=path).one_line())]


def _reported_rows(rows: list[TraceSummary]) -> list[TraceSummary]:
    for row in rows:
        _report(row.path or row.id, row.warnings)
    return rows


def error_summary(path: Path, message: str) -> TraceSummary:
    """An error row for a file that failed to import."""
    return TraceSummary(id=path.stem, path=str(path), error=message)


def names_a_file(path: Path) -> bool:
    """True when ``path`` is a file, or a pipe or device named by itself: read (and
    refused, :func:`~whenpro_core.formats.base.require_regular_file`) as one bad file,
    never walked as a dataset."""
    return path.exists() and not path.is_dir()


def glob_miss(text: str) -> TraceFormatError:
    """The error for a path that does not exist and, read as a glob, matches no file. A
    name whose only glob character is ``[`` (``run[2].json``) is most likely a file name."""
    if any(ch in text for ch in "*?"):
        return TraceFormatError("glob matches no file", path=text, expected="a pattern matching trace files")
    return TraceFormatError("no such file or folder (nor any file matching it as a glob pattern)", path=text)


def iter_files(target: str | Path) -> Iterator[Path]:
    """The candidate trace files of a file, folder (walked recursively, sorted with
    numbers in natural order) or glob pattern."""
    text = str(target)
    if not text.strip():
        raise TraceFormatError("empty path", expected="a trace file, folder or glob")
    if any(ch in text for ch in "*?[") and not exists(text):
        matches = [Path(m) for m in sorted(globlib.glob(text, recursive=True), key=natural_key)]
        files = [m for m in matches if not m.is_dir()]  # a pipe or device: an error row
        if not files:
            raise glob_miss(text)
        yield from files
        return
    p = Path(text)
    if names_a_file(p):  # a pipe or device too: its row says what it is
        yield p
        return
    if not p.is_dir():
        raise TraceFormatError("no such file or folder", path=p)
    for dirpath, dirnames, filenames in os.walk(p):
        dirnames[:] = sorted((d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")), key=natural_key)
        for name in sorted(filenames, key=natural_key):
            if Path(name).suffix.lower() in WALK_SUFFIXES:
                yield Path(dirpath) / name


def walk(target: str | Path) -> Iterator[TraceSummary]:
    """List every trace under ``target`` (file, ``file#key``, folder or glob) cheaply: JSONL releases
        by byte offset without decoding trajectories, documents without building models
        when their importer allows. Bad files become error rows; the walk carries on. Files
    that hold no traces (whenpro's own results, verdict and report files, label files) give
    no rows, except when ``target`` is that file itself (one error row saying what it is).
    A sub-agent file merged into a parent session listed in the same walk (a Claude Code
    ``agent-*.jsonl``, a Codex child rollout found after its parent) is not listed again."""
    path, key = split_ref(target)
    if key is not None and path.is_file():  # path#key: that one trace (docs/commands.md: PATH)
        rows = [
            r
            for r in summarize_file(path, find_root(path), direct=True)
            if r.key == key or (r.error is None and r.id == key)
        ]
        if not rows:  # no listing row has that key: the loader says why, or finds it by id
            trace = load_trace(str(target))
            rows = [r for r in summarize_file(path, find_root(path), direct=True) if r.id == trace.id]
        yield from rows[:1]
        return
    start = Path(str(target)) if Path(str(target)).exists() else None
    yield from _walk_files(target, start)


def _walk_files(target: str | Path, start: Path | None) -> Iterator[TraceSummary]:
    """The rows of every file of ``target`` (``start``: it, when it exists), less the
    sub-agent files merged into a session listed in the same walk (:func:`without_merged`)."""
    direct = start is not None and start.is_file()
    stop = start if start and start.is_dir() else None
    files = ((path, summarize_file(path, find_root(path, stop=stop), direct=direct)) for path in iter_files(target))
    yield from without_merged(files, direct=direct)


def without_merged(files: Iterable[tuple[Path, list[TraceSummary]]], *, direct: bool) -> Iterator[TraceSummary]:
    """The rows of each ``(file, its rows)`` of one walk, in order, less the sub-agent files
    merged into a session listed in the same walk: the one rule for every listing. Claude
    Code ``agent-*.jsonl`` rows wait until the end of the walk (their session may come
    later); a Codex child rollout is dropped when its parent came first. Error rows are
    always kept; ``direct`` (the walk names one file) keeps every row."""
    merged: set[str] = set()  # sub-agent files already listed inside their parent session
    held: list[TraceSummary] = []
    for path, rows in files:
        for row in rows:
            merged.update(row.merged)
        if not direct and path.name.startswith("agent-"):
            held += rows
            continue
        yield from (r for r in rows if r.error or os.path.normpath(r.path) not in merged)
    yield from (r for r in held if r.error or os.path.normpath(r.path) not in merged)


def natural_key(text: str | Path) -> list[Any]:
    """Sort key that orders ``2.json`` before ``10.json`` (Who&When file names)."""
    return [int(tok) if tok.isdigit() else tok.lower() for tok in re.split(r"(\d+)", str(text))]
