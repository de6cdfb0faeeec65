"""What ``whenpro watch`` and ``whenpro serve`` do and print, apart from argument parsing.

``watch`` prints one line per event as verdicts come (``--json``: one JSON object per
line, :func:`~whenpro_core.live.events.event_record`), for scripts and CI of agent
projects. Exit status (:meth:`Printer.exit_code`), whatever the trace's outcome says:

* 1: a decisive error was flagged;
* 2: bad input or usage, or the judge failed with no decisive error found;
* 3 (:data:`EXIT_NO_OUTCOME`): nothing flagged, but a run ended without an outcome (no
  outcome stated, no final answer to judge against a gold answer), or none ended: nothing
  says the run went well;
* 0: every run ended with an outcome and nothing was flagged.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whenpro_core.errors import ConfigError
from whenpro_core.live.events import (
    BudgetExhausted,
    DecisiveError,
    ExportRejected,
    ExportWarning,
    FinalVerdict,
    HeaderUpdated,
    Idle,
    JudgeFailed,
    LineError,
    ReplayTried,
    RunEnded,
    StepAdded,
    StepJudged,
    Suspect,
    TraceEvicted,
    TraceReset,
    TraceSetAside,
    TraceStarted,
    TraceUpdated,
    event_record,
    fold_steps,
)
from whenpro_core.live.follow import FileFollower
from whenpro_core.live.judge_live import Budget, LiveJudge
from whenpro_core.live.session import attribute_live, attribute_store
from whenpro_core.live.setup import judge_factory, open_receiver
from whenpro_core.safety.textsafe import plural, strip_controls
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import Step
from whenpro_core.views.traceview import shown_id

if TYPE_CHECKING:  # the judges are imported when a watch starts (they load the LLM stack)
    from whenpro_core.live.judge_live import Budget, LiveJudge

#: Exit status of a watch that flagged nothing while a run ended without an outcome.
EXIT_NO_OUTCOME = 3
#: Seconds ``serve`` may take to notice Ctrl-C or SIGTERM while no event comes.
STOP_POLL_S = 0.2
#: Characters of untrusted text (content, reasons) on one printed line.
LINE_CHARS = 160
#: A judge failure is whenpro's own reason and advice: shown whole, bounded only against a
#: backend that echoes a page of text.
REASON_CHARS = 2000


def _clip(text: Any, n: int = LINE_CHARS) -> str:
    flat = " ".join(strip_controls(str(text or "")).split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"


def _who(step: str | None, agent: str | None) -> str:
    return f"step {_clip(step, 20)} [{_clip(agent, 40)}]"


def _step_line(s: Step) -> str:
    calls = f" calls {', '.join(_clip(c.name, 40) for c in s.tool_calls)}" if s.tool_calls else ""
    return f"step {_clip(s.coord, 20)} [{_clip(s.agent, 40)}] {_clip(s.kind, 20)}{calls}: {_clip(s.content, 100)}"


def format_lines(
    ev: Any, *, show_steps: bool = False, prefix: bool = False, shown: int | None = None, source: str | None = None
) -> list[str]:
    """The lines printed for an event (none for events not printed: steps and trace
    updates unless ``show_steps``; idle notices). A followed file announces each step as
    a StepAdded; the OTLP receiver announces them inside TraceUpdated (``added``), so
    with ``show_steps`` a TraceUpdated gives one step line per added step, after a
    ``trace reordered`` line when it keeps fewer than the ``shown`` steps already
    printed for that trace (late spans). ``prefix`` starts each line with the short
    trace id (several traces at once); ``source`` (the followed file) starts a bad
    line's report as ``FILE:LINE:``. Trace text is cleaned of control characters and
    cut."""
    if isinstance(ev, TraceUpdated):
        if not show_steps:
            return []
        lines = []
        if shown is not None and fold_steps([ev], shown).kept < shown:
            lines.append(f"trace reordered: kept {plural(ev.kept, 'step')}, now {ev.step_count}")
        lines += [_step_line(s) for s in ev.added]
    else:
        text = _one_line(ev, show_steps)
        if source and isinstance(ev, LineError):
            text = f"{_clip(source)}:{ev.line}: {_clip(ev.message)}"
        lines = [] if text is None else [text]
    if prefix and ev.trace_id:
        lines = [f"[{ev.trace_id[:8]}] {line}" for line in lines]
    return lines


def format_event(ev: Any, *, show_steps: bool = False, prefix: bool = False) -> str | None:
    """The text printed for an event (several lines joined with newlines for a
    TraceUpdated with steps), or ``None`` when nothing is printed; see
    :func:`format_lines`."""
    lines = format_lines(ev, show_steps=show_steps, prefix=prefix)
    return "\n".join(lines) if lines else None


def _one_line(ev: Any, show_steps: bool) -> str | None:
    text: str | None = None
    if isinstance(ev, StepAdded):
        if show_steps:
            text = _step_line(ev.step)
    elif isinstance(ev, TraceReset):
        text = f"trace {ev.reason}: kept {plural(ev.kept, 'step')}, now {ev.step_count}"
    elif isinstance(ev, HeaderUpdated):
        text = f"trace fields updated: {', '.join(ev.fields)}" if show_steps else None
    elif isinstance(ev, LineError):
        text = f"line {ev.line}: {_clip(ev.message)}"
    elif isinstance(ev, Idle):
        text = None
    elif isinstance(ev, (TraceStarted, TraceEvicted, ExportRejected, ExportWarning, TraceSetAside)):
        text = _store_line(ev)
    elif isinstance(ev, StepJudged):
        verdict = f"yes, {ev.mode or '?'}" if ev.decisive else "no"
        text = f"judged {_who(ev.step, ev.agent)}: {verdict}"
    elif isinstance(ev, Suspect):
        conf = f" ({ev.confidence:.2f})" if ev.confidence is not None else ""
        text = f"suspect {_who(ev.step, ev.agent)} {ev.mode or '?'}{conf}: {_clip(ev.reason)}"
    elif isinstance(ev, DecisiveError):
        text = f"DECISIVE ERROR {_who(ev.step, ev.agent)} {ev.mode or '?'} ({ev.protocol}): {_clip(ev.reason)}"
    elif isinstance(ev, BudgetExhausted):
        u = ev.usage
        text = (
            f"budget exhausted ({ev.limit}): {u.calls} calls, {u.input_tokens + u.output_tokens} tokens, "
            f"${u.cost_usd:.4f}; judging stopped"
        )
    elif isinstance(ev, JudgeFailed):
        text = f"judge failed: {_clip(ev.message, REASON_CHARS)}"
    elif isinstance(ev, RunEnded):
        text = f"run ended ({ev.reason}) after {plural(ev.step_count, 'step')}"
    elif isinstance(ev, ReplayTried):
        did = (
            "needs no correction (no replay)" if ev.outcome == "unchanged" else f"corrected and replayed: {ev.outcome}"
        )
        answer = f", final answer {_clip(ev.final_answer, 60)!r}" if ev.final_answer is not None else ""
        text = f"counterfactual {_who(ev.step, ev.agent)}: {did}{answer}"
    elif isinstance(ev, FinalVerdict):
        a = ev.attribution
        text = f"final verdict ({a.protocol}): {_who(a.step, a.agent)} {a.mode or '?'}: {_clip(a.reason)}"
    return text


def _store_line(ev: Any) -> str | None:
    """The line of an OTLP store event (none for an eviction)."""
    if isinstance(ev, TraceStarted):
        return f"trace started (service {_clip(ev.service, 60)}): {ev.path}"
    if isinstance(ev, ExportRejected):
        return f"export rejected ({ev.status}): {_clip(ev.reason)}"
    if isinstance(ev, ExportWarning):
        return f"export accepted with a warning: {_clip(ev.message)}"
    if isinstance(ev, TraceSetAside):
        where = f"; spans kept in {_clip(ev.path)}" if ev.path else ""
        return f"trace not written: {_clip(ev.reason)}{where}"
    return None


class Printer:
    """Prints events (text or JSON lines) and remembers what decides the exit status."""

    def __init__(
        self,
        *,
        as_json: bool,
        show_steps: bool,
        prefix: bool = False,
        write: Callable[[str], Any] | None = None,
        source: str | None = None,
        labels: bool = False,
    ) -> None:
        self.as_json, self.show_steps, self.prefix, self.source = as_json, show_steps, prefix, source
        self.labels = labels  # False: trace ids masked (views.traceview.shown_id), as ls/info show them
        self.write = write or (lambda line: (sys.stdout.write(line + "\n"), sys.stdout.flush()))
        self.decisive = 0
        self.failed = 0
        self.ended: dict[str, str] = {}  # outcome of each run that ended, by trace id
        self._shown: dict[str, int] = {}  # steps printed so far per OTLP trace

    def __call__(self, ev: Any) -> None:
        if isinstance(ev, DecisiveError):
            self.decisive += 1
        elif isinstance(ev, JudgeFailed):
            self.failed += 1
        elif isinstance(ev, RunEnded):
            self.ended[ev.trace_id] = ev.outcome
        if self.as_json:
            if self.show_steps or not isinstance(ev, (StepAdded, TraceUpdated, HeaderUpdated, Idle, TraceEvicted)):
                self.write(jsonio.dumps(self._record(ev)).decode())
            return
        shown = None
        if isinstance(ev, TraceUpdated):
            shown = self._shown.get(ev.trace_id, 0)
            self._shown[ev.trace_id] = ev.step_count
        elif isinstance(ev, TraceEvicted):
            self._shown.pop(ev.trace_id, None)
        for line in format_lines(ev, show_steps=self.show_steps, prefix=self.prefix, shown=shown, source=self.source):
            self.write(line)

    def _record(self, ev: Any) -> dict[str, Any]:
        """The JSON record of ``ev``, its trace ids masked unless ``labels``."""
        record = event_record(ev)
        for holder in (record, record.get("attribution")):
            if isinstance(holder, dict) and isinstance(holder.get("trace_id"), str):
                holder["trace_id"] = shown_id(holder["trace_id"], self.labels)
        return record

    @property
    def exit_code(self) -> int:
        """1 when a decisive error was flagged, else 2 when the judge failed, else
        :data:`EXIT_NO_OUTCOME` when no run ended or one ended with outcome ``unknown``,
        else 0 (see the module doc)."""
        if self.decisive:
            return 1
        if self.failed:
            return 2
        if not self.ended or "unknown" in self.ended.values():
            return EXIT_NO_OUTCOME
        return 0


@dataclass(frozen=True)
class WatchOptions:
    """The options of one ``whenpro watch``, as typed (built once by the command, then passed
    whole). ``otlp``: ``[HOST:PORT]`` to receive OTLP exports instead of following a file;
    ``protocol``/``model``: the live judge (heuristic or step-by-step; ``provider:model``);
    ``budget_calls``/``budget_tokens``/``budget_usd``: when judging stops (``None``: no cap);
    ``idle_timeout``: seconds without new data that end the run (0 or ``None``: never);
    ``final_pass``: judge the ended run whole; ``as_json``: one JSON object per event line;
    ``show_steps``: print each new step; ``with_gold``: show the judge the gold answer;
    ``no_cache``: do not reuse cached model answers; ``line_format``: ``native``, ``chat`` or
    ``otlp`` (``None``: sniffed); ``store``/``allow_remote``/``token``: the OTLP receiver's
    folder, non-loopback listening and Authorization token; ``preset``: refused with the reason;
    ``labels``: trace ids whole (else the failure mode and step in an id are masked)."""

    otlp: str | None = None
    protocol: str | None = None
    model: str | None = None
    budget_calls: int | None = None
    budget_tokens: int | None = None
    budget_usd: float | None = None
    idle_timeout: float | None = 30.0
    final_pass: bool = False
    as_json: bool = False
    show_steps: bool = False
    with_gold: bool = True
    no_cache: bool = False
    line_format: str | None = None
    store: Path | None = None
    allow_remote: bool = False
    preset: str | None = None
    token: str | None = None
    labels: bool = False


def watch_command(file: str | None, options: WatchOptions) -> int:
    """Run ``whenpro watch`` on ``file`` (or ``options.otlp``); returns the exit status (see
    the module doc). ``preset`` (``--preset``) is refused in one line before anything runs
    (:func:`~whenpro_core.live.setup.final_protocol`)."""
    o, otlp, idle_timeout = options, options.otlp, options.idle_timeout
    if file is None and otlp is None:
        raise ConfigError(
            "nothing to watch: give a FILE to follow or --otlp [HOST:PORT]",
            expected="whenpro watch FILE or whenpro watch --otlp",
        )
    if file is not None and otlp is not None:
        raise ConfigError("FILE and --otlp do not go together", expected="whenpro watch FILE or whenpro watch --otlp")
    if idle_timeout is not None and idle_timeout <= 0:
        idle_timeout = None
    budget = Budget(max_calls=o.budget_calls, max_tokens=o.budget_tokens, max_usd=o.budget_usd)
    make, judge = judge_factory(
        o.protocol,
        o.model,
        budget=budget,
        final_pass=o.final_pass,
        with_gold=o.with_gold,
        no_cache=o.no_cache,
        preset=o.preset,
    )
    printer = Printer(as_json=o.as_json, show_steps=o.show_steps, prefix=otlp is not None, source=file, labels=o.labels)

    async def main() -> None:
        try:
            if file is not None:
                await _watch_file(file, make(""), printer, idle_timeout, o.line_format)
            else:
                assert otlp is not None  # checked above: a FILE or --otlp
                await _watch_otlp(otlp, make, printer, idle_timeout, o.store, (o.allow_remote, o.token))
        finally:
            if judge is not None:
                await judge.aclose()

    _run(main)
    return printer.exit_code


async def _watch_file(
    file: str, judge: Any, printer: Printer, idle_timeout: float | None, line_format: str | None
) -> None:
    path = Path(file)
    if path.is_dir():
        raise ConfigError(f"{file} is a folder", expected="a trace file (JSON lines) to follow")
    if not path.parent.is_dir():  # a file may appear later, but never in a folder that does not exist
        raise ConfigError(f"{path.parent}: no such folder", expected=f"an existing folder to follow {path.name} in")
    if not path.exists():
        sys.stderr.write(f"whenpro: waiting for {file} to appear\n")
        sys.stderr.flush()
    follower = FileFollower(path, format=line_format, idle_after=min(2.0, idle_timeout or 2.0))
    async for ev in attribute_live(follower, judge, idle_timeout=idle_timeout):
        printer(ev)
    if not follower.appeared:
        waited = f" (waited {idle_timeout:g} s, --idle-timeout)" if idle_timeout else ""
        raise ConfigError(f"{file} never appeared{waited}", expected="a trace file an agent writes")


def _say_client_note(receiver: Any) -> None:
    """Print (stderr) the token exporters must send and that traffic is unencrypted, when
    the receiver needs a token."""
    if receiver.client_note:
        sys.stderr.write(f"whenpro: {receiver.client_note}\n")
    sys.stderr.flush()


async def _watch_otlp(
    address: str,
    make: Callable[[str], LiveJudge],
    printer: Printer,
    idle_timeout: float | None,
    store_dir: Path | None,
    remote: tuple[bool, str | None],
) -> None:
    """Receive on ``address`` and attribute each trace; ``remote``: (allow_remote, token)."""
    receiver = open_receiver(address, store_dir, allow_remote=remote[0], token=remote[1])
    with receiver:
        sys.stderr.write(f"whenpro: receiving OTLP traces at {receiver.endpoint} (store: {receiver.store.folder})\n")
        _say_client_note(receiver)
        sys.stderr.flush()
        async for ev in attribute_store(receiver.store, make, idle_timeout=idle_timeout):
            printer(ev)


def serve_command(
    address: str | None,
    *,
    store: Path | None,
    allow_remote: bool,
    max_traces: int,
    as_json: bool,
    quiet: bool,
    fsync: bool = False,
    token: str | None = None,
) -> None:
    """Run ``whenpro serve --otlp``: the receiver and store until interrupted (Ctrl-C or
    SIGTERM end it cleanly, after writing what is pending).

    The signals only set a flag the loop checks between events (never an exception
    raised wherever the main thread is): an event taken from the queue is always
    printed, and every event announced before the store stopped is printed after."""
    receiver = open_receiver(address, store, allow_remote=allow_remote, token=token, max_traces=max_traces, fsync=fsync)
    printer = Printer(as_json=as_json, show_steps=True)
    sub = receiver.store.subscribe()
    stopping = threading.Event()

    def stop(_signum: int, _frame: Any) -> None:
        stopping.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        with receiver:
            sys.stderr.write(
                f"whenpro: receiving OTLP traces at {receiver.endpoint} "
                f"(store: {receiver.store.folder}); Ctrl-C stops\n"
            )
            _say_client_note(receiver)
            while not stopping.is_set():
                ev = sub.get(STOP_POLL_S)
                if ev is not None and not quiet:
                    printer(ev)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sub.close()
    while (ev := sub.get_nowait()) is not None and not quiet:
        printer(ev)


def _raise_interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def _run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run an async main; SIGTERM ends it like Ctrl-C (the CLI reports an interruption)."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        asyncio.run(main())
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = ["Printer", "format_event", "format_lines", "open_receiver", "serve_command", "watch_command", "WatchOptions"]
