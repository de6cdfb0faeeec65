"""Deciding what a path given to ``whenpro view`` is: one trace, one file holding several
traces, or a dataset (folder, glob, JSONL release) whose rows are listed by
:func:`whenpro_core.formats.walk`.

A single-trace file is parsed once: the loaded trace is returned, not re-read.
"""

from __future__ import annotations

import glob as globlib
from dataclasses import dataclass
from pathlib import Path

from whenpro_core.errors import TraceFormatError, WhenproError
from whenpro_core.formats.base import FileImporter, LoadContext, summarize
from whenpro_core.formats.registry import (
    error_summary,
    find_root,
    glob_miss,
    iter_files,
    load_trace,
    sniff,
    split_ref,
    summarize_file,
)
from whenpro_core.formats.whenpro_files import is_results_file
from whenpro_core.storage.fsutil import exists
from whenpro_core.storage.gcpause import paused_gc
from whenpro_core.trace.model import Trace, TraceSummary


def is_glob(target: str) -> bool:
    """True when ``target`` is a glob pattern rather than an existing path."""
    return any(ch in target for ch in "*?[") and not exists(target)


def check_target(target: str) -> None:
    """Raise TraceFormatError (one line for the CLI) when ``target`` names nothing:
    no such file or folder, a folder without a trace file, or a glob that matches no file."""
    if is_glob(target):
        if not any(Path(p).is_file() for p in globlib.iglob(target, recursive=True)):
            raise glob_miss(target)
        return
    path, _key = split_ref(target)
    if not path.exists():
        raise TraceFormatError("no such file or folder", path=path)
    if path.is_dir() and next(iter_files(path), None) is None:  # as info and ls say it
        raise TraceFormatError(
            "folder holds no trace files", path=path, expected="a trace file, or a folder of trace files"
        )


@dataclass
class Opened:
    """What a target turned out to be. Exactly one of:

    * ``trace``: the target is one trace (a single-trace file, or ``path#key``);
    * ``rows``: one file holding several traces (or a file that failed to import, as
      one error row), listed without walking;
    * ``dataset`` True: a folder, glob or indexed file (JSONL release) to list with
      :func:`whenpro_core.formats.walk` (rows stream in);
    * ``results``: the path of a benchmark results file (``whenpro bench`` records,
      :func:`whenpro_core.formats.whenpro_files.is_results_file`), for the results screen.
    """

    trace: Trace | None = None
    rows: list[TraceSummary] | None = None
    dataset: bool = False
    results: str | None = None


@paused_gc()
def open_target(target: str, *, strict: bool = False) -> Opened:
    """Classify and, for a single trace, load ``target``.

    A target that names nothing raises TraceFormatError (see :func:`check_target`).
    A target that is one file (or ``path#key``) and fails to import, or holds no
    trace, becomes one error row; with ``strict`` it raises that WhenproError instead
    (``whenpro view FILE`` then prints one line and exits 2, like ``whenpro info``).
    Folders, globs and indexed files never raise for their files: those are rows."""
    check_target(target)
    if is_glob(target):
        return Opened(dataset=True)
    path, key = split_ref(target)
    if path.is_dir():
        return Opened(dataset=True)

    def failed(exc: WhenproError) -> Opened:
        located = exc.located(path=path)
        if strict:
            raise located
        return Opened(rows=[error_summary(path, located.one_line())])

    if key is not None:
        try:
            return Opened(trace=load_trace(target))
        except WhenproError as exc:
            return failed(exc)
    if is_results_file(path):
        return Opened(results=str(path))
    try:
        chosen = sniff(path)
        if isinstance(chosen, FileImporter):
            if chosen.not_a_trace:  # whenpro's own verdicts file, a validation log
                return Opened(rows=summarize_file(path, find_root(path), direct=True))
            if chosen.single_trace:  # a session file: its one trace
                return Opened(trace=chosen.load(path, None, find_root(path)))
            return Opened(dataset=True)
        importer, doc = chosen
        traces = importer.load(doc, LoadContext(path=path, root=find_root(path)))
    except WhenproError as exc:
        return failed(exc)
    if len(traces) == 1:
        return Opened(trace=traces[0])
    if not traces:
        return failed(TraceFormatError("file holds no traces", path=path))
    return Opened(rows=[summarize(t) for t in traces])


def load_one(target: str) -> Trace:
    """The one trace ``target`` names, for commands that act on a single trace
    (``attribute``): ``path#key``, or a file that holds exactly one trace. A file holding
    several raises TraceFormatError naming ``PATH#key`` rather than silently taking the
    first (as ``convert`` refuses to write several traces to one file)."""
    path, key = split_ref(target)
    if key is None and path.is_file():
        rows = summarize_file(path, find_root(path), direct=True)
        if len(rows) > 1:
            example = rows[0].ref() if rows[0].key is not None else f"{path}#1"
            raise TraceFormatError(
                f"file holds {len(rows)} traces; name one",
                path=path,
                expected=f"PATH#key, e.g. {example} (whenpro ls {path} lists the keys)",
            )
    return load_trace(target)
