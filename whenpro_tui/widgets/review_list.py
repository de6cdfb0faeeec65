"""The list of a built dataset's traces to review: one line per trace with its status
(· pending, ✓ accepted, ✗ rejected, ✎ relabelled), id, the built label (mode, agent @
step) and the latest decision's reason. Virtual."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from whenpro_core.dataset.review import STATUS_MARKS
from whenpro_core.dataset.validate import ReviewItem
from whenpro_core.safety.textsafe import clean, one_line
from whenpro_tui.widgets.virtual_list import VirtualList

STATUS_STYLES = {
    "pending": Style(color="#808080"),
    "accepted": Style(color="#5fd75f", bold=True),
    "rejected": Style(color="#ff5f5f", bold=True),
    "relabelled": Style(color="#ffd700", bold=True),
}
DIM = Style(color="#808080")


class ReviewList(VirtualList):
    """Review items (see module docstring)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.items: list[ReviewItem] = []
        self._w = {"id": 8, "mode": 4, "label": 10}

    def set_items(self, items: list[ReviewItem], *, cursor: int | None = None) -> None:
        """Show ``items`` (cursor kept unless ``cursor`` is given)."""
        self.items = items
        w = {"id": 8, "mode": 4, "label": 10}
        for it in items:
            w["id"] = max(w["id"], min(40, cell_len(clean(it.id))))
            w["mode"] = max(w["mode"], min(8, cell_len(clean(it.mode or "—"))))
            w["label"] = max(w["label"], min(24, cell_len(self._label(it))))
        self._w = w
        self.set_row_count(len(items), cursor=cursor)
        self.invalidate()

    @staticmethod
    def _label(item: ReviewItem) -> str:
        return one_line(f"{item.agent or '—'}@{item.step or '—'}", 24)

    @property
    def current(self) -> ReviewItem | None:
        """The item under the cursor."""
        return self.items[self.cursor] if self.items else None

    def header_line(self) -> str:
        """Column titles aligned with the rows."""
        w = self._w
        return (
            "  "
            + set_cell_size("trace", w["id"])
            + " "
            + set_cell_size("mode", w["mode"])
            + " "
            + set_cell_size("agent@step", w["label"])
            + " decision"
        )

    def render_row(self, row: int, width: int) -> Strip:
        it = self.items[row]
        w = self._w
        segments = [
            Segment(STATUS_MARKS.get(it.status, "?"), STATUS_STYLES.get(it.status)),
            Segment(" "),
            Segment(set_cell_size(clean(it.id), w["id"]), Style(bold=True)),
            Segment(" "),
            Segment(set_cell_size(clean(it.mode or "—"), w["mode"]), Style(color="#ffd700")),
            Segment(" "),
            Segment(set_cell_size(self._label(it), w["label"])),
            Segment(" "),
        ]
        e = it.latest
        if e is not None:
            text = e.status
            if e.verdict == "relabel":
                text += f" → {e.label.agent or '—'}@{e.label.step or '—'} {e.label.mode or '—'}"
            if e.reason:
                text += f": {e.reason}"
            segments.append(Segment(one_line(text, 300), STATUS_STYLES.get(e.status)))
        else:
            segments.append(Segment("pending", DIM))
        return Strip(segments)
