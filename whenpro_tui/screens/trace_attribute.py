"""Attribution on the trace screen: ``a`` opens the picker and runs the chosen protocol
in an async worker with live progress in the step list and the verdict panel, Esc
cancels it, ``A`` cycles through the trace's verdicts; verdicts are saved in whenpro's
verdicts folder and reopen with the trace.

:class:`AttributionController` holds that state; the trace screen
(:class:`whenpro_tui.screens.trace.TraceScreen`) owns one (``screen.attribution``) and
hands it its keys, its attribution messages and its trace changes. What the panel shows
is the :class:`~whenpro_tui.widgets.verdict_panel.VerdictPanel`'s reactive state, which
the controller sets. Every decision is a :mod:`whenpro_core.attribution` call
(:mod:`~whenpro_core.attribution.request`, the same request and run as ``whenpro
attribute``; :mod:`~whenpro_core.attribution.interactive`;
:mod:`~whenpro_core.attribution.verdicts`); this module wires them to widgets.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from textual.worker import WorkerState

from whenpro_core.attribution.counterfactual import fixing_replay
from whenpro_core.attribution.interactive import (
    coord_indexes,
    model_choices,
    progress_view,
    protocol_notes,
    verdict_step_index,
)
from whenpro_core.attribution.judge import Progress
from whenpro_core.attribution.protocols import PROTOCOLS
from whenpro_core.attribution.request import (
    AttributionRequest,
    MeteredJudge,
    make_request,
    offline_protocols,
    run_request,
)
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
from whenpro_tui.widgets.verdict_panel import AttributionRunning, VerdictPanel, VerdictShown, verdict_style

if TYPE_CHECKING:
    from textual.timer import Timer
    from textual.worker import Worker

    from whenpro_core.config import Settings
    from whenpro_tui.screens.trace_host import TracePart

#: Seconds between repaints of the live status (spinner, seconds, tokens).
TICK_S = 0.125
#: Where a saved verdict is, as the verdict panel says it (the folder is in docs/configuration.md,
#: 'Where verdicts go'; a path would not fit the panel).
SAVED_NOTE = "saved in whenpro's verdicts folder"


def _trace_key(trace: Trace) -> str:
    return f"{trace.source.ref() or ''}|{trace.id}"


@dataclass
class _Run:
    """The attribution in flight: its ``number`` (messages of an older run are dropped),
    what it shows (``shown``: the request, progress and usage), when it ``started``
    (``time.perf_counter`` seconds), its repaint ``timer`` and, once open, its ``judge``."""

    number: int
    shown: AttributionRunning
    started: float
    timer: Timer
    judge: MeteredJudge | None = None


class AttributionController:
    """Attribute, cancel and browse verdicts on the trace ``screen`` that owns it (see the
    module docstring). ``verdicts``: the trace's verdicts, oldest first; ``verdict_pos``:
    the one shown (``None``: the panel is hidden); ``verdict_notes``: where each is kept,
    by ``id()`` ("saved in whenpro's verdicts folder", "not saved (--no-save)", …)."""

    def __init__(self, screen: TracePart) -> None:
        self.screen = screen
        self.verdicts: list[Attribution] = []
        self.verdict_pos: int | None = None
        self.verdict_notes: dict[int, str] = {}
        self.taxonomy: Taxonomy | None = None
        #: the worker of the last attribution started (running or not)
        self.worker: Worker[None] | None = None
        #: the last request chosen: the dialog opens on it
        self.last_request: AttributionRequest | None = None
        #: bumped per run started or cancelled: messages of an older run are dropped
        self._number = 0
        self._run: _Run | None = None

    @property
    def panel(self) -> VerdictPanel:
        return self.screen.query_one(VerdictPanel)

    @property
    def running(self) -> bool:
        """True while an attribution worker is pending or running."""
        worker = self.worker
        return worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    @property
    def judge(self) -> MeteredJudge | None:
        """The metered judge of the attribution in flight, once open."""
        return self._run.judge if self._run is not None else None

    # ------------------------------------------------------------------ lifecycle

    def mounted(self) -> None:
        """The screen is mounted and shows its trace: follow the labels setting, read
        the trace's saved verdicts."""
        self.verdicts = []
        self.verdict_notes = {}
        self.screen.watch(self.screen.app, "show_labels", lambda _show: self.show_panel(), init=False)
        self._load_verdicts(self.screen.trace)

    def trace_changed(self, trace: Trace) -> None:
        """The screen shows another trace (``[``/``]``, or the whole of a large file)."""
        if self.running:
            self.cancel("another trace was opened")
        self.verdicts, self.verdict_pos, self.verdict_notes = [], None, {}
        self._apply_verdicts()
        self._load_verdicts(trace)

    def _load_verdicts(self, trace: Trace) -> None:
        self.screen.run_worker(
            partial(self._read_verdicts, trace),
            thread=True,
            group="verdicts",
            exit_on_error=False,
            description="load saved verdicts",
        )

    def _read_verdicts(self, trace: Trace) -> None:
        """Read the trace's saved verdicts and its taxonomy (file I/O; a thread worker)."""
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
        self.screen.post_message(
            VerdictsLoaded(_trace_key(trace), verdicts, taxonomy, problems, error, str(path) if path else None)
        )

    def verdicts_loaded(self, message: VerdictsLoaded) -> None:
        """The saved verdicts of a trace were read (:meth:`_read_verdicts`)."""
        if message.key != _trace_key(self.screen.trace):
            return  # a trace shown earlier
        self.taxonomy = message.taxonomy
        if message.error:
            self.screen.notify(clean(message.error), title="Verdicts", severity="error", timeout=10)
        if message.problems:
            first = clean(message.problems[0])
            more = f" (and {len(message.problems) - 1} more)" if len(message.problems) > 1 else ""
            self.screen.notify(
                f"Skipped unreadable saved verdicts: {first}{more}", title="Verdicts", severity="warning", timeout=10
            )
        if message.verdicts:  # a file from repeated CLI runs may hold one verdict many times
            saved = SAVED_NOTE if message.path else "saved"
            self.verdict_notes.update({id(v): saved for v in message.verdicts})
            self.verdicts = distinct_verdicts([*message.verdicts, *self.verdicts])
            self.verdict_pos = len(self.verdicts) - 1
            self._apply_verdicts()

    # ------------------------------------------------------------------ the dialog

    def open_dialog(self) -> None:
        """``a``: the attribution dialog (protocol, model, gold answer); its choice runs."""
        if self.running:
            self.screen.notify("An attribution is running: esc cancels it.", severity="warning")
            return
        settings: Settings | None = None
        settings_error = None
        try:
            settings = load_settings()
        except WhenproError as exc:  # heuristic still works; LLM protocols say why not
            settings_error = exc.one_line()
        trace = self.screen.trace
        notes = protocol_notes(trace)

        def validate(protocol: str, model: str | None, with_gold: bool) -> AttributionRequest:
            return make_request(trace, protocol, model, with_gold, settings)

        def chosen(request: AttributionRequest | None) -> None:
            if request is not None and trace is self.screen.trace:
                self.last_request = request
                self.start(request)

        self.screen.app.push_screen(
            AttributePicker(
                protocols=[(p, notes[p]) for p in PROTOCOLS],
                models=model_choices(settings, self.verdicts),
                has_gold=trace_has_gold(trace),
                validate=validate,
                initial=self.last_request,
                settings_error=settings_error,
                preview=lambda protocol, model, gold: _preview(trace, protocol, model, gold, settings),
                offline=offline_protocols(trace),
            ),
            chosen,
        )

    # ------------------------------------------------------------------ running

    def start(self, request: AttributionRequest) -> None:
        """Run ``request`` on the shown trace in an async worker (progress is live)."""
        self._number += 1
        timer = self.screen.set_interval(TICK_S, self._tick)
        self._run = _Run(self._number, AttributionRunning(request), time.perf_counter(), timer)
        self.worker = self.screen.run_worker(
            self._attribute(self.screen.trace, request, self._number),
            group="attribute",
            exit_on_error=False,
            description="attribute the trace",
        )
        self.show_panel()

    async def _attribute(self, trace: Trace, request: AttributionRequest, number: int) -> None:
        index = coord_indexes(trace)

        def progress(event: Progress) -> None:
            self.screen.post_message(AttributionProgress(number, progress_view(trace, event, index)))

        def opened(judge: MeteredJudge) -> None:
            if self._run is not None and self._run.number == number:
                self._run.judge = judge

        try:
            verdict = await run_request(trace, request, progress=progress, on_judge=opened)
        except WhenproError as exc:
            self.screen.post_message(AttributionFailed(number, exc.one_line()))
            return
        except Exception as exc:  # a protocol bug must not crash the viewer
            self.screen.post_message(AttributionFailed(number, f"{type(exc).__name__}: {exc}"))
            return
        self.screen.post_message(AttributionDone(number, verdict))

    def progressed(self, message: AttributionProgress) -> None:
        """The protocol asks about other steps: the probe in the step list, the panel."""
        run = self._run
        if run is None or message.run != run.number or not self.running:
            return
        run.shown = replace(run.shown, view=message.view)
        self.screen.steps.set_probe(message.view.shaded, message.view.focus)
        self._tick(advance=False)

    def _tick(self, advance: bool = True) -> None:
        """Repaint the live progress (``advance``: the spinner moves on a frame)."""
        run = self._run
        if run is None:
            return
        judge = run.judge
        usage = None
        if judge is not None:
            usage = judge.usage.model_copy(update={"calls": max(judge.usage.calls, judge.asked)})
        run.shown = replace(
            run.shown,
            usage=usage,
            seconds=time.perf_counter() - run.started,
            frame=run.shown.frame + (1 if advance else 0),
            retry_note=judge.retry_note if judge is not None else None,
        )
        self.panel.running = run.shown

    def _end_run(self) -> None:
        if self._run is not None:
            self._run.timer.stop()
            self._run = None
        self.panel.running = None
        self.screen.steps.set_probe(frozenset(), None)

    def failed(self, message: AttributionFailed) -> None:
        """The attribution stopped on an error: a toast says why; no verdict."""
        if message.run != self._number:
            return
        self._end_run()
        self.show_panel()
        self.screen.notify(clean(message.error), title="Attribution failed", severity="error", timeout=15)

    def done(self, message: AttributionDone) -> None:
        """The attribution gave a verdict: shown, marked in the list, saved (once)."""
        if message.run != self._number:
            return
        self._end_run()
        verdict = message.verdict
        where = f"step {clean(verdict.step)}" if verdict.step else "no step"
        summary = f"{clean(verdict.agent or '—')} · {where} · {clean(verdict.mode or '—')}"
        same = next((i for i, v in enumerate(self.verdicts) if same_verdict(v, verdict)), None)
        if same is not None:  # a rerun that changes nothing adds nothing (the panel, the file)
            self.verdict_pos = same
            self._apply_verdicts(jump=True)
            self.screen.notify(
                f"{summary}: the same as verdict {same + 1}, kept once.", title=f"Verdict ({clean(verdict.protocol)})"
            )
            return
        trace = self.screen.trace
        self.verdicts = [*self.verdicts, verdict]
        self.verdict_pos = len(self.verdicts) - 1
        if saves_verdicts(self.screen.app):
            self.verdict_notes[id(verdict)] = "saving…"
            self._run_in_thread(partial(self._save_verdict, trace, verdict), "verdict-save", "save a verdict")
        else:
            self.verdict_notes[id(verdict)] = "not saved (--no-save)"
        self._apply_verdicts(jump=True)  # the panel shows it: no toast to cover it
        if verdict.protocol == "counterfactual" and any(e.get("outcome") == "fixed" for e in verdict.evidence):
            self._run_in_thread(
                partial(self._show_fixing_replay, trace, verdict), "fixing-replay", "redo the fixing replay"
            )

    def _run_in_thread(self, work: partial[None], group: str, description: str) -> None:
        self.screen.run_worker(work, thread=True, group=group, exit_on_error=False, description=description)

    def _show_fixing_replay(self, trace: Trace, verdict: Attribution) -> None:
        """The diff screen of the replay in which the verdict's correction fixed the run
        (a thread worker)."""
        model = verdict.model[len("llm-fix:") :] if verdict.model.startswith("llm-fix:") else None
        app = self.screen.app
        try:
            fixed = fixing_replay(trace, verdict, model)
        except WhenproError as exc:
            app.call_from_thread(self.screen.notify, clean(exc.one_line()), title="Fixing replay", severity="warning")
            return
        if fixed is not None and trace is self.screen.trace:
            app.post_message(OpenDiff(trace, fixed))

    def _save_verdict(self, trace: Trace, verdict: Attribution) -> None:
        """Save ``verdict`` in whenpro's verdicts folder (a thread worker)."""
        try:
            path = save_verdict(trace, verdict)
        except WhenproError as exc:
            self.screen.post_message(VerdictSaved(verdict, None, f"verdict not saved: {exc.one_line()}"))
            return
        self.screen.post_message(VerdictSaved(verdict, str(path) if path else None))

    def saved(self, message: VerdictSaved) -> None:
        """A verdict was written (or not): the panel says where it is kept."""
        if message.error:
            note = "not saved (see the error)"
            self.screen.notify(clean(message.error), title="Verdicts", severity="error", timeout=10)
        elif message.path is None:
            note = "kept until closed (the trace has no file)"
        else:
            note = SAVED_NOTE
        if id(message.verdict) in self.verdict_notes:  # still this trace's verdict
            self.verdict_notes[id(message.verdict)] = note
            self.show_panel()

    def cancel(self, why: str = "") -> None:
        """Cancel the attribution in flight (Esc); its late messages are dropped."""
        worker = self.worker
        self._number += 1  # late messages of the cancelled run are ignored
        if worker is not None:
            worker.cancel()  # the judge is closed by run_request as the task unwinds
        self._end_run()
        self.show_panel()
        self.screen.notify(
            "Attribution cancelled" + (f" ({why})" if why else "") + ": no verdict saved.", severity="warning"
        )

    # ------------------------------------------------------------------ verdicts

    def next_verdict(self) -> None:
        """``A``: show the next verdict (after the last, hide the panel)."""
        if not self.verdicts:
            self.screen.notify("No verdict yet: press a to attribute.", severity="warning")
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
            self.screen.notify(f"Verdict panel hidden (A shows verdict{count}).")

    def _apply_verdicts(self, *, jump: bool = False) -> None:
        """◆ markers of every verdict (the shown one on top) and the panel."""
        trace = self.screen.trace
        marks = {}
        order = list(range(len(self.verdicts)))
        if self.verdict_pos is not None:
            order.remove(self.verdict_pos)
            order.append(self.verdict_pos)
        target = None
        for i in order:
            idx = verdict_step_index(trace, self.verdicts[i])
            if idx is not None:
                marks[idx] = verdict_style(i)
                target = idx if i == self.verdict_pos else target
        self.screen.steps.set_attributed(marks)
        self.show_panel()
        if jump and target is not None:
            self.screen._go_to_step(target)
        elif jump and self.verdict_pos is not None and self.verdicts[self.verdict_pos].step:
            self.screen.notify(
                f"Step {clean(self.verdicts[self.verdict_pos].step)} is not in this trace.", severity="warning"
            )

    def show_panel(self) -> None:
        """Repaint the verdict panel: the live progress while a run is in flight, else the
        verdict shown (the reason short on a short screen unless the pane is zoomed)."""
        self.panel.verdict = self._verdict_shown()
        if self._run is not None:
            self._tick(advance=False)

    def _verdict_shown(self) -> VerdictShown | None:
        if self.verdict_pos is None or not self.verdicts:
            return None
        screen = self.screen
        shown = self.verdicts[self.verdict_pos]
        return VerdictShown(
            screen.trace,
            tuple(self.verdicts),
            self.verdict_pos,
            self.taxonomy or Taxonomy.builtin(),
            show_labels=screen.show_labels,
            note=self.verdict_notes.get(id(shown), ""),
            compact=screen.has_class("short") and screen.maximized is None,
        )


def _preview(trace: Trace, protocol: str, model: str | None, with_gold: bool, settings: Settings | None) -> str:
    """The dry-run text of the dialog's choice (``f2``)."""
    # lazy: the dry-run modules (~30 ms) are needed only for f2 in the picker
    from whenpro_core.attribution.dry_run import preview_choice

    return preview_choice(trace, protocol, model, with_gold, settings)
