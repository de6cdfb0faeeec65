"""Validation mode for a built dataset (``whenpro view DATASET --validate``, or ``v`` on
the library screen of a dataset with a ``manifest.json``): the injected traces with
their built labels and review status, the progress ("37 of 120 reviewed") and the
validated-label counts of the manifest. ``a`` accepts, ``x`` rejects, ``r`` relabels
(``v`` asks which); enter opens the trace with the injected step under the cursor
(:class:`~whenpro_tui.screens.review_trace.ReviewTraceScreen`), where ``v`` decides and
moves on to the next pending trace.

Decisions go through :func:`whenpro_core.dataset.validate.record` (saved at once, one
line of ``validation.jsonl``); the manifest's counts are rewritten after each one
(:func:`whenpro_core.dataset.review.save_counts`). All file work runs in thread workers.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from whenpro_core.dataset import validate
from whenpro_core.dataset.review import label_counts_line, next_pending, progress_line, relabel_choices, save_counts
from whenpro_core.dataset.validate import ReviewItem, ValidationEntry
from whenpro_core.errors import WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.safety.textsafe import clean
from whenpro_core.trace.model import Trace
from whenpro_core.trace.taxonomy import taxonomy_for
from whenpro_tui.app_settings import set_labels
from whenpro_tui.commands import collect_bindings
from whenpro_tui.messages import (
    OpenReviewTrace,
    ReviewLoaded,
    ReviewView,
    TraceLoaded,
    TraceLoadFailed,
    load_trace_message,
)
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.screens.leaving import LEAVE_BINDINGS, Leaving
from whenpro_tui.screens.review_dialogs import DecisionDialog, VerdictMenu
from whenpro_tui.widgets.footer import FittedFooter
from whenpro_tui.widgets.review_list import ReviewList
from whenpro_tui.widgets.virtual_list import VirtualList


def _error_text(exc: BaseException) -> str:
    return exc.one_line() if isinstance(exc, WhenproError) else f"{type(exc).__name__}: {exc}"


class ValidationScreen(Leaving, Screen[None]):
    """Review a built dataset (see module docstring)."""

    BINDINGS = [
        Binding("a", "decide('accept')", "Accept"),
        Binding("x", "decide('reject')", "Reject"),
        Binding("r", "decide('relabel')", "Relabel"),
        Binding("v", "menu", "Review…"),
        Binding("n", "next_pending", "Next pending"),
        Binding("?", "help", "Help", key_display="?"),
        *LEAVE_BINDINGS,  # q back (quit on the first screen); escape never quits
    ]

    def __init__(self, root: str | Path, *, is_root: bool = False) -> None:
        super().__init__()
        self.root = Path(root)
        self.is_root = is_root
        self.items: list[ReviewItem] = []
        self.counts: dict = {}
        self.taxonomy = taxonomy_for(self.root)
        self.review_screen: ReviewView | None = None  # the screen of the trace under review, if open

    def compose(self) -> ComposeResult:
        yield Static(
            Text.assemble(("whenpro validation  ", "bold"), (clean(str(self.root)), "dim")),
            id="val-title",
            markup=False,
        )
        yield Static(id="val-progress", markup=False)
        yield Static(id="val-modes", markup=False)
        yield Static(id="val-columns", markup=False)
        yield ReviewList(id="review-items")
        yield Static(id="val-hint", markup=False)
        yield FittedFooter()

    def on_mount(self) -> None:
        self.query_one("#val-progress", Static).update(Text("reading the manifest…", style="dim"))
        self.query_one(ReviewList).focus()
        self.refresh_items(write=False)
        self.call_after_refresh(getattr(self.app, "first_paint", lambda: None))

    @property
    def rlist(self) -> ReviewList:
        return self.query_one(ReviewList)

    # ------------------------------------------------------------------ loading

    def _loaded(self, write: bool, decided: str | None) -> ReviewLoaded:
        """Items and counts, read now (after a decision: the counts also written to the
        manifest). Runs in a worker thread."""
        try:
            counts = save_counts(self.root) if write else validate.validation_counts(self.root)
            items = validate.review_items(self.root)
        except Exception as exc:  # noqa: BLE001 - shown, never a crash
            return ReviewLoaded(error=_error_text(exc), decided=decided)
        return ReviewLoaded(items, counts, decided=decided)

    @work(thread=True, exclusive=True, group="review-load", exit_on_error=False, description="refresh the review items")
    def refresh_items(self, write: bool = False, decided: str | None = None) -> None:
        """Re-read items and counts in a thread (see :meth:`_loaded`)."""
        self.post_message(self._loaded(write, decided))

    def on_review_loaded(self, message: ReviewLoaded) -> None:
        message.stop()
        if message.error:
            self.notify(clean(message.error), title="Validation", severity="error", timeout=12, markup=False)
            if not self.items:
                self.query_one("#val-progress", Static).update(Text(clean(message.error), style="red"))
            return
        self.items = message.items
        self.counts = message.counts
        self.rlist.set_items(self.items)
        self.query_one("#val-progress", Static).update(Text(progress_line(self.counts), style="bold"))
        self.query_one("#val-modes", Static).update(Text(label_counts_line(self.counts), style="dim"))
        self.query_one("#val-columns", Static).update(Text(self.rlist.header_line(), style="bold dim"))
        self._hint()
        if not self.items:
            self.query_one("#val-hint", Static).update(
                Text("This dataset has no kept traces to review.", style="yellow")
            )
        if message.decided and self.review_screen is not None:
            self.review_screen.after_decision(message.decided)

    def _hint(self) -> None:
        self.query_one("#val-hint", Static).update(
            Text(
                "enter: open the trace (v decides there) · decisions are saved to validation.jsonl at once", style="dim"
            )
        )

    def item_index(self, trace_id: str) -> int | None:
        """Position of the item with ``trace_id``."""
        return next((i for i, it in enumerate(self.items) if it.id == trace_id), None)

    # ------------------------------------------------------------------ deciding

    def decide(self, verdict: str, item: ReviewItem, *, trace: Trace | None = None, step: str | None = None) -> None:
        """Record ``verdict`` on ``item``: accept at once; reject and relabel through the
        :class:`DecisionDialog` (``trace`` gives the relabel choices, ``step`` the
        coordinate to preselect; without ``trace`` it is loaded first)."""
        if verdict == "accept":
            self.accept(item.id)
        elif verdict == "reject":
            self.app.push_screen(DecisionDialog(self.root, item, "reject", taxonomy=self.taxonomy), self._decided)
        elif trace is not None:
            self._relabel(item, trace, step)
        else:
            self.load_for_relabel(item)

    def _relabel(self, item: ReviewItem, trace: Trace, step: str | None) -> None:
        choices = relabel_choices(self.root, trace, item)
        self.app.push_screen(
            DecisionDialog(self.root, item, "relabel", choices=choices, step=step, taxonomy=self.taxonomy),
            self._decided,
        )

    @work(
        thread=True,
        exclusive=True,
        group="review-relabel",
        exit_on_error=False,
        description="load the trace to relabel",
    )
    def load_for_relabel(self, item: ReviewItem) -> None:
        try:
            trace = load_trace(str(self.root / item.ref))
        except Exception as exc:  # noqa: BLE001
            self.app.call_from_thread(
                self.notify, clean(_error_text(exc)), title="Could not open trace", severity="error", timeout=10
            )
            return
        self.app.call_from_thread(self._relabel, item, trace, None)

    @work(thread=True, exclusive=True, group="review-accept", exit_on_error=False, description="accept a review item")
    def accept(self, trace_id: str) -> None:
        try:
            validate.record(self.root, trace_id, "accept")
        except Exception as exc:  # noqa: BLE001 - shown, never a crash
            self.post_message(ReviewLoaded(error=_error_text(exc)))
            return
        self.post_message(self._loaded(True, trace_id))

    def _decided(self, entry: ValidationEntry | None) -> None:
        if entry is not None:
            self.refresh_items(write=True, decided=entry.trace_id)

    def action_decide(self, verdict: str) -> None:
        item = self.rlist.current
        if item is not None:
            self.decide(verdict, item)

    def action_menu(self) -> None:
        item = self.rlist.current
        if item is None:
            return

        def chosen(verdict: str | None) -> None:
            if verdict:
                self.decide(verdict, item)

        self.app.push_screen(VerdictMenu(item, self.taxonomy), chosen)

    def action_next_pending(self) -> None:
        nxt = next_pending(self.items, self.rlist.cursor)
        if nxt is None:
            self.notify(f"All {len(self.items):,} traces have a decision.", markup=False)
            return
        self.rlist.move_cursor(nxt, center=True)

    # ------------------------------------------------------------------ opening

    def refs(self) -> list[str]:
        """References of every item's trace, in list order."""
        return [str(self.root / it.ref) for it in self.items]

    @on(VirtualList.Selected, "#review-items")
    def _open(self, event: VirtualList.Selected) -> None:
        item = self.rlist.current
        if item is not None:
            self.open_item(str(self.root / item.ref), self.rlist.cursor)

    @work(thread=True, exclusive=True, group="load-trace", exit_on_error=False, description="open a trace")
    def open_item(self, ref: str, position: int) -> None:
        self.post_message(load_trace_message(ref, position))

    def on_trace_loaded(self, message: TraceLoaded) -> None:
        message.stop()
        set_labels(self.app, True)  # the built label is the point
        self.app.post_message(
            OpenReviewTrace(
                message.trace,
                self,
                siblings=self.refs(),
                position=message.position,
                on_open=self._review_opened,
                on_close=self._review_closed,
            )
        )

    def _review_opened(self, screen: ReviewView) -> None:
        self.review_screen = screen

    def _review_closed(self, position: int | None) -> None:
        self.review_screen = None
        if position is not None:
            self.rlist.move_cursor(position, center=True)

    def on_trace_load_failed(self, message: TraceLoadFailed) -> None:
        message.stop()
        self.notify(clean(message.error), title="Could not open trace", severity="error", timeout=10, markup=False)

    # ------------------------------------------------------------------ help, back

    def action_help(self) -> None:
        dialogs = (("Review menu (v)", VerdictMenu), ("Reject or relabel dialog (x, r)", DecisionDialog))
        self.app.push_screen(HelpScreen("Validation keys", collect_bindings(self), markers=False, dialogs=dialogs))

    def action_back(self) -> None:
        if self.is_root:
            self.app.exit()
        else:
            self.dismiss(None)
