"""A bar under the trace header showing one benchmark record's prediction against the
ground truth, axis by axis (✓ right, ✗ wrong, · not scored), with the judge's reason.
Built from :func:`whenpro_core.bench.explore.compare`; this widget only lays it out.
Also :func:`with_bar`, which places extra bars under the header of the trace screen.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from whenpro_core.bench.aggregate import group_label
from whenpro_core.bench.explore import compare
from whenpro_core.bench.records import Record
from whenpro_core.safety.textsafe import one_line
from whenpro_tui.widgets.outcome_list import verdict_mark


def with_bar(compose_result: ComposeResult, *bars: Widget) -> ComposeResult:
    """The trace screen's widgets with ``bars`` right after its header (the first
    widget it composes). Use in a subclass: ``yield from with_bar(super().compose(),
    MyBar())``."""
    parts: Iterable[Widget] = iter(compose_result)
    for first in parts:
        yield first
        break
    yield from bars
    yield from parts


class PredictionBar(Vertical):
    """Prediction vs ground truth of one record (see module docstring): the axes (wrapped
    on narrow terminals), then the judge's reason or the error on one line."""

    DEFAULT_CSS = """
    PredictionBar {
        height: auto; padding: 0 1; background: $panel;
        & > #pred-axes { height: auto; max-height: 3; }
        & > #pred-reason { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.record: Record | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="pred-axes", markup=False)
        yield Static(id="pred-reason", markup=False)

    def show_record(self, record: Record | None, *, taxonomy=None) -> None:
        """Show ``record`` (``None``: say the trace has no record here)."""

        self.record = record
        axes = self.query_one("#pred-axes", Static)
        reason = self.query_one("#pred-reason", Static)
        if record is None:
            axes.update(Text("No benchmark record for this trace.", style="dim italic"))
            reason.update("")
            return
        text = Text()
        text.append("Prediction ", style="bold")
        text.append(one_line(group_label(record.model, record.protocol, record.with_gold), 60), style="dim")
        for line in compare(record, taxonomy):
            mark, style = verdict_mark(line.verdict)
            text.append("   ")
            text.append(mark, style=style)
            text.append(f" {line.axis} ")
            text.append(one_line(line.predicted, 40), style="bold")
            if line.axis == "mode" and line.note:  # the predicted mode's name
                text.append(f" {one_line(line.note, 40)}")
            gold = f" (GT {one_line(line.gold, 40)}"
            if line.note and line.axis != "mode":
                gold += f" · {one_line(line.note, 40)}"
            text.append(gold + ")", style="dim")
        axes.update(text)
        pred = record.prediction
        if record.error:
            reason.update(Text(f"failed ({record.error_kind or 'error'}): {one_line(record.error, 300)}", style="red"))
        elif pred is not None and pred.reason:
            reason.update(Text.assemble(("Reason: ", "bold"), one_line(pred.reason, 400)))
        else:
            reason.update("")
