"""The live trace view: the trace screen on a trace that is still being written
(``whenpro view --follow FILE``), or on one the OTLP receiver is getting (opened from
the incoming-traces list). New steps appear in the step list without moving the user:
the list follows the newest step only while the cursor is on the last one (``G`` goes
there and resumes following). A truncated or rotated file and reordered spans
(:class:`~whenpro_core.live.events.TraceReset`) keep the steps both versions share and
the cursor with them. Unreadable lines are notifications.

With live judging (heuristic by default, step-by-step with a model: the settings of
``whenpro watch``), suspect steps are marked ◆ in the list, ``s`` goes to the current
suspect, and the first decisive-error verdict is a notification. A live bar under the
header says what is going on.

Events come from an async worker (:func:`whenpro_core.live.viewer.follow_live`, or the
receiver's store) and are applied in batches, once per refresh at most.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from whenpro_core.live.events import (
    BudgetExhausted,
    DecisiveError,
    FinalVerdict,
    HeaderUpdated,
    Idle,
    JudgeFailed,
    LineError,
    LiveMarks,
    ReplayTried,
    RunEnded,
    StepAdded,
    StepJudged,
    Suspect,
    TraceEvicted,
    TraceReset,
    TraceUpdated,
    fold_steps,
)
from whenpro_core.live.follow import FileFollower
from whenpro_core.live.viewer import follow_live
from whenpro_core.safety.textsafe import clean, one_line, plural
from whenpro_core.trace.model import Source, Trace
from whenpro_core.views.traceview import agent_slots, tally_steps, trace_header
from whenpro_tui.messages import LiveEvents
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.live_step_list import LiveStepList
from whenpro_tui.widgets.palette import AGENT_COLOURS
from whenpro_tui.widgets.prediction_bar import with_bar
from whenpro_tui.widgets.step_detail import StepDetail
from whenpro_tui.widgets.step_list import StepList


class FollowSource:
    """Events of a followed file (and its live judge): see
    :func:`whenpro_core.live.viewer.follow_live`."""

    def __init__(
        self,
        path: str | Path,
        *,
        make_judge: Callable[..., Any] | None = None,
        idle_timeout: float | None = None,
        line_format: str | None = None,
        protocol: str | None = None,
        llm_judge: Any = None,
    ) -> None:
        self.path = Path(path)
        self.llm_judge = llm_judge
        self.make_judge = make_judge
        self.idle_timeout = idle_timeout
        self.protocol = protocol if make_judge is not None else None
        self.follower = FileFollower(self.path, format=line_format, idle_after=min(2.0, idle_timeout or 2.0))

    @property
    def title(self) -> str:
        return f"following {self.path.name}"

    def trace(self) -> Trace:
        return self.follower.trace()

    async def events(self) -> AsyncIterator[Any]:
        try:
            async for ev in follow_live(self.follower, self.make_judge, idle_timeout=self.idle_timeout):
                yield ev
        finally:
            if self.llm_judge is not None:
                await self.llm_judge.aclose()

    def close(self) -> None:
        """Stop following (the event stream ends)."""
        self.follower.close()


class StoreSource:
    """Events of one trace of the OTLP receiver's store (judge events are forwarded by
    the incoming-traces screen). Subscribes at once, so no update is lost between the
    first snapshot of the trace and the first event."""

    def __init__(self, store: Any, trace_id: str, *, protocol: str | None = None) -> None:
        self.store = store
        self.trace_id = trace_id
        self.protocol = protocol
        self.sub = store.subscribe()

    @property
    def title(self) -> str:
        return f"receiving trace {self.trace_id[:16]}"

    def trace(self) -> Trace:
        found = self.store.trace(self.trace_id)
        return found if found is not None else Trace(id=self.trace_id, source=Source(format="live"))

    async def events(self) -> AsyncIterator[Any]:
        try:
            async for ev in self.sub:
                if getattr(ev, "trace_id", None) == self.trace_id:
                    yield ev
        finally:
            self.sub.close()

    def close(self) -> None:
        """Stop receiving this trace's events."""
        self.sub.close()


class LiveBar(Static):
    """One or two lines: the source, step count, judging state, and the latest news."""

    DEFAULT_CSS = """
    LiveBar { height: auto; max-height: 3; padding: 0 1; background: $panel;
              text-wrap: nowrap; text-overflow: ellipsis; }
    """


class LiveTraceScreen(TraceScreen):
    """A trace that is still growing (see module docstring)."""

    BINDINGS = [
        Binding("s", "jump_suspect", "Go to suspect step"),
    ]

    def __init__(
        self,
        source: FollowSource | StoreSource,
        *,
        is_root: bool = False,
        trace: Trace | None = None,
        events: list | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.source = source
        #: the judge's suspect, decisive error and run end (whenpro_core.live.events.LiveMarks)
        self.marks = LiveMarks()
        self.news = ""
        self.judged = bool(source.protocol)
        self.judging = f"{source.protocol} judging" if self.judged else "judging off"
        self.line_errors = 0
        self._pending: list[Any] = []
        for ev in events or []:  # what the judge said before this view opened: no notifications
            self.marks.apply(ev)
        if self.marks.ended is not None:
            self.news = _ended_news(self.marks.ended)
        self._flush_scheduled = False
        self._on_close = on_close
        super().__init__(trace if trace is not None else source.trace(), is_root=is_root)

    @property
    def suspect(self) -> Suspect | None:
        """The judge's current suspect step."""
        return self.marks.suspect

    @property
    def decisive(self) -> DecisiveError | None:
        """The decisive error the judge flagged (``None``: none, or cut away)."""
        return self.marks.decisive

    @property
    def ended(self) -> str | None:
        """Why the run ended (``None``: still running)."""
        return self.marks.ended.reason if self.marks.ended is not None else None

    def compose(self) -> ComposeResult:
        # the trace screen's layout with the live step list, and the live bar under the header
        def live_list(widgets: ComposeResult) -> ComposeResult:
            for widget in widgets:
                yield LiveStepList(id="steps") if type(widget) is StepList else widget

        yield from with_bar(live_list(super().compose()), LiveBar(id="live-bar", markup=False))

    def after_mount(self) -> None:
        """Start following once TraceScreen.on_mount has shown what is there."""
        if not self.trace.steps:
            self.query_one(StepDetail).show_empty("Waiting for the first step…")
        else:  # start at the newest step, following
            self.steps.move_cursor(self.steps.row_count - 1)
        self._mark()
        self._bar()
        self.run_source()

    def before_unmount(self) -> None:
        self.source.close()
        if self._on_close is not None:
            self._on_close()

    # ------------------------------------------------------------------ events in

    @work(exclusive=True, group="live", exit_on_error=False)
    async def run_source(self) -> None:
        try:
            async for ev in self.source.events():
                self._queue(ev)
        except Exception as exc:  # noqa: BLE001 - a folder, an unreadable file: say so
            message = exc.one_line() if hasattr(exc, "one_line") else f"{type(exc).__name__}: {exc}"
            self.news = f"stopped: {message}"
            self.notify(clean(message), title="Live view stopped", severity="error", timeout=15, markup=False)
            self._bar()

    def _queue(self, ev: Any) -> None:
        self._pending.append(ev)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.call_after_refresh(self._flush)

    def on_live_events(self, message: LiveEvents) -> None:
        """Judge events forwarded by the incoming-traces screen."""
        message.stop()
        for ev in message.events:
            self._queue(ev)

    # ------------------------------------------------------------------ applying

    def _flush(self) -> None:
        self._flush_scheduled = False
        events, self._pending = self._pending, []
        change = fold_steps(events, len(self.trace.steps))
        self._line_errors([ev for ev in events if isinstance(ev, LineError)])
        for ev in events:
            if isinstance(ev, TraceReset):
                self._reset(ev)
            elif not isinstance(ev, (LineError, StepAdded, TraceUpdated, HeaderUpdated)):
                self._judge_event(ev)
        if change.grew or change.header:
            self._apply(self.source.trace(), change.kept)
        self._bar()

    def _reset(self, ev: TraceReset) -> None:
        """The file was truncated, rotated or reordered: say so; a suspect or decisive
        step that is no longer in the trace is no longer news (the judge re-reads the
        new steps)."""
        if ev.reason in ("truncated", "rotated"):
            self.notify(
                f"The file was {ev.reason}: read again, {plural(ev.kept, 'step')} kept.",
                severity="warning",
                markup=False,
            )
        self.news = f"trace {ev.reason}: kept {plural(ev.kept, 'step')}"
        self.marks.apply(ev)

    def _line_errors(self, bad: list[LineError]) -> None:
        """One notification per burst of bad lines (those read together); the running
        count stays on the status bar."""
        if not bad:
            return
        self.line_errors += len(bad)
        first = f"line {bad[0].line}: {clean(one_line(bad[0].message, 200))}"
        if len(bad) == 1:
            self.notify(first, title="Line skipped", severity="warning", markup=False)
        else:
            self.notify(
                f"{len(bad)} lines skipped (lines {bad[0].line}–{bad[-1].line}); {first}",
                title="Lines skipped",
                severity="warning",
                markup=False,
            )

    def _judge_event(self, ev: Any) -> None:
        if isinstance(ev, Idle):
            if self.ended is None:  # once the run has ended, quiet is expected: its end stays the news
                self.news = f"no new data for {ev.seconds:.0f}s"
        elif isinstance(ev, Suspect):
            self.marks.apply(ev)
            self._mark()
        elif isinstance(ev, DecisiveError):
            first = self.decisive is None
            self.marks.apply(ev)
            self._mark()
            if first:
                self.notify(
                    f"step {clean(ev.step)} [{clean(ev.agent)}] {clean(ev.mode or '?')}: "
                    f"{clean(one_line(ev.reason, 200))}   (s goes there)",
                    title=f"Decisive error ({clean(ev.protocol)})",
                    severity="error",
                    timeout=20,
                    markup=False,
                )
        elif isinstance(ev, StepJudged):
            verdict = f"yes, {ev.mode or '?'}" if ev.decisive else "no"
            self.news = f"judged step {ev.step}: {verdict}"
        elif isinstance(ev, BudgetExhausted):
            self.judging = f"judging stopped: {ev.limit} budget spent"
            self.notify(
                f"Budget exhausted ({ev.limit}): {ev.usage.calls} calls; judging stopped.",
                severity="warning",
                timeout=10,
                markup=False,
            )
        elif isinstance(ev, JudgeFailed):
            self.judging = "judging failed"
            self.notify(
                clean(one_line(ev.message, 300)), title="Judge failed", severity="error", timeout=12, markup=False
            )
        elif isinstance(ev, RunEnded):
            self.marks.apply(ev)
            self.news = _ended_news(ev)
        elif isinstance(ev, ReplayTried):  # watch's counterfactual final pass
            self.news = f"counterfactual: step {ev.step} [{ev.agent}] {ev.outcome}"
        elif isinstance(ev, FinalVerdict):
            a = ev.attribution
            self.news = f"final verdict ({a.protocol}): step {a.step or '?'} [{a.agent or '?'}] {a.mode or '?'}"
            self.notify(clean(one_line(self.news, 300)), title="Final verdict", markup=False)
        elif isinstance(ev, TraceEvicted):
            self.news = "left the receiver's memory (kept on disk)"

    def _apply(self, trace: Trace, kept: int) -> None:
        """Show ``trace``, whose steps ``[0, kept)`` are those already shown."""
        steps = self.query_one(LiveStepList)
        old_count = steps.row_count
        at_end = steps.cursor >= old_count - 1
        current = steps.step_index
        self.trace = trace
        tally = tally_steps(trace.steps)
        self.header_model = trace_header(trace, tally=tally)
        self.slots = agent_slots([a for a, _ in self.header_model.agents], len(AGENT_COLOURS))
        kept = min(kept, len(trace.steps))
        base = [i for i in steps.shown if i < kept]
        flt = self.step_filter
        shown = base + [i for i in range(kept, len(trace.steps)) if not flt.active or flt.keeps(trace.steps[i])]
        if at_end or current is None:
            cursor = len(shown) - 1
        elif current < kept:
            cursor = base.index(current) if current in base else len(base) - 1
        else:  # the cursor's step was replaced: stay at the same position
            cursor = min(steps.cursor, len(shown) - 1)
        steps.update_trace(trace, shown, self.slots, kept=kept, cursor=max(cursor, 0), tally=tally)
        self._mark()
        if at_end and shown:
            steps.move_cursor(len(shown) - 1)
        self._render_header()
        detail = self.query_one(StepDetail)
        if not trace.steps:
            detail.show_empty("Waiting for the first step…")
        elif detail.shown_index is None or detail.shown_index >= kept:
            self._show_current()
        self._update_status()

    def _mark(self) -> None:
        marked = set()
        for ev in (self.suspect, self.decisive):
            if ev is not None and 0 <= ev.index < len(self.trace.steps):
                marked.add(ev.index)
        self.query_one(LiveStepList).set_marked(frozenset(marked))

    def _bar(self) -> None:
        text = Text()
        running = self.ended is None
        text.append("● " if running else "■ ", style="bold green" if running else "bold")
        text.append(clean(self.source.title), style="bold")
        text.append(f" · {plural(len(self.trace.steps), 'step')} · {self.judging}", style="dim")
        if self.line_errors:
            text.append(f" · {plural(self.line_errors, 'bad line')} skipped", style="yellow")
        if self.decisive is not None:
            d = self.decisive
            text.append("   DECISIVE ", style="bold red")
            text.append(f"step {clean(d.step)} [{clean(d.agent)}] {clean(d.mode or '?')}")
        elif self.suspect is not None:
            s = self.suspect
            conf = f" ({s.confidence:.2f})" if s.confidence is not None else ""
            text.append("   suspect ", style="bold yellow")
            text.append(f"step {clean(s.step)} [{clean(s.agent)}] {clean(s.mode or '?')}{conf}")
        if self.news:
            text.append("\n")
            text.append(clean(one_line(self.news, 300)), style="dim")
        self.query_one(LiveBar).update(text)

    # ------------------------------------------------------------------ keys

    def action_jump_suspect(self) -> None:
        ev = self.decisive or self.suspect
        if ev is None:
            self.notify("No suspect step yet." if self.judged else "Live judging is off (--no-judge).", markup=False)
            return
        if 0 <= ev.index < len(self.trace.steps):
            self._go_to_step(ev.index)


def _ended_news(ev: RunEnded) -> str:
    return f"run ended ({ev.reason}) after {plural(ev.step_count, 'step')}"
