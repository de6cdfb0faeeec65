"""``whenpro bench``: plan, resume, run with a progress bar, then
report (:mod:`whenpro_core.bench.runner`, :mod:`whenpro_core.cli.report`).

Notes and progress go to stderr, the report to stdout."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

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

from whenpro_core.attribution.protocols import PRESET_PROTOCOLS, preset_protocol, protocol_name
from whenpro_core.attribution.template import load_template, template_sha, templated_protocol
from whenpro_core.bench import results_parts, runner
from whenpro_core.bench.aggregate import Report
from whenpro_core.bench.records import Record, ResultsFile, absolute_ref
from whenpro_core.bench.report import spending_line
from whenpro_core.bench.report_files import DEFAULT_RESULTS_NAME, check_report_dir, report_names
from whenpro_core.bench.reviewed import Reviews, check_labels
from whenpro_core.bench.scope import Scope
from whenpro_core.cli import output
from whenpro_core.cli.options import not_together
from whenpro_core.cli.report import ReportOptions, report_command
from whenpro_core.errors import BackendError, ConfigError
from whenpro_core.formats.build_meta import unfinished_build_note
from whenpro_core.library.listing import RowFilter
from whenpro_core.safety.textsafe import plural
from whenpro_core.scale import shards
from whenpro_core.scale.ratelimit import local_gate
from whenpro_core.storage.fsutil import check_can_write_in

DEFAULT_OUT = DEFAULT_RESULTS_NAME
#: What ``whenpro bench`` suggests when a report file next to ``--out`` is not whenpro's.
BENCH_REPORT_HINT = "--report-dir ANOTHER_FOLDER, or --no-report; or move the file away"


@dataclass(frozen=True)
class BenchOptions:
    """The options of one ``whenpro bench`` run, as typed (built once by the command, then
    passed whole). ``protocols``/``models``: comma-separated names or lists (default
    all-at-once with a model, else heuristic); ``gold``/``both``: the gold-answer setting;
    ``where``: ``KEY=VALUE`` filters; ``limit``/``sample`` (with ``seed``): which traces;
    ``concurrency``: items in flight; ``out``: the results JSONL (default
    ``bench-results.jsonl``); ``tolerance``: k of the ±k step accuracy; ``report``/
    ``report_dir``: whether and where the report is written; ``labels``: ``reviewed`` or
    ``built``; ``images``: ``on``/``off``/``None`` (config); ``base_url``: the provider's;
    ``shard`` (``K/N``), ``ray``, ``ray_address``, ``ray_shards``, ``max_calls_per_s``:
    sharding and rate limit; ``template``: a Jinja2 file wording the all-at-once items."""

    protocols: Sequence[str] | str | None = None
    models: Sequence[str] | str | None = None
    gold: bool = True
    both: bool = False
    where: Sequence[str] | str | None = None
    limit: int | None = None
    sample: int | None = None
    seed: int = 0
    concurrency: int = 8
    out: str | Path | None = None
    tolerance: int = 1
    retry_errors: bool = False
    use_cache: bool = True
    report: bool = True
    report_dir: str | Path | None = None
    labels: str = "reviewed"
    images: str | None = None
    base_url: str | None = None
    shard: str | None = None
    ray: bool = False
    ray_address: str | None = None
    ray_shards: int | None = None
    max_calls_per_s: float | None = None
    template: str | Path | None = None


def bench(
    dataset: str, options: BenchOptions, *, preset: str | None, gold_flags: tuple[bool, bool] = (False, False)
) -> Report | None:
    """``whenpro bench`` as typed: ``gold_flags`` says whether ``--gold`` and ``--no-gold``
    were given (the gold answer is shown unless ``--no-gold``); ``preset`` turns the
    protocols into the published harness's (whowhen-pro never shows the gold answer);
    options that contradict each other are one ConfigError; then :func:`bench_command`
    with ``options``."""
    if all(gold_flags):  # two flags: typer's --gold/--no-gold pair let the last one win
        not_together("--gold", "--no-gold", expected="--gold, --no-gold or --both")
    options = replace(options, gold=not gold_flags[1])
    if preset:
        given = options.protocols or "all-at-once"
        names = given.split(",") if isinstance(given, str) else list(given)
        protocols = ",".join(preset_protocol(preset, p) for p in names)
        options = replace(options, protocols=protocols)
        if protocols.startswith("whowhen-pro:"):
            options = replace(options, gold=False, both=False)
    if options.both and not options.gold:
        not_together("--both", "--no-gold", expected="--both (runs with and without the gold answer)")
    if options.limit is not None and options.sample is not None:
        not_together("--limit", "--sample")
    if options.shard is not None and (options.ray or options.ray_address):
        not_together("--shard", "--ray", expected="--shard K/N (job arrays) or --ray (Ray shards itself)")
    return bench_command(dataset, options)


@dataclass
class _Outputs:
    """Where a bench run writes: the results ``layout`` (merged file and part files), the
    shard ``(K, N)`` this job runs (``None``: all), and the report folder (``None``: no report)."""

    layout: shards.Layout
    shard: tuple[int, int] | None
    report_dir: str | Path | None


@dataclass
class _Work:
    """The planned ``items``, the ``todo`` among them, how many were ``already`` done, and
    the selection's notes (``rows`` chosen, ``unlabelled``, ``rejected``, ``bad``)."""

    items: list[runner.WorkItem]
    todo: list[runner.WorkItem]
    already: int
    sel: runner.Selection
    rejected: int


def bench_command(
    dataset: str,
    options: BenchOptions = BenchOptions(),
    *,
    console: Console | None = None,
    report_hint: str = BENCH_REPORT_HINT,
) -> Report | None:
    """Run a benchmark and report on the items of its plan.

    Protocols default to ``all-at-once`` when models are given, else ``heuristic``.
    Notes and progress go to stderr; the report to ``console`` (stdout), its files to
    ``report_dir`` (default: the results file's folder). The report counts only this run's
    items (the traces the dataset holds now, with these settings): other records of the
    results file stay there, left out of the report with one line saying why
    (:mod:`whenpro_core.bench.scope`). Returns the report (``None`` with ``report=False``).
    Raises WhenproError subclasses for bad input (the CLI prints one line and exits 2),
    among them a ConfigError, before any item runs, when a report file there was not
    written by whenpro (``report_hint`` says what to do instead) or no trace chosen could
    be read, after the run (no report written) when no item of the plan was scored, and
    a BackendError after the run (and its report) when items failed on the model backend.
    With ``labels="reviewed"`` (the default) traces rejected in review are not run and
    the report scores relabelled ones with their new label (:mod:`whenpro_core.bench.reviewed`).

    Sharding (:mod:`whenpro_core.scale.shards`): ``ray``/``ray_address`` run the items as
    Ray tasks (:mod:`whenpro_core.scale.ray_backend`; ``ray_shards`` of them, default one per
    cluster CPU), each appending to its own part file; ``shard="K/N"`` runs only this job's
    share of the items into part K and does not report. Any finished run without ``shard``
    merges the parts into the results file; finished items in any part are skipped.
    ``max_calls_per_s`` caps LLM requests per second (cluster-wide on Ray). ``template``
    (``--template``) words the all-at-once items with a Jinja2 template; the setting is named
    ``all-at-once@template:<sha>``; ConfigError with any other protocol.
    """
    o = options
    err = output.stderr_console()  # long lines stay whole in logs
    proto_list, model_list = _protocols_and_models(o)
    where_map = runner.parse_where(o.where)
    outputs = _outputs(o, report_hint)
    results = ResultsFile(outputs.layout.merged)  # a folder or a foreign file is refused here
    if results.repaired:
        _say(err, f"{results.path}: {results.repaired}")
    check_labels(o.labels)
    sel, rejected = _selection(dataset, where_map, o)
    items = runner.plan(sel.rows, proto_list, model_list, _gold_setting(o.gold, o.both), tolerance=o.tolerance)
    if o.template is not None:
        items = _with_template(items, Path(o.template))
    items = _with_official_wording(items)
    scope = _scope(dataset, items, sel, rejected)
    work = _pending(_Work(items, [], 0, sel, len(rejected)), results, outputs, o.retry_errors, err)
    notes = [n for n in [unfinished_build_note(dataset)] if n] + _notes(work, results.path, o.shard)
    judges = _judges(work.todo, o, err)
    if judges:
        notes.append(f"up to {o.concurrency} LLM calls in flight per model (--concurrency)")
    local_gate(judges, o.max_calls_per_s)
    for note in notes:
        _say(err, note)
    try:
        stats = _run(work.todo, results, outputs, judges, o, err)
    finally:
        results.close()
    if work.todo:
        _say_ran(stats, bool(judges), err)
    _merge_or_say(outputs.layout, outputs.shard, err)
    written = None
    if outputs.report_dir is not None:
        written = report_command(
            [results.path],
            outputs.report_dir,
            ReportOptions(tolerance=o.tolerance, labels=o.labels),
            console=console or output.stdout_console(),
            hint=report_hint,
            scope=scope,
        )
    _raise_backend_failures(stats, results.path)
    return written


def _say(err: Console, line: str) -> None:
    """One plain note on stderr (no markup, no highlighting)."""
    err.print(line, markup=False, highlight=False)


def _gold_setting(gold: bool, both: bool) -> str:
    return "both" if both else ("gold" if gold else "no-gold")


def _protocols_and_models(options: BenchOptions) -> tuple[list[str], list[str]]:
    """The protocol and model lists, checked before any work (ConfigError for a bad one,
    a negative ``limit``/``sample`` or a template that does not fit)."""
    limit, sample, template = options.limit, options.sample, options.template
    model_list = runner.split_list(options.models)
    proto_list = runner.split_list(options.protocols) or (
        ["all-at-once"] if any(m.lower() != runner.HEURISTIC_MODEL for m in model_list) else ["heuristic"]
    )
    if (limit is not None and limit < 0) or (sample is not None and sample < 0):
        raise ConfigError("--limit and --sample take a number of traces", expected="0 or more")
    runner.settings(proto_list, model_list)  # bad protocols/models fail before any work
    if template is not None:
        _check_template(template, proto_list)
    return proto_list, model_list


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


def _with_official_wording(items: list[runner.WorkItem]) -> list[runner.WorkItem]:
    """With ``--official-harness``, the whowhen-pro items renamed
    ``whowhen-pro:all-at-once@official-wording`` (resume key, record and report label):
    results of the two wordings never mix, and a resumed run never takes one for the other."""
    from whenpro_core.attribution.official_harness import OFFICIAL_WORDING, load_harness

    if load_harness() is None:
        return items
    preset = PRESET_PROTOCOLS["whowhen-pro"]
    return [
        i.model_copy(update={"protocol": i.protocol + OFFICIAL_WORDING}) if i.protocol == preset else i for i in items
    ]


def _outputs(options: BenchOptions, hint: str) -> _Outputs:
    """Where the run writes, checked writable before any work; one shard's job writes no
    report (the report comes after all jobs)."""
    out, shard, report, report_dir = options.out, options.shard, options.report, options.report_dir
    shard_k_n = shards.parse_shard(shard) if shard is not None else None
    layout = shards.layout(out or DEFAULT_OUT)
    check_can_write_in(layout.merged.parent, path=layout.merged, what="results file")
    if not report or shard_k_n is not None:
        return _Outputs(layout, shard_k_n, None)
    report_dir = report_dir if report_dir is not None else layout.merged.parent
    check_report_dir(report_dir, hint, report_names(layout.merged))
    check_can_write_in(report_dir, what="report folder")
    return _Outputs(layout, shard_k_n, report_dir)


def _selection(dataset: str, where: RowFilter, options: BenchOptions) -> tuple[runner.Selection, frozenset[str]]:
    """The traces to run (``where``: the parsed filters) and the refs (absolute) of those left
    out as rejected in review (``labels`` ``reviewed``); ConfigError when review rejected every one."""
    sel = runner.select(dataset, where=where, limit=options.limit, sample=options.sample, seed=options.seed)
    if options.labels != "reviewed":
        return sel, frozenset()
    reviews = Reviews()
    kept_rows = [r for r in sel.rows if r.error or reviews.decision(r.ref(), r.id) is not False]
    kept = {id(r) for r in kept_rows}
    rejected = frozenset(absolute_ref(r.ref()) for r in sel.rows if id(r) not in kept)
    sel.rows = kept_rows
    if not sel.rows:
        raise ConfigError(
            f"nothing to run in {dataset}: every trace chosen was rejected in review",
            expected="accepted or pending traces, or --labels built",
        )
    return sel, rejected


def _scope(dataset: str, items: list[runner.WorkItem], sel: runner.Selection, rejected: frozenset[str]) -> Scope:
    """What this run's report covers: its ``items``, the traces the dataset holds now
    (``sel.refs``) to say why other records are left out, and the traces ``rejected`` in
    review (left out and counted by the review step)."""
    chosen = frozenset(i.ref for i in items) | rejected
    return Scope(dataset, frozenset(i.key for i in items), chosen, frozenset(sel.refs), rejected)


def _pending(work: _Work, results: ResultsFile, outputs: _Outputs, retry_errors: bool, err: Console) -> _Work:
    """``work`` with the items still to run (finished ones in any part file skipped; only
    this job's share with a shard), after saying which part files were repaired."""
    done, repaired = results_parts.done_everywhere(results, outputs.layout)
    for line in repaired:
        _say(err, line)
    todo = runner.pending(work.items, done, retry_errors=retry_errors)
    work.already = len(work.items) - len(todo)
    if outputs.shard is not None:
        k, n = outputs.shard
        todo = [i for i in todo if shards.shard_of(i.key, n) == k]
    work.todo = todo
    return work


def _notes(work: _Work, results_path: Path, shard: str | None) -> list[str]:
    """The plan's lines for stderr: traces × settings = items, what is left out and why."""
    sel = work.sel
    settings = len(work.items) // max(len(sel.rows), 1)
    notes = [
        f"{plural(len(sel.rows), 'trace')} × {plural(settings, 'setting')} = "
        f"{plural(len(work.items), 'item')}; {work.already} already in {results_path}, "
        f"{len(work.todo)} to run" + (f" (shard {shard})" if shard else "")
    ]
    if sel.unlabelled:
        notes.append(f"{plural(sel.unlabelled, 'trace')} without a ground truth left out")
    if work.rejected:
        notes.append(f"{plural(work.rejected, 'trace')} rejected in review left out (--labels built to run them)")
    if sel.bad:
        notes.append(f"{plural(sel.bad, 'trace')} could not be read (files or rows; recorded as errors)")
    return notes


def _judges(todo: list[runner.WorkItem], options: BenchOptions, err: Console) -> dict[str, Any]:
    """The LLM judges the items to run need, by model; none (heuristic only) says a broken
    config on stderr instead, as the offline commands do."""
    judges = (
        runner.make_judges(
            {i.model for i in todo},
            use_cache=options.use_cache,
            concurrency=options.concurrency,
            images=options.images,
            base_url=options.base_url,
        )
        if todo
        else {}
    )
    if not judges:  # heuristic only: no settings needed, but a broken config is said
        from whenpro_core.config import warn_offline

        warn_offline(lambda line: err.print(line, markup=False, highlight=False, soft_wrap=True))
    return judges


def _run(
    todo: list[runner.WorkItem],
    results: ResultsFile,
    outputs: _Outputs,
    judges: dict[str, Any],
    options: BenchOptions,
    err: Console,
) -> runner.RunStats:
    """Run ``todo`` on Ray (``ray`` or ``ray_address``), into this shard's part file, or
    locally into ``results``."""
    concurrency = options.concurrency
    if options.ray or options.ray_address:
        return _run_on_ray(todo, outputs.layout, options, err)
    if outputs.shard is not None:
        with ResultsFile(outputs.layout.part(outputs.shard[0])) as part:
            return _run_with_progress(todo, part, judges, concurrency, err)
    return _run_with_progress(todo, results, judges, concurrency, err)


def _say_ran(stats: runner.RunStats, llm: bool, err: Console) -> None:
    """How many items ran, how long, how many failed by kind; the spending with an LLM."""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(stats.kinds.items()))
    _say(
        err,
        f"ran {stats.written} items in {stats.seconds:.1f}s; {stats.errors} failed" + (f" ({kinds})" if kinds else ""),
    )
    if llm:
        _say(err, spending_line(stats.usage, stats.spent))
        if stats.judged:
            _say(err, f"verdicts read: {stats.read} of {stats.judged} name an agent or a step (parse rate)")


def _raise_backend_failures(stats: runner.RunStats, path: Path) -> None:
    """BackendError when items failed on the model backend (status 2, after the report)."""
    failures = stats.kinds.get("backend", 0)
    if failures:
        raise BackendError(
            f"{plural(failures, 'item')} failed on the model backend "
            "(recorded; run the same command again to retry them)",
            path=path,
        )


def _run_on_ray(
    todo: list[runner.WorkItem],
    layout: shards.Layout,
    options: BenchOptions,
    err: Console,
) -> runner.RunStats:
    """Run ``todo`` as Ray tasks (one part file per shard), saying each finished shard."""
    if not todo:
        return runner.RunStats()
    from whenpro_core.bench.ray_run import run_on_ray  # deliberate lazy import: Ray is heavy

    def on_shard(index: int, stats: runner.RunStats) -> None:
        err.print(
            f"shard {index}: {plural(stats.written, 'item')}, {stats.errors} failed ({layout.part(index).name})",
            markup=False,
            highlight=False,
        )

    return run_on_ray(
        todo,
        layout,
        address=options.ray_address,
        shards=options.ray_shards,
        concurrency=options.concurrency,
        use_cache=options.use_cache,
        max_calls_per_s=options.max_calls_per_s,
        images=options.images,
        base_url=options.base_url,
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
    merged = results_parts.merge_parts(layout)
    if merged:
        err.print(f"merged {plural(merged, 'part file')} into {layout.merged}", markup=False, highlight=False)


def _run_with_progress(
    todo: list[runner.WorkItem], results: ResultsFile, judges: dict[str, Any], concurrency: int, err: Console
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
        console=(live := output.live_console()),  # renders only the constant label and counts
        disable=not live.is_terminal,
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

    with output.live(progress):
        return asyncio.run(run())
