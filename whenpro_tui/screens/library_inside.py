"""``F`` on the library screen: find the traces whose steps say a text (issue 32, "searches
across sessions"): every listed trace is loaded and searched in a thread worker
(:func:`whenpro_core.library.inside.search_inside`); the list keeps the traces found so far
while the search goes on, and the filter line says how far it got. ``c`` clears it (and
stops a search still running); a new ``F`` replaces it. A mixin of
:class:`whenpro_tui.screens.library.LibraryScreen`."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from textual import work
from textual.worker import get_current_worker

from whenpro_core.library.inside import search_inside
from whenpro_core.library.listing import RowFilter
from whenpro_core.safety.textsafe import plural
from whenpro_tui.messages import InsideFound
from whenpro_tui.screens.prompt import PromptScreen

if TYPE_CHECKING:
    from textual.screen import Screen

    from whenpro_tui.widgets.trace_table import TraceTable

    _ScreenPart = Screen[Any]  # the type checker sees the host screen
else:
    _ScreenPart = object  # at run time a plain mixin

#: Seconds between progress messages of the search worker.
PROGRESS_SECONDS = 0.2


class LibraryInside(_ScreenPart):
    """Searches inside the listed traces (see module docstring)."""

    row_filter: RowFilter
    #: ``(searched, total, steps found)`` of the search inside, while one is shown
    inside_progress: tuple[int, int, int] | None = None

    if TYPE_CHECKING:

        @property
        def table(self) -> TraceTable: ...

        @property
        def show_labels(self) -> bool: ...

        def _refilter(self) -> None: ...

    def action_find_inside(self) -> None:
        """Ask for a text, then search every listed trace's steps for it."""

        def done(text: str | None) -> None:
            if text and text.strip():
                self.start_inside(text.strip())

        self.app.push_screen(
            PromptScreen(
                "find inside every trace",
                placeholder="text any step says (content, tool calls, observations, errors)",
                input_id="inside-input",
            ),
            done,
        )

    def start_inside(self, query: str) -> None:
        """Search the traces listed now (error rows left out) for ``query``."""
        refs = [row.ref() for row in self.table.rows if row.error is None]
        self.row_filter = replace(self.row_filter, inside=(query, frozenset()))
        self.inside_progress = (0, len(refs), 0)
        self._refilter()
        self._search_inside(query, refs, self.show_labels)

    def stop_inside(self) -> None:
        """Stop a running search inside (the filter is cleared by the caller)."""
        self.workers.cancel_group(self, "inside")
        self.inside_progress = None

    @work(thread=True, exclusive=True, group="inside", exit_on_error=False, description="search inside the traces")
    def _search_inside(self, query: str, refs: list[str], labels: bool) -> None:
        worker = get_current_worker()
        found: dict[str, int] = {}
        searched, last = 0, time.monotonic()
        for hit in search_inside(refs, query, labels=labels, should_stop=lambda: worker.is_cancelled):
            searched += 1
            if hit.steps:
                found[hit.ref] = hit.steps
            if time.monotonic() - last >= PROGRESS_SECONDS:
                self.post_message(InsideFound(query, found, searched, len(refs), False))
                found, last = {}, time.monotonic()
        if not worker.is_cancelled:
            self.post_message(InsideFound(query, found, searched, len(refs), True))

    def on_inside_found(self, message: InsideFound) -> None:
        inside = self.row_filter.inside
        if inside is None or inside[0] != message.query or self.inside_progress is None:
            return  # cleared, or replaced by a newer search
        steps = self.inside_progress[2] + sum(message.found.values())
        self.row_filter = replace(self.row_filter, inside=(inside[0], inside[1] | frozenset(message.found)))
        self.inside_progress = (message.searched, message.total, steps)
        self._refilter()

    def inside_note(self) -> str:
        """The progress of the search inside for the filter line (``""`` without one)."""
        if self.inside_progress is None or self.row_filter.inside is None:
            return ""
        searched, total, steps = self.inside_progress
        traces = len(self.row_filter.inside[1])
        where = f"{plural(traces, 'trace')}, {plural(steps, 'step')}"
        if searched < total:
            return f"   searching inside: {searched:,}/{total:,} traces read, {where} so far…"
        return f"   found in {where} ({total:,} searched)"
