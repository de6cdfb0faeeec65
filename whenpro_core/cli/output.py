"""Printing helpers shared by the command modules: the stdout/stderr consoles, and the
one-line ``whenpro: error: ...`` / ``whenpro: warning: ...`` messages.

Rich is imported when a console is first asked for, not with this module, so that commands
which print plain lines (``--version``, usage errors) start without it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, cast

import typer

from whenpro_core.safety.inert_output import inert_streams, terminal_stream
from whenpro_core.safety.textsafe import clean, one_line

if TYPE_CHECKING:
    from rich.console import Console

#: Longest warning line, in characters (a longer one is cut with an ellipsis).
WARNING_CHARS = 500


def echo(line: str) -> None:
    """Print ``line`` on stdout (the command's result)."""
    typer.echo(line)


def error(line: str) -> None:
    """Print ``whenpro: error: LINE`` on stderr (``line`` is already one inert line)."""
    typer.echo(f"whenpro: error: {line}", err=True)


def warning(line: str) -> None:
    """One recoverable problem (e.g. skipped bad lines of a trace file) as one stderr line."""
    typer.echo(f"whenpro: warning: {one_line(line, WARNING_CHARS)}", err=True)


def note(line: str) -> None:
    """A plain note on stderr (progress, what was written), printed as given."""
    typer.echo(line, err=True)


#: Width of stdout when it is not a terminal and ``COLUMNS`` is unset (Rich's default, 80,
#: would fold paths, ids and task text for ``| grep`` and ``> file``).
PIPED_WIDTH = 1000


def stdout_console(**options: Any) -> Console:
    """A rich Console on stdout (``options`` as for ``rich.console.Console``). Piped or
    redirected, its lines end with their content: not folded at 80 columns (unless
    ``width`` or ``COLUMNS`` is given; up to :data:`PIPED_WIDTH` characters) and without
    the blanks Rich pads table cells with."""
    from rich.console import Console

    console = Console(**options)
    if console.is_terminal:
        return console
    if "width" not in options and not os.environ.get("COLUMNS"):
        console.width = PIPED_WIDTH
    console.file = cast("IO[str]", _TrimmedLines())  # a stream in all but its type
    return console


class _TrimmedLines:
    """stdout (as it is at each write) without blanks before a line's end."""

    _BLANKS = re.compile(r"[ \t]+(?=\n)")

    def write(self, text: str) -> int:
        return sys.stdout.write(self._BLANKS.sub("", text))

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding: stdout's own
        return getattr(sys.stdout, name)


def stderr_console(**options: Any) -> Console:
    """A rich Console on stderr whose long lines stay whole (``soft_wrap``), as logs want them."""
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True, **options)


def live_console() -> Console:
    """A rich Console for a live display (a Progress bar, a status spinner) on the terminal
    behind the inert stderr: the display's own cursor and line-erase codes must reach the
    terminal (the inert filter would print them as ``␛[2K`` text). Only constant labels,
    numbers and text already made inert (``inert_output.inert``, in a ``rich.text.Text`` so
    no markup is read) may be rendered on it; show the display with :func:`live`."""
    from rich.console import Console

    return Console(file=terminal_stream(sys.stderr))


@contextmanager
def live(display: Any) -> Iterator[None]:
    """Run the body while ``display`` (a rich Progress, Live or Status on :func:`live_console`)
    is shown. The display redirects stdout and stderr into its console, which writes to the
    terminal unfiltered, so they are put behind the inert filter again for the body. The
    streams are put back as they were afterwards, also when the body stops the display."""
    saved = sys.stdout, sys.stderr
    try:
        with display, inert_streams():
            yield
    finally:
        sys.stdout, sys.stderr = saved


def skipped_file_lines(console: Console, errors: list[str], *, most: int = 20) -> None:
    """Print up to ``most`` of ``errors`` (files a folder walk skipped: they do not stop the
    command) as yellow ``whenpro: warning: ...`` lines on ``console``, then how many more
    there were."""
    from rich.text import Text

    for line in errors[:most]:
        console.print(Text(f"whenpro: warning: {clean(line)}", style="yellow"))
    if len(errors) > most:
        console.print(Text(f"whenpro: warning: ... and {len(errors) - most} more files skipped", style="yellow"))


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush into a closed pipe
    prints no second error (Python docs, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def failed_on_stdout(exc: BaseException) -> bool:
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


def rich_broken_pipe(exc: SystemExit) -> bool:
    """True for the ``SystemExit(1)`` rich's ``Console.on_broken_pipe`` raises when stdout's
    reader went away (it has already pointed stdout at /dev/null)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "on_broken_pipe":
            return True
        tb = tb.tb_next
    return False
