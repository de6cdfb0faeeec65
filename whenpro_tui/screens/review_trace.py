"""A dataset trace under review: the trace screen with a review bar under its header
(the built label, the review status and progress), labels shown so the injected step
carries ⚑ and ★, and the cursor on the injected step. ``v`` accepts, rejects or
relabels (a relabel preselects the step under the cursor); after a decision the next
pending trace opens. ``[``/``]`` move through the dataset's traces.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from whenpro_core.dataset.review import STATUS_MARKS, label_line, next_pending, progress_line
from whenpro_core.dataset.validate import ReviewItem
from whenpro_core.safety.textsafe import clean, one_line
from whenpro_core.trace.model import Trace
from whenpro_core.views.search import gt_step_index
from whenpro_tui.messages import Review
from whenpro_tui.screens.review_dialogs import VerdictMenu
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.prediction_bar import with_bar
from whenpro_tui.widgets.review_list import STATUS_STYLES


class ReviewBar(Static):
    """The built label, status and progress of the trace under review."""

    DEFAULT_CSS = """
    ReviewBar { height: auto; max-height: 4; padding: 0 1; background: $panel;
                text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def show_item(self, item: ReviewItem | None, position: int, total: int, counts: dict, taxonomy=None) -> None:
        """Show ``item`` (number ``position + 1`` of ``total``)."""
        if item is None:
            self.update(Text("This trace is not one of the dataset's review items.", style="dim"))
            return
        text = Text()
        text.append(f"Review {position + 1:,} of {total:,}  ", style="bold")
        text.append(STATUS_MARKS.get(item.status, "?") + " " + item.status, style=STATUS_STYLES.get(item.status))
        text.append("   built label: ", style="dim")
        text.append(label_line(item.built, taxonomy), style="bold")
        text.append("\n")
        text.append(progress_line(counts), style="dim")
        e = item.latest
        if e is not None:
            text.append("\n")
            line = e.status
            if e.verdict == "relabel":
                line += " → " + label_line(e.label, taxonomy)
            if e.reason:
                line += f": {e.reason}"
            text.append(one_line(line, 400), style=STATUS_STYLES.get(e.status))
        text.append("   v: accept / reject / relabel", style="dim")
        self.update(text)


class ReviewTraceScreen(TraceScreen):
    """A trace of the dataset under review (see module docstring)."""

    BINDINGS = [
        Binding("v", "review", "Accept/reject/relabel"),
    ]

    def __init__(self, trace: Trace, review: Review, *, siblings: list[str], position: int | None) -> None:
        self.review = review
        super().__init__(trace, siblings=siblings, position=position)

    def compose(self) -> ComposeResult:
        yield from with_bar(super().compose(), ReviewBar(id="review-bar"))

    @property
    def item(self) -> ReviewItem | None:
        """The review item of the trace on display."""
        items = self.review.items
        if self.position is not None and 0 <= self.position < len(items):
            return items[self.position]
        return None

    def show_trace(self, trace: Trace, position: int | None = None) -> None:
        super().show_trace(trace, position)
        self._show_bar()
        idx = gt_step_index(trace)
        if idx is not None:
            self._go_to_step(idx)

    def _show_bar(self) -> None:
        self.query_one(ReviewBar).show_item(
            self.item, self.position or 0, len(self.review.items), self.review.counts, self.review.taxonomy
        )

    def help_dialogs(self) -> tuple[tuple[str, type[Screen]], ...]:
        """The trace screen's dialogs and the review menu."""
        return (*super().help_dialogs(), ("Review menu (v)", VerdictMenu))

    def action_review(self) -> None:
        item = self.item
        if item is None:
            return
        idx = self.steps.step_index
        step = self.trace.steps[idx].coord if idx is not None else None

        def chosen(verdict: str | None) -> None:
            if verdict:
                self.review.decide(verdict, item, trace=self.trace, step=step)

        self.app.push_screen(VerdictMenu(item, self.review.taxonomy), chosen)

    def after_decision(self, trace_id: str) -> None:
        """A decision on ``trace_id`` was saved: refresh the bar, then open the next
        pending trace (or say that every trace has a decision)."""
        item = self.item
        self._show_bar()
        if item is None or item.id != trace_id:
            return
        self.notify(f"Saved: {clean(item.status)} {clean(item.id)} · {progress_line(self.review.counts)}", markup=False)
        nxt = next_pending(self.review.items, self.position or 0)
        if nxt is None:
            self.notify(f"All {len(self.review.items):,} traces have a decision.", timeout=8, markup=False)
            return
        self.load_sibling(nxt)
