"""Finding steps on the trace screen: go to a coordinate (``:``), search with ``n``/``N``
(``/``, run in a thread worker), filter by agent or kind (``f``/``F``).

A part of :class:`whenpro_tui.screens.trace.TraceScreen` (:mod:`.trace_host`); every decision is a
:mod:`whenpro_core.views.search` call.
"""

from __future__ import annotations

from bisect import bisect_left

from textual import events, work
from textual.widgets import Input
from textual.worker import get_current_worker

from whenpro_core.safety.textsafe import clean, plural
from whenpro_core.views.search import StepFilter, filter_steps, find_coord, search_steps, step_facets
from whenpro_tui.messages import SearchDone
from whenpro_tui.screens.picker import FacetPicker
from whenpro_tui.screens.prompt import PromptScreen
from whenpro_tui.screens.trace_host import TracePart


class StepFinding(TracePart):
    """Go to, search and filter actions (a part of the trace screen)."""

    #: The ``:`` or ``/`` prompt opened last (keys typed fast behind the key go to it).
    _prompt: PromptScreen | None = None

    # ------------------------------------------------------------------ go to

    def find_key(self, event: events.Key) -> None:
        """Keys typed ahead of the search/go-to prompt (the host screen's ``on_key`` calls this)."""
        # "/query" typed fast or pasted: the keys behind "/" are forwarded to this screen
        # before the prompt is up (and "q" would quit). Open the prompt at once and type
        # what follows into it.
        prompt = self._open_prompt()
        if event.key in ("slash", "colon") and prompt is None:
            event.stop()
            self.action_search() if event.key == "slash" else self.action_goto()
        elif prompt is not None and event.is_printable and event.character:
            event.stop()
            if prompt.is_mounted:
                prompt.query_one(Input).insert_text_at_cursor(event.character)
            else:
                prompt.value += event.character

    def _open_prompt(self) -> PromptScreen | None:
        """The ``:`` or ``/`` prompt while it is open, else ``None``."""
        prompt = self._prompt
        return prompt if prompt is not None and prompt in self.app.screen_stack else None

    def action_goto(self) -> None:
        def done(text: str | None) -> None:
            if not text or not text.strip():
                return
            idx = find_coord(self.trace, text)
            if idx is None:
                self.notify(f"No step '{clean(text.strip())}' in this trace.", severity="warning", markup=False)
                return
            self._go_to_step(idx)

        self._prompt = PromptScreen(":", placeholder="step coordinate (12, 1.1) or #index", input_id="goto-input")
        self.app.push_screen(self._prompt, done)

    # ------------------------------------------------------------------ search

    def action_search(self) -> None:
        def done(text: str | None) -> None:
            if text and text.strip():  # an empty enter runs nothing (n/N repeat a search)
                self.run_search(text)

        last = f" — last: {clean(self.search.query)} (n/N repeat it, esc clears)" if self.search else ""
        self._prompt = PromptScreen("/", placeholder="search steps (case-insensitive)" + last, input_id="search-input")
        self.app.push_screen(self._prompt, done)

    def clear_search(self) -> None:
        """Drop the search and its highlight (``escape``)."""
        self.search = None
        self.steps.set_matches(frozenset())
        self._show_current()
        self.notify("Search cleared.", timeout=2)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False, description="search the steps")
    def run_search(self, query: str) -> None:
        """Search every step in a thread (huge traces stay responsive)."""
        worker = get_current_worker()
        result = search_steps(
            self.trace.steps, query, include_hidden=self.show_labels, should_stop=lambda: worker.is_cancelled
        )
        self.post_message(SearchDone(result))

    def on_search_done(self, message: SearchDone) -> None:
        result = message.result
        if result.cancelled:
            return
        self.search = result
        self.steps.set_matches(frozenset(result.steps))
        if not result.steps:
            self.notify(f"No match for '{clean(result.query)}'.", severity="warning", markup=False)  # as typed
            self._show_current()
            return
        idx = self.steps.step_index or 0
        first = next((s for s in result.steps if s >= idx and self.steps.position_of(s) is not None), None)
        if first is None:
            first = result.next_after(idx)
        self.notify(f"Matches in {plural(len(result.steps), 'step')} ({plural(result.matches, 'hit')}).")
        if first is not None:
            self._go_to_step(first)
        self._show_current()

    def action_search_next(self, direction: int) -> None:
        if self.search is None or not self.search.steps:
            self.notify("No search yet: press / to search.", severity="warning")
            return
        idx = self.steps.step_index or 0
        backwards = direction < 0
        target, wrapped = idx, False
        for _ in range(min(self.take_count(), len(self.search.steps))):
            after = self.search.next_after(target, backwards=backwards)
            if after is None:
                break
            wrapped = wrapped or (after <= target if not backwards else after >= target)
            target = after
        if wrapped:
            where = "the last hit, back to the first" if not backwards else "the first hit, back to the last"
            self.notify(f"Search wrapped past {where}.", timeout=3)
        self._go_to_step(target)

    # ------------------------------------------------------------------ filter

    def action_filter(self) -> None:
        def done(choice: dict[str, frozenset[str]] | None) -> None:
            if choice is None:
                return
            flt = StepFilter(agents=choice.get("agent", frozenset()), kinds=choice.get("kind", frozenset()))
            shown = filter_steps(self.trace.steps, flt)
            if not shown:
                self.notify("No step matches that filter.", severity="warning")
                return
            self._apply_filter(flt, shown)

        chosen = {"agent": self.step_filter.agents, "kind": self.step_filter.kinds}
        self.app.push_screen(FacetPicker("Show only steps of…", step_facets(self.trace), chosen), done)

    def _apply_filter(self, flt: StepFilter, shown: list[int]) -> None:
        current = self.steps.step_index or 0
        pos = min(bisect_left(shown, current), len(shown) - 1)
        self.step_filter = flt
        self.steps.set_shown(shown, cursor=pos)
        self._update_status()

    def action_clear_filter(self) -> None:
        if self.step_filter.active:
            self._apply_filter(StepFilter(), list(range(len(self.trace.steps))))
