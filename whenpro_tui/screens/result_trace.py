"""A trace opened from the results screen: the trace screen with a
:class:`~whenpro_tui.widgets.prediction_bar.PredictionBar` under its header (the
benchmark record's prediction against the ground truth), the predicted step marked ◆ in
the step list, and ``p`` to go there. ``[``/``]`` move through the traces of the cell,
and the bar follows.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding

from whenpro_core.bench.records import Record
from whenpro_core.trace.model import Trace
from whenpro_core.trace.taxonomy import Taxonomy
from whenpro_core.views.search import find_coord
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.prediction_bar import PredictionBar, with_bar


class ResultTraceScreen(TraceScreen):
    """A trace with its benchmark prediction (see module docstring). ``records`` maps
    each sibling reference to its record."""

    BINDINGS = [
        Binding("p", "jump_prediction", "Go to predicted step"),
    ]

    def __init__(
        self,
        trace: Trace,
        records: dict[str, Record],
        *,
        siblings: list[str] | None = None,
        position: int | None = None,
    ) -> None:
        self.records = records
        self.taxonomy = Taxonomy.builtin()
        self.predicted: int | None = None
        super().__init__(trace, siblings=siblings, position=position)

    def compose(self) -> ComposeResult:
        yield from with_bar(super().compose(), PredictionBar(id="prediction"))

    def _record(self) -> Record | None:
        if self.trace_refs and self.position is not None and 0 <= self.position < len(self.trace_refs):
            return self.records.get(self.trace_refs[self.position])
        return None

    def show_trace(self, trace: Trace, position: int | None = None) -> None:
        self.position = position
        record = self._record()
        pred = record.prediction if record is not None else None
        self.predicted = find_coord(trace, pred.step) if pred is not None and pred.step else None
        self.steps.attributed = frozenset() if self.predicted is None else frozenset({self.predicted})
        super().show_trace(trace, position)
        self.query_one(PredictionBar).show_record(record, taxonomy=self.taxonomy)
        if self.predicted is not None:
            self._go_to_step(self.predicted)

    def action_jump_prediction(self) -> None:
        if self.predicted is None:
            record = self._record()
            pred = record.prediction if record is not None else None
            what = (
                "no prediction"
                if pred is None or not pred.step
                else f"a predicted step ({pred.step}) that is not in this trace"
            )
            self.notify(f"This record has {what}.", severity="warning", markup=False)
            return
        self._go_to_step(self.predicted)
