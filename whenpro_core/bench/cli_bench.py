"""What ``whenpro bench`` does, apart from argument parsing: plan, resume, run with a
progress bar, then report (:mod:`whenpro_core.bench.runner`, :mod:`.report`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from whenpro_core.attribution.judge import Judge
from whenpro_core.attribution.run import protocol_name
from whenpro_core.attribution.template import load_template, template_sha, templated_protocol
from whenpro_core.bench import runner, shards
from whenpro_core.bench.aggregate import Report
from whenpro_core.bench.ratelimit import local_gate
from whenpro_core.bench.records import Record, ResultsFile
from whenpro_core.bench.report import report_command, spending_line
from whenpro_core.bench.report_files import check_report_dir
from whenpro_core.bench.reviewed import Reviews, check_labels
from whenpro_core.errors import BackendError, ConfigError
from whenpro_core.safety.textsafe import plural
from whenpro_core.storage.fsutil import check_can_write_in

DEFAULT_OUT = "bench-results.jsonl"
#: What ``whenpro bench`` suggests when a report file next to ``--out`` is not whenpro's.
BENCH_REPORT_HINT = "--report-dir ANOTHER_FOLDER, or --no-report; or move the file away"


def _gold_setting(gold: bool, both: bool) -> str:
    return "both" if both else ("gold" if gold else "no-gold")


def _check_template(template: str | Path, protocols: Sequence[str]) -> None:
    """ConfigError unless every protocol is all-at-once and the template compiles."""
    other = [p for p in protocols if protocol_name(p) != "all-at-once"]
    if other:
        raise ConfigError(
            f"--template words the all-at-once request, not {other[0]}", expected="--protocol all-at-once (no --preset)"
        )
    load_template(template)


def _with_template(items: list[runner.WorkItem], path: Path) -> list[runner.WorkItem]:
    """The items worded by the template at ``path``: its absolute path, and the protocol
    renamed ``all-at-once@template:<sha>`` (resume key, record and report label)."""
    sha = template_sha(path)
    return [
        i.model_copy(update={"template": str(path.resolve()), "protocol": templated_protocol(i.protocol, sha)})
        for i in items
    ]


def bench_command(
    dataset: str,
    *,
    protocols: Sequence[str] | str | None = None,
    models: Sequence[str] | str | None = None,
    gold: bool = True,
    both: bool = False,
    where: Sequence[str] | str | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    concurrency: int = 8,
    out: str | Path | None = None,
    tolerance: int = 1,
    retry_errors: bool = False,
    use_cache: bool = True,
    report: bool = True,
    report_dir: str | Path | None = None,
    console: Console | None = None,
    report_hint: str = BENCH_REPORT_HINT,
    labels: str = "reviewed",
    images: str | None = None,
    shard: str | None = None,
    ray: bool = False,
    ray_address: str | None = None,
    ray_shards: int | None = None,
    max_calls_per_s: float | None = None,
    template: str | Path | None = None,
) -> Report | None:
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

    Sharding (:mod:`.shards`): ``ray``/``ray_address`` run the items as Ray tasks
    (:mod:`.ray_backend`; ``ray_shards`` of them, default one per cluster CPU), each
    appending to its own part file; ``shard="K/N"`` runs only this job's share of the items
    into part K and does not report. Any finished run without ``shard`` merges the parts
    into the results file; finished items in any part are skipped. ``max_calls_per_s``
    caps LLM requests per second (cluster-wide on Ray). ``template`` (``--template``) words
    the all-at-once items with a Jinja2 template; the setting is named
    ``all-at-once@template:<sha>``; ConfigError with any other protocol.
    """
    err = Console(stderr=True, soft_wrap=True)  # long lines stay whole in logs
    console = console or Console()
    model_list = runner.split_list(models)
    proto_list = runner.split_list(protocols) or (
        ["all-at-once"] if any(m.lower() != runner.HEURISTIC_MODEL for m in model_list) else ["heuristic"]
    )
    if (limit is not None and limit < 0) or (sample is not None and sample < 0):
        raise ConfigError("--limit and --sample take a number of traces", expected="0 or more")
    runner.settings(proto_list, model_list)  # bad protocols/models fail before any work
    if template is not None:
        _check_template(template, proto_list)
    where_map = runner.parse_where(where)
    shard_k_n = shards.parse_shard(shard) if shard is not None else None
    layout = shards.layout(out or DEFAULT_OUT)
    out_path = layout.merged
    check_can_write_in(out_path.parent, path=out_path, what="results file")
    report = report and shard_k_n is None  # one job's share is not the run: report after all jobs
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
            raise ConfigError(
                f"nothing to run in {dataset}: every trace chosen was rejected in review",
                expected="accepted or pending traces, or --labels built",
            )
    items = runner.plan(sel.rows, proto_list, model_list, _gold_setting(gold, both), tolerance=tolerance)
    if template is not None:
        items = _with_template(items, Path(template))
    done, repaired = shards.done_everywhere(results, layout)
    for line in repaired:
        err.print(line, markup=False, highlight=False)
    todo = runner.pending(items, done, retry_errors=retry_errors)
    already = len(items) - len(todo)
    if shard_k_n is not None:
        todo = [i for i in todo if shards.shard_of(i.key, shard_k_n[1]) == shard_k_n[0]]
    settings = len(items) // max(len(sel.rows), 1)
    notes = [
        f"{plural(len(sel.rows), 'trace')} × {plural(settings, 'setting')} = "
        f"{plural(len(items), 'item')}; {already} already in {results.path}, "
        f"{len(todo)} to run" + (f" (shard {shard})" if shard else "")
    ]
    if sel.unlabelled:
        notes.append(f"{plural(sel.unlabelled, 'trace')} without a ground truth left out")
    if rejected:
        notes.append(f"{plural(rejected, 'trace')} rejected in review left out (--labels built to run them)")
    if sel.bad:
        notes.append(f"{plural(sel.bad, 'trace')} could not be read (files or rows; recorded as errors)")
    judges = (
        runner.make_judges({i.model for i in todo}, use_cache=use_cache, concurrency=concurrency, images=images)
        if todo
        else {}
    )
    if not judges:  # heuristic only: no settings needed, but a broken config is said
        from whenpro_core.config import warn_offline

        warn_offline(lambda line: err.print(line, markup=False, highlight=False, soft_wrap=True))
    if judges:
        notes.append(f"up to {concurrency} LLM calls in flight per model (--concurrency)")
    local_gate(judges, max_calls_per_s)
    for note in notes:
        err.print(note, markup=False, highlight=False)
    try:
        if ray or ray_address:
            stats = _run_on_ray(
                todo, layout, ray_address, ray_shards, concurrency, use_cache, max_calls_per_s, images, err
            )
        elif shard_k_n is not None:
            with ResultsFile(layout.part(shard_k_n[0])) as part:
                stats = _run_with_progress(todo, part, judges, concurrency, err)
        else:
            stats = _run_with_progress(todo, results, judges, concurrency, err)
    finally:
        results.close()
    if todo:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(stats.kinds.items()))
        err.print(
            f"ran {stats.written} items in {stats.seconds:.1f}s; {stats.errors} failed"
            + (f" ({kinds})" if kinds else ""),
            markup=False,
            highlight=False,
        )
        if judges:
            err.print(spending_line(stats.usage, stats.spent), markup=False, highlight=False)
    _merge_or_say(layout, shard_k_n, err)
    written = None
    if report:
        written = report_command(
            [results.path], report_dir, tolerance=tolerance, console=console, hint=report_hint, labels=labels
        )
    backend_failures = stats.kinds.get("backend", 0)
    if backend_failures:  # a model/backend failure is status 2 (README), after the report
        raise BackendError(
            f"{plural(backend_failures, 'item')} failed on the model backend "
            "(recorded; run the same command again to retry them)",
            path=results.path,
        )
    return written


def _run_on_ray(
    todo: list[runner.WorkItem],
    layout: shards.Layout,
    address: str | None,
    ray_shards: int | None,
    concurrency: int,
    use_cache: bool,
    max_calls_per_s: float | None,
    images: str | None,
    err: Console,
) -> runner.RunStats:
    if not todo:
        return runner.RunStats()
    from whenpro_core.bench.ray_backend import run_on_ray  # deliberate lazy import: Ray is heavy

    def on_shard(index: int, stats: runner.RunStats) -> None:
        err.print(
            f"shard {index}: {plural(stats.written, 'item')}, {stats.errors} failed ({layout.part(index).name})",
            markup=False,
            highlight=False,
        )

    return run_on_ray(
        todo,
        layout,
        address=address,
        shards=ray_shards,
        concurrency=concurrency,
        use_cache=use_cache,
        max_calls_per_s=max_calls_per_s,
        images=images,
        on_shard=on_shard,
    )


def _merge_or_say(layout: shards.Layout, shard_k_n: tuple[int, int] | None, err: Console) -> None:
    if shard_k_n is not None:
        err.print(
            f"shard {shard_k_n[0]}/{shard_k_n[1]} done into {layout.part(shard_k_n[0])}; when every "
            f"shard is done: whenpro report {layout.parts} (or rerun without --shard to merge)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return
    merged = shards.merge_parts(layout)
    if merged:
        err.print(f"merged {plural(merged, 'part file')} into {layout.merged}", markup=False, highlight=False)


def _run_with_progress(
    todo: list[runner.WorkItem], results: ResultsFile, judges: dict[str, Judge], concurrency: int, err: Console
) -> runner.RunStats:
    if not todo:
        return runner.RunStats()
    progress = Progress(
        SpinnerColumn(),
        TextColumn("[bold]bench"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("errors {task.fields[errors]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err,
        disable=not err.is_terminal,
        transient=False,
    )
    task = progress.add_task("bench", total=len(todo), errors=0)
    failed = 0

    def on_record(rec: Record) -> None:
        nonlocal failed
        failed += bool(rec.error)
        progress.update(task, advance=1, errors=failed)

    async def run() -> runner.RunStats:
        try:
            return await runner.run_items(todo, results, concurrency=concurrency, judges=judges, on_record=on_record)
        except asyncio.CancelledError:  # ctrl+c: a thread mid-item cannot be stopped, say so
            progress.stop()
            err.print(
                "whenpro: stopping: letting the items in flight finish (finished records "
                "are kept; run the same command again to resume)",
                highlight=False,
                soft_wrap=True,
            )
            raise

    with progress:
        return asyncio.run(run())
