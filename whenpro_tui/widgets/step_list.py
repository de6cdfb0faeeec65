"""The step list of the trace screen: one line per step (coordinate, agent in its
colour, kind, markers, one-line summary), virtual over any number of steps.

Row models come from :func:`whenpro_core.views.stepview.step_row`, built lazily for the rows
on screen. The visible rows are ``shown`` (step indices, after a filter); the cursor is a
position in ``shown``. Navigation keys belong to the trace screen, so they work whichever
pane has focus.
"""

from __future__ import annotations

from bisect import bisect_left

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from whenpro_core.trace.model import Trace
from whenpro_core.views.search import gt_step_index
from whenpro_core.views.stepview import StepRow, short_kind, step_row
from whenpro_core.views.traceview import StepTally, tally_steps
from whenpro_tui.widgets.palette import MARKER_STYLES, agent_style
from whenpro_tui.widgets.virtual_list import VirtualList

#: Column width caps (cells). The kind column is as wide as the trace's longest kind
#: up to KIND_CAP (``final_answer`` fits); longer kinds are abbreviated by
#: :func:`whenpro_core.views.stepview.short_kind`.
AGENT_CAP = 14
KIND_CAP = 14
#: Backgrounds of the steps a running attribution asks about (tuiattr): the step asked
#: now, and the range binary search is still searching.
PROBE_FOCUS = Style(bgcolor="#1d6b4a", bold=True)
PROBE_RANGE = Style(bgcolor="#33334d")


class StepList(VirtualList, inherit_bindings=False):
    """Virtual list of a trace's steps (see module docstring)."""

    BINDINGS = []
    COMPONENT_CLASSES = VirtualList.COMPONENT_CLASSES | {
        "steplist--coord",
        "steplist--kind",
        "steplist--summary",
        "steplist--match",
    }
    DEFAULT_CSS = """
    StepList {
        & > .steplist--coord { color: $text-muted; }
        & > .steplist--kind { color: $text-muted; text-style: italic; }
        & > .steplist--match { color: $warning; text-style: bold; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.trace: Trace | None = None
        self.shown: list[int] = []
        self.show_labels = False
        self.slots: dict[str, int] = {}
        self.matches: frozenset[int] = frozenset()
        self.attributed: frozenset[int] = frozenset()
        # attribution (tuiattr): ◆ colour per step (one per verdict), steps being asked about
        self.attributed_styles: dict[int, Style] = {}
        self.probe: frozenset[int] = frozenset()
        self.probe_focus: int | None = None
        self._rows: dict[int, StepRow] = {}
        self._gt: int | None = None
        self._tally: StepTally | None = None
        self._widths = (1, 1, 1, 0)
        self._row_styles: dict[str, Style] | None = None

    # ------------------------------------------------------------------ data

    def set_trace(
        self, trace: Trace, shown: list[int], slots: dict[str, int], *, cursor: int = 0, tally: StepTally | None = None
    ) -> None:
        """Show ``trace`` with the steps ``shown`` (indices); cursor on position
        ``cursor``; ``tally``: the steps' :func:`tally_steps`, when the caller has it."""
        self.trace = trace
        self.slots = slots
        self._tally = tally or tally_steps(trace.steps)
        self._rows = {}
        self._gt = gt_step_index(trace)
        self.matches = frozenset()
        self._measure()
        self.shown = shown
        self.set_row_count(len(shown), cursor=cursor)

    def set_shown(self, shown: list[int], *, cursor: int = 0) -> None:
        """Change which steps are listed (a filter), cursor on position ``cursor``."""
        self.shown = shown
        self.set_row_count(len(shown), cursor=cursor)

    def set_labels(self, show: bool) -> None:
        """Show or hide label markers (★ GT, ⚑ injected)."""
        self.show_labels = show
        self._measure()
        self.invalidate()

    def set_matches(self, steps: frozenset[int]) -> None:
        """Step indices to mark as search matches."""
        self.matches = steps
        self.invalidate()

    def set_attributed(self, styles: dict[int, Style]) -> None:
        """Steps named by verdicts (the ◆ marker), each in its verdict's colour."""
        self.attributed = frozenset(styles)
        self.attributed_styles = dict(styles)
        self._rows = {}
        self._measure()
        self.invalidate()

    def set_probe(self, shaded: frozenset[int], focus: int | None = None) -> None:
        """Shade the steps a running attribution asks about (``focus``: the one step
        asked now, kept in view; the cursor does not move)."""
        self.probe, self.probe_focus = shaded, focus
        self.invalidate()
        pos = self.position_of(focus) if focus is not None else None
        height = self.scrollable_content_region.height
        if pos is not None and height > 0 and not 0 <= pos - round(self.scroll_y) < height:
            self.scroll_to(y=max(0, pos - height // 2), animate=False, immediate=True)

    @property
    def step_index(self) -> int | None:
        """Index (into ``Trace.steps``) of the step under the cursor."""
        if not self.shown:
            return None
        return self.shown[self.cursor]

    def position_of(self, step_index: int) -> int | None:
        """Position in the list of step ``step_index``, or ``None`` if filtered out."""

        pos = bisect_left(self.shown, step_index)
        if pos < len(self.shown) and self.shown[pos] == step_index:
            return pos
        return None

    def row_model(self, step_index: int) -> StepRow:
        """The (cached) row model of a step."""
        row = self._rows.get(step_index)
        if row is None:
            assert self.trace is not None
            row = step_row(self.trace.steps[step_index], gt_index=self._gt, attributed=step_index in self.attributed)
            self._rows[step_index] = row
        return row

    def _measure(self) -> None:
        """Column widths from the whole trace: its :class:`StepTally` (one pass over the
        steps, when the trace is set) and the kinds of its first 5,000 steps."""
        trace, tally = self.trace, self._tally
        if trace is None or tally is None:
            return
        agent_w = min(AGENT_CAP, max((cell_len(a) for a in self.slots), default=5))
        kind_w = min(KIND_CAP, max((len(s.kind) for s in trace.steps[:5000]), default=4))
        marks = 0
        if tally.errors:
            marks += 1
        if tally.media_kinds & {"image", "frame"}:
            marks += 1
        if "video" in tally.media_kinds:
            marks += 1
        if self.attributed:
            marks += 1
        if self.show_labels:
            marks += 2 if tally.hidden else 1
        self._widths = (max(1, tally.coord_width), agent_w, kind_w, marks)

    # ------------------------------------------------------------------ rendering

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._row_styles = None

    def _row_style_map(self) -> dict[str, Style]:
        if self._row_styles is None:
            self._row_styles = {
                name: self.get_component_rich_style(f"steplist--{name}")
                for name in ("coord", "kind", "summary", "match")
            }
        return self._row_styles

    def render_row(self, row: int, width: int) -> Strip:
        step_index = self.shown[row]
        model = self.row_model(step_index)
        styles = self._row_style_map()
        coord_w, agent_w, kind_w, mark_w = self._widths
        # narrow panes: give the summary at least a third of the width
        budget = width - coord_w - 4 - mark_w
        if agent_w + kind_w > budget * 2 // 3:
            kind_w = max(0, min(kind_w, budget // 4))
            agent_w = max(3, min(agent_w, budget // 3))
        coord_style = styles["coord"]
        if step_index in self.matches:
            coord_style = styles["match"]
        if self.show_labels and model.gt:
            coord_style = MARKER_STYLES["★"]
        segments = [
            Segment(model.coord.rjust(coord_w)[-coord_w:], coord_style),
            Segment(" "),
            Segment(set_cell_size(model.agent, agent_w), agent_style(self.slots.get(model.agent))),
            Segment(" "),
        ]
        if kind_w:
            segments += [Segment(set_cell_size(short_kind(model.kind, kind_w), kind_w), styles["kind"]), Segment(" ")]
        if mark_w:
            marks = model.markers(self.show_labels)
            for ch in marks[:mark_w]:
                style = MARKER_STYLES.get(ch)
                if ch == "◆":
                    style = self.attributed_styles.get(step_index, style)
                segments.append(Segment(ch, style))
            segments.append(Segment(" " * (mark_w - min(len(marks), mark_w) + 1)))
        used = sum(cell_len(s.text) for s in segments)
        if width > used:
            segments.append(Segment(set_cell_size(model.summary, width - used), styles["summary"]))
        if step_index in self.probe or step_index == self.probe_focus:
            shade = PROBE_FOCUS if step_index == self.probe_focus else PROBE_RANGE
            segments = [Segment(t, (s or Style()) + shade) for t, s, _ in segments]
        return Strip(segments)
