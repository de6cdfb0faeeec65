"""The step list of a running replay: the recorded prefix (dim, ``·``), the injected step
(``⚑``) and each new step as the executor produces it (``+``), one virtual row per step.
Rows are appended as they stream in; the cursor follows the newest step while it sits on
the last row."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from whenpro_core.trace.model import Step
from whenpro_core.views.stepview import StepRow, step_row
from whenpro_tui.widgets.palette import MARKER_STYLES, agent_style
from whenpro_tui.widgets.virtual_list import VirtualList

#: Column caps (cells).
AGENT_CAP = 12
KIND_CAP = 11
TAGS = {
    "prefix": ("·", Style(color="#808080")),
    "injected": ("⚑", MARKER_STYLES["⚑"]),
    "new": ("+", Style(color="#5fd787", bold=True)),
}


class ReplayList(VirtualList, inherit_bindings=False):
    """Rows of a replay (see module docstring); navigation keys belong to the screen."""

    BINDINGS = []
    DEFAULT_CSS = """
    ReplayList { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.steps: list[Step] = []
        self.prefix_len = 0
        self.slots: dict[str, int] = {}
        self._rows: dict[int, StepRow] = {}

    def start(self, prefix: list[Step], slots: dict[str, int]) -> None:
        """Show the recorded prefix (steps before the injected one)."""
        self.steps = list(prefix)
        self.prefix_len = len(prefix)
        self.slots = slots
        self._rows = {}
        self.set_row_count(len(self.steps), cursor=len(self.steps) - 1)

    def add(self, step: Step) -> None:
        """Append a streamed step; the cursor follows when it was on the last row."""
        follow = self.cursor >= self.row_count - 1
        self.steps.append(step)
        self.append_rows(1)
        if follow:
            self.move_cursor(self.row_count - 1)

    def tag(self, row: int) -> str:
        """``prefix``, ``injected`` or ``new``."""
        if row < self.prefix_len:
            return "prefix"
        return "injected" if row == self.prefix_len else "new"

    def row_model(self, row: int) -> StepRow:
        model = self._rows.get(row)
        if model is None:
            model = self._rows[row] = step_row(self.steps[row])
        return model

    @property
    def new_count(self) -> int:
        """Steps after the injected one so far."""
        return max(0, len(self.steps) - self.prefix_len - 1)

    def render_row(self, row: int, width: int) -> Strip:
        model = self.row_model(row)
        tag = self.tag(row)
        mark, mark_style = TAGS[tag]
        dim = Style(color="#808080") if tag == "prefix" else None
        coord_w = max(2, max((len(s.coord or "") for s in self.steps[-50:]), default=2))
        agent_w = min(AGENT_CAP, max((cell_len(a) for a in self.slots), default=5))
        kind_w = min(KIND_CAP, max(4, width // 8))
        segments = [
            Segment(model.coord.rjust(coord_w)[-coord_w:], dim or Style(color="#a0a0a0")),
            Segment(" "),
            Segment(mark, mark_style),
            Segment(" "),
            Segment(set_cell_size(model.agent, agent_w), dim or agent_style(self.slots.get(model.agent))),
            Segment(" "),
            Segment(set_cell_size(model.kind, kind_w), Style(italic=True, color="#a0a0a0")),
            Segment(" "),
        ]
        used = sum(cell_len(s.text) for s in segments)
        if width > used:
            segments.append(Segment(set_cell_size(model.summary, width - used), dim))
        return Strip(segments)
