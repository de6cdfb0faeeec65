"""The ``whenpro`` command line (typer). Imports the TUI only inside ``view``.

Every command that reads user input turns :class:`~whenpro_core.errors.WhenproError`
into one line on stderr and exit status 2 (DESIGN §9).
"""

from __future__ import annotations

import time

#: Process start (as seen by this module), for the TUI's "started in N ms" log line.
START_NS = time.perf_counter_ns()

import sys  # noqa: E402
from enum import Enum  # noqa: E402
from functools import wraps
from pathlib import Path
from typing import Callable, Optional

import typer  # noqa: E402

from whenpro_core.errors import WhenproError  # noqa: E402

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


class ImagesMode(str, Enum):
    """How the TUI draws images (phase 2): pick automatically, force a protocol, or off."""

    auto = "auto"
    kitty = "kitty"
    sixel = "sixel"
    halfcell = "halfcell"
    off = "off"


@app.command()
@handles_errors
def view(path: str = typer.Argument(..., help="A trace file, path#key, dataset folder, glob "
                                                "or JSONL release."),
         labels: bool = typer.Option(False, "--labels/--no-labels",
                                     help="Show ground-truth labels (hidden by default so you "
                                          "judge the trace unbiased; t toggles)."),
         images: ImagesMode = typer.Option(ImagesMode.auto, "--images",
                                           help="Image drawing: auto, kitty, sixel, halfcell, off."),
         serve: bool = typer.Option(False, "--serve",
                                    help="Serve the app in a browser on 127.0.0.1 instead."),
         port: int = typer.Option(8000, "--port", help="Port for --serve.")) -> None:
    """Open the trace debugger (TUI): step through a trace, or browse a dataset."""
    from whenpro_core.opening import check_target

    check_target(path)
    if serve:
        from whenpro_tui.serve import HOST, serve as serve_app

        typer.echo(f"whenpro: serving on http://{HOST}:{port} (ctrl+c stops)", err=True)
        serve_app(path, show_labels=labels, images=images.value, port=port)
        return
    from whenpro_tui.app import run

    run(path, show_labels=labels, images=images.value, started_ns=START_NS)


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
