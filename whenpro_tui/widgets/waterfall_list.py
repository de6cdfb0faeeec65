"""The waterfall's rows (``w`` on the trace screen): one line per step in tree order, indented
by depth (``coord agent kind``), a bar from its start for its duration on the run's time axis,
then its duration, tokens and cost. Virtual, like the step list. Rows and figures come from
:mod:`whenpro_core.views.waterfall`; this module only draws them."""

from __future__ import annotations

from rich.cells import set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from whenpro_core.safety.textsafe import clean, compact
from whenpro_core.trace.model import Trace
from whenpro_core.views.waterfall import WaterfallRow, seconds_text
from whenpro_tui.widgets.palette import agent_style
from whenpro_tui.widgets.virtual_list import VirtualList

#: Cells of the numbers after the bar: duration, tokens, cost.
NUMBERS = 7 + 1 + 6 + 1 + 7
#: The label column takes this share of the width, within these bounds.
LABEL_SHARE, LABEL_MIN, LABEL_MAX = 0.4, 16, 48
ERROR_STYLE = Style(color="#ff5f5f", bold=True)
DIM = Style(dim=True)


class WaterfallList(VirtualList):
    """The waterfall rows (see module docstring)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.trace: Trace | None = None
        self.rows: list[WaterfallRow] = []
        self.span_s: float | None = None
        self.slots: dict[str, int] = {}

    def show(self, trace: Trace, rows: list[WaterfallRow], span_s: float | None, slots: dict[str, int]) -> None:
        """Show ``rows`` of ``trace`` on a time axis ``span_s`` seconds long."""
        self.trace, self.rows, self.span_s, self.slots = trace, rows, span_s, slots
        self.set_row_count(len(rows), cursor=0)
        self.invalidate()

    @property
    def current(self) -> WaterfallRow | None:
        """The row under the cursor."""
        return self.rows[self.cursor] if self.rows else None

    def label_width(self, width: int) -> int:
        """Cells of the label column at ``width``."""
        return max(LABEL_MIN, min(LABEL_MAX, int(width * LABEL_SHARE)))

    def render_row(self, row: int, width: int) -> Strip:
        assert self.trace is not None
        r = self.rows[row]
        step = self.trace.steps[r.index]
        label_w = self.label_width(width)
        bar_w = max(0, width - label_w - NUMBERS - 3)
        head = "  " * min(r.depth, 8) + f"{clean(step.coord or '#' + str(step.index))} "
        style = agent_style(self.slots.get(step.agent))
        label = Strip([Segment(head, DIM), Segment(clean(step.agent), style), Segment(f" {clean(step.kind)}", DIM)])
        segments = list(label.crop_extend(0, label_w, None))
        segments += [Segment(" "), *self._bar(r, bar_w, ERROR_STYLE if r.error else style), Segment(" ")]
        tokens = "—" if r.tokens is None else compact(r.tokens)
        cost = "—" if r.cost_usd is None else f"{r.cost_usd:.4f}"[:7]
        numbers = f"{seconds_text(r.duration_s):>7} {tokens:>6} {cost:>7}"
        segments.append(Segment(numbers, ERROR_STYLE if r.error else DIM))
        return Strip(segments)

    def _bar(self, r: WaterfallRow, width: int, style: Style) -> list[Segment]:
        """The row's bar on the time axis (``·`` dots where the run is, nothing without times)."""
        if width <= 0:
            return []
        if r.start_s is None or not self.span_s:
            return [Segment(set_cell_size("  no time recorded" if r.start_s is None else "", width), DIM)]
        start = min(width - 1, int(r.start_s / self.span_s * width))
        length = max(1, min(width - start, round((r.duration_s or 0.0) / self.span_s * width)))
        return [
            Segment("·" * start, DIM),
            Segment("█" * length, style),
            Segment(" " * (width - start - length)),
        ]
