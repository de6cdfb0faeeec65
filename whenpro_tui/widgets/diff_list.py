"""The rows of the diff screen: original on the left, counterfactual on the right, one
row per aligned pair of steps (:class:`whenpro_core.injection.diff.DiffRow`). The shared
prefix is one collapsed row (``steps 0–3 identical``) until expanded; the injected step is
highlighted; the middle column marks each row: ``=`` same, ``≠`` changed, ``+`` only in
the counterfactual, ``−`` only in the original."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from whenpro_core.injection.diff import DiffRow, TraceDiff
from whenpro_core.trace.model import Trace
from whenpro_core.views.stepview import StepRow, step_row
from whenpro_tui.widgets.palette import agent_style
from whenpro_tui.widgets.virtual_list import VirtualList

OPS = {
    "same": ("=", Style(color="#808080")),
    "changed": ("≠", Style(color="#e5c07b", bold=True)),
    "added": ("+", Style(color="#5fd787", bold=True)),
    "removed": ("−", Style(color="#ff5f5f", bold=True)),
}
INJECTED_STYLE = Style(bgcolor="#5f3a00")
#: The first row where two runs part (when no step was injected).
DIVERGENCE_STYLE = Style(bgcolor="#2f2f5f")
PREFIX_STYLE = Style(color="#a0a0a0", italic=True)


@dataclass(frozen=True)
class Collapsed:
    """The shared prefix as one row: steps ``first``..``last`` (coordinates), ``count``."""

    first: str
    last: str
    count: int
    why: str = "replayed exactly from the record"

    @property
    def label(self) -> str:
        span = self.first if self.count == 1 else f"{self.first}–{self.last}"
        word = "step" if self.count == 1 else "steps"
        return f"{word} {span} identical ({self.count} {self.why})"


Item = Collapsed | DiffRow


class DiffList(VirtualList, inherit_bindings=False):
    """Side-by-side rows of a :class:`TraceDiff` (see module docstring)."""

    BINDINGS = []
    DEFAULT_CSS = """
    DiffList { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.a: Trace | None = None
        self.b: Trace | None = None
        self.diff: TraceDiff | None = None
        self.items: list[Item] = []
        self.injected: int | None = None
        #: the first row that differs, marked ▶ when no step was injected (plain diffs)
        self.divergence: DiffRow | None = None
        self.expanded = False
        self.slots: dict[str, int] = {}
        self._rows: dict[tuple[str, int], StepRow] = {}

    def show(self, a: Trace, b: Trace, diff: TraceDiff, injected: int | None, slots: dict[str, int]) -> None:
        """Show ``diff`` of ``a`` (original) and ``b`` (counterfactual); ``injected`` is the
        counterfactual's injected step index. The cursor starts on the injected step."""
        self.a, self.b, self.diff, self.injected, self.slots = a, b, diff, injected, slots
        first = diff.first_divergence
        self.divergence = diff.rows[first] if injected is None and first is not None else None
        self._rows = {}
        self._rebuild()

    def _rebuild(self, keep: Item | None = None) -> None:
        diff = self.diff
        if diff is None:
            return
        rows = diff.rows
        items: list[Item] = []
        if diff.shared_prefix and not self.expanded:
            items.append(
                Collapsed(
                    rows[0].a_coord or "0",
                    rows[diff.shared_prefix - 1].a_coord or "",
                    diff.shared_prefix,
                    *(("in both runs",) if self.injected is None else ()),
                )
            )
            items.extend(rows[diff.shared_prefix :])
        else:
            items.extend(rows)
        self.items = items
        target = next(
            (
                i
                for i, it in enumerate(items)
                if isinstance(it, DiffRow)
                and (it.b == self.injected if self.injected is not None else it is self.divergence)
            ),
            0,
        )
        if keep is not None and keep in items:
            target = items.index(keep)
        self.set_row_count(len(items), cursor=target)

    def toggle_prefix(self) -> bool:
        """Expand or collapse the shared prefix; returns whether it is expanded now."""
        keep = self.current
        self.expanded = not self.expanded
        self._rebuild(keep if not isinstance(keep, Collapsed) else None)
        return self.expanded

    @property
    def current(self) -> Item | None:
        """The item under the cursor."""
        return self.items[self.cursor] if self.items else None

    def _row(self, side: str, index: int) -> StepRow:
        key = (side, index)
        model = self._rows.get(key)
        if model is None:
            trace = self.a if side == "a" else self.b
            assert trace is not None
            model = self._rows[key] = step_row(trace.steps[index])
        return model

    def _cell(self, side: str, index: int | None, width: int, base: Style | None) -> list[Segment]:
        if index is None or width <= 0:
            return [Segment(" " * max(0, width), base)]
        model = self._row(side, index)
        coord_w = 3
        agent_w = min(10, max(4, width // 5), max((cell_len(a) for a in self.slots), default=4))
        kind_w = (11 if width >= 90 else min(8, width // 7)) if width >= 55 else 0
        segs = [
            Segment(model.coord.rjust(coord_w)[-coord_w:] + " ", (base or Style()) + Style(color="#a0a0a0")),
            Segment(
                set_cell_size(model.agent, agent_w) + " ", (base or Style()) + agent_style(self.slots.get(model.agent))
            ),
        ]
        if kind_w >= 4:
            segs.append(
                Segment(
                    set_cell_size(model.kind, kind_w) + " ", (base or Style()) + Style(italic=True, color="#a0a0a0")
                )
            )
        used = sum(cell_len(s.text) for s in segs)
        segs.append(Segment(set_cell_size(model.summary, max(0, width - used)), base))
        return segs

    def render_row(self, row: int, width: int) -> Strip:
        item = self.items[row]
        if isinstance(item, Collapsed):
            sign = "▸" if not self.expanded else "▾"
            text = f" {sign} {item.label}  (enter: expand)"
            return Strip([Segment(set_cell_size(text, width), PREFIX_STYLE)])
        half = max(1, (width - 3) // 2)
        right_w = width - 3 - half
        injected = item.b is not None and item.b == self.injected
        base = INJECTED_STYLE if injected else None
        mark, mark_style = OPS[item.op]
        if injected:
            mark, mark_style = "⚑", Style(color="#ffaf5f", bold=True, bgcolor="#5f3a00")
        elif item is self.divergence:
            base = DIVERGENCE_STYLE
            mark, mark_style = "▶", Style(color="#afafff", bold=True, bgcolor="#2f2f5f")
        segs = self._cell("a", item.a, half, base)
        segs += [Segment(" ", base), Segment(mark, mark_style), Segment(" ", base)]
        segs += self._cell("b", item.b, right_w, base)
        return Strip(segs)
