"""The declarations of the ``whenpro`` commands: their arguments, options and help.

Each command parses nothing beyond what typer does, then imports its command module
(:mod:`whenpro_core.cli.traces`, :mod:`.view`, :mod:`.attribute`, ...) inside its body and
hands over, so that starting ``whenpro`` imports only what the command run needs.
:mod:`whenpro_core.cli.app` registers these functions on the typer app.
"""

from __future__ import annotations

from pathlib import Path

import typer

from whenpro_core.cli.options import (
    AMOUNT,
    BASE_URL_HELP,
    JUDGE_IMAGES_HELP,
    MAX_TOLERANCE,
    OFFICIAL_HARNESS_HELP,
    PRESET_HELP,
    SECONDS,
    SECONDS_OR_0,
    VERDICTS_DIR_HELP,
    ImagesMode,
    JudgeImages,
    ReportMetric,
    ReportRules,
    apply_verdicts_dir,
    finite,
    use_base_url,
)


def info(
    path: str = typer.Argument(..., help="A trace file, path#key, dataset folder or glob."),
    labels: bool = typer.Option(
        False,
        "--labels",
        help="Also show ground-truth labels (the trace's "
        "decisive error, the dataset's counts by mode); hidden by default.",
    ),
) -> None:
    """Summarise one trace, or a dataset (counts by modality, framework, benchmark; by mode with --labels)."""
    from whenpro_core.cli import traces

    traces.info(path, labels=labels)


def ls_(
    path: str = typer.Argument(..., help="A trace file, path#key, dataset folder or glob."),
    json_lines: bool = typer.Option(False, "--json", help="One JSON object per line."),
    labels: bool = typer.Option(
        False, "--labels", help="Also show each trace's ground-truth step and mode (hidden by default)."
    ),
    where: list[str] | None = typer.Option(
        None,
        "--where",
        "-w",
        help="Filters KEY=VALUE[,KEY=VALUE] as for bench; keys outcome, modality, framework, benchmark, mode, "
        "id, format; VALUE may list alternatives with |.",
    ),
) -> None:
    """List traces, one line each (id, framework, benchmark, modality, steps; GT with --labels)."""
    from whenpro_core.cli import traces

    traces.ls(path, as_json=json_lines, labels=labels, where=where)


def sessions(
    tool: str | None = typer.Argument(None, help="claude, codex or gemini (default: all three)."),
    json_lines: bool = typer.Option(False, "--json", help="One JSON object per line."),
) -> None:
    """List your local Claude Code, Codex and Gemini CLI sessions, newest first."""
    from whenpro_core.cli import traces

    traces.sessions(tool, as_json=json_lines)


def convert(
    src: str = typer.Argument(..., help="A trace file or path#key."),
    out: str = typer.Argument(..., help="Output file (.json), folder (for many, or ending in /), or - for stdout."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing files."),
    to: str = typer.Option(
        "native",
        "--to",
        help="Output format: native, atif (Harbor ATIF trajectory) "
        "or otlp-json (OpenTelemetry GenAI spans, OTLP/JSON).",
    ),
) -> None:
    """Convert a trace (or every trace of a file or dataset) to the native format, ATIF or OTLP/JSON."""
    from whenpro_core.cli import traces

    traces.convert(src, out, force=force, to=to)


def export(
    src: str = typer.Argument(..., help="A trace file or path#key."),
    html_out: str | None = typer.Option(None, "--html", help="Write one self-contained HTML page here (- prints it)."),
    markdown_out: str | None = typer.Option(None, "--markdown", help="Write bounded Markdown here (- prints it)."),
    labels: bool = typer.Option(False, "--labels", help="Include the ground truth and hidden fields."),
    force: bool = typer.Option(False, "--force", help="Replace existing files."),
    verdicts_dir: Path | None = typer.Option(None, "--verdicts-dir", help=VERDICTS_DIR_HELP),
) -> None:
    """Share a diagnosis: the trace, its verdicts (and labels if asked) as HTML or Markdown."""
    from whenpro_core.cli import traces

    apply_verdicts_dir(verdicts_dir)
    traces.export(src, html_out, markdown_out, labels=labels, force=force)


def diff_(
    a: str = typer.Argument(..., help="A trace file or path#key (run A)."),
    b: str = typer.Argument(..., help="Another trace file or path#key (run B)."),
    text: bool = typer.Option(
        False, "--text", help="Print the aligned rows instead of opening the TUI (the default when not on a terminal)."
    ),
    labels: bool = typer.Option(
        False, "--labels", help="--text: show the runs' ids whole (the failure mode in an id is masked by default)."
    ),
) -> None:
    """Diff any two runs step by step: aligned by content, first divergence marked, outcome
    and final answer side by side (two attempts at a task, a run before and after a change)."""
    import sys

    if text or not sys.stdout.isatty():
        from whenpro_core.cli import traces

        traces.diff(a, b, labels=labels)
        return
    from whenpro_core.cli import view as view_

    view_.diff(a, b)


def view(
    path: str | None = typer.Argument(
        None, help="A trace file, path#key, dataset folder, glob, JSONL release or bench results file."
    ),
    other: str | None = typer.Argument(None, help="With --diff: the second trace (run B)."),
    diff: bool = typer.Option(False, "--diff", help="Diff PATH (run A) with the second trace (run B)."),
    labels: bool = typer.Option(
        False,
        "--labels/--no-labels",
        help="Show ground-truth labels (hidden by default so you judge the trace unbiased; t toggles).",
    ),
    images: ImagesMode = typer.Option(
        ImagesMode.auto, "--images", help="Image drawing: auto, kitty, sixel, halfcell, off."
    ),
    save: bool = typer.Option(
        True,
        "--save/--no-save",
        help="Keep verdicts in whenpro's verdicts folder (--no-save: in memory until the app closes).",
    ),
    verdicts_dir: Path | None = typer.Option(None, "--verdicts-dir", help=VERDICTS_DIR_HELP),
    serve: bool = typer.Option(False, "--serve", help="Serve the app in a browser on 127.0.0.1 instead."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="Port for --serve."),
    # tuiresults: results screen, validation mode, live views
    results: list[str] | None = typer.Option(None, "--results", help="Explore bench results (PATH: the dataset)."),
    validate: bool = typer.Option(False, "--validate", help="Review a dataset built by whenpro build."),
    follow: str | None = typer.Option(None, "--follow", help="Follow a trace file being written."),
    sessions_: bool = typer.Option(
        False,
        "--sessions",
        help="Your local Claude Code, Codex and Gemini sessions as a library (PATH: claude, codex or gemini).",
    ),
    otlp: str | None = typer.Option(
        None, "--otlp", metavar="[HOST:PORT]", help="List traces received over OTLP (default 127.0.0.1:4318)."
    ),
    judge: bool = typer.Option(True, "--judge/--no-judge", help="Live views: judge as steps arrive."),
    protocol: str | None = typer.Option(
        None, "--protocol", "-p", help="Live judging: heuristic (default) or step-by-step."
    ),
    model: str | None = typer.Option(None, "--model", "-m", help="Live judging: provider:model."),
    base_url: str | None = typer.Option(None, "--base-url", help=BASE_URL_HELP),
    budget_calls: int | None = typer.Option(None, "--budget-calls", min=0, help="Live: N LLM calls."),
    budget_tokens: int | None = typer.Option(None, "--budget-tokens", min=0, help="Live: N tokens."),
    budget_usd: float | None = typer.Option(None, "--budget-usd", parser=AMOUNT, help="Live: X US dollars."),
    idle_timeout: float = typer.Option(
        0.0, "--idle-timeout", parser=SECONDS_OR_0, help="Live: end judging after S quiet seconds (0: never)."
    ),
    store: Path | None = typer.Option(None, "--store", help="With --otlp: folder for received traces."),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="With --otlp: listen on a non-loopback address."),
    token: str | None = typer.Option(
        None,
        "--token",
        help="With --otlp: the token exporters must send in an Authorization header (generated with --allow-remote).",
    ),
) -> None:
    """Open the trace debugger (TUI) on a trace, a dataset, bench results or a live run.

    Step through a trace, browse a dataset, explore bench results, review a built dataset,
    or watch runs live."""
    from whenpro_core.cli import view as view_

    apply_verdicts_dir(verdicts_dir)
    use_base_url(base_url)
    view_.view(
        path,
        other,
        diff_runs=diff,
        display=view_.Display(labels=labels, images=images.value, save=save),
        live=view_.LiveJudging(judge, protocol, model, budget_calls, budget_tokens, budget_usd, idle_timeout),
        starts=view_.ViewStart(
            results=tuple(results) if results is not None else None,
            validate=validate,
            follow=follow,
            otlp=otlp,
            store=store,
            allow_remote=allow_remote,
            token=token,
            sessions=sessions_,
        ),
        serve_port=port if serve else None,
    )


def attribute(
    trace: str = typer.Argument(..., help="A trace file or path#key."),
    protocol: str | None = typer.Option(
        None,
        "--protocol",
        "-p",
        help="heuristic (offline), all-at-once, step-by-step, binary-search, hybrid or counterfactual "
        "(replay-verified). Default: all-at-once with --model, else heuristic.",
    ),
    model: str | None = typer.Option(None, "--model", "-m", help="provider:model, e.g. openai:gpt-4.1"),
    no_gold: bool = typer.Option(False, "--no-gold", help="Do not show the judge the gold answer."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as JSON."),
    save: bool = typer.Option(True, "--save/--no-save", help="Keep the verdict in the verdicts folder."),
    verdicts_dir: Path | None = typer.Option(None, "--verdicts-dir", help=VERDICTS_DIR_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not reuse cached model answers."),
    base_url: str | None = typer.Option(None, "--base-url", help=BASE_URL_HELP),
    timeout: float | None = typer.Option(
        None, "--timeout", parser=finite(1, what="seconds"), help="Seconds per model call."
    ),
    max_retries: int | None = typer.Option(
        None, "--max-retries", min=0, help="Retries of a failed call (429/5xx/timeouts)."
    ),
    executor: str = typer.Option(
        "builtin",
        "--executor",
        help="counterfactual: what replays the rest of the run (builtin, cmd:COMMAND, simulate[:PROVIDER:MODEL]).",
    ),
    rank: str = typer.Option(
        "heuristic",
        "--rank",
        help="counterfactual: order of the steps to test (heuristic, or an LLM protocol whose verdict is tried first).",
    ),
    max_replays: int = typer.Option(8, "--max-replays", min=1, help="counterfactual: most replays to run."),
    budget_usd: float | None = typer.Option(
        None,
        "--budget-usd",
        parser=finite(0, what="dollars"),
        help="counterfactual: stop testing once this much is spent.",
    ),
    images: JudgeImages | None = typer.Option(None, "--images", help=JUDGE_IMAGES_HELP),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Print the requests the protocol would send first "
        "(with --json: as JSON, images as size and hash); no call, no key needed.",
    ),
    preset: str | None = typer.Option(None, "--preset", help=PRESET_HELP),
    official_harness: str | None = typer.Option(
        None, "--official-harness", metavar="PATH|installed", help=OFFICIAL_HARNESS_HELP
    ),
    template: str | None = typer.Option(
        None,
        "--template",
        metavar="FILE",
        help="Word the all-at-once request with your own Jinja2 template (variables in docs/attribution.md).",
    ),
    labels: bool = typer.Option(
        False,
        "--labels",
        help="Also show the trace's ground truth and whether the verdict matches it (hidden by default).",
    ),
) -> None:
    """Attribute the decisive error of a failed trace: who, when, what, and why."""
    from whenpro_core.attribution.official_harness import choose
    from whenpro_core.cli import attribute as attribute_

    choose(official_harness)
    apply_verdicts_dir(verdicts_dir)
    options = attribute_.AttributeOptions(
        protocol=protocol,
        model=model,
        with_gold=not no_gold,
        as_json=as_json,
        save=save,
        no_cache=no_cache,
        base_url=base_url,
        timeout_s=timeout,
        max_retries=max_retries,
        images=images.value if images else None,
        executor=executor,
        rank=rank,
        max_replays=max_replays,
        budget_usd=budget_usd,
        dry_run=dry_run,
        preset=preset,
        template=template,
        labels=labels,
    )
    if (protocol or "").strip().lower() == "counterfactual":
        attribute_.counterfactual_command(trace, options)
        return
    attribute_.attribute_command(trace, options)


def run(
    env: str = typer.Argument(..., help="A built-in environment: arith_team or code_pair."),
    n: int = typer.Option(5, "--n", min=1, help="Number of runs (seeds SEED .. SEED+N-1)."),
    out: Path = typer.Option(..., "--out", help="Folder for the native traces, one per run."),
    seed: int | None = typer.Option(
        None,
        "--seed",
        min=0,
        help="First seed, to reproduce runs (default: drawn at random, so the same command gives different runs).",
    ),
    model: str = typer.Option(
        "reference",
        "--model",
        help="Agent policy: reference (offline, default) or provider:model (a model plays every agent).",
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite existing files."),
    base_url: str | None = typer.Option(None, "--base-url", help=BASE_URL_HELP),
) -> None:
    """Run a built-in multi-agent system and write its runs as traces (successes and failures)."""
    from whenpro_core.cli import build as build_

    use_base_url(base_url)
    build_.run(env, n, out, seed=seed, model=model, force=force)


def keyframes(
    video: Path = typer.Argument(..., help="A video file (mp4, mkv, webm, avi, mov)."),
    max_frames: int = typer.Option(8, "--max", min=1, max=1000, help="Keyframes to pick at most."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default: ./<video stem>_keyframes)."),
    force: bool = typer.Option(False, "--force", help="Replace keyframes in a non-empty folder."),
    threshold: float = typer.Option(
        0.3, "--threshold", min=0.0, max=1.0, help="Cut threshold (Bhattacharyya distance, 0-1)."
    ),
    min_scene: int = typer.Option(10, "--min-scene", min=1, help="Fewest frames between two cuts."),
    stride: int = typer.Option(
        1, "--stride", min=1, max=100, help="Analyse every Nth frame (faster; cuts up to N-1 frames late)."
    ),
    max_side: int = typer.Option(640, "--max-side", min=16, max=8192, help="Longest side of the JPEGs, pixels."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the keyframe cache."),
) -> None:
    """Extract a video's keyframes (hard cuts + uniform fill) as JPEGs with an index.json."""
    from whenpro_core.cli import tools

    tools.keyframes(
        video,
        max_frames=max_frames,
        out=out,
        force=force,
        threshold=threshold,
        min_scene_len=min_scene,
        stride=stride,
        max_side=max_side,
        use_cache=not no_cache,
    )


def models(
    model: str | None = typer.Option(
        None, "--model", "-m", help="A provider:model to resolve (default: the configured one)."
    ),
    base_url: str | None = typer.Option(None, "--base-url", help=BASE_URL_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
    probe: bool = typer.Option(
        False,
        "--probe",
        help="Ask the model's OpenAI-compatible server what it serves: models, context window, structured output.",
    ),
) -> None:
    """Show the LLM configuration: default model, providers (base URL, key set or not), defaults, prices."""
    from whenpro_core.cli import tools

    tools.models(model, base_url=base_url, as_json=json_out, probe=probe)


def bench(
    dataset: str = typer.Argument(..., help="A dataset: folder, glob, JSONL release, trace file or path#key."),
    protocol: str | None = typer.Option(
        None,
        "--protocol",
        "-p",
        help="Comma-separated protocols: heuristic, all-at-once, step-by-step, binary-search, "
        "hybrid. Default: all-at-once with --model, else heuristic.",
    ),
    model: str | None = typer.Option(None, "--model", "-m", help="Comma-separated provider:model names."),
    gold: bool = typer.Option(False, "--gold", help="Show the judge the gold answer (the default)."),
    no_gold: bool = typer.Option(False, "--no-gold", help="Do not show the judge the gold answer."),
    both: bool = typer.Option(False, "--both", help="Run with and without the gold answer."),
    where: list[str] | None = typer.Option(
        None,
        "--where",
        "-w",
        help="Filters KEY=VALUE[,KEY=VALUE]; keys outcome, modality, framework, benchmark, mode, id, "
        "format; VALUE may list alternatives with |.",
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Run the first N traces only."),
    sample: int | None = typer.Option(None, "--sample", min=1, help="Run a random sample of N traces."),
    seed: int = typer.Option(0, "--seed", help="Seed of --sample."),
    concurrency: int = typer.Option(8, "--concurrency", "-j", min=1, max=1024, help="Items in flight at once."),
    out: Path = typer.Option(
        Path("bench-results.jsonl"), "--out", "-o", help="Results JSONL (appended to; rerun to resume)."
    ),
    tolerance: int = typer.Option(1, "--tolerance", "-k", min=0, max=MAX_TOLERANCE, help="k of the ±k step accuracy."),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="Run again the items that failed."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not reuse cached model answers."),
    no_report: bool = typer.Option(False, "--no-report", help="Run only; no report."),
    report_dir: Path | None = typer.Option(
        None, "--report-dir", help="Folder for report.json/md (default: next to --out)."
    ),
    labels: str = typer.Option(
        "reviewed",
        "--labels",
        help="reviewed: the latest review decision of each trace of a built dataset "
        "(rejected left out, relabels scored); built: the labels the build gave.",
    ),
    images: JudgeImages | None = typer.Option(None, "--images", help=JUDGE_IMAGES_HELP),
    base_url: str | None = typer.Option(None, "--base-url", help=BASE_URL_HELP),
    preset: str | None = typer.Option(None, "--preset", help=PRESET_HELP),
    official_harness: str | None = typer.Option(
        None, "--official-harness", metavar="PATH|installed", help=OFFICIAL_HARNESS_HELP
    ),
    ray: bool = typer.Option(
        False, "--ray", help="Run shards as tasks on a local Ray started for the run (pip install 'whenpro[ray]')."
    ),
    ray_address: str | None = typer.Option(
        None, "--ray-address", metavar="ADDR", help="Run shards on an existing Ray cluster (ray://HOST:10001, auto)."
    ),
    ray_shards: int | None = typer.Option(
        None, "--shards", min=1, help="Number of Ray shards (default: one per cluster CPU)."
    ),
    shard: str | None = typer.Option(
        None, "--shard", metavar="K/N", help="Run only job K (0-based) of N into OUT's part K (job arrays; no report)."
    ),
    max_calls_per_s: float | None = typer.Option(
        None, "--max-calls-per-s", min=0.001, help="Cap on LLM requests per second (cluster-wide with Ray)."
    ),
    template: str | None = typer.Option(
        None,
        "--template",
        metavar="FILE",
        help="Word the all-at-once items with your own Jinja2 template (its hash is part of the setting).",
    ),
) -> None:
    """Evaluate attribution protocols over a dataset; resumable, then report."""
    from whenpro_core.attribution.official_harness import choose
    from whenpro_core.cli import bench as bench_

    choose(official_harness)
    options = bench_.BenchOptions(
        protocols=protocol,
        models=model,
        both=both,
        where=where,
        limit=limit,
        sample=sample,
        seed=seed,
        concurrency=concurrency,
        out=out,
        tolerance=tolerance,
        retry_errors=retry_errors,
        use_cache=not no_cache,
        report=not no_report,
        report_dir=report_dir,
        labels=labels,
        images=images.value if images else None,
        base_url=base_url,
        shard=shard,
        ray=ray,
        ray_address=ray_address,
        ray_shards=ray_shards,
        max_calls_per_s=max_calls_per_s,
        template=template,
    )
    bench_.bench(dataset, options, preset=preset, gold_flags=(gold, no_gold))


def inject(
    trace: str = typer.Argument(..., help="The seed trace (normally a successful run): file or file#key."),
    step: str = typer.Option(..., "--step", help="Coordinate of the step to replace (or #INDEX)."),
    mode: str = typer.Option(..., "--mode", help="Failure-mode code, e.g. R.3, A.3, V.2."),
    generator: str = typer.Option(
        "offline",
        "--generator",
        help="offline (mode-specific mutators), text:CONTENT, text:@FILE or "
        "llm (two-stage LLM rewrite; needs --model).",
    ),
    executor: str = typer.Option(
        "builtin",
        "--executor",
        help="builtin, cmd:COMMAND (JSON lines), simulate (an LLM plays the "
        "remaining agents; needs --model) or an installed plugin name.",
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        "-m",
        help="provider:model for --generator llm and --executor simulate, "
        "e.g. openai:gpt-4.1 (default: the configured model).",
    ),
    max_steps: int | None = typer.Option(
        None, "--max-steps", min=1, help="simulate: steps of the whole new run (default: original + 5)."
    ),
    max_calls: int | None = typer.Option(
        None,
        "--max-calls",
        min=0,
        help="simulate: model calls for the continuation (default: 2 per remaining step + 1).",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not reuse cached model answers."),
    base_url: str | None = typer.Option(None, "--base-url", help=BASE_URL_HELP),
    out: Path | None = typer.Option(None, "--out", help="Counterfactual file (default: next to TRACE)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the mutator's choices."),
    timeout: float = typer.Option(600.0, "--timeout", parser=SECONDS, help="Seconds for the whole continuation."),
    message_timeout: float = typer.Option(
        60.0, "--message-timeout", parser=SECONDS, help="Seconds to wait for each message of a cmd: executor."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite the output file."),
) -> None:
    """Inject an error at a step, warm-start replay the rest, and verify the counterfactual."""
    from whenpro_core.cli import build as build_
    from whenpro_core.injection.inject import InjectOptions

    options = InjectOptions(
        generator=generator,
        executor=executor,
        out=out,
        seed=seed,
        force=force,
        timeout=timeout,
        message_timeout=message_timeout,
        model=model,
        max_steps=max_steps,
        max_calls=max_calls,
        use_cache=not no_cache,
        base_url=base_url,
    )
    build_.inject(trace, step, mode, options)


def build(
    seeds: str | None = typer.Argument(
        None, help="Successful seed runs: a folder, glob or file (e.g. the output of whenpro run)."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Dataset folder (rerun the same command to resume)."),
    modes: str | None = typer.Option(
        None, "--modes", help="Comma-separated failure modes (default: every mode with an offline mutator)."
    ),
    per_seed: int = typer.Option(
        1, "--per-seed", "-n", min=1, help="Injections to attempt per seed run (above 1: twins share a prefix)."
    ),
    generator: str = typer.Option("offline", "--generator", help="offline (mutators) or llm."),
    model: str | None = typer.Option(
        None, "--model", "-m", help="provider:model for --generator llm and --executor simulate."
    ),
    base_url: str | None = typer.Option(None, "--base-url", help=BASE_URL_HELP),
    executor: str = typer.Option(
        "builtin",
        "--executor",
        help="builtin, cmd:COMMAND (JSON lines), simulate (an LLM plays the other "
        "agents; with a control run) or an installed plugin name.",
    ),
    max_mode_share: float = typer.Option(
        0.25, "--max-mode-share", min=0.01, max=1.0, help="Largest share of one failure mode among the kept traces."
    ),
    layout: str = typer.Option(
        "files",
        "--layout",
        help="files (data_release/<modality>/<benchmark>/<framework>/...) or jsonl (data/<modality>.jsonl).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the step/mode choice and the mutators."),
    concurrency: int = typer.Option(4, "--concurrency", "-j", min=1, max=1024, help="Attempts in flight at once."),
    timeout: float = typer.Option(600.0, "--timeout", parser=SECONDS, help="Seconds for one continuation."),
    message_timeout: float = typer.Option(
        60.0, "--message-timeout", parser=SECONDS, help="Seconds to wait for each message of a cmd: executor."
    ),
    force: bool = typer.Option(False, "--force", help="Write into a non-build folder, or start over."),
    revalidate: bool = typer.Option(
        False, "--revalidate", help="Refresh the manifest's validation counts (no SEEDS needed)."
    ),
    keep_detectable: bool = typer.Option(
        False,
        "--keep-detectable",
        help="Keep items a form-only baseline pins to their step (dropped as detectable by default).",
    ),
    keep_learnable: bool = typer.Option(
        False,
        "--keep-learnable",
        help="Keep items a learned attacker finds in most random splits (dropped as adversarial by default).",
    ),
    export_validated: Path | None = typer.Option(
        None, "--export-validated", help="Write a release of the traces accepted in review to this folder (no SEEDS)."
    ),
    ray: bool = typer.Option(
        False,
        "--ray",
        help="Run the attempts as tasks on a local Ray started for the run (pip install 'whenpro[ray]').",
    ),
    ray_address: str | None = typer.Option(
        None,
        "--ray-address",
        metavar="ADDR",
        help="Run the attempts on an existing Ray cluster (ray://HOST:10001, auto).",
    ),
    ray_shards: int | None = typer.Option(
        None, "--shards", min=1, help="Ray tasks per round (default: one per cluster CPU)."
    ),
    shard: str | None = typer.Option(
        None,
        "--shard",
        metavar="K/N",
        help="Run only job K (0-based) of N into its own journal part (job arrays); "
        "a build without --shard then merges the parts and writes the release.",
    ),
    max_calls_per_s: float | None = typer.Option(
        None, "--max-calls-per-s", min=0.001, help="Cap on model requests per second (cluster-wide with Ray)."
    ),
) -> None:
    """Build a benchmark dataset: inject errors into successful runs, replay, verify, keep the decisive ones.

    Exit status: 0 some trace kept, 1 none kept (the reasons on stderr; manifest.json kept), 2 bad input."""
    from whenpro_core.cli import build as build_
    from whenpro_core.dataset.build import BuildOptions

    use_base_url(base_url)
    options = BuildOptions(
        modes=build_.mode_list(modes),
        per_seed=per_seed,
        generator=generator,
        executor=executor,
        layout=layout,
        seed=seed,
        concurrency=concurrency,
        timeout=timeout,
        message_timeout=message_timeout,
        model=model,
        max_mode_share=max_mode_share,
        detect=not keep_detectable,
        adversarial=not keep_learnable,
    )
    run = build_.BuildRun(
        force=force,
        revalidate=revalidate,
        export_validated=export_validated,
        ray=ray,
        ray_address=ray_address,
        ray_shards=ray_shards,
        shard=shard,
        max_calls_per_s=max_calls_per_s,
    )
    build_.build(seeds, out, options, run)


def report(
    results: list[str] = typer.Argument(
        ...,
        help="Results JSONL file(s) from whenpro bench, a folder of "
        "them or a glob of part files ('out.d/part-*.jsonl').",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Folder for report.json/md (default: next to results)."),
    tolerance: int | None = typer.Option(
        None, "--tolerance", "-k", min=0, max=MAX_TOLERANCE, help="k of the ±k step accuracy (default: as run)."
    ),
    labels: str = typer.Option(
        "reviewed",
        "--labels",
        help="reviewed: the latest review decision of each trace of a built dataset; built: the labels the build gave.",
    ),
    rules: ReportRules = typer.Option(
        ReportRules.whenpro,
        "--rules",
        help="official: also print the official numbers: the newest Who&When Pro leaderboard's "
        "(its scorer's agent rules, GUI agents out of Who, failed rows left out, image_gui cell, strict "
        "coordinates) and, for Who&When files, the original evaluate.py's; whowhen: the original "
        "evaluate.py's rules for every record; trail: also print TRAIL's "
        "category F1, location and joint accuracy.",
    ),
    metric: ReportMetric | None = typer.Option(
        None,
        "--metric",
        help="whowhen-substring: also print the original Who&When accuracy (a known "
        "substring-matching bug; for comparison only).",
    ),
) -> None:
    """Re-render the benchmark report (tables, report.json, report.md, plot) from results."""
    from whenpro_core.cli import report as report_

    options = report_.ReportOptions(
        tolerance=tolerance, labels=labels, rules=rules.value, metric=metric.value if metric else None
    )
    report_.report_command(results, out, options)


def audit(
    dataset: str = typer.Argument(..., help="A labelled dataset: folder, glob, JSONL release or built dataset."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as one JSON document."),
    against: str | None = typer.Option(
        None, "--against", help="Successful runs of the same system, as a corpus to compare with."
    ),
) -> None:
    """Label-leak audit: can form-only baselines find the labelled steps? Prints a table and a verdict."""
    from whenpro_core.cli import audit as audit_

    audit_.audit(dataset, against=against, as_json=json_out)


def watch(
    file: str | None = typer.Argument(None, help="A trace file (JSON lines) an agent is writing."),
    otlp: str | None = typer.Option(
        None,
        "--otlp",
        metavar="[HOST:PORT]",
        help="Receive OpenTelemetry exports instead of following a file (default 127.0.0.1:4318).",
    ),
    protocol: str | None = typer.Option(
        None,
        "--protocol",
        "-p",
        help="heuristic (offline), step-by-step, or counterfactual (judged live as without it; when the run "
        "ends, its steps are corrected and replayed: offline for a built-in system's run, else with --model). "
        "Default: step-by-step with --model, else heuristic.",
    ),
    model: str | None = typer.Option(None, "--model", "-m", help="provider:model, e.g. openai:gpt-4.1"),
    base_url: str | None = typer.Option(None, "--base-url", help=BASE_URL_HELP),
    budget_calls: int | None = typer.Option(None, "--budget-calls", min=0, help="Stop judging after N LLM calls."),
    budget_tokens: int | None = typer.Option(
        None, "--budget-tokens", min=0, help="Stop judging after N tokens (input + output)."
    ),
    budget_usd: float | None = typer.Option(
        None, "--budget-usd", parser=AMOUNT, help="Stop judging after X US dollars."
    ),
    idle_timeout: float = typer.Option(
        30.0, "--idle-timeout", parser=SECONDS_OR_0, help="End the run after S seconds without new data (0: never)."
    ),
    final_pass: bool = typer.Option(
        False, "--final-pass", help="When the run ends, judge it whole (all-at-once with --model)."
    ),
    preset: str | None = typer.Option(
        None,
        "--preset",
        help="Refused with the reason: presets rebuild requests from their dataset's files, and a followed "
        "run is never one (use attribute or bench --preset).",
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per event line."),
    labels: bool = typer.Option(
        False, "--labels", help="Show trace ids whole (the failure mode and step in an id are masked by default)."
    ),
    steps: bool = typer.Option(False, "--steps", help="Print each new step too."),
    no_gold: bool = typer.Option(False, "--no-gold", help="Do not show the judge the gold answer."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not reuse cached model answers."),
    line_format: str | None = typer.Option(
        None, "--format", help="native, chat or otlp (default: sniffed from the first line)."
    ),
    store: Path | None = typer.Option(None, "--store", help="With --otlp: folder for received traces."),
    allow_remote: bool = typer.Option(
        False, "--allow-remote", help="With --otlp: allow listening on a non-loopback address."
    ),
    token: str | None = typer.Option(
        None,
        "--token",
        help="With --otlp: the token exporters must send in an Authorization header (generated with --allow-remote).",
    ),
) -> None:
    """Follow a running agent and attribute as it goes; one line per verdict.

    Exit status: 1 a decisive error flagged (whatever the header's outcome); 2 bad input or usage,
    or the judge failed; 3 nothing flagged but the run ended without an outcome; 0 the run ended
    with an outcome and nothing was flagged."""
    from whenpro_core.cli import live
    from whenpro_core.cli.watch import WatchOptions

    use_base_url(base_url)
    options = WatchOptions(
        otlp=otlp,
        protocol=protocol,
        model=model,
        budget_calls=budget_calls,
        budget_tokens=budget_tokens,
        budget_usd=budget_usd,
        idle_timeout=idle_timeout,
        final_pass=final_pass,
        as_json=as_json,
        show_steps=steps,
        with_gold=not no_gold,
        no_cache=no_cache,
        line_format=line_format,
        store=store,
        allow_remote=allow_remote,
        preset=preset,
        token=token,
        labels=labels,
    )
    live.watch(file, options)


def serve(
    otlp: str | None = typer.Option(
        None, "--otlp", metavar="[HOST:PORT]", help="Receive OTLP/HTTP trace exports (default 127.0.0.1:4318)."
    ),
    store: Path | None = typer.Option(
        None, "--store", help="Folder for received traces (default: the user data folder's live/)."
    ),
    allow_remote: bool = typer.Option(
        False, "--allow-remote", help="Allow listening on a non-loopback address (needs a token; plain HTTP)."
    ),
    token: str | None = typer.Option(
        None,
        "--token",
        help="The token exporters must send in an Authorization header (generated with --allow-remote).",
    ),
    max_traces: int = typer.Option(64, "--max-traces", min=1, help="Traces kept in memory at most."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per event line."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing per trace."),
    tui: bool = typer.Option(False, "--tui", help="Show incoming traces live in the TUI."),
    fsync: bool = typer.Option(
        False, "--fsync", help="fsync each export before acknowledging it (survives a power cut; slower)."
    ),
) -> None:
    """Run the OpenTelemetry (OTLP/HTTP) receiver and store traces as they arrive."""
    from whenpro_core.cli import live

    live.serve(
        otlp,
        store=store,
        allow_remote=allow_remote,
        token=token,
        max_traces=max_traces,
        as_json=as_json,
        quiet=quiet,
        fsync=fsync,
        tui=tui,
    )


def schema() -> None:
    """Print the JSON Schema of the native trace format."""
    from whenpro_core.cli import traces

    traces.schema()
