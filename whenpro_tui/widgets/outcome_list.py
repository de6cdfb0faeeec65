"""The list of traces behind a results cell: one line per trace with the verdict on the
cell's axis (✓ / ✗), the trace id, framework, the ground truth and the prediction
(agent @ step, mode), and the per-axis verdicts (A S M J). Virtual, like the library
list: a whole Who&When Pro run costs what 30 rows do.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from whenpro_core.bench.explore import Outcome
from whenpro_core.safety.textsafe import clean, one_line
from whenpro_tui.widgets.virtual_list import VirtualList

RIGHT = Style(color="#5fd75f", bold=True)
WRONG = Style(color="#ff5f5f", bold=True)
NONE = Style(color="#808080")
GT_STYLE = Style(color="#ffd700")
AXES = (("A", "agent"), ("S", "step"), ("M", "mode"), ("J", "joint"))
CAPS = {"id": 28, "framework": 14}


def verdict_mark(value: bool | None) -> tuple[str, Style]:
    """``✓`` right, ``✗`` wrong, ``·`` not scored."""
    if value is None:
        return "·", NONE
    return ("✓", RIGHT) if value else ("✗", WRONG)


def who_when(agent: str | None, step: str | None, mode: str | None) -> str:
    """``"solver@3 R.3"`` (``—`` for missing parts), one safe line."""
    return one_line(f"{agent or '—'}@{step or '—'} {mode or '—'}", 60)


class OutcomeList(VirtualList):
    """Traces behind a cell (see module docstring). ``shown`` are positions in
    ``outcomes`` that pass the current right/wrong filter."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.outcomes: list[Outcome] = []
        self.shown: list[int] = []
        self._w = {"id": 8, "framework": 9, "gt": 6, "pred": 6}

    def set_outcomes(self, outcomes: list[Outcome], shown: list[int], *, cursor: int = 0) -> None:
        """Show ``outcomes`` (positions ``shown``), cursor on position ``cursor``."""
        self.outcomes = outcomes
        self.shown = shown
        w = {"id": 8, "framework": 9, "gt": 12, "pred": 10}
        for o in outcomes:
            t = o.record.trace
            p = o.record.prediction
            w["id"] = max(w["id"], min(CAPS["id"], cell_len(clean(o.trace_id))))
            w["framework"] = max(w["framework"], min(CAPS["framework"], cell_len(clean(t.framework))))
            w["gt"] = max(w["gt"], cell_len(who_when(t.gt_agent or ",".join(t.gt_agents), t.gt_step, t.gt_mode)))
            w["pred"] = max(
                w["pred"], cell_len(who_when(p.agent if p else None, p.step if p else None, p.mode if p else None))
            )
        w["gt"] = min(w["gt"], 30)
        w["pred"] = min(w["pred"], 30)
        self._w = w
        self.set_row_count(len(shown), cursor=cursor)

    @property
    def current(self) -> Outcome | None:
        """The outcome under the cursor."""
        if not self.shown:
            return None
        return self.outcomes[self.shown[self.cursor]]

    def header_line(self) -> str:
        """Column titles aligned with the rows."""
        w = self._w
        return (
            "  "
            + set_cell_size("trace", w["id"])
            + " "
            + set_cell_size("framework", w["framework"])
            + " "
            + set_cell_size("ground truth", w["gt"])
            + " "
            + set_cell_size("prediction", w["pred"])
            + " A S M J  error"
        )

    def render_row(self, row: int, width: int) -> Strip:
        o = self.outcomes[self.shown[row]]
        rec = o.record
        t = rec.trace
        p = rec.prediction
        w = self._w
        mark, style = verdict_mark(o.correct) if o.correct is not None else ("•", NONE)
        segments = [
            Segment(mark, style),
            Segment(" "),
            Segment(set_cell_size(clean(o.trace_id), w["id"]), Style(bold=True)),
            Segment(" "),
            Segment(set_cell_size(clean(t.framework or "?"), w["framework"]), NONE),
            Segment(" "),
            Segment(
                set_cell_size(who_when(t.gt_agent or ",".join(t.gt_agents), t.gt_step, t.gt_mode), w["gt"]), GT_STYLE
            ),
            Segment(" "),
            Segment(
                set_cell_size(who_when(p.agent if p else None, p.step if p else None, p.mode if p else None), w["pred"])
            ),
            Segment(" "),
        ]
        for _letter, axis in AXES:
            ch, st = verdict_mark(o.verdict(axis))
            segments += [Segment(ch, st), Segment(" ")]
        if rec.error:
            segments.append(Segment(" " + one_line(rec.error, 200), WRONG))
        return Strip(segments)
