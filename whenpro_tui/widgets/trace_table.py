"""The library's trace list: one line per trace of a dataset (id, outcome, final answer
against gold ✓/✗, steps, agents, framework, benchmark and modality when wide, the GT
step/mode while labels are shown, and the task's first words), or one red line per file
that failed to import. Virtual, like the step list: 10,000 rows cost what 30 do.

``rows`` holds every listing row in arrival order; ``shown`` the positions that pass the
current filter.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from whenpro_core.library.listing import answer_mark
from whenpro_core.safety.textsafe import clean, compact, one_line
from whenpro_core.trace.model import TraceSummary
from whenpro_core.views.traceview import unlabelled_id
from whenpro_tui.widgets.virtual_list import VirtualList

if TYPE_CHECKING:  # the sessions module loads the settings: imported when sessions are shown
    from whenpro_core.library.sessions import SessionRow

#: Width caps (cells) of the columns sized by their content.
CAPS = {"id": 120, "framework": 16, "benchmark": 18, "modality": 8}
#: The id column never gets narrower than this, whatever the pane width.
ID_MIN = 20
#: The task column is shown when at least this many cells are left for it.
TASK_MIN = 12
#: Below this pane width the benchmark and modality columns are left out.
WIDE = 110
ERROR_STYLE = Style(color="#ff5f5f")
OUTCOME_TEXT = {
    "success": ("ok", Style(color="#5fd787")),
    "failure": ("fail", Style(color="#ff5f5f")),
    "unknown": ("?", Style(dim=True)),
}
MARK_TEXT = {
    True: ("✓", Style(color="#5fd787", bold=True)),
    False: ("✗", Style(color="#ff5f5f", bold=True)),
    None: ("·", Style(dim=True)),
}
#: Titles of the columns, by sort column name.
TITLES = {
    "id": "id",
    "outcome": "out",
    "answer": "=",
    "steps": "steps",
    "agents": "ag",
    "framework": "framework",
    "benchmark": "benchmark",
    "modality": "modality",
    "task": "task",
    "gt": "GT step/mode",
    "date": "last step",
    "errors": "err",
    "tokens": "tokens",
    "cost": "cost $",
    "project": "project",
}
FIXED = {"outcome": 4, "answer": 1, "steps": 6, "agents": 3, "gt": 14, "date": 16, "errors": 4, "tokens": 7, "cost": 7}
#: Columns of the sessions library (``view --sessions``), the first prompt after them.
SESSION_COLUMNS = ["date", "steps", "errors", "tokens", "cost", "project"]
#: Right-aligned columns.
NUMERIC = {"steps", "agents", "errors", "tokens", "cost"}


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
        #: the column the rows are sorted by (``None``: arrival order), and its direction
        self.sort_column: str | None = None
        self.sort_reverse = False
        #: ``view --sessions``: each row's session by its path (``None``: a dataset)
        self.sessions: dict[str, SessionRow] | None = None
        self.zone = ""
        self._project_width = 7

    def use_sessions(self, sessions: list[SessionRow]) -> None:
        """Show the sessions columns (:data:`SESSION_COLUMNS`) for these sessions' rows."""
        from whenpro_core.library.sessions import local_zone  # loads the settings: only for sessions

        self.sessions = {str(s.summary.path): s for s in sessions}
        self.zone = local_zone()
        width = max((cell_len(clean(s.project)) for s in sessions), default=7)
        self._project_width = max(7, min(40, width))
        self.invalidate()

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
                    values = (row.id, unlabelled_id(row.id)) if col == "id" else (getattr(row, col),)
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

    def _columns(self, width: int) -> list[tuple[str, int]]:
        """``(column, cells)`` for a pane ``width`` cells wide, in display order: id,
        outcome, answer ✓/✗, steps, agents, framework (benchmark and modality when wide),
        GT (labels shown), and the task in what is left."""
        names = ["outcome", "answer", "steps", "agents", "framework"]
        if self.sessions is not None:
            names = list(SESSION_COLUMNS)
        elif width >= WIDE or width <= 0:
            names += ["benchmark", "modality"]
        if self.show_labels:
            names.append("gt")
        cols = [(n, FIXED.get(n) or self._widths.get(n, self._project_width)) for n in names]
        used = sum(w + 1 for _, w in cols)
        id_w = self._widths["id"]
        if 0 < width < WIDE:  # narrow: the task's first words matter more than a long id's tail
            id_w = min(id_w, max(ID_MIN, width * 3 // 10))
        if width > 0:
            id_w = max(min(id_w, ID_MIN), min(id_w, width - used - 1 - TASK_MIN))
        left = width - used - id_w - 2 if width > 0 else 40
        out = [("id", id_w), *cols]
        if left >= TASK_MIN:
            out.append(("task", left))
        return out

    def header_line(self) -> str:
        """Column titles aligned with the rows (for this widget's current width), the
        sorted column marked ▲ (ascending) or ▼."""
        parts = []
        for name, width in self._columns(self.size.width):
            title = f"{TITLES[name]} ({self.zone})" if name == "date" and self.zone else TITLES[name]
            if name == self.sort_column:
                title += "▼" if self.sort_reverse else "▲"
            if name in NUMERIC:
                parts.append(title.rjust(width))
            else:
                parts.append(fit(title, width))
        return " ".join(parts)

    def _cell(self, item: TraceSummary, name: str, width: int) -> Segment:
        if self._dim is None:
            self._dim = self.get_component_rich_style("tracetable--dim")
        if name == "id":
            return Segment(fit(clean(item.id if self.show_labels else unlabelled_id(item.id)), width), Style(bold=True))
        if name == "outcome":
            text, style = OUTCOME_TEXT.get(item.outcome or "unknown", OUTCOME_TEXT["unknown"])
            return Segment(fit(text, width), style)
        if name == "answer":
            text, style = MARK_TEXT[answer_mark(item)]
            return Segment(text, style)
        if name in ("steps", "agents"):
            value = item.step_count if name == "steps" else item.agent_count
            return Segment(("?" if value is None else f"{value:,}").rjust(width))
        if name in ("date", "errors", "tokens", "cost", "project"):
            return self._session_cell(item, name, width)
        if name == "gt":
            gt = f"{clean(item.gt_step or '—')}/{clean(item.gt_mode or '—')}"
            return Segment(fit(gt, width), Style(color="#ffd700"))
        text = str(getattr(item, name) or ("—" if name != "task" else ""))
        return Segment(fit(clean(text), width), None if name == "framework" else self._dim)

    def _session_cell(self, item: TraceSummary, name: str, width: int) -> Segment:
        """A sessions column of ``item``: last step (local time), errors, tokens, cost, project."""
        session = (self.sessions or {}).get(item.path)
        if session is None:
            return Segment(" " * width)
        if name == "date":
            return Segment(fit(session.local_time, width), self._dim)
        if name == "project":  # the end of a path says which project: cut at the start
            project = clean(session.project)
            return Segment(fit(project if cell_len(project) <= width else "…" + project[-(width - 1) :], width))
        if name == "errors":
            style = Style(color="#ff5f5f") if session.errors else self._dim
            return Segment(f"{session.errors:,}".rjust(width), style)
        if name == "tokens":
            return Segment(("—" if session.tokens is None else compact(session.tokens)).rjust(width), self._dim)
        cost = "—" if session.cost_usd is None else f"{session.cost_usd:.2f}"
        return Segment(cost.rjust(width), self._dim)

    def render_row(self, row: int, width: int) -> Strip:
        item = self.rows[self.shown[row]]
        if item.error is not None:
            text = f"✗ {one_line(item.error, 400)}"
            return Strip([Segment(set_cell_size(text, width), ERROR_STYLE)])
        segments: list[Segment] = []
        for name, cells in self._columns(width):
            if segments:
                segments.append(Segment(" "))
            segments.append(self._cell(item, name, cells))
        return Strip(segments)

    def update_row(self, position: int, row: TraceSummary) -> None:
        """Replace the row at ``position`` in :attr:`rows` (e.g. filled in once its trace
        was opened) and repaint it."""
        self.rows[position] = row
        with contextlib.suppress(ValueError):
            self.invalidate_row(self.shown.index(position))


def fit(text: str, width: int) -> str:
    """``text`` padded or cut to ``width`` cells; a cut shows ``…`` as its last cell."""
    if cell_len(text) <= width:
        return set_cell_size(text, width)
    return set_cell_size(text, max(width - 1, 0)) + ("…" if width else "")
