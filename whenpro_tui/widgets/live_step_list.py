"""The step list of a live view: the trace screen's :class:`StepList` that takes a
newer version of its trace in place (steps appended, or later steps replaced after a
reset) without moving the user's cursor, and marks suspect steps (◆)."""

from __future__ import annotations

from whenpro_core.trace.model import Trace
from whenpro_core.views.search import gt_step_index
from whenpro_core.views.traceview import StepTally, tally_steps
from whenpro_tui.widgets.step_list import StepList


class LiveStepList(StepList):
    """A step list fed by a growing trace (see module docstring)."""

    def update_trace(
        self,
        trace: Trace,
        shown: list[int],
        slots: dict[str, int],
        *,
        kept: int,
        cursor: int,
        tally: StepTally | None = None,
    ) -> None:
        """Show ``trace``, a newer version of the current one whose steps ``[0, kept)``
        are unchanged; ``shown`` are the step indices listed (after the filter) and
        ``cursor`` the position to keep the cursor on (``tally``: see :meth:`set_trace`)."""
        self.trace = trace
        self.slots = slots
        self._tally = tally or tally_steps(trace.steps)
        for index in [i for i in self._rows if i >= kept]:
            del self._rows[index]
        self._gt = gt_step_index(trace)
        self._measure()
        self.shown = shown
        self.set_row_count(len(shown), cursor=cursor)

    def set_marked(self, indices: frozenset[int]) -> None:
        """Steps to mark ◆ (suspects and the decisive step)."""
        if indices == self.attributed:
            return
        changed = self.attributed | indices
        self.attributed = indices
        for index in changed:
            self._rows.pop(index, None)
        self._measure()
        self.invalidate()
