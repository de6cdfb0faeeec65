"""The ``whenpro`` command line (typer). Imports the TUI only inside ``view``.

Every command that reads user input turns :class:`~whenpro_core.errors.WhenproError`
into one line on stderr and exit status 2 (DESIGN §9).
"""

from __future__ import annotations

import sys
from functools import wraps
from pathlib import Path
from typing import Callable, Optional

import typer

from whenpro_core.errors import WhenproError

app = typer.Typer(
    name="whenpro",
    help="Debug failed LLM agent runs: who failed, when, and how.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def handles_errors(fn: Callable) -> Callable:
    """Decorator: print a WhenproError as one line (``whenpro: error: ...``) and exit 2."""

    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except WhenproError as exc:
            typer.echo(f"whenpro: error: {exc.one_line()}", err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            typer.echo("whenpro: interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper


@app.command()
@handles_errors
def info(path: str = typer.Argument(..., help="A trace file, path#key, dataset folder or glob.")) -> None:
    """Summarise one trace, or a dataset (counts by modality, framework, benchmark, mode)."""
    from whenpro_core import summary

    summary.print_info(path)


@app.command("ls")
@handles_errors
def ls_(path: str = typer.Argument(..., help="A trace file, dataset folder or glob."),
        json_lines: bool = typer.Option(False, "--json", help="One JSON object per line.")) -> None:
    """List traces, one line each (id, framework, benchmark, modality, steps, GT)."""
    from whenpro_core import summary

    summary.print_listing(path, as_json=json_lines)


@app.command()
@handles_errors
def convert(src: str = typer.Argument(..., help="A trace file or path#key."),
            out: Path = typer.Argument(..., help="Output file (.json) or folder for many."),
            force: bool = typer.Option(False, "--force", help="Overwrite existing files.")) -> None:
    """Convert a trace (or every trace of a file or dataset) to the native format."""
    from whenpro_core import summary

    summary.convert(src, out, force=force)


@app.command()
@handles_errors
def attribute(
    trace: str = typer.Argument(..., help="A trace file or path#key."),
    protocol: Optional[str] = typer.Option(
        None, "--protocol", "-p",
        help="heuristic (offline), all-at-once, step-by-step, binary-search or hybrid. "
             "Default: all-at-once with --model, else heuristic."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="provider:model, e.g. openai:gpt-4.1"),
    no_gold: bool = typer.Option(False, "--no-gold", help="Do not show the judge the gold answer."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as JSON."),
    save: bool = typer.Option(True, "--save/--no-save", help="Keep the verdict next to the trace."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not reuse cached model answers."),
) -> None:
    """Attribute the decisive error of a failed trace: who, when, what, and why."""
    from whenpro_core.attribution import cli_run

    cli_run.attribute_command(trace, protocol=protocol, model=model, with_gold=not no_gold,
                              as_json=as_json, save=save, no_cache=no_cache)


@app.command()
@handles_errors
def run(env: str = typer.Argument(..., help="A built-in environment: arith_team or code_pair."),
        n: int = typer.Option(5, "--n", help="Number of runs (seeds SEED .. SEED+N-1)."),
        out: Path = typer.Option(..., "--out", help="Folder for the native traces, one per run."),
        seed: int = typer.Option(0, "--seed", help="First seed."),
        model: str = typer.Option("reference", "--model",
                                  help="Agent policy: reference (offline, default) or heuristic (same)."),
        force: bool = typer.Option(False, "--force", help="Overwrite existing files.")) -> None:
    """Run a built-in multi-agent system and write its runs as traces (successes and failures)."""
    from whenpro_core.envs.run import run_many

    run_many(env, n, out, seed=seed, model=model, force=force, echo=typer.echo)


@app.command()
@handles_errors
def keyframes(video: Path = typer.Argument(..., help="A video file (mp4, mkv, webm, avi, mov)."),
              max_frames: int = typer.Option(8, "--max", min=1, max=1000, help="Keyframes to pick at most."),
              out: Optional[Path] = typer.Option(None, "--out", help="Output folder (default: ./<video stem>_keyframes)."),
              force: bool = typer.Option(False, "--force", help="Replace keyframes in a non-empty folder."),
              threshold: float = typer.Option(0.3, "--threshold", help="Cut threshold (Bhattacharyya distance, 0-1)."),
              min_scene: int = typer.Option(10, "--min-scene", min=1, help="Fewest frames between two cuts."),
              stride: int = typer.Option(1, "--stride", min=1, max=100,
                                         help="Analyse every Nth frame (faster; cuts up to N-1 frames late)."),
              max_side: int = typer.Option(640, "--max-side", help="Longest side of the JPEGs, pixels."),
              no_cache: bool = typer.Option(False, "--no-cache",
                                            help="Neither read nor write the keyframe cache.")) -> None:
    """Extract a video's keyframes (hard cuts + uniform fill) as JPEGs with an index.json."""
    from whenpro_core.media.export import run_keyframes_command

    run_keyframes_command(video, max_frames=max_frames, out=out, force=force, threshold=threshold,
                          min_scene_len=min_scene, stride=stride, max_side=max_side, use_cache=not no_cache)


@app.command()
@handles_errors
def models(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="A provider:model to resolve (default: the configured one)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="Base URL for the model's provider."),
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
def inject(trace: str = typer.Argument(..., help="The seed trace (normally a successful run): file or file#key."),
           step: str = typer.Option(..., "--step", help="Coordinate of the step to replace (or #INDEX)."),
           mode: str = typer.Option(..., "--mode", help="Failure-mode code, e.g. R.3, A.3, V.2."),
           generator: str = typer.Option("offline", "--generator",
                                         help="offline (mode-specific mutators), text:CONTENT or text:@FILE."),
           executor: str = typer.Option("builtin", "--executor",
                                        help="builtin, cmd:COMMAND (JSON lines) or an installed plugin name."),
           out: Optional[Path] = typer.Option(None, "--out", help="Counterfactual file (default: next to TRACE)."),
           seed: int = typer.Option(0, "--seed", help="Seed of the mutator's choices."),
           timeout: float = typer.Option(600.0, "--timeout", help="Seconds for the whole continuation."),
           message_timeout: float = typer.Option(60.0, "--message-timeout",
                                                 help="Seconds to wait for each message of a cmd: executor."),
           force: bool = typer.Option(False, "--force", help="Overwrite the output file.")) -> None:
    """Inject an error at a step, warm-start replay the rest, and verify the counterfactual."""
    from whenpro_core.injection.inject import run_inject_command

    run_inject_command(trace, step, mode, generator=generator, executor=executor, out=out, seed=seed,
                       force=force, timeout=timeout, message_timeout=message_timeout, echo=typer.echo)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the native trace format."""
    import json

    from whenpro_core.model import Trace

    typer.echo(json.dumps(Trace.model_json_schema(), indent=2))


def main(argv: Optional[list[str]] = None) -> None:
    """Console-script entry point. ``whenpro PATH`` is short for ``whenpro view PATH``."""
    args = list(sys.argv[1:] if argv is None else argv)
    commands = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    if args and not args[0].startswith("-") and args[0] not in commands:
        args.insert(0, "view")
    app(args=args, prog_name="whenpro")


if __name__ == "__main__":
    main()
