"""The library screen: the traces of a dataset (folder, glob, JSONL release or a file
holding several traces), filtered by facets and free text, with a live count. Rows
stream in from a thread worker running :func:`whenpro_core.library.listing.walk_rows`; files
that fail to import are red error rows, last. A dataset opens sorted by id in natural
order (``task_2`` before ``task_10``; ``s`` cycles the sort, listing order last), sessions
newest first. Enter opens a trace (loaded in a thread). ``F`` finds the traces whose steps
say a text (:mod:`.library_inside`).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from dataclasses import replace
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from whenpro_core.errors import WhenproError
from whenpro_core.formats.base import summarize
from whenpro_core.library.listing import (
    SORT_COLUMNS,
    RowFilter,
    count_line,
    facet_counts,
    filter_rows,
    sort_rows,
    walk_rows,
)
from whenpro_core.safety.textsafe import clean
from whenpro_core.trace.model import Trace, TraceSummary
from whenpro_tui.app_settings import labels_shown, set_labels
from whenpro_tui.commands import collect_bindings
from whenpro_tui.messages import OpenTrace, RowsFound, TraceLoaded, TraceLoadFailed, WalkDone, load_trace_message
from whenpro_tui.screens.counts import CountPrefix
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.screens.leaving import LEAVE_BINDINGS, Leaving
from whenpro_tui.screens.library_inside import LibraryInside
from whenpro_tui.screens.library_validate import LibraryValidation
from whenpro_tui.screens.picker import FacetPicker
from whenpro_tui.widgets.footer import FittedFooter
from whenpro_tui.widgets.trace_table import TraceTable
from whenpro_tui.widgets.virtual_list import VirtualList

if TYPE_CHECKING:  # the sessions module loads the settings: imported where sessions are listed
    from whenpro_core.library.sessions import SessionRow

#: Rows per message from the walk worker (and at most this many seconds between).
BATCH_ROWS = 500
BATCH_SECONDS = 0.1


def nearest_position(shown: list[int], current: int) -> int:
    """Where ``current`` (a row position) falls among the sorted positions ``shown``."""
    return min(bisect_left(shown, current), max(len(shown) - 1, 0))


class LibraryScreen(LibraryValidation, LibraryInside, CountPrefix, Leaving, Screen[None]):
    """The trace library (see module docstring)."""

    BINDINGS = [
        Binding("/", "focus_text", "Find", key_display="/"),
        # from the find box (the list binds these itself): into the list, moving its cursor
        Binding("down", "from_find(1)", "Find box: next row", show=False),
        Binding("up", "from_find(-1)", "Find box: previous row", show=False),
        Binding("f", "facets", "Filter"),
        Binding("F", "find_inside", "Find inside every trace (what steps say)", show=False),
        Binding("c", "clear_filters", "Clear filters", show=False),
        Binding("s", "sort(1)", "Sort by next column"),
        Binding("S", "reverse_sort", "Reverse the sort", show=False),
        Binding("t", "toggle_labels", "Labels"),
        Binding("?", "help", "Help", key_display="?"),
        *LEAVE_BINDINGS,  # q quits; escape leaves the find box, never quits
        # tuiresults: validation mode of a built dataset (screens/library_validate.py)
        Binding("v", "validate", "Validate"),
    ]

    def __init__(
        self, target: str, *, rows: list[TraceSummary] | None = None, sessions: list[SessionRow] | None = None
    ) -> None:
        """``sessions``: the rows are the user's coding-agent sessions (``view --sessions``):
        the list shows their date (local time, zone in the header), steps, errors, tokens,
        cost and project."""
        super().__init__()
        self.target = target
        self.initial_rows = rows
        self.sessions = sessions
        self.row_filter = RowFilter()
        self.scanning = rows is None
        self.errors = 0
        self.walk_seconds: float | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("whenpro library  ", "bold"), (clean(self.target), "dim")), id="lib-title")
        yield Input(placeholder="/ find: id, path, framework, benchmark…", id="lib-text")
        yield Static(id="lib-filters", markup=False)
        yield Static(id="lib-columns", markup=False)
        yield TraceTable(id="traces")
        yield Static(id="lib-count", markup=False)
        yield FittedFooter()

    def on_mount(self) -> None:
        self.watch(self.app, "show_labels", self._labels_changed, init=False)
        table = self.table
        table.show_labels = self.show_labels
        if self.sessions is not None:
            table.use_sessions(self.sessions)  # newest first, as listed
        else:
            table.sort_column = "id"  # a dataset opens in natural id order: task_2 before task_10
        self.query_one("#lib-text", Input).cursor_blink = getattr(self.app, "cursor_blink", True)
        table.focus()
        if self.initial_rows is not None:
            self._add(self.initial_rows)
        else:
            self.walk()
        self._update_texts()
        self.call_after_refresh(getattr(self.app, "first_paint", lambda: None))

    @property
    def table(self) -> TraceTable:
        return self.query_one(TraceTable)

    @property
    def show_labels(self) -> bool:
        return labels_shown(self.app)

    # ------------------------------------------------------------------ rows

    @work(thread=True, exclusive=True, group="walk", exit_on_error=False)
    def walk(self) -> None:
        """List the dataset in a thread, posting rows in batches."""
        worker = get_current_worker()
        start = time.perf_counter()
        batch: list[TraceSummary] = []
        last = start
        error = None
        try:
            for row in walk_rows(self.target):
                if worker.is_cancelled:
                    return
                batch.append(row)
                now = time.perf_counter()
                if len(batch) >= BATCH_ROWS or now - last >= BATCH_SECONDS:
                    self.post_message(RowsFound(batch))
                    batch, last = [], now
        except WhenproError as exc:
            error = exc.one_line()
        except Exception as exc:  # never let a listing bug take the app down
            error = f"{type(exc).__name__}: {exc}"
        if batch:
            self.post_message(RowsFound(batch))
        self.post_message(WalkDone(time.perf_counter() - start, error))

    def on_resize(self, event: events.Resize) -> None:
        # the id column takes the width the other columns leave: realign the titles
        self.call_after_refresh(self._update_texts)

    def on_rows_found(self, message: RowsFound) -> None:
        self._add(message.rows)

    def _add(self, rows: list[TraceSummary]) -> None:
        flt = self._effective_filter()
        self.errors += sum(1 for r in rows if r.error is not None)
        self.table.add_rows(rows, [flt.keeps(r) for r in rows])
        if self.table.sort_column is not None:  # streamed rows take their place in the sort
            self._refilter(top=self.table.cursor == 0)
        self._update_texts()

    def on_walk_done(self, message: WalkDone) -> None:
        self.scanning = False
        self.walk_seconds = message.seconds
        if message.error:
            self.notify(clean(message.error), title="Listing stopped", severity="error", timeout=10)
        self._update_texts()

    def _effective_filter(self) -> RowFilter:
        return self.row_filter if self.show_labels else self.row_filter.without_labels()

    def _refilter(self, *, top: bool = False) -> None:
        """Show the rows the filter keeps, in the sort; the cursor stays on its row, or on
        the first row with ``top`` (rows streaming in under a cursor not yet moved)."""
        table = self.table
        current = table.shown[table.cursor] if table.shown and not top else None
        shown = sort_rows(
            table.rows, filter_rows(table.rows, self._effective_filter()), table.sort_column, reverse=table.sort_reverse
        )
        cursor = 0
        if current is not None and current in shown:
            cursor = shown.index(current)
        elif current is not None and table.sort_column is None:
            cursor = nearest_position(shown, current)
        table.set_shown(shown, cursor=cursor)
        self._update_texts()

    def _update_texts(self) -> None:
        table = self.table
        self.query_one("#lib-count", Static).update(
            count_line(len(table.shown), len(table.rows), self.errors, scanning=self.scanning)
        )
        desc = self._effective_filter().describe()
        self.query_one("#lib-filters", Static).update(
            Text(
                f"filter: {desc}   (c clears){self.inside_note()}"
                if desc
                else "no filter   (f: filter by "
                "outcome, modality, framework, benchmark" + (", mode" if self.show_labels else "") + ")",
                style="dim",
            )
        )
        self.query_one("#lib-columns", Static).update(Text(table.header_line(), style="bold dim"))

    # ------------------------------------------------------------------ filters

    @on(Input.Changed, "#lib-text")
    def _text_changed(self, event: Input.Changed) -> None:
        self.row_filter = replace(self.row_filter, text=event.value)
        self._refilter()

    @on(Input.Submitted, "#lib-text")
    def _text_submitted(self, event: Input.Submitted) -> None:
        self.set_focus(self.table)

    def on_key(self, event: events.Key) -> None:
        # Text typed fast after "/" (or pasted) is forwarded to the list before a binding
        # could move the focus: "/" focuses the find box here, at once, and the keys
        # behind it, already on their way to the list, are typed into the box.
        box = self.query_one("#lib-text", Input)
        if event.key == "slash" and self.focused is not box:
            self.set_focus(box)
            event.stop()
        elif self.focused is box and event.is_printable and event.character:
            box.insert_text_at_cursor(event.character)
            event.stop()
        elif self.focused is self.table:
            self.count_key(event)
            self._counted_move(event)

    def _counted_move(self, event: events.Key) -> None:
        """``6j``, ``3k``, ``12G`` in the list: move by (or to) the count typed before the key
        (:class:`~whenpro_tui.screens.counts.CountPrefix`); a key without a count is the
        list's own."""
        if not self.has_count():
            return
        count, table = self.take_count(), self.table
        moves = {"j": table.cursor + count, "down": table.cursor + count, "k": table.cursor - count}
        moves.update({"up": table.cursor - count, "G": count - 1})
        if event.key in moves:
            event.stop()
            table.move_cursor(max(0, min(moves[event.key], table.row_count - 1)))

    def action_focus_text(self) -> None:
        # at once, not via Widget.focus (which runs after the keys already queued): text
        # typed fast after "/" must land in the box, not run list keys such as q
        self.set_focus(self.query_one("#lib-text", Input))

    def action_from_find(self, delta: int) -> None:
        """Down/up in the find box: the list takes the focus and its cursor moves, so
        enter opens that row at once."""
        table = self.table
        self.set_focus(table)
        table.move_cursor(table.cursor + delta)

    def close_local(self) -> bool:
        """Escape in the find box goes back to the list."""
        if self.focused is self.query_one("#lib-text", Input):
            self.table.focus()
            return True
        return False

    def action_facets(self) -> None:
        def done(choice: dict[str, frozenset[str]] | None) -> None:
            if choice is not None:
                self.row_filter = replace(self.row_filter, facets=choice)
                self._refilter()

        facets = facet_counts(self.table.rows, with_labels=self.show_labels)
        self.app.push_screen(FacetPicker("Show only traces with…", facets, self._effective_filter().facets), done)

    def action_sort(self, step: int) -> None:
        """Sort by the next column (``s``): id (natural order), outcome, task, answer,
        steps, agents, framework, benchmark, modality, GT (labels shown), then arrival order."""
        table = self.table
        order: list[str | None] = [c for c in SORT_COLUMNS if c != "gt" or self.show_labels]
        order.append(None)
        at = order.index(table.sort_column) if table.sort_column in order else len(order) - 1
        table.sort_column = order[(at + step) % len(order)]
        table.sort_reverse = False
        self._refilter()
        self.notify(
            f"Sorted by {table.sort_column} (S reverses)" if table.sort_column else "In listing order", timeout=2
        )

    def action_reverse_sort(self) -> None:
        table = self.table
        if table.sort_column is None:
            self.notify("Not sorted: s sorts by a column.", severity="warning")
            return
        table.sort_reverse = not table.sort_reverse
        self._refilter()

    def action_clear_filters(self) -> None:
        self.stop_inside()
        self.row_filter = RowFilter()
        text = self.query_one("#lib-text", Input)
        with text.prevent(Input.Changed):
            text.value = ""
        self._refilter()

    def action_toggle_labels(self) -> None:
        set_labels(self.app, not self.show_labels)

    def _labels_changed(self, show: bool) -> None:
        self.table.set_labels(show)
        self._refilter()
        if self.is_current:
            self.notify("Labels shown (GT step/mode column)" if show else "Labels hidden")

    # ------------------------------------------------------------------ opening

    @on(VirtualList.Selected, "#traces")
    def _open_selected(self, event: VirtualList.Selected) -> None:
        row = self.table.current
        if row is None:
            return
        if row.error is not None:
            self.notify(clean(row.error), title="This file failed to import", severity="error", timeout=10)
            return
        self.query_one("#lib-count", Static).update(Text(f"Opening {clean(row.id)}…"))
        self.open_row(row.ref())

    def sibling_refs(self) -> list[str]:
        """References of the listed traces (error rows left out), in list order."""
        table = self.table
        return [table.rows[i].ref() for i in table.shown if table.rows[i].error is None]

    @work(thread=True, exclusive=True, group="load-trace", exit_on_error=False, description="open a trace")
    def open_row(self, ref: str) -> None:
        self.post_message(load_trace_message(ref))

    def on_trace_loaded(self, message: TraceLoaded) -> None:
        self._fill_row(message.trace, message.ref)
        self._update_texts()
        refs = self.sibling_refs()
        try:
            position = refs.index(message.ref)
        except ValueError:
            position = None
        self.app.post_message(
            OpenTrace(
                message.trace, siblings=refs, position=position, on_close=self._trace_closed, on_shown=self._fill_row
            )
        )

    def _fill_row(self, trace: Trace, ref: str) -> None:
        """The row of an opened trace gets what the listing could not tell cheaply
        (the steps of a JSONL release row, its outcome, answers and agents)."""
        table = self.table
        for i, row in enumerate(table.rows):
            if row.error is None and row.ref() == ref:
                full = summarize(trace)
                keep = {"id", "path", "key", "format"}
                table.update_row(
                    i,
                    row.model_copy(
                        update={
                            k: v
                            for k, v in full.model_dump().items()
                            if k not in keep and v not in (None, "", []) and getattr(row, k) in (None, "", [])
                        }
                    ),
                )
                break

    def _trace_closed(self, position: int | None) -> None:
        """Follow ``[``/``]`` moves made on the trace screen."""
        if position is None:
            return
        refs = self.sibling_refs()
        if 0 <= position < len(refs):
            table = self.table
            want = refs[position]
            for pos, i in enumerate(table.shown):
                if table.rows[i].ref() == want:
                    table.move_cursor(pos, center=True)
                    break

    def on_trace_load_failed(self, message: TraceLoadFailed) -> None:
        self._update_texts()
        self.notify(clean(message.error), title="Could not open trace", severity="error", timeout=10)

    # ------------------------------------------------------------------ help, quit

    def action_help(self) -> None:
        dialogs = (("Filter dialog (f)", FacetPicker),)
        self.app.push_screen(HelpScreen("Library keys", collect_bindings(self), markers=False, dialogs=dialogs))

    #: The library is always the first screen: q quits.
    is_root = True

    def action_back(self) -> None:
        self.app.exit()
