"""The incoming-traces list of the OTLP live view: one line per received trace (trace
id, service, steps, time since its last update, and the live judge's markers: ◆ suspect
step, ✗ decisive error, ■ run ended). Virtual."""

from __future__ import annotations

import time

from rich.cells import set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from whenpro_core.live.listing import LiveRow, age
from whenpro_core.safety.textsafe import clean, one_line
from whenpro_tui.widgets.virtual_list import VirtualList

DIM = Style(color="#808080")
SUSPECT = Style(color="#ffd700", bold=True)
DECISIVE = Style(color="#ff5f5f", bold=True)
WIDTHS = {"id": 16, "service": 18, "steps": 6, "age": 5}


class LiveTable(VirtualList):
    """Received traces (see module docstring)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.rows: list[LiveRow] = []

    def set_rows(self, rows: list[LiveRow]) -> None:
        """Show ``rows`` (the cursor stays on its trace when it is still listed)."""
        current = self.current
        self.rows = rows
        cursor = self.cursor
        if current is not None:
            cursor = next((i for i, r in enumerate(rows) if r.trace_id == current.trace_id), cursor)
        grew = len(rows) != self.row_count
        if grew:
            self.set_row_count(len(rows), cursor=cursor, announce=current is None)
        self.invalidate()

    @property
    def current(self) -> LiveRow | None:
        """The row under the cursor."""
        return self.rows[self.cursor] if self.rows else None

    @staticmethod
    def header_line() -> str:
        """Column titles aligned with the rows."""
        w = WIDTHS
        return (
            "  "
            + set_cell_size("trace id", w["id"])
            + " "
            + set_cell_size("service", w["service"])
            + " "
            + "steps".rjust(w["steps"])
            + " "
            + "age".rjust(w["age"])
            + "  judge"
        )

    def render_row(self, row: int, width: int) -> Strip:
        r = self.rows[row]
        w = WIDTHS
        live = "●" if r.in_memory and r.ended is None else "■" if r.ended else "○"
        steps = "?" if r.steps is None else f"{r.steps:,}"
        segments = [
            Segment(live, Style(color="#5fd75f") if live == "●" else DIM),
            Segment(" "),
            Segment(set_cell_size(clean(r.trace_id), w["id"]), Style(bold=True)),
            Segment(" "),
            Segment(set_cell_size(clean(r.service or "—"), w["service"])),
            Segment(" "),
            Segment(steps.rjust(w["steps"])),
            Segment(" "),
            Segment(age(time.time() - r.updated).rjust(w["age"]) if r.updated else "".rjust(w["age"]), DIM),
            Segment("  "),
        ]
        if r.decisive is not None:
            d = r.decisive
            segments.append(Segment(one_line(f"✗ DECISIVE step {d.step} [{d.agent}] {d.mode or '?'}", 80), DECISIVE))
        elif r.suspect is not None:
            s = r.suspect
            segments.append(Segment(one_line(f"◆ suspect step {s.step} [{s.agent}] {s.mode or '?'}", 80), SUSPECT))
        if r.ended:
            segments.append(Segment(f"  ended: {clean(r.ended)}", DIM))
        return Strip(segments)
