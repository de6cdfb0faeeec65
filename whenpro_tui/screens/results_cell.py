"""The traces behind one results cell (a drill-down from the results screen): each
with its verdict on the cell's axis, ``x`` showing all / only the wrong / only the right
ones, enter opening the trace with its prediction set against the ground truth
(:class:`~whenpro_tui.screens.result_trace.ResultTraceScreen`; ``[``/``]`` step
through the listed traces there).
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from whenpro_core.bench.explore import Column, Outcome, Results, TableRow, cell_outcomes, cell_summary, resolve_ref
from whenpro_core.safety.textsafe import clean, plural
from whenpro_tui.app_settings import set_labels
from whenpro_tui.commands import collect_bindings
from whenpro_tui.messages import OpenResultTrace, TraceLoaded, TraceLoadFailed, load_trace_message
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.screens.leaving import LEAVE_BINDINGS, Leaving
from whenpro_tui.widgets.footer import FittedFooter
from whenpro_tui.widgets.outcome_list import OutcomeList
from whenpro_tui.widgets.virtual_list import VirtualList

#: The right/wrong filter, in ``x`` order.
SHOW = ("all", "wrong", "right")


class CellScreen(Leaving, Screen[None]):
    """Traces behind ``row`` × ``column`` of ``results`` (``column`` ``None``: the
    whole row). ``by_id`` maps trace ids to references in a dataset given with
    ``--results`` (used when a record's own file is gone)."""

    BINDINGS = [
        Binding("x", "show_next", "All/wrong/right"),
        Binding("?", "help", "Help", key_display="?"),
        *LEAVE_BINDINGS,  # q back (quit on the first screen); escape never quits
    ]

    def __init__(
        self, results: Results, row: TableRow, column: Column | None, *, by_id: dict[str, str] | None = None
    ) -> None:
        super().__init__()
        self.results = results
        self.row = row
        self.column = column
        self.by_id = by_id
        self.outcomes: list[Outcome] = cell_outcomes(results, row, column)
        self.show = "all"

    def compose(self) -> ComposeResult:
        yield Static(id="cell-title", markup=False)
        yield Static(id="cell-filter", markup=False)
        yield Static(id="cell-columns", markup=False)
        yield OutcomeList(id="outcomes")
        yield Static(id="cell-count", markup=False)
        yield FittedFooter()

    def on_mount(self) -> None:
        self.query_one("#cell-title", Static).update(
            Text(cell_summary(self.outcomes, self.row, self.column), style="bold")
        )
        self._refilter()
        self.query_one(OutcomeList).focus()

    @property
    def olist(self) -> OutcomeList:
        return self.query_one(OutcomeList)

    def _passes(self, o: Outcome) -> bool:
        if self.show == "all" or o.correct is None:
            return True
        return o.correct == (self.show == "right")

    def _refilter(self) -> None:
        shown = [i for i, o in enumerate(self.outcomes) if self._passes(o)]
        self.olist.set_outcomes(self.outcomes, shown)
        axis = self.column.title if self.column is not None and self.column.axis else None
        if axis:
            line = f"showing {self.show} ({len(shown):,} of {len(self.outcomes):,})   x: all / wrong / right on {axis}"
        else:
            line = f"{plural(len(shown), 'trace')}   (pick a metric column to see right and wrong on it)"
        self.query_one("#cell-filter", Static).update(Text(line, style="dim"))
        self.query_one("#cell-columns", Static).update(Text(self.olist.header_line(), style="bold dim"))
        self._count()

    def _count(self, status: str = "") -> None:
        text = "✓ right  ✗ wrong  · not scored   A agent · S step · M mode · J joint   enter: open the trace"
        if not self.outcomes:
            counts = self.column.counts if self.column is not None else "all"
            text = {
                "with_mode": "No trace here has a gold failure mode: this metric counts none.",
                "multi_agent": "No trace here is of a multi-agent framework: the Agent metric counts none.",
                "failed": "No attribution failed here.",
            }.get(counts, "No scored trace here.")
        self.query_one("#cell-count", Static).update(Text(status or text, style="dim"))

    def action_show_next(self) -> None:
        if self.column is None or self.column.axis is None:
            self.notify("This list has no axis to filter on: drill into a metric column.", markup=False)
            return
        self.show = SHOW[(SHOW.index(self.show) + 1) % len(SHOW)]
        self._refilter()

    # ------------------------------------------------------------------ opening

    def refs(self) -> list[str]:
        """References of the listed traces, in list order (for ``[``/``]``)."""
        ol = self.olist
        return [resolve_ref(self.outcomes[i].record, self.by_id) for i in ol.shown]

    @on(VirtualList.Selected, "#outcomes")
    def _open(self, event: VirtualList.Selected) -> None:
        o = self.olist.current
        if o is None:
            return
        self._count(f"Opening {clean(o.trace_id)}…")
        self.open_trace(resolve_ref(o.record, self.by_id), self.olist.cursor)

    @work(thread=True, exclusive=True, group="load-trace", exit_on_error=False, description="open a trace")
    def open_trace(self, ref: str, position: int) -> None:
        self.post_message(load_trace_message(ref, position))

    def on_trace_loaded(self, message: TraceLoaded) -> None:
        message.stop()
        self._count()
        refs = self.refs()
        records = {resolve_ref(self.outcomes[i].record, self.by_id): self.outcomes[i].record for i in self.olist.shown}
        set_labels(self.app, True)  # the GT is compared anyway
        self.app.post_message(
            OpenResultTrace(
                message.trace, records, siblings=refs, position=message.position, on_close=self._trace_closed
            )
        )

    def _trace_closed(self, position: int | None) -> None:
        if position is not None:
            self.olist.move_cursor(position, center=True)

    def on_trace_load_failed(self, message: TraceLoadFailed) -> None:
        message.stop()
        self._count()
        self.notify(clean(message.error), title="Could not open trace", severity="error", timeout=10, markup=False)

    # ------------------------------------------------------------------ help, back

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Traces behind a cell", collect_bindings(self), markers=False))

    def action_back(self) -> None:
        self.dismiss(None)
