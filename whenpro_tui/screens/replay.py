"""The live replay screen: the injection runs (:func:`whenpro_core.injection.inject.inject`
in a thread worker) and the new steps stream into the list as the executor produces them;
the detail pane shows the step under the cursor. Esc cancels: the executor is asked to
stop (a ``cmd:`` subprocess is killed within its polling interval), a notification says
so, nothing is saved. When the replay ends the diff screen replaces this one.
"""

from __future__ import annotations

import threading
import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static

from whenpro_core.errors import WhenproError
from whenpro_core.injection.generate import PreparedGenerator
from whenpro_core.injection.inject import inject
from whenpro_core.safety.textsafe import clean, one_line
from whenpro_core.trace.model import Step
from whenpro_core.views.traceview import agent_slots
from whenpro_tui.commands import collect_bindings
from whenpro_tui.messages import InjectionPlan, OpenDiff, ReplayFinished, ReplayStep
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.widgets.footer import FittedFooter
from whenpro_tui.widgets.palette import AGENT_COLOURS
from whenpro_tui.widgets.replay_list import ReplayList
from whenpro_tui.widgets.step_detail import DetailOptions, StepDetail
from whenpro_tui.widgets.virtual_list import VirtualList

#: Seconds the whole continuation may take (as ``whenpro inject --timeout``).
REPLAY_TIMEOUT = 600.0


class ReplayScreen(Screen[None]):
    """See the module docstring."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel replay"),
        Binding("j,down", "step(1)", "Next step", show=False),
        Binding("k,up", "step(-1)", "Previous step", show=False),
        Binding("g,home", "first", "First step", show=False),
        Binding("G,end", "last", "Newest step (follow)", show=False),
        Binding("?", "help", "Help", key_display="?"),
    ]

    def __init__(self, plan: InjectionPlan, *, timeout: float = REPLAY_TIMEOUT) -> None:
        super().__init__()
        self.plan = plan
        self.timeout = timeout
        self.cancel_event = threading.Event()
        self.started = 0.0
        self.state = "running"  # running, cancelling, failed
        ids = [a.id for a in plan.trace.agents] or sorted({s.agent for s in plan.trace.steps})
        self.slots = agent_slots(ids, len(AGENT_COLOURS))

    def compose(self) -> ComposeResult:
        plan = self.plan
        step = plan.trace.steps[plan.index]
        title = Text("Replay ", style="bold")
        title.append(clean(plan.trace.id), style="bold")
        title.append(
            f" · {plan.mode} at step {clean(step.coord or '#' + str(plan.index))} ({clean(step.agent)})"
            f" · {clean(plan.generated.generator)} · executor {clean(one_line(plan.executor.name, 60))}"
        )
        yield Static(title, id="rp-title", markup=False)
        yield Static(id="rp-status", markup=False)
        with Horizontal(id="rp-panes"):
            yield ReplayList(id="rp-steps")
            yield StepDetail(id="rp-detail")
        yield FittedFooter()

    #: Below this terminal width the list sits above the detail pane.
    NARROW_WIDTH = 110

    def on_mount(self) -> None:
        self.set_class(self.app.size.width < self.NARROW_WIDTH, "narrow")
        self.query_one(ReplayList).start(self.plan.trace.steps[: self.plan.index], self.slots)
        self.query_one(ReplayList).focus()
        self.started = time.monotonic()
        self._status()
        self._ticker = self.set_interval(0.5, self._status)
        self.run_replay()

    def on_resize(self, event) -> None:
        self.set_class(event.size.width < self.NARROW_WIDTH, "narrow")

    def on_unmount(self) -> None:
        # leaving (or quitting) mid-replay stops the executor instead of orphaning it
        self.cancel_event.set()

    # ------------------------------------------------------------------ the worker

    @work(thread=True, exclusive=True, group="replay", exit_on_error=False)
    def run_replay(self) -> None:
        """Inject and replay; every step is posted as it arrives."""
        plan, cancel = self.plan, self.cancel_event

        def on_step(step: Step) -> None:
            self.post_message(ReplayStep(step.model_copy(deep=True)))

        try:
            result = inject(
                plan.trace,
                plan.index,
                plan.mode,
                PreparedGenerator(plan.generated, plan.index, plan.mode),
                plan.executor,
                seed=plan.seed,
                timeout=self.timeout,
                on_step=on_step,
                cancel=cancel,
            )
        except WhenproError as exc:
            self.post_message(ReplayFinished(None, exc.one_line(), cancel.is_set()))
            return
        except Exception as exc:  # noqa: BLE001 - an executor bug must not crash the UI
            self.post_message(ReplayFinished(None, f"{type(exc).__name__}: {exc}", cancel.is_set()))
            return
        self.post_message(ReplayFinished(result, None, cancel.is_set()))

    def on_replay_step(self, message: ReplayStep) -> None:
        message.stop()
        self.query_one(ReplayList).add(message.step)
        self._status()

    def on_replay_finished(self, message: ReplayFinished) -> None:
        message.stop()
        self._ticker.stop()
        steps = self.query_one(ReplayList)
        if message.cancelled:
            self.notify(
                f"Replay cancelled: the executor was stopped after {steps.new_count} new step(s). Nothing was saved.",
                title="Injection",
                severity="warning",
                timeout=8,
            )
            self.dismiss(None)
            return
        if message.result is None:
            self.state = "failed"
            self._status(error=message.error or "the replay failed")
            self.notify(clean(message.error or ""), title="Replay failed", severity="error", timeout=15)
            return
        result = message.result
        self.app.post_message(
            OpenDiff(self.plan.trace, result.counterfactual, result.verdict, slots=self.slots, replace=True)
        )

    # ------------------------------------------------------------------ view

    def _status(self, error: str | None = None) -> None:
        steps = self.query_one(ReplayList)
        seconds = time.monotonic() - self.started
        if error is not None:
            text = Text(f"Replay failed after {seconds:.1f} s: {clean(error)}  (esc: back)", style="bold #ff5f5f")
        elif self.state == "cancelling":
            text = Text(
                f"Cancelling: stopping the executor… ({steps.new_count} new step(s) so far)", style="bold #ffaf5f"
            )
        else:
            injected = "⚑ replayed" if len(steps.steps) > steps.prefix_len else "⚑ replacing"
            text = Text(
                f"Running · {steps.prefix_len} recorded · {injected} · {steps.new_count} new step(s) · "
                f"{seconds:.0f} s · esc cancels",
                style="bold",
            )
        self.query_one("#rp-status", Static).update(text)

    @on(VirtualList.Highlighted, "#rp-steps")
    def _highlighted(self, event: VirtualList.Highlighted) -> None:
        steps = self.query_one(ReplayList)
        if not steps.steps:
            return
        row = steps.cursor
        step = steps.steps[row]
        model = steps.row_model(row)
        self.query_one(StepDetail).show_step(step, model, DetailOptions(agent_slot=self.slots.get(model.agent)))

    def action_step(self, delta: int) -> None:
        steps = self.query_one(ReplayList)
        steps.move_cursor(steps.cursor + delta)

    def action_first(self) -> None:
        self.query_one(ReplayList).move_cursor(0)

    def action_last(self) -> None:
        steps = self.query_one(ReplayList)
        steps.move_cursor(steps.row_count - 1)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Replay screen keys", collect_bindings(self), markers=False))

    def action_cancel(self) -> None:
        if self.state == "failed":
            self.dismiss(None)
            return
        if self.state == "cancelling":
            self.notify("Still stopping the executor…")
            return
        self.state = "cancelling"
        self.cancel_event.set()
        self._status()
