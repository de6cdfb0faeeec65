"""The ``whenpro`` typer app: the commands of :mod:`.commands` registered in help order,
``--version``, the error handling every command shares, and :func:`main`.

Every command turns a :class:`~whenpro_core.errors.WhenproError` into one line on stderr
(``whenpro: error: ...``) and exit status 2; a usage error (unknown option, missing argument,
value out of range) is one such line too, with status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from whenpro_core.cli import commands, output
from whenpro_core.errors import WhenproError
from whenpro_core.safety.inert_output import inert_streams
from whenpro_core.safety.textsafe import clean, one_line


class _PlainFlags:
    """Help lists a boolean flag as a plain flag (``--force``), without the ``<bool>`` type
    typer 0.29 shows for it: a flag takes no value. Mixed into the app's group and commands."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_bool_flag", False) and param.metavar is None:
                param.metavar = ""  # typer shows an option's metavar in place of its type
        return params


class _Group(_PlainFlags, TyperGroup):
    pass


class _Command(_PlainFlags, TyperCommand):
    pass


app = typer.Typer(
    cls=_Group,
    name="whenpro",
    help="Debug failed LLM agent runs: who failed, when, and how.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

#: Exit status of an error the user can fix (bad input, usage), of a stdout pipe closed
#: by its reader (128 + SIGPIPE) and of ctrl+c (128 + SIGINT).
USAGE_STATUS, PIPE_STATUS, INTERRUPT_STATUS = 2, 141, 130


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


def handles_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: print a WhenproError as one line (``whenpro: error: ...``) and exit 2;
    a stdout pipe closed by its reader (``| head``) ends quietly with status 141 (128 +
    SIGPIPE, as shell tools killed by the signal)."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with inert_streams():  # every line out is inert and redacted, whatever its source
            return _run_handling_errors(fn, args, kwargs)

    return wrapper


def _run_handling_errors(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call ``fn``, turning the errors a user can cause into one stderr line and an exit status."""
    from whenpro_core.formats import registry

    registry.warning_sink = output.warning
    try:
        return fn(*args, **kwargs)
    except WhenproError as exc:
        output.error(exc.one_line())
        raise typer.Exit(USAGE_STATUS) from None
    except BrokenPipeError:  # stdout closed early (| head): end quietly, as a killed pipe does
        output.quiet_stdout()
        raise typer.Exit(PIPE_STATUS) from None
    except SystemExit as exc:
        if output.rich_broken_pipe(exc):  # rich's Console met the same closed pipe
            raise typer.Exit(PIPE_STATUS) from None
        raise
    except OSError as exc:  # a file-system failure no module turned into a WhenproError
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        if not where and output.failed_on_stdout(exc):
            where = "stdout: "  # e.g. > /dev/full
            output.quiet_stdout()  # the exit flush would fail again
        output.error(f"{where}{exc.strerror or exc}")
        raise typer.Exit(USAGE_STATUS) from None
    except KeyboardInterrupt:
        typer.echo("whenpro: interrupted", err=True)
        raise typer.Exit(INTERRUPT_STATUS) from None


#: The commands in the order ``whenpro --help`` lists them: (name, declaration).
COMMANDS: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("info", commands.info),
    ("ls", commands.ls_),
    ("sessions", commands.sessions),
    ("convert", commands.convert),
    ("export", commands.export),
    ("diff", commands.diff_),
    ("view", commands.view),
    ("attribute", commands.attribute),
    ("run", commands.run),
    ("keyframes", commands.keyframes),
    ("models", commands.models),
    ("bench", commands.bench),
    ("inject", commands.inject),
    ("build", commands.build),
    ("report", commands.report),
    ("audit", commands.audit),
    ("watch", commands.watch),
    ("serve", commands.serve),
    ("schema", commands.schema),
)
for _name, _declaration in COMMANDS:
    app.command(_name, cls=_Command)(handles_errors(_declaration))


def _optional_value(args: list[str], option: str, default: str) -> list[str]:
    """Let ``option`` be given without its value (``--otlp`` alone means ``--otlp
    <default>``): typer options always take one."""
    out = []
    for i, arg in enumerate(args):
        out.append(arg)
        if arg == option and (i + 1 == len(args) or args[i + 1].startswith("-")):
            out.append(default)
    return out


def _looks_like_a_command(word: str) -> bool:
    """True when ``word`` is neither a path, a ``path#key`` nor a glob, so ``whenpro WORD``
    is a mistyped command rather than ``whenpro view WORD``."""
    from whenpro_core.formats.registry import split_ref

    if any(ch in word for ch in "*?[/\\.#~") or Path(word).exists():
        return False
    return not split_ref(word)[0].exists()


def _with_default_command(args: list[str]) -> list[str]:
    """``args`` with ``view`` put first when they start with a path (``whenpro PATH``);
    SystemExit(2) after one error line when the first word is neither a command nor a path."""
    names = {name for name, _ in COMMANDS}
    if not args or args[0].startswith("-") or args[0] in names:
        return args
    if _looks_like_a_command(args[0]):
        import difflib

        near = difflib.get_close_matches(args[0], sorted(names), n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        output.error(f"no command or file '{clean(args[0])}'{hint}")
        raise SystemExit(USAGE_STATUS)
    return ["view", *args]


def _click_exception() -> type[Exception]:
    """click's ClickException as this typer raises it (newer typer vendors click as
    ``typer._click``; older ones use click itself): an ancestor of ``typer.BadParameter``."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _usage_error(exc: Any, args: list[str]) -> int:
    """Print click's usage error (or other ClickException) ``exc`` of the command line
    ``args`` as one ``whenpro: error:`` line naming the command's ``--help``; returns its
    exit status (2). ``whenpro`` alone prints the help (already shown by typer on a
    terminal)."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        if exc.format_message().strip():
            exc.show()
        return int(exc.exit_code)
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        hint = f" (see {ctx.command_path} --help)"
    else:  # raised by the option parser before a context exists (an option missing its value)
        named = args[0] if args and args[0] in dict(COMMANDS) else None
        hint = f" (see whenpro {named} --help)" if named else ""
    output.error(one_line(exc.format_message(), 1000) + hint)
    return int(exc.exit_code)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point. ``whenpro PATH`` is short for ``whenpro view PATH``.
    Ends with SystemExit carrying the exit status when it is not 0."""
    args = _optional_value(list(sys.argv[1:] if argv is None else argv), "--otlp", "127.0.0.1:4318")
    args = _with_default_command(args)
    with inert_streams():  # typer's own usage errors too, not only what the commands print
        try:
            status = app(args=args, prog_name="whenpro", standalone_mode=False)
        except _click_exception() as exc:
            status = _usage_error(exc, args)
        except typer.Abort:
            typer.echo("whenpro: aborted", err=True)
            status = 1
        except BrokenPipeError:  # help or usage text to a closed pipe (whenpro --help | head -1)
            output.quiet_stdout()
            status = PIPE_STATUS
        except SystemExit as exc:
            if not output.rich_broken_pipe(exc):
                raise
            status = PIPE_STATUS
    if isinstance(status, int) and status:
        raise SystemExit(status)
