"""The ``whenpro`` command line (typer). Imports the TUI only inside ``view``.

Every command that reads user input turns :class:`~whenpro_core.errors.WhenproError`
into one line on stderr and exit status 2 (DESIGN §9).
"""

from __future__ import annotations

import time

#: Process start (as seen by this module), for the TUI's "started in N ms" log line.
START_NS = time.perf_counter_ns()

import math  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable
from enum import Enum  # noqa: E402
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, TypeVar  # noqa: E402

import typer  # noqa: E402

from whenpro_core.errors import ConfigError, WhenproError  # noqa: E402
from whenpro_core.safety.inert_output import inert_streams  # noqa: E402
from whenpro_core.safety.textsafe import clean, one_line  # noqa: E402

_P = ParamSpec("_P")
_R = TypeVar("_R")

app = typer.Typer(
    name="whenpro",
    help="Debug failed LLM agent runs: who failed, when, and how.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def package_version() -> str:
    """The installed distribution's version, else ``whenpro_core.__version__`` (a source
    checkout run with ``python -m``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("whenpro")
    except PackageNotFoundError:
        import whenpro_core

        return getattr(whenpro_core, "__version__", "unknown")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"whenpro {package_version()}")
        raise typer.Exit(0)


@app.callback()
def _main_options(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
) -> None:
    """Debug failed LLM agent runs: who failed, when, and how."""


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush into a closed pipe
    prints no second error (Python docs, "Note on SIGPIPE")."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _failed_on_stdout(exc: BaseException) -> bool:
    """True when ``exc`` was raised while writing to stdout (e.g. ``> /dev/full``): a frame
    of its traceback holds sys.stdout, directly (typer.echo's ``file``) or as a rich
    Console's file. Such errors carry no file name of their own."""
    tb = exc.__traceback__
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            if value is sys.stdout or (
                type(value).__name__ == "Console"
                and getattr(value, "_file", None) in (None, sys.stdout)
                and not getattr(value, "stderr", True)
            ):
                return True
        tb = tb.tb_next
    return False


def _rich_broken_pipe(exc: SystemExit) -> bool:
    """True for the ``SystemExit(1)`` rich's ``Console.on_broken_pipe`` raises when stdout's
    reader went away (it has already pointed stdout at /dev/null)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "on_broken_pipe":
            return True
        tb = tb.tb_next
    return False


def _print_warning(line: str) -> None:
    """One recoverable problem (e.g. skipped bad lines of a trace file) as one stderr line."""
    typer.echo(f"whenpro: warning: {one_line(line, 500)}", err=True)


def handles_errors(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator: print a WhenproError as one line (``whenpro: error: ...``) and exit 2;
    a stdout pipe closed by its reader (``| head``) ends quietly with status 141 (128 +
    SIGPIPE, as shell tools killed by the signal)."""

    @wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with inert_streams():  # every line out is inert and redacted, whatever its source
            return _run_handling_errors(fn, args, kwargs)

    return wrapper


def _run_handling_errors(fn: Callable[..., _R], args: tuple[Any, ...], kwargs: dict[str, Any]) -> _R:
    """Call ``fn``, turning the errors a user can cause into one stderr line and an exit status."""
    from whenpro_core.formats import registry

    registry.warning_sink = _print_warning
    try:
        return fn(*args, **kwargs)
    except WhenproError as exc:
        typer.echo(f"whenpro: error: {exc.one_line()}", err=True)
        raise typer.Exit(2) from None
    except BrokenPipeError:  # stdout closed early (| head): end quietly, as a killed pipe does
        _quiet_stdout()
        raise typer.Exit(141) from None
    except SystemExit as exc:
        if _rich_broken_pipe(exc):  # rich's Console met the same closed pipe
            raise typer.Exit(141) from None
        raise
    except OSError as exc:  # a file-system failure no module turned into a WhenproError
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        if not where and _failed_on_stdout(exc):
            where = "stdout: "  # e.g. > /dev/full
            _quiet_stdout()  # the exit flush would fail again
        typer.echo(f"whenpro: error: {where}{exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo("whenpro: interrupted", err=True)
        raise typer.Exit(130) from None


def _finite(low: float, *, above: bool = False, what: str = "a number") -> Callable[[str], float]:
    """A typer ``parser`` for a finite float of at least ``low`` (more than ``low`` when
    ``above``): nan and ±inf are refused, which ``min=`` alone lets through (inf)."""

    def parse(text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or value < low or (above and value == low):
            raise ValueError(f"expected {what} {'above' if above else 'of at least'} {low:g}")
        return value

    return parse


#: Seconds that must be more than 0; seconds where 0 means "never"; money.
SECONDS = _finite(0, above=True, what="seconds")
SECONDS_OR_0 = _finite(0, what="seconds")
AMOUNT = _finite(0, what="an amount")


def _not_together(first: str, second: str, expected: str = "one of them") -> NoReturn:
    """Raise the one-line error for two options that contradict each other."""
    raise ConfigError(f"{first} and {second} do not go together", expected=expected)


@app.command()
@handles_errors
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
    from whenpro_core import summary

    summary.print_info(path, labels=labels)


@app.command("ls")
@handles_errors
def ls_(
    path: str = typer.Argument(..., help="A trace file, path#key, dataset folder or glob."),
    json_lines: bool = typer.Option(False, "--json", help="One JSON object per line."),
    labels: bool = typer.Option(
        False, "--labels", help="Also show each trace's ground-truth step and mode (hidden by default)."
    ),
) -> None:
    """List traces, one line each (id, framework, benchmark, modality, steps; GT with --labels)."""
    from whenpro_core import summary

    summary.print_listing(path, as_json=json_lines, labels=labels)


@app.command()
@handles_errors
def sessions(
    tool: str | None = typer.Argument(None, help="claude, codex or gemini (default: all three)."),
    json_lines: bool = typer.Option(False, "--json", help="One JSON object per line."),
) -> None:
    """List your local Claude Code, Codex and Gemini CLI sessions, newest first."""
    from whenpro_core.library.sessions import print_sessions

    print_sessions(tool, as_json=json_lines)


@app.command()
@handles_errors
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
    from whenpro_core import summary

    if to not in summary.CONVERT_FORMATS:
        raise ConfigError(f"unknown output format {to!r}", expected=", ".join(summary.CONVERT_FORMATS))
    summary.convert(src, out, force=force, to=to)


@app.command()
@handles_errors
def export(
    src: str = typer.Argument(..., help="A trace file or path#key."),
    html_out: str | None = typer.Option(None, "--html", help="Write one self-contained HTML page here."),
    markdown_out: str | None = typer.Option(None, "--markdown", help="Write bounded Markdown here (- prints it)."),
    labels: bool = typer.Option(False, "--labels", help="Include the ground truth and hidden fields."),
    force: bool = typer.Option(False, "--force", help="Replace existing files."),
) -> None:
    """Share a diagnosis: the trace, its verdicts (and labels if asked) as HTML or Markdown."""
    from whenpro_core.views.export import export_command

    export_command(src, html_out, markdown_out, labels=labels, force=force, echo=typer.echo)


@app.command("diff")
@handles_errors
def diff_(
    a: str = typer.Argument(..., help="A trace file or path#key (run A)."),
    b: str = typer.Argument(..., help="Another trace file or path#key (run B)."),
    text: bool = typer.Option(
        False, "--text", help="Print the aligned rows instead of opening the TUI (the default when not on a terminal)."
    ),
) -> None:
    """Diff any two runs step by step: aligned by content, first divergence marked, outcome
    and final answer side by side (two attempts at a task, a run before and after a change)."""
    if text or not sys.stdout.isatty():
        from whenpro_core.formats import load_trace
        from whenpro_core.injection.diff import diff_lines, diff_traces

        first, second = load_trace(a), load_trace(b)
        for line in diff_lines(first, second, diff_traces(first, second)):
            typer.echo(line)
        return
    from whenpro_tui.app import run
    from whenpro_tui.starts import diff_start

    run(f"{a} {b}", started_ns=START_NS, start=diff_start(a, b))


class ImagesMode(str, Enum):
    """How the TUI draws images (phase 2): pick automatically, force a protocol, or off."""

    auto = "auto"
    kitty = "kitty"
    sixel = "sixel"
    halfcell = "halfcell"
    off = "off"


@app.command()
@handles_errors
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
        True, "--save/--no-save", help="Keep verdicts next to the trace (--no-save: in memory until the app closes)."
    ),
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
    budget_calls: int | None = typer.Option(None, "--budget-calls", min=0, help="Live: N LLM calls."),
    budget_tokens: int | None = typer.Option(None, "--budget-tokens", min=0, help="Live: N tokens."),
    budget_usd: float | None = typer.Option(None, "--budget-usd", parser=AMOUNT, help="Live: X US dollars."),
    idle_timeout: float = typer.Option(
        0.0, "--idle-timeout", parser=SECONDS_OR_0, help="Live: end judging after S quiet seconds (0: never)."
    ),
    store: Path | None = typer.Option(None, "--store", help="With --otlp: folder for received traces."),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="With --otlp: listen on a non-loopback address."),
) -> None:
    """Open the trace debugger (TUI) on a trace, a dataset, bench results or a live run.

    Step through a trace, browse a dataset, explore bench results, review a built dataset,
    or watch runs live."""
    from whenpro_core.library.opening import open_target
    from whenpro_tui.starts import LiveOptions, view_start

    if follow is None and otlp is None:  # live-judging options would be dropped silently
        given = [
            name
            for name, on in (
                ("--no-judge", not judge),
                ("--protocol", protocol is not None),
                ("--model", model is not None),
                ("--budget-calls", budget_calls is not None),
                ("--budget-tokens", budget_tokens is not None),
                ("--budget-usd", budget_usd is not None),
                ("--idle-timeout", idle_timeout > 0),
            )
            if on
        ]
        if given:
            _not_together(given[0], "PATH", expected=f"{given[0]} with --follow FILE or --otlp [HOST:PORT]")

    if diff or other is not None:
        if not (diff and path and other):
            _not_together("a second PATH" if other else "--diff", "one PATH", expected="whenpro view --diff A B")
        from whenpro_tui.app import run as run_app
        from whenpro_tui.starts import diff_start

        run_app(
            f"{path} {other}",
            show_labels=labels,
            images=images.value,
            started_ns=START_NS,
            start=diff_start(path, other),
            save_verdicts=save,
        )
        return
    live = LiveOptions(
        judge=judge,
        protocol=protocol,
        model=model,
        budget_calls=budget_calls,
        budget_tokens=budget_tokens,
        budget_usd=budget_usd,
        idle_timeout=idle_timeout if idle_timeout > 0 else None,
    )
    start = view_start(
        path,
        results=results,
        validate=validate,
        follow=follow,
        otlp=otlp,
        live=live,
        store=store,
        allow_remote=allow_remote,
        sessions=sessions_,
    )
    # one file (or path#key) that fails to import: one line and exit 2, like `info`
    opened = open_target(path, strict=True) if start is None and path is not None else None
    if serve:
        if start is not None:
            from whenpro_core.errors import ConfigError

            raise ConfigError("--serve opens a PATH only", expected="whenpro view PATH --serve")
        from whenpro_tui.serve import HOST, check_port
        from whenpro_tui.serve import serve as serve_app

        assert path is not None  # view_start gives a start to every view without a PATH
        check_port(port)
        typer.echo(f"whenpro: serving on http://{HOST}:{port} (ctrl+c stops)", err=True)
        serve_app(path, show_labels=labels, images=images.value, port=port, save=save)
        return
    from whenpro_tui.app import run

    run(
        path or "",
        show_labels=labels,
        images=images.value,
        started_ns=START_NS,
        start=start,
        opened=opened,
        save_verdicts=save,
    )


class ReportRules(str, Enum):
    """Which aggregation rules ``report`` prints: whenpro's own, or the official leaderboard's too."""

    whenpro = "whenpro"
    official = "official"


class ReportMetric(str, Enum):
    """Extra metrics ``report`` can print next to whenpro's."""

    whowhen_substring = "whowhen-substring"


class JudgeImages(str, Enum):
    """Whether the judge is sent the trace's images (overrides ``images`` in config.toml)."""

    on = "on"
    off = "off"


PRESET_HELP = (
    "Reproduce a published protocol: whowhen-pro (the official Who&When Pro all-at-once request, "
    "parsing and settings) or whowhen (the original Who&When all-at-once, step-by-step and "
    "binary-search requests; pick one with --protocol); see the README."
)
JUDGE_IMAGES_HELP = (
    "Send the trace's images to the judge (default: OpenAI and Anthropic models, and "
    "openai-compatible models listed in vision_models in config.toml)."
)


@app.command()
@handles_errors
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
    save: bool = typer.Option(True, "--save/--no-save", help="Keep the verdict next to the trace."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not reuse cached model answers."),
    base_url: str | None = typer.Option(
        None, "--base-url", help="Base URL of the model's provider (e.g. an OpenAI-compatible server)."
    ),
    timeout: float | None = typer.Option(
        None, "--timeout", parser=_finite(1, what="seconds"), help="Seconds per model call."
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
        parser=_finite(0, what="dollars"),
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
    template: str | None = typer.Option(
        None,
        "--template",
        metavar="FILE",
        help="Word the all-at-once request with your own Jinja2 template (variables in the README).",
    ),
    labels: bool = typer.Option(
        False,
        "--labels",
        help="Also show the trace's ground truth and whether the verdict matches it (hidden by default).",
    ),
) -> None:
    """Attribute the decisive error of a failed trace: who, when, what, and why."""
    from whenpro_core.attribution import cli_run

    flags = {"base_url": base_url, "timeout_s": timeout, "max_retries": max_retries}
    if (protocol or "").strip().lower() == "counterfactual":
        cli_run.counterfactual_command(
            trace,
            model=model,
            executor=executor,
            rank=rank,
            max_replays=max_replays,
            budget_usd=budget_usd,
            as_json=as_json,
            save=save,
            no_cache=no_cache,
            settings_flags=flags,
            labels=labels,
        )
        return
    cli_run.attribute_command(
        trace,
        protocol=protocol,
        model=model,
        with_gold=not no_gold,
        as_json=as_json,
        save=save,
        no_cache=no_cache,
        settings_flags={**flags, "images": images.value if images else None},
        dry_run=dry_run,
        preset=preset,
        template=template,
        labels=labels,
    )


@app.command()
@handles_errors
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
) -> None:
    """Run a built-in multi-agent system and write its runs as traces (successes and failures)."""
    from whenpro_core.envs.run import run_many

    run_many(env, n, out, seed=seed, model=model, force=force, echo=typer.echo)


@app.command()
@handles_errors
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
    from whenpro_core.media.export import run_keyframes_command

    run_keyframes_command(
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


@app.command()
@handles_errors
def models(
    model: str | None = typer.Option(
        None, "--model", "-m", help="A provider:model to resolve (default: the configured one)."
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="Base URL for the model's provider."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
) -> None:
    """Show the LLM configuration: default model, providers (base URL, key set or not), defaults, prices."""
    import json

    from whenpro_core.config import load_settings
    from whenpro_core.llm.describe import format_models, models_info

    info = models_info(load_settings(base_url=base_url), model)
    typer.echo(json.dumps(info, indent=2) if json_out else format_models(info))


@app.command()
@handles_errors
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
    gold: bool = typer.Option(True, "--gold/--no-gold", help="Show the judge the gold answer."),
    both: bool = typer.Option(False, "--both", help="Run with and without the gold answer."),
    where: list[str] | None = typer.Option(
        None,
        "--where",
        "-w",
        help="Filters KEY=VALUE[,KEY=VALUE]; keys modality, framework, benchmark, mode, id, "
        "format; VALUE may list alternatives with |.",
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Run the first N traces only."),
    sample: int | None = typer.Option(None, "--sample", min=1, help="Run a random sample of N traces."),
    seed: int = typer.Option(0, "--seed", help="Seed of --sample."),
    concurrency: int = typer.Option(8, "--concurrency", "-j", min=1, max=1024, help="Items in flight at once."),
    out: Path = typer.Option(
        Path("bench-results.jsonl"), "--out", "-o", help="Results JSONL (appended to; rerun to resume)."
    ),
    tolerance: int = typer.Option(1, "--tolerance", "-k", min=0, help="k of the ±k step accuracy."),
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
    preset: str | None = typer.Option(None, "--preset", help=PRESET_HELP),
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
    from whenpro_core.bench.cli_bench import bench_command

    if preset:  # the published harness's protocol; whowhen-pro never shows the gold answer
        from whenpro_core.attribution.run import preset_protocol

        protocol = ",".join(preset_protocol(preset, p) for p in (protocol or "all-at-once").split(","))
        if protocol.startswith("whowhen-pro:"):
            gold, both = False, False

    if both and not gold:
        _not_together("--both", "--no-gold", expected="--both (runs with and without the gold answer)")
    if limit is not None and sample is not None:
        _not_together("--limit", "--sample")
    if shard is not None and (ray or ray_address):
        _not_together("--shard", "--ray", expected="--shard K/N (job arrays) or --ray (Ray shards itself)")
    bench_command(
        dataset,
        protocols=protocol,
        models=model,
        gold=gold,
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
        shard=shard,
        ray=ray,
        ray_address=ray_address,
        ray_shards=ray_shards,
        max_calls_per_s=max_calls_per_s,
        template=template,
    )


@app.command()
@handles_errors
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
    base_url: str | None = typer.Option(
        None, "--base-url", help="Base URL of the model's provider (e.g. an OpenAI-compatible server)."
    ),
    out: Path | None = typer.Option(None, "--out", help="Counterfactual file (default: next to TRACE)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the mutator's choices."),
    timeout: float = typer.Option(600.0, "--timeout", parser=SECONDS, help="Seconds for the whole continuation."),
    message_timeout: float = typer.Option(
        60.0, "--message-timeout", parser=SECONDS, help="Seconds to wait for each message of a cmd: executor."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite the output file."),
) -> None:
    """Inject an error at a step, warm-start replay the rest, and verify the counterfactual."""
    from whenpro_core.injection.inject import run_inject_command

    run_inject_command(
        trace,
        step,
        mode,
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
        echo=typer.echo,
    )


@app.command()
@handles_errors
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
    export_validated: Path | None = typer.Option(
        None, "--export-validated", help="Write a release of the traces accepted in review to this folder (no SEEDS)."
    ),
) -> None:
    """Build a benchmark dataset: inject errors into successful runs, replay, verify, keep the decisive ones.

    Exit status: 0 some trace kept, 1 none kept (the reasons on stderr; manifest.json kept), 2 bad input."""
    from whenpro_core.bench.build import build_command, nothing_kept

    manifest = build_command(
        seeds,
        out,
        modes=modes,
        per_seed=per_seed,
        generator=generator,
        model=model,
        executor=executor,
        layout=layout,
        seed=seed,
        concurrency=concurrency,
        timeout=timeout,
        message_timeout=message_timeout,
        force=force,
        revalidate=revalidate,
        max_mode_share=max_mode_share,
        keep_detectable=keep_detectable,
        export_validated=export_validated,
        echo=typer.echo,
    )
    empty = nothing_kept(manifest, out) if seeds is not None else None
    if empty:
        typer.echo(f"whenpro: {empty}", err=True)
        raise typer.Exit(1)


@app.command()
@handles_errors
def report(
    results: list[str] = typer.Argument(
        ...,
        help="Results JSONL file(s) from whenpro bench, a folder of "
        "them or a glob of part files ('out.d/part-*.jsonl').",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Folder for report.json/md (default: next to results)."),
    tolerance: int | None = typer.Option(
        None, "--tolerance", "-k", min=0, help="k of the ±k step accuracy (default: as run)."
    ),
    labels: str = typer.Option(
        "reviewed",
        "--labels",
        help="reviewed: the latest review decision of each trace of a built dataset; built: the labels the build gave.",
    ),
    rules: ReportRules = typer.Option(
        ReportRules.whenpro,
        "--rules",
        help="official: also print the Who&When Pro leaderboard's numbers "
        "(failed rows left out, image_gui cell, strict coordinates).",
    ),
    metric: ReportMetric | None = typer.Option(
        None,
        "--metric",
        help="whowhen-substring: also print the original Who&When accuracy (a known "
        "substring-matching bug; for comparison only).",
    ),
) -> None:
    """Re-render the benchmark report (tables, report.json, report.md, plot) from results."""
    from whenpro_core.bench.report import report_command

    report_command(
        results, out, tolerance=tolerance, labels=labels, rules=rules.value, metric=metric.value if metric else None
    )


@app.command()
@handles_errors
def audit(
    dataset: str = typer.Argument(..., help="A labelled dataset: folder, glob, JSONL release or built dataset."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as one JSON document."),
    against: str | None = typer.Option(
        None, "--against", help="Successful runs of the same system, as a corpus to compare with."
    ),
) -> None:
    """Label-leak audit: can form-only baselines find the labelled steps? Prints a table and a verdict."""
    from whenpro_core.audit.report import audit_command

    audit_command(dataset, against=against, as_json=json_out)


@app.command()
@handles_errors
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
        help="heuristic (offline) or step-by-step. Default: step-by-step with --model, else heuristic.",
    ),
    model: str | None = typer.Option(None, "--model", "-m", help="provider:model, e.g. openai:gpt-4.1"),
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
    preset: str | None = typer.Option(None, "--preset", help=PRESET_HELP + " Applies to --final-pass."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per event line."),
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
) -> None:
    """Follow a running agent and attribute as it goes; one line per verdict.

    Exit status: 0 no decisive error flagged, 1 a decisive error flagged, 2 bad input or usage."""
    from whenpro_core.live.watch import watch_command

    code = watch_command(
        file,
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
    )
    raise typer.Exit(code)


@app.command()
@handles_errors
def serve(
    otlp: str | None = typer.Option(
        None, "--otlp", metavar="[HOST:PORT]", help="Receive OTLP/HTTP trace exports (default 127.0.0.1:4318)."
    ),
    store: Path | None = typer.Option(
        None, "--store", help="Folder for received traces (default: the user data folder's live/)."
    ),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="Allow listening on a non-loopback address."),
    max_traces: int = typer.Option(64, "--max-traces", min=1, help="Traces kept in memory at most."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per event line."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing per trace."),
    tui: bool = typer.Option(False, "--tui", help="Show incoming traces live in the TUI."),
    fsync: bool = typer.Option(
        False, "--fsync", help="fsync each export before acknowledging it (survives a power cut; slower)."
    ),
) -> None:
    """Run the OpenTelemetry (OTLP/HTTP) receiver and store traces as they arrive."""
    from whenpro_core.live.watch import serve_command

    if otlp is None:
        raise ConfigError("nothing to serve", expected="--otlp [HOST:PORT]")
    if tui:  # tuiresults: the incoming-traces view of whenpro view --otlp
        from whenpro_tui.app import run
        from whenpro_tui.starts import LiveOptions, otlp_start

        start = otlp_start(otlp, LiveOptions(), store=store, allow_remote=allow_remote, max_traces=max_traces)
        run("", started_ns=START_NS, start=start)
        return
    serve_command(
        otlp, store=store, allow_remote=allow_remote, max_traces=max_traces, as_json=as_json, quiet=quiet, fsync=fsync
    )


@app.command()
@handles_errors
def schema() -> None:
    """Print the JSON Schema of the native trace format."""
    import json

    from whenpro_core.trace.model import Trace

    typer.echo(json.dumps(Trace.model_json_schema(), indent=2))


def _optional_value(args: list[str], option: str, default: str) -> list[str]:
    """Let ``option`` be given without its value (``--otlp`` alone means ``--otlp
    <default>``): typer options always take one."""
    out = []
    for i, arg in enumerate(args):
        out.append(arg)
        if arg == option and (i + 1 == len(args) or args[i + 1].startswith("-")):
            out.append(default)
    return out


def _looks_like_a_command(word: str, commands: set[str]) -> bool:
    """True when ``word`` is neither a path, a ``path#key`` nor a glob, so ``whenpro WORD``
    is a mistyped command rather than ``whenpro view WORD``."""
    from whenpro_core.formats.registry import split_ref

    if any(ch in word for ch in "*?[/\\.#~") or Path(word).exists():
        return False
    return not split_ref(word)[0].exists()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point. ``whenpro PATH`` is short for ``whenpro view PATH``."""
    args = _optional_value(list(sys.argv[1:] if argv is None else argv), "--otlp", "127.0.0.1:4318")
    commands = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    if args and not args[0].startswith("-") and args[0] not in commands:
        if _looks_like_a_command(args[0], commands):
            import difflib

            near = difflib.get_close_matches(args[0], sorted(commands), n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            typer.echo(f"whenpro: error: no command or file '{clean(args[0])}'{hint}", err=True)
            raise SystemExit(2)
        args.insert(0, "view")
    with inert_streams():  # typer's own usage errors too, not only what the commands print
        app(args=args, prog_name="whenpro")


if __name__ == "__main__":
    main()
