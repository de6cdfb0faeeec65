"""What ``whenpro bench`` does, apart from argument parsing: plan, resume, run with a
progress bar, then report (:mod:`whenpro_core.bench.runner`, :mod:`.report`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from whenpro_core.bench import runner
from whenpro_core.bench.aggregate import Report
from whenpro_core.bench.records import Record, ResultsFile
from whenpro_core.bench.report import report_command
from whenpro_core.bench.report_files import check_report_dir
from whenpro_core.bench.reviewed import Reviews, check_labels
from whenpro_core.errors import BackendError, ConfigError
from whenpro_core.fsutil import check_can_write_in
from whenpro_core.textsafe import plural

DEFAULT_OUT = "bench-results.jsonl"
#: What ``whenpro bench`` suggests when a report file next to ``--out`` is not whenpro's.
BENCH_REPORT_HINT = ("--report-dir ANOTHER_FOLDER, or --no-report; or move the file away")


def _gold_setting(gold: bool, both: bool) -> str:
    return "both" if both else ("gold" if gold else "no-gold")


def bench_command(dataset: str, *, protocols: Sequence[str] | str | None = None,
                  models: Sequence[str] | str | None = None, gold: bool = True,
                  both: bool = False, where: Sequence[str] | str | None = None,
                  limit: int | None = None, sample: int | None = None, seed: int = 0,
                  concurrency: int = 8, out: str | Path | None = None, tolerance: int = 1,
                  retry_errors: bool = False, use_cache: bool = True, report: bool = True,
                  report_dir: str | Path | None = None, console: Console | None = None,
                  report_hint: str = BENCH_REPORT_HINT, labels: str = "reviewed") -> Report | None:
    """Run a benchmark and report on the whole results file.

    Protocols default to ``all-at-once`` when models are given, else ``heuristic``.
    Notes and progress go to stderr; the report to ``console`` (stdout), its files to
    ``report_dir`` (default: the results file's folder). Returns the report (``None``
    with ``report=False``). Raises WhenproError subclasses for bad input (the CLI prints
    one line and exits 2), among them a ConfigError, before any item runs, when a report
    file there was not written by whenpro (``report_hint`` says what to do instead), and
    a BackendError after the run (and its report) when items failed on the model backend.
    With ``labels="reviewed"`` (the default) traces rejected in review are not run and
    the report scores relabelled ones with their new label (:mod:`.reviewed`).
    """
    err = Console(stderr=True, soft_wrap=True)  # long lines stay whole in logs
    console = console or Console()
    model_list = runner.split_list(models)
    proto_list = runner.split_list(protocols) or (
        ["all-at-once"] if any(m.lower() != runner.HEURISTIC_MODEL for m in model_list)
        else ["heuristic"])
    if (limit is not None and limit < 0) or (sample is not None and sample < 0):
        raise ConfigError("--limit and --sample take a number of traces", expected="0 or more")
    runner.settings(proto_list, model_list)  # bad protocols/models fail before any work
    where_map = runner.parse_where(where)
    out_path = Path(out or DEFAULT_OUT)
    check_can_write_in(out_path.parent, path=out_path, what="results file")
    if report:
        report_dir = report_dir if report_dir is not None else out_path.parent
        check_report_dir(report_dir, report_hint)
        check_can_write_in(report_dir, what="report folder")
    results = ResultsFile(out_path)  # a folder or a foreign file is refused here
    if results.repaired:
        err.print(f"{results.path}: {results.repaired}", markup=False, highlight=False)
    check_labels(labels)
    sel = runner.select(dataset, where=where_map, limit=limit, sample=sample, seed=seed)
    rejected = 0
    if labels == "reviewed":
        reviews = Reviews()
        kept_rows = [r for r in sel.rows if r.error or reviews.decision(r.ref(), r.id) is not False]
        rejected, sel.rows = len(sel.rows) - len(kept_rows), kept_rows
        if not sel.rows:
            raise ConfigError(f"nothing to run in {dataset}: every trace chosen was rejected in review",
                              expected="accepted or pending traces, or --labels built")
    items = runner.plan(sel.rows, proto_list, model_list,
                        _gold_setting(gold, both), tolerance=tolerance)
    todo = runner.pending(items, results.done, retry_errors=retry_errors)
    settings = len(items) // max(len(sel.rows), 1)
    notes = [f"{plural(len(sel.rows), 'trace')} × {plural(settings, 'setting')} = "
             f"{plural(len(items), 'item')}; {len(items) - len(todo)} already in {results.path}, "
             f"{len(todo)} to run"]
    if sel.unlabelled:
        notes.append(f"{plural(sel.unlabelled, 'trace')} without a ground truth left out")
    if rejected:
        notes.append(f"{plural(rejected, 'trace')} rejected in review left out (--labels built to run them)")
    if sel.bad:
        notes.append(f"{plural(sel.bad, 'trace')} could not be read (files or rows; recorded as errors)")
    judges = runner.make_judges({i.model for i in todo}, use_cache=use_cache) if todo else {}
    if not judges:  # heuristic only: no settings needed, but a broken config is said
        from whenpro_core.config import warn_offline

        warn_offline(lambda line: err.print(line, markup=False, highlight=False, soft_wrap=True))
    for note in notes:
        err.print(note, markup=False, highlight=False)
    try:
        stats = _run_with_progress(todo, results, judges, concurrency, err)
    finally:
        results.close()
    if todo:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(stats.kinds.items()))
        err.print(f"ran {stats.written} items in {stats.seconds:.1f}s; {stats.errors} failed"
                  + (f" ({kinds})" if kinds else ""), markup=False, highlight=False)
    written = None
    if report:
        written = report_command([results.path], report_dir, tolerance=tolerance, console=console,
                                 hint=report_hint, labels=labels)
    backend_failures = stats.kinds.get("backend", 0)
    if backend_failures:  # a model/backend failure is status 2 (README), after the report
        raise BackendError(f"{plural(backend_failures, 'item')} failed on the model backend "
                           "(recorded; run the same command again to retry them)",
                           path=results.path)
    return written


def _run_with_progress(todo: list[runner.WorkItem], results: ResultsFile, judges: dict,
                       concurrency: int, err: Console) -> runner.RunStats:
    if not todo:
        return runner.RunStats()
    progress = Progress(SpinnerColumn(), TextColumn("[bold]bench"), BarColumn(),
                        MofNCompleteColumn(), TextColumn("errors {task.fields[errors]}"),
                        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                        console=err, disable=not err.is_terminal, transient=False)
    task = progress.add_task("bench", total=len(todo), errors=0)
    failed = 0

    def on_record(rec: Record) -> None:
        nonlocal failed
        failed += bool(rec.error)
        progress.update(task, advance=1, errors=failed)

    async def run() -> runner.RunStats:
        try:
            return await runner.run_items(todo, results, concurrency=concurrency, judges=judges,
                                          on_record=on_record)
        except asyncio.CancelledError:  # ctrl+c: a thread mid-item cannot be stopped, say so
            progress.stop()
            err.print("whenpro: stopping: letting the items in flight finish (finished records "
                      "are kept; run the same command again to resume)", highlight=False,
                      soft_wrap=True)
            raise

    with progress:
        return asyncio.run(run())
