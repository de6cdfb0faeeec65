"""The one choke point for what the CLI writes to the terminal (docs/architecture.md, 'Untrusted content').

File names, trace ids, trace content and servers' messages all reach stdout and stderr
through many paths (error lines, tables, warnings, log records, Python warnings). Rather
than trusting each call site, every command runs inside :func:`inert_streams`, which puts
an :class:`InertStream` in front of ``sys.stdout`` and ``sys.stderr``: each text written is
redacted (:func:`whenpro_core.safety.redact.redact`) and cleaned as trace content is
(:func:`whenpro_core.safety.textsafe.clean`), except SGR colour sequences (``ESC [ ... m``), which
Rich and Click emit for styling and which cannot move the cursor, clear the screen, set the
title or write the clipboard. Log records and warnings go through the same streams
(logging's fallback handler and ``warnings.showwarning`` write to ``sys.stderr``).

Rich's live displays (progress bars, status spinners) are the one exception: their console
writes to the terminal itself (:func:`terminal_stream`), renders only constant labels,
numbers and already-inert names, and while one runs the streams it redirects into it are
put behind :class:`InertStream` again (:func:`whenpro_core.cli.output.live`).

Binary writes (``sys.stdout.buffer``: ``convert … -`` writing JSON, whose C0 controls
JSON escapes and whose DEL, C1 and bidi controls :func:`~whenpro_core.safety.textsafe.inert_json`
escapes) and the TUI (Textual writes to ``sys.__stderr__``) are not wrapped.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from whenpro_core.safety.redact import redact
from whenpro_core.safety.textsafe import clean

#: Select Graphic Rendition (colours, bold): the only escape sequence let through.
_SGR = re.compile(r"\x1b\[[0-9;:]{0,32}m")


def inert(text: str) -> str:
    """``text`` with credentials redacted and every terminal-interpreted character made
    visible (``ESC`` -> ``␛``), SGR colour sequences kept. ``"\\x1b]52;c;eA==\\x07"`` ->
    ``"␛]52;c;eA==␇"``; ``"\\x1b[31merror\\x1b[0m"`` is returned as it is."""
    text = redact(text)
    if "\x1b" not in text:
        return clean(text)
    parts: list[str] = []
    pos = 0
    for match in _SGR.finditer(text):
        parts.append(clean(text[pos : match.start()]))
        parts.append(match.group(0))
        pos = match.end()
    parts.append(clean(text[pos:]))
    return "".join(parts)


class InertStream:
    """A text stream that writes :func:`inert` text to ``inner`` and otherwise behaves as
    ``inner`` (``isatty``, ``fileno``, ``encoding``, ``buffer``, ``flush`` are ``inner``'s,
    so Rich and Click still see the real terminal)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        """Write ``text`` made inert; returns ``len(text)`` (what the caller gave)."""
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.inner.write(inert(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:  # encoding, errors, buffer, closed, ...
        return getattr(self.inner, name)


def terminal_stream(stream: TextIO) -> TextIO:
    """The stream behind ``stream`` if it is an :class:`InertStream`, else ``stream``: for a
    live display (progress bar, spinner) whose cursor and line-erase codes must reach the
    terminal, and which renders only text already made inert (see
    :func:`whenpro_core.cli.output.live_console`)."""
    return stream.inner if isinstance(stream, InertStream) else stream


def _inert_records(make: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    """A log-record factory whose records carry their message already inert, so a log file
    or any other handler gets the same text the terminal does."""

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a bad %-format: logging reports it itself later
            return record
        record.msg, record.args = inert(message), None
        return record

    factory.inert = True  # type: ignore[attr-defined]
    return factory


@contextmanager
def inert_streams() -> Iterator[None]:
    """Run the body with ``sys.stdout`` and ``sys.stderr`` behind :class:`InertStream`
    and every log record's message made inert (nested uses wrap once); the original
    streams and record factory are put back afterwards."""
    saved = sys.stdout, sys.stderr
    saved_factory = logging.getLogRecordFactory()
    if not getattr(saved_factory, "inert", False):
        logging.setLogRecordFactory(_inert_records(saved_factory))
    if not isinstance(sys.stdout, InertStream) and sys.stdout is not None:
        sys.stdout = InertStream(sys.stdout)
    if not isinstance(sys.stderr, InertStream) and sys.stderr is not None:
        sys.stderr = InertStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        logging.setLogRecordFactory(saved_factory)
