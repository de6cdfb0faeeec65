"""Injection from the trace screen: ``i`` opens the injection dialog on the step under the
cursor, then the live replay and the diff screen; ``d`` opens the diff of a counterfactual
(a trace with injection provenance) against its seed run, loaded in a thread worker.

A part of :class:`whenpro_tui.screens.trace.TraceScreen` (:mod:`.trace_host`); every
rule is a ``whenpro_core.injection`` call. The replay and diff screens are opened by the
App (:class:`~whenpro_tui.messages.OpenReplay`, :class:`~whenpro_tui.messages.OpenDiff`).
"""

from __future__ import annotations

from textual import work

from whenpro_core.errors import WhenproError
from whenpro_core.injection.choices import injectable_reason
from whenpro_core.injection.provenance import load_seed, verdict_of
from whenpro_core.safety.textsafe import clean
from whenpro_core.trace.model import Trace
from whenpro_tui.messages import DiffSources, InjectionPlan, OpenDiff, OpenReplay
from whenpro_tui.screens.inject_dialog import InjectDialog
from whenpro_tui.screens.trace_host import TracePart


class Injecting(TracePart):
    """``i`` (inject at this step) and ``d`` (diff of a counterfactual)."""

    def action_inject(self) -> None:
        idx = self.steps.step_index
        if idx is None:
            self.notify("No step here to inject into.", severity="warning")
            return
        reason = injectable_reason(self.trace, idx)
        if reason is not None:
            self.notify(f"Cannot inject here: {clean(reason)}.", severity="warning")
            return

        def planned(plan: InjectionPlan | None) -> None:
            if plan is not None:
                self.app.post_message(OpenReplay(plan))

        self.app.push_screen(InjectDialog(self.trace, idx), planned)

    def action_diff(self) -> None:
        if self.trace.injection is None:
            self.notify(
                "This trace has no injection provenance: d compares a counterfactual made by "
                "whenpro inject (or i) with its seed run.",
                severity="warning",
                timeout=8,
            )
            return
        self.load_diff_sources(self.trace)

    @work(
        thread=True,
        exclusive=True,
        group="diff-seed",
        exit_on_error=False,
        description="load the counterfactual's sources",
    )
    def load_diff_sources(self, cf: Trace) -> None:
        try:
            seed = load_seed(cf)
        except WhenproError as exc:
            self.post_message(DiffSources(None, cf, exc.one_line()))
            return
        except Exception as exc:  # noqa: BLE001 - an importer bug must not crash the viewer
            self.post_message(DiffSources(None, cf, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(DiffSources(seed, cf))

    def on_diff_sources(self, message: DiffSources) -> None:
        message.stop()
        if message.seed is None:
            self.notify(clean(message.error or ""), title="Seed run not found", severity="error", timeout=12)
            return
        self.app.post_message(OpenDiff(message.seed, message.counterfactual, verdict_of(message.counterfactual)))
