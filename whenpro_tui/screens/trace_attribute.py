"""Attribution on the trace screen: ``a`` opens the picker and runs the chosen protocol
in an async worker with live progress in the step list and the verdict slot, Esc
cancels it, ``A`` cycles through the trace's verdicts; verdicts are saved next to the
trace and reopen with it.

A part of :class:`whenpro_tui.screens.trace.TraceScreen` (:mod:`.trace_host`). Every decision is a
:mod:`whenpro_core.attribution` call (:mod:`~whenpro_core.attribution.interactive`,
:mod:`~whenpro_core.attribution.verdicts`); this module wires them to widgets.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from textual import work
from textual.actions import SkipAction
from textual.timer import Timer
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from whenpro_core.attribution.counterfactual import fixing_replay
from whenpro_core.attribution.interactive import (
    AttributionRequest,
    MeteredJudge,
    ProgressView,
    coord_indexes,
    make_request,
    model_choices,
    offline_protocols,
    progress_view,
    protocol_notes,
    run_request,
    verdict_step_index,
)
from whenpro_core.attribution.protocols import PROTOCOLS
from whenpro_core.attribution.run import trace_has_gold
from whenpro_core.attribution.verdicts import (
    distinct_verdicts,
    load_verdicts,
    same_verdict,
    save_verdict,
    verdicts_path,
)
from whenpro_core.config import load_settings
from whenpro_core.errors import WhenproError
from whenpro_core.safety.textsafe import clean
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.taxonomy import Taxonomy, taxonomy_for
from whenpro_tui.app_settings import saves_verdicts
from whenpro_tui.messages import (
    AttributionDone,
    AttributionFailed,
    AttributionProgress,
    OpenDiff,
    VerdictSaved,
    VerdictsLoaded,
)
from whenpro_tui.screens.attribute_picker import AttributePicker
from whenpro_tui.screens.trace_host import TracePart
from whenpro_tui.widgets.verdict_panel import (
    REASON_CAP,
    SHORT_REASON_CAP,
    render_progress,
    render_verdict,
    verdict_style,
)

if TYPE_CHECKING:
    from whenpro_core.config import Settings

#: Seconds between repaints of the live status (spinner, seconds, tokens).
TICK_S = 0.125
#: Where a saved verdict is, as the verdict panel says it (the folder is in docs/configuration.md,
#: 'Where verdicts go'; a path would not fit the panel).
SAVED_NOTE = "saved in whenpro's verdicts folder"


def _trace_key(trace: Trace) -> str:
    return f"{trace.source.ref() or ''}|{trace.id}"


class AttributionMixin(TracePart):
    """Attribute, cancel and browse verdicts (a part of the trace screen)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The trace's verdicts, oldest first, and the one shown (``None``: panel hidden).
        self.verdicts: list[Attribution] = []
        self.verdict_pos: int | None = None
        #: Where each verdict is kept, by ``id()``: "saved in trace.json.verdicts.jsonl", …
        self.verdict_notes: dict[int, str] = {}
        self.taxonomy: Taxonomy | None = None
        self._attr_worker: Worker[None] | None = None
        #: bumped per run started or cancelled: messages of an older run are dropped
        self._attr_run = 0
        self._attr_request: AttributionRequest | None = None
        self._attr_view: ProgressView | None = None
        self._attr_judge: MeteredJudge | None = None
        self._attr_started = 0.0
        self._attr_frame = 0
        self._attr_timer: Timer | None = None
        self._attr_last: AttributionRequest | None = None

    # ------------------------------------------------------------------ lifecycle

    def attribution_mounted(self) -> None:
        """Called by TraceScreen.on_mount once the trace is shown (Textual runs every
        class's ``on_mount``, so the parts define no handler of their own)."""
        self.verdicts = []
        self.verdict_notes = {}
        self.watch(self.app, "show_labels", lambda _show: self._show_verdict_panel(), init=False)
        self._load_verdicts(self.trace)

    def attribution_trace_changed(self, trace: Trace) -> None:
        """``[``/``]`` opened another trace (called by TraceScreen.on_trace_loaded once
        it is shown)."""
        if self.attribution_running:
            self._cancel_attribution("another trace was opened")
        self.verdicts, self.verdict_pos, self.verdict_notes = [], None, {}
        self._apply_verdicts()
        self._load_verdicts(trace)

    @work(thread=True, group="verdicts", exit_on_error=False, description="load saved verdicts")
    def _load_verdicts(self, trace: Trace) -> None:
        """Read the trace's saved verdicts and its taxonomy (file I/O) in a thread."""
        problems: list[str] = []
        error = None
        verdicts: list[Attribution] = []
        try:
            taxonomy = taxonomy_for(trace.source.root)
        except WhenproError as exc:
            taxonomy, error = Taxonomy.builtin(), exc.one_line()
        except Exception as exc:  # a broken taxonomy file must not stop the viewer
            taxonomy, error = Taxonomy.builtin(), f"{type(exc).__name__}: {exc}"
        try:
            verdicts = load_verdicts(trace, problems)
        except OSError as exc:
            error = f"cannot read saved verdicts: {exc.strerror or exc}"
        path = verdicts_path(trace)
        self.post_message(
            VerdictsLoaded(_trace_key(trace), verdicts, taxonomy, problems, error, str(path) if path else None)
        )

    def on_verdicts_loaded(self, message: VerdictsLoaded) -> None:
        if message.key != _trace_key(self.trace):
            return  # a trace shown earlier
        self.taxonomy = message.taxonomy
        if message.error:
            self.notify(clean(message.error), title="Verdicts", severity="error", timeout=10)
        if message.problems:
            first = clean(message.problems[0])
            more = f" (and {len(message.problems) - 1} more)" if len(message.problems) > 1 else ""
            self.notify(
                f"Skipped unreadable saved verdicts: {first}{more}", title="Verdicts", severity="warning", timeout=10
            )
        if message.verdicts:  # a file from repeated CLI runs may hold one verdict many times
            saved = SAVED_NOTE if message.path else "saved"
            self.verdict_notes.update({id(v): saved for v in message.verdicts})
            self.verdicts = distinct_verdicts([*message.verdicts, *self.verdicts])
            self.verdict_pos = len(self.verdicts) - 1
            self._apply_verdicts()

    # ------------------------------------------------------------------ picker

    @property
    def attribution_running(self) -> bool:
        """True while an attribution worker is pending or running."""
        worker = self._attr_worker
        return worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    def action_attribute(self) -> None:
        if self.attribution_running:
            self.notify("An attribution is running: esc cancels it.", severity="warning")
            return
        settings: Settings | None = None
        settings_error = None
        try:
            settings = load_settings()
        except WhenproError as exc:  # heuristic still works; LLM protocols say why not
            settings_error = exc.one_line()
        trace = self.trace
        notes = protocol_notes(trace)

        def validate(protocol: str, model: str | None, with_gold: bool) -> AttributionRequest:
            return make_request(trace, protocol, model, with_gold, settings)

        def chosen(request: AttributionRequest | None) -> None:
            if request is not None and trace is self.trace:
                self._attr_last = request
                self.start_attribution(request)

        self.app.push_screen(
            AttributePicker(
                protocols=[(p, notes[p]) for p in PROTOCOLS],
                models=model_choices(settings, self.verdicts),
                has_gold=trace_has_gold(trace),
                validate=validate,
                initial=self._attr_last,
                settings_error=settings_error,
                preview=lambda protocol, model, gold: _preview(trace, protocol, model, gold, settings),
                offline=offline_protocols(trace),
            ),
            chosen,
        )

    # ------------------------------------------------------------------ running

    def start_attribution(self, request: AttributionRequest) -> None:
        """Run ``request`` on the shown trace in an async worker (progress is live)."""
        self._attr_run += 1
        self._attr_request = request
        self._attr_view = None
        self._attr_judge = None
        self._attr_started = time.perf_counter()
        self._attr_frame = 0
        self._attr_timer = self.set_interval(TICK_S, self._attr_tick)
        self._attr_worker = self._attribute(self.trace, request, self._attr_run)
        self._show_verdict_panel()

    @work(group="attribute", exit_on_error=False, description="attribute the trace")
    async def _attribute(self, trace: Trace, request: AttributionRequest, run: int) -> None:
        index = coord_indexes(trace)

        def progress(event) -> None:
            self.post_message(AttributionProgress(run, progress_view(trace, event, index)))

        def opened(judge: MeteredJudge) -> None:
            if run == self._attr_run:
                self._attr_judge = judge

        try:
            verdict = await run_request(trace, request, progress=progress, on_judge=opened)
        except WhenproError as exc:
            self.post_message(AttributionFailed(run, exc.one_line()))
            return
        except Exception as exc:  # a protocol bug must not crash the viewer
            self.post_message(AttributionFailed(run, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(AttributionDone(run, verdict))

    def on_attribution_progress(self, message: AttributionProgress) -> None:
        if message.run != self._attr_run or not self.attribution_running:
            return
        self._attr_view = message.view
        self.steps.set_probe(message.view.shaded, message.view.focus)
        self._attr_tick(advance=False)

    def _attr_tick(self, advance: bool = True) -> None:
        request = self._attr_request
        if request is None:
            return
        if advance:
            self._attr_frame += 1
        judge = self._attr_judge
        usage = None
        if judge is not None:
            usage = judge.usage.model_copy(update={"calls": max(judge.usage.calls, judge.asked)})
        panel = self._verdict_slot()
        panel.update(
            render_progress(
                request,
                self._attr_view,
                usage,
                time.perf_counter() - self._attr_started,
                self._attr_frame,
                judge.retry_note if judge is not None else None,
            ),
            layout=panel.display is False,
        )
        panel.display = True

    def _end_run(self) -> None:
        if self._attr_timer is not None:
            self._attr_timer.stop()
            self._attr_timer = None
        self._attr_request = None
        self._attr_view = None
        self._attr_judge = None
        self.steps.set_probe(frozenset(), None)

    def on_attribution_failed(self, message: AttributionFailed) -> None:
        if message.run != self._attr_run:
            return
        self._end_run()
        self._show_verdict_panel()
        self.notify(clean(message.error), title="Attribution failed", severity="error", timeout=15)

    def on_attribution_done(self, message: AttributionDone) -> None:
        if message.run != self._attr_run:
            return
        self._end_run()
        verdict = message.verdict
        where = f"step {clean(verdict.step)}" if verdict.step else "no step"
        summary = f"{clean(verdict.agent or '—')} · {where} · {clean(verdict.mode or '—')}"
        same = next((i for i, v in enumerate(self.verdicts) if same_verdict(v, verdict)), None)
        if same is not None:  # a rerun that changes nothing adds nothing (the panel, the file)
            self.verdict_pos = same
            self._apply_verdicts(jump=True)
            self.notify(
                f"{summary}: the same as verdict {same + 1}, kept once.", title=f"Verdict ({clean(verdict.protocol)})"
            )
            return
        self.verdicts = [*self.verdicts, verdict]
        self.verdict_pos = len(self.verdicts) - 1
        if saves_verdicts(self.app):
            self.verdict_notes[id(verdict)] = "saving…"
            self._save_verdict(self.trace, verdict)
        else:
            self.verdict_notes[id(verdict)] = "not saved (--no-save)"
        self._apply_verdicts(jump=True)  # the panel shows it: no toast to cover it
        if verdict.protocol == "counterfactual" and any(e.get("outcome") == "fixed" for e in verdict.evidence):
            self._show_fixing_replay(self.trace, verdict)

    @work(thread=True, group="fixing-replay", exit_on_error=False, description="redo the fixing replay")
    def _show_fixing_replay(self, trace: Trace, verdict: Attribution) -> None:
        """The diff screen of the replay in which the verdict's correction fixed the run."""
        model = verdict.model[len("llm-fix:") :] if verdict.model.startswith("llm-fix:") else None
        try:
            fixed = fixing_replay(trace, verdict, model)
        except WhenproError as exc:
            self.app.call_from_thread(self.notify, clean(exc.one_line()), title="Fixing replay", severity="warning")
            return
        if fixed is not None and trace is self.trace:
            self.app.post_message(OpenDiff(trace, fixed))

    @work(thread=True, group="verdict-save", exit_on_error=False, description="save a verdict")
    def _save_verdict(self, trace: Trace, verdict: Attribution) -> None:
        try:
            path = save_verdict(trace, verdict)
        except WhenproError as exc:
            self.post_message(VerdictSaved(verdict, None, f"verdict not saved: {exc.one_line()}"))
            return
        self.post_message(VerdictSaved(verdict, str(path) if path else None))

    def on_verdict_saved(self, message: VerdictSaved) -> None:
        if message.error:
            note = "not saved (see the error)"
            self.notify(clean(message.error), title="Verdicts", severity="error", timeout=10)
        elif message.path is None:
            note = "kept until closed (the trace has no file)"
        else:
            note = SAVED_NOTE
        if id(message.verdict) in self.verdict_notes:  # still this trace's verdict
            self.verdict_notes[id(message.verdict)] = note
            self._show_verdict_panel()

    def action_cancel_attribution(self) -> None:
        """Esc: cancel a running attribution; otherwise Esc keeps its meaning (back)."""
        if not self.attribution_running:
            raise SkipAction()
        self._cancel_attribution()

    def _cancel_attribution(self, why: str = "") -> None:
        worker = self._attr_worker
        self._attr_run += 1  # late messages of the cancelled run are ignored
        if worker is not None:
            worker.cancel()  # the judge is closed by run_request as the task unwinds
        self._end_run()
        self._show_verdict_panel()
        self.notify("Attribution cancelled" + (f" ({why})" if why else "") + ": no verdict saved.", severity="warning")

    # ------------------------------------------------------------------ verdicts

    def action_next_verdict(self) -> None:
        """``A``: show the next verdict (after the last, hide the panel)."""
        if not self.verdicts:
            self.notify("No verdict yet: press a to attribute.", severity="warning")
            return
        if self.verdict_pos is None:
            self.verdict_pos = 0
        elif self.verdict_pos + 1 < len(self.verdicts):
            self.verdict_pos += 1
        else:
            self.verdict_pos = None
        self._apply_verdicts(jump=True)
        if self.verdict_pos is None:
            count = f" 1 of {len(self.verdicts)}" if len(self.verdicts) > 1 else ""
            self.notify(f"Verdict panel hidden (A shows verdict{count}).")

    def _apply_verdicts(self, *, jump: bool = False) -> None:
        """◆ markers of every verdict (the shown one on top) and the panel."""
        marks = {}
        order = list(range(len(self.verdicts)))
        if self.verdict_pos is not None:
            order.remove(self.verdict_pos)
            order.append(self.verdict_pos)
        target = None
        for i in order:
            idx = verdict_step_index(self.trace, self.verdicts[i])
            if idx is not None:
                marks[idx] = verdict_style(i)
                target = idx if i == self.verdict_pos else target
        self.steps.set_attributed(marks)
        self._show_verdict_panel()
        if jump and target is not None:
            self._go_to_step(target)
        elif jump and self.verdict_pos is not None and self.verdicts[self.verdict_pos].step:
            self.notify(f"Step {clean(self.verdicts[self.verdict_pos].step)} is not in this trace.", severity="warning")

    def _verdict_slot(self) -> Static:
        return self.query_one("#d-verdict", Static)

    def _reason_cap(self) -> int:
        """The reason's length: short on a short screen (80x24) unless the pane is zoomed."""
        short = self.has_class("short") and self.maximized is None
        return SHORT_REASON_CAP if short else REASON_CAP

    def _show_verdict_panel(self) -> None:
        """The verdict slot: live progress while running, else the shown verdict."""
        if self._attr_request is not None:
            self._attr_tick(advance=False)
            return
        panel = self._verdict_slot()
        if self.verdict_pos is None or not self.verdicts:
            panel.display = False
            return
        shown = self.verdicts[self.verdict_pos]
        panel.update(
            render_verdict(
                self.trace,
                self.verdicts,
                self.verdict_pos,
                self.taxonomy or Taxonomy.builtin(),
                show_labels=self.show_labels,
                note=self.verdict_notes.get(id(shown), ""),
                reason_cap=self._reason_cap(),
                compact=self._reason_cap() == SHORT_REASON_CAP,
            )
        )
        panel.display = True


def _preview(trace: Trace, protocol: str, model: str | None, with_gold: bool, settings: Settings | None) -> str:
    """The dry-run text of the dialog's choice (``f2``)."""
    # lazy: the dry-run modules (~30 ms) are needed only for f2 in the picker
    from whenpro_core.attribution.dry_run import preview_choice

    return preview_choice(trace, protocol, model, with_gold, settings)
