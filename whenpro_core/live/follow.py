"""Follow a growing trace file as an agent writes it (docs/architecture.md, 'Data flow', ``live/``).

The file holds JSON lines of one of these kinds (sniffed from the first line, or given):
native step lines (:mod:`whenpro_core.formats.native_lines`), OpenAI chat messages,
OTLP/JSON export requests, or a coding-agent session (Claude Code, Codex CLI, Gemini CLI
JSONL; :data:`~whenpro_core.live.builders.SESSION_FORMATS`). :class:`FileFollower` is an async iterator of events:

* :class:`~whenpro_core.live.events.StepAdded` for each new step, in order;
* :class:`~whenpro_core.live.events.TraceReset` when the file was truncated (its size
  shrank) or rotated (a new file, another inode, under the same name) — it is read again
  from the beginning and the steps both versions share are kept (``kept``), so a viewer
  keeps its place — or when late OpenTelemetry spans reordered the trace;
* :class:`~whenpro_core.live.events.HeaderUpdated` when a native header line changes
  trace fields;
* :class:`~whenpro_core.live.events.LineError` for a line that is not JSON or not a
  valid step (it is skipped; following goes on);
* :class:`~whenpro_core.live.events.Idle` once per quiet spell of ``idle_after`` seconds.

A last line without its newline is never parsed: it waits for the rest. A missing file
is waited for. Changes are noticed with ``watchfiles`` (inotify and the like) when it is
installed, with a stat poll every ``poll_interval`` seconds as well (and alone
otherwise). :meth:`FileFollower.trace` returns the trace so far at any moment.

Usage::

    follower = FileFollower("run.jsonl")
    async for event in follower:          # runs until close() or the task is cancelled
        ...
    follower.trace()                      # the current Trace
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

import orjson

from whenpro_core.errors import TraceFormatError
from whenpro_core.live.builders import APPEND_ONLY, LINE_FORMATS, common_prefix, make_builder, sniff_line
from whenpro_core.live.events import HeaderUpdated, Idle, LineError, StepAdded, TraceReset
from whenpro_core.safety.textsafe import strip_controls
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import Source, Step, Trace

#: A line longer than this is reported as an error and skipped (bounded memory).
MAX_LINE_BYTES = 64 * 1024 * 1024
#: Bytes read per poll at most, so events flow while a big file is caught up with.
READ_CHUNK = 8 * 1024 * 1024


def watchfiles_available() -> bool:
    """True when the optional ``watchfiles`` package can be imported."""
    try:
        # lazy: only the file follower needs it
        import watchfiles  # noqa: F401
    except ImportError:
        return False
    return True


class FileFollower:
    """Tails ``path`` and turns its lines into steps.

    Args:
        path: the file (it may not exist yet).
        format: ``native``, ``chat`` or ``otlp``; ``None`` sniffs the first line.
        trace_id: for OTLP lines, the trace id to follow (default: the first seen).
        poll_interval: seconds between stat polls.
        idle_after: seconds without new data before an :class:`Idle` event.
        use_watchfiles: ``None`` uses watchfiles when installed; ``False`` polls only.

    Raises TraceFormatError (while iterating) when ``path`` is a folder or unreadable, or
    is a whole (pretty-printed) JSON document: its first line opens a ``{``/``[`` it does
    not close. Otherwise bad lines are events, never exceptions.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        format: str | None = None,
        trace_id: str | None = None,
        poll_interval: float = 0.1,
        idle_after: float = 2.0,
        use_watchfiles: bool | None = None,
    ) -> None:
        if format is not None and format not in LINE_FORMATS:
            raise TraceFormatError(f"unknown line format {format!r}", path=path, expected=", ".join(LINE_FORMATS))
        self.path = Path(path)
        self.format = format
        self._given_format = format
        self.trace_id = trace_id
        self.poll_interval = poll_interval
        self.idle_after = idle_after
        self.use_watchfiles = watchfiles_available() if use_watchfiles is None else use_watchfiles
        self._fh: Any = None
        self._ident: tuple[int, int] | None = None
        self._pos = 0
        self._buf = b""
        self._line_no = 0
        self._builder: Any = None
        self._announced: list[Step] = []
        self._last_data = time.monotonic()
        self._idle_sent = False
        self._closed = False
        self._stop = asyncio.Event()
        self._reported_other = False
        self._skip_rest = False
        self._seen_line = False

    # ------------------------------------------------------------------ public

    @property
    def line_format(self) -> str | None:
        """The line format in use (``None`` until the first line is read)."""
        return self.format

    @property
    def appeared(self) -> bool:
        """Whether the file has existed (and been opened) since following began."""
        return self._ident is not None

    @property
    def offset(self) -> int:
        """Bytes of the current file read so far, a torn last line included (held until
        its newline comes); the file's size once the follower has caught up with it."""
        return self._pos

    def trace(self) -> Trace:
        """The trace so far (a snapshot; an empty trace before the first step)."""
        if self._builder is None:
            return Trace(id=self.path.stem, source=Source(format="live", path=str(self.path)))
        trace: Trace = self._builder.trace()
        return trace

    @property
    def outcome_final(self) -> bool:
        """Whether the outcome the trace states ends the run: False while it was stated
        up front, in a header before any step, and the file has not gone quiet since
        steps came (``idle_after`` seconds without new data); True otherwise (issue 32:
        a header saying ``failure`` first must not stop judging the steps after it)."""
        stated_at = getattr(self._builder, "outcome_steps", None)
        return stated_at != 0 or (self._idle_sent and bool(self._announced))

    @property
    def trace_key(self) -> str:
        """The id events carry: the trace's id (the file's stem until known)."""
        b = self._builder
        if b is None:
            return self.path.stem
        if self.format == "native":
            return str(b.fields.get("id"))
        if self.format == "chat":
            chat_id: str = b.id
            return chat_id
        if self.format != "otlp":  # a session: its builder knows the id
            return str(b.trace_id)
        return b.set.trace_id if b.set is not None else self.path.stem

    def close(self) -> None:
        """Stop following: the iteration ends after the current wait."""
        self._closed = True
        self._stop.set()
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self.events()

    async def events(self) -> AsyncIterator[Any]:
        """The event stream (see the module doc). Ends when :meth:`close` is called."""
        watcher = self._watch() if self.use_watchfiles else None
        try:
            while not self._closed:
                got = self.poll()
                for event in got:
                    yield event
                if self._closed:
                    break
                await self._wait(watcher)
        finally:
            if watcher is not None:
                self._stop.set()
                await watcher.aclose()

    def poll(self) -> list[Any]:
        """Check the file once and return the events found (also used by tests and by
        callers that drive their own clock). ``[]`` once closed."""
        if self._closed:
            return []
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return self._idle_check()
        except OSError as exc:
            raise TraceFormatError(f"cannot read file: {exc.strerror}", path=self.path) from None
        if not os.path.isfile(self.path):
            raise TraceFormatError("is a folder, not a trace file", path=self.path)
        if self._fh is None and self._ident is None:
            self._open()
        elif self._fh is None or (st.st_ino, st.st_dev) != self._ident:
            return self._restart("rotated")
        elif st.st_size < self._pos:
            return self._restart("truncated")
        events = self._read_available()
        return events or self._idle_check()

    # ------------------------------------------------------------------ reading

    def _open(self) -> None:
        try:
            self._fh = open(self.path, "rb")  # noqa: SIM115 - kept open while following
        except OSError as exc:
            raise TraceFormatError(f"cannot read file: {exc.strerror}", path=self.path) from None
        st = os.fstat(self._fh.fileno())
        self._ident = (st.st_ino, st.st_dev)
        self._pos, self._buf, self._line_no, self._skip_rest = 0, b"", 0, False
        self._seen_line = False

    def _restart(self, reason: str) -> list[Any]:
        """Read the new or shortened file from the start; keep the steps both share."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        old = self._announced
        self._builder, self._announced = None, []
        self.format = self._given_format
        self._reported_other = False
        self._open()
        events: list[Any] = []
        while True:
            batch = self._read_available(announce=False)
            events.extend(batch)
            if self._fh is None or self._pos >= os.fstat(self._fh.fileno()).st_size:
                break
        steps = self._current_steps()
        kept = common_prefix(old, steps)
        self._announced = list(steps)
        tid = self.trace_key
        return [TraceReset(tid, reason, kept, len(steps))] + events + [StepAdded(tid, s) for s in steps[kept:]]

    def _read_available(self, *, announce: bool = True) -> list[Any]:
        events: list[Any] = []
        data = self._fh.read(READ_CHUNK) if self._fh is not None else b""
        if not data:
            return events
        self._pos += len(data)
        self._last_data = time.monotonic()
        self._idle_sent = False
        self._buf += data
        *lines, rest = self._buf.split(b"\n")
        for raw in lines:
            if self._skip_rest:  # the tail of an over-long line, already reported
                self._skip_rest = False
                continue
            self._line_no += 1
            events.extend(self._line(raw, announce))
        self._buf = rest
        if len(self._buf) > MAX_LINE_BYTES:
            if not self._skip_rest:
                self._line_no += 1
                events.append(LineError(self.trace_key, self._line_no, "line too long", _preview(self._buf)))
                self._skip_rest = True
            self._buf = b""
        if announce:
            events.extend(self._announce())
        return events

    def _line(self, raw: bytes, announce: bool) -> list[Any]:
        line = raw.rstrip(b"\r")
        if self._line_no == 1 and line.startswith(codecs.BOM_UTF8):
            line = line[len(codecs.BOM_UTF8) :]
        if not line.strip():
            return []
        if len(line) > MAX_LINE_BYTES:
            return [LineError(self.trace_key, self._line_no, "line too long", _preview(line))]
        first, self._seen_line = not self._seen_line, True
        try:
            obj = jsonio.loads(line)
        except orjson.JSONDecodeError as exc:
            if first and line.lstrip()[:1] in (b"{", b"[") and str(exc).startswith("unexpected end of data"):
                raise TraceFormatError(  # line 1 opens a value it does not close: a pretty-printed document
                    f"a JSON document, not JSON lines: open it with `whenpro {self.path}` "
                    "(watch and view --follow read JSON lines, one object a line)",
                    path=self.path,
                ) from None
            if first and (b"\x00" in line[:4096] or not _is_utf8(line[:4096])):
                raise TraceFormatError(
                    "file is binary, not JSON lines", path=self.path, expected="JSON lines (one object a line)"
                ) from None
            return [
                LineError(self.trace_key, self._line_no, f"not valid JSON: {str(exc).split(':')[0]}", _preview(line))
            ]
        if self._builder is None:
            fmt = self.format or sniff_line(obj)
            if fmt is None:
                return [LineError(self.trace_key, self._line_no, "not a trace line", _preview(line) or "")]
            self.format = fmt
            self._builder = make_builder(fmt, self.path, trace_id=self.trace_id)
        try:
            changed = self._builder.feed(obj)
        except TraceFormatError as exc:
            exc.json_path = exc.json_path if exc.json_path not in (None, "$") else None
            exc.path = None
            return [LineError(self.trace_key, self._line_no, exc.one_line(), _preview(line))]
        out: list[Any] = []
        if self.format == "otlp" and getattr(self._builder, "other_spans", False) and not self._reported_other:
            self._reported_other = True
            out.append(
                LineError(
                    self.trace_key,
                    self._line_no,
                    "spans of another trace id are left out (a file is followed as one "
                    "trace; use whenpro watch --otlp for several)",
                    "",
                )
            )
        if changed:
            if announce:
                out = self._announce() + out
            out.append(HeaderUpdated(self.trace_key, tuple(changed)))
        return out

    def _current_steps(self) -> list[Step]:
        if self._builder is None:
            return []
        steps: list[Step] = self._builder.steps if self.format in APPEND_ONLY else self._builder.trace().steps
        return steps

    def _announce(self) -> list[Any]:
        steps = self._current_steps()
        old = self._announced
        if self.format in APPEND_ONLY and (not old or (len(steps) >= len(old) and steps[len(old) - 1] is old[-1])):
            kept = len(old)  # append-only builders: the old steps are the same objects
        else:
            kept = common_prefix(old, steps)
        if kept == len(old) == len(steps):
            return []
        tid = self.trace_key
        events: list[Any] = []
        if kept < len(old):
            events.append(TraceReset(tid, "reordered", kept, len(steps)))
        events.extend(StepAdded(tid, s) for s in steps[kept:])
        self._announced = list(steps)
        return events

    def _idle_check(self) -> list[Any]:
        quiet = time.monotonic() - self._last_data
        if not self._idle_sent and quiet >= self.idle_after:
            self._idle_sent = True
            return [Idle(self.trace_key, round(quiet, 3))]
        return []

    # ------------------------------------------------------------------ waiting

    def _watch(self) -> AsyncGenerator[Any, None] | None:
        try:
            from watchfiles import awatch  # lazy: only the file follower needs it
        except ImportError:
            return None
        folder = self.path.parent if str(self.path.parent) else Path(".")
        if not folder.is_dir():
            return None
        name = self.path.name
        return awatch(
            folder,
            watch_filter=lambda _change, p: Path(p).name == name,
            recursive=False,
            debounce=50,
            step=10,
            stop_event=self._stop,
            yield_on_timeout=True,
            rust_timeout=max(50, int(self.poll_interval * 1000)),
        )

    async def _wait(self, watcher: AsyncIterator[Any] | None) -> None:
        if watcher is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.poll_interval)
            return
        try:
            await watcher.__anext__()
        except StopAsyncIteration:
            await asyncio.sleep(self.poll_interval)


def _preview(line: bytes) -> str:
    return strip_controls(line[:200].decode("utf-8", errors="replace"))


def outcome_final(follower: Any) -> bool:
    """Whether the outcome ``follower``'s trace states ends its run
    (:attr:`FileFollower.outcome_final`; a follower without it: always)."""
    return bool(getattr(follower, "outcome_final", True))


async def follow(path: str | Path, **kwargs: Any) -> AsyncIterator[Any]:
    """``async for event in follow(path)``: shorthand for :class:`FileFollower` (same
    keyword arguments)."""
    follower = FileFollower(path, **kwargs)
    try:
        async for event in follower:
            yield event
    finally:
        follower.close()


__all__ = ["FileFollower", "follow", "outcome_final", "watchfiles_available"]


def _is_utf8(data: bytes) -> bool:
    """True when ``data`` decodes as UTF-8 (a character cut at the end is allowed)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(data) - 3 and exc.reason == "unexpected end of data"
    return True
