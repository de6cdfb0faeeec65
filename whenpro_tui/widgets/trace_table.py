"""The library's trace list: one line per trace of a dataset (id, framework, benchmark,
modality, steps, and the GT step/mode while labels are shown), or one red line per file
that failed to import. Virtual, like the step list: 10,000 rows cost what 30 do.

``rows`` holds every listing row in arrival order; ``shown`` the positions that pass the
current filter.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from whenpro_core.model import TraceSummary
from whenpro_core.textsafe import clean, one_line
from whenpro_core.traceview import unlabelled_id
from whenpro_tui.widgets.virtual_list import VirtualList

#: Column width caps (cells). The id column takes what the others leave, up to its cap.
CAPS = {"id": 120, "framework": 20, "benchmark": 24, "modality": 8}
#: The id column never gets narrower than this, whatever the pane width.
ID_MIN = 20
ERROR_STYLE = Style(color="#ff5f5f")


class TraceTable(VirtualList):
    """Library list (see module docstring)."""

    COMPONENT_CLASSES = VirtualList.COMPONENT_CLASSES | {"tracetable--dim", "tracetable--header"}
    DEFAULT_CSS = """
    TraceTable {
        & > .tracetable--dim { color: $text-muted; }
        & > .tracetable--header { color: $text-muted; text-style: bold; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.rows: list[TraceSummary] = []
        self.shown: list[int] = []
        self.show_labels = False
        self._widths = {"id": 8, "framework": 9, "benchmark": 9, "modality": 8}
        self._dim: Style | None = None

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._dim = None

    def reset(self) -> None:
        """Forget every row."""
        self.rows = []
        self.shown = []
        self.set_row_count(0)

    def add_rows(self, rows: list[TraceSummary], keep: list[bool]) -> None:
        """Append ``rows``; ``keep[i]`` says whether row i passes the current filter."""
        start = len(self.rows)
        before = dict(self._widths)
        self.rows.extend(rows)
        for row in rows:
            if row.error is None:
                for col in self._widths:
                    # the id as shown with labels hidden can be the longer one
                    values = ((row.id, unlabelled_id(row.id)) if col == "id"
                              else (getattr(row, col),))
                    longest = max(cell_len(clean(v or "")) for v in values)
                    self._widths[col] = max(self._widths[col], min(CAPS[col], longest))
        added = [start + i for i, k in enumerate(keep) if k]
        self.shown.extend(added)
        if added:
            self.append_rows(len(added))
        if self._widths != before:
            self.invalidate()

    def set_shown(self, shown: list[int], *, cursor: int = 0) -> None:
        """Show the rows at positions ``shown`` (after a filter change)."""
        self.shown = shown
        self.set_row_count(len(shown), cursor=cursor)

    def set_labels(self, show: bool) -> None:
        """Show or hide the GT column."""
        self.show_labels = show
        self.invalidate()

    @property
    def current(self) -> TraceSummary | None:
        """The row under the cursor."""
        if not self.shown:
            return None
        return self.rows[self.shown[self.cursor]]

    def _columns(self, width: int) -> dict[str, int]:
        """Column widths for a pane ``width`` cells wide: the id column shrinks to what the
        other columns (and the steps and GT columns) leave, never below :data:`ID_MIN`."""
        w = dict(self._widths)
        rest = w["framework"] + w["benchmark"] + w["modality"] + 3 + 7
        if self.show_labels:
            rest += 16
        if width > 0:
            w["id"] = max(min(w["id"], ID_MIN), min(w["id"], width - rest - 1))
        return w

    def header_line(self) -> str:
        """Column titles aligned with the rows (for this widget's current width)."""
        w = self._columns(self.size.width)
        cols = [("id", w["id"]), ("framework", w["framework"]), ("benchmark", w["benchmark"]),
                ("modality", w["modality"])]
        line = " ".join(set_cell_size(name, width) for name, width in cols)
        line += "  steps"
        if self.show_labels:
            line += "  GT step/mode"
        return line

    def render_row(self, row: int, width: int) -> Strip:
        item = self.rows[self.shown[row]]
        if item.error is not None:
            text = f"✗ {one_line(item.error, 400)}"
            return Strip([Segment(set_cell_size(text, width), ERROR_STYLE)])
        w = self._columns(width)
        if self._dim is None:
            self._dim = self.get_component_rich_style("tracetable--dim")
        dim = self._dim
        steps = "?" if item.step_count is None else f"{item.step_count:,}"
        segments = [
            Segment(fit(clean(item.id if self.show_labels else unlabelled_id(item.id)), w["id"]),
                    Style(bold=True)),
            Segment(" "),
            Segment(fit(clean(item.framework), w["framework"])),
            Segment(" "),
            Segment(fit(clean(item.benchmark or "—"), w["benchmark"]), dim),
            Segment(" "),
            Segment(fit(clean(item.modality), w["modality"]), dim),
            Segment(" " + steps.rjust(6)),
        ]
        if self.show_labels:
            gt = f"{clean(item.gt_step or '—')}/{clean(item.gt_mode or '—')}"
            segments += [Segment("  "), Segment(gt, Style(color="#ffd700"))]
        return Strip(segments)


def fit(text: str, width: int) -> str:
    """``text`` padded or cut to ``width`` cells; a cut shows ``…`` as its last cell."""
    if cell_len(text) <= width:
        return set_cell_size(text, width)
    return set_cell_size(text, max(width - 1, 0)) + ("…" if width else "")
