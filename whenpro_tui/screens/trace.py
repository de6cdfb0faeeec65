"""The trace screen: header, virtual step list and step detail, with the debugger's keys
(navigation, go to, search, filter, labels, trace switching, editor, copy).

Every action is a ``whenpro_core`` call (search, filters, coordinates, step text); this
module only wires keys to those calls and results to widgets. Blocking work (search over
a huge trace, loading another trace) runs in thread workers that post messages.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual import events, on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Static

from whenpro_core.attribution.export import write_export
from whenpro_core.errors import WhenproError
from whenpro_core.safety.textsafe import clean, human_size, plural, shown_path
from whenpro_core.storage.fsutil import safe_name
from whenpro_core.storage.gcpause import release_long_lived
from whenpro_core.trace.model import Trace
from whenpro_core.views.search import SearchResult, StepFilter, filter_steps, gt_step_index, same_agent_step
from whenpro_core.views.stepview import TextOptions, step_as_text
from whenpro_core.views.traceview import agent_slots, tally_steps, trace_header, unlabelled_id
from whenpro_tui.app_settings import labels_shown, set_labels
from whenpro_tui.clipboard import copy_text
from whenpro_tui.commands import collect_bindings
from whenpro_tui.editor import open_in_editor
from whenpro_tui.messages import (
    AttributionDone,
    AttributionFailed,
    AttributionProgress,
    SiblingsFound,
    TraceLoaded,
    TraceLoadFailed,
    VerdictSaved,
    VerdictsLoaded,
    load_trace_message,
)
from whenpro_tui.screens.counts import CountPrefix
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.screens.leaving import LEAVE_BINDINGS, Leaving
from whenpro_tui.screens.prompt import PromptScreen
from whenpro_tui.screens.trace_attribute import AttributionController
from whenpro_tui.screens.trace_find import StepFinding
from whenpro_tui.screens.trace_inject import Injecting
from whenpro_tui.screens.trace_media import MediaViewing
from whenpro_tui.widgets.footer import FittedFooter
from whenpro_tui.widgets.palette import AGENT_COLOURS
from whenpro_tui.widgets.step_detail import LEVELS, DetailOptions, StepDetail
from whenpro_tui.widgets.step_list import StepList
from whenpro_tui.widgets.trace_header import TraceHeaderView
from whenpro_tui.widgets.virtual_list import VirtualList

#: Copies larger than this are cut (OSC 52 payloads are limited by terminals).
COPY_LIMIT = 1_000_000


class TraceScreen(Injecting, MediaViewing, StepFinding, CountPrefix, Leaving, Screen[int | None]):
    """One trace (see module docstring). Dismisses with its position among its
    siblings, so the library can follow. Its parts (finding, media, injection) share the
    state declared in :class:`~.trace_host.TraceHost`; attribution is an
    :class:`~.trace_attribute.AttributionController` it owns (:attr:`attribution`), to
    which it hands the attribution keys and messages."""

    BINDINGS = [
        Binding("j,down", "step(1)", "Next step", show=False),
        Binding("k,up", "step(-1)", "Previous step", show=False),
        Binding("g,home", "first", "First step", show=False),
        Binding("G,end", "last", "Last step (5G: 5th row)", show=False),
        Binding("pagedown,ctrl+f,space", "page(1)", "Page down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("ctrl+d", "half_page(1)", "Half a page down", show=False),
        Binding("ctrl+u", "half_page(-1)", "Half a page up", show=False),
        Binding("l,right", "same_agent(1)", "Next step of this agent", show=False),
        Binding("h,left", "same_agent(-1)", "Previous step of this agent", show=False),
        Binding(":", "goto", "Go to step", key_display=":"),
        Binding("/", "search", "Search", key_display="/"),
        Binding("n", "search_next(1)", "Next match", show=False),
        Binding("N", "search_next(-1)", "Previous match", show=False),
        Binding("f", "filter", "Filter"),
        Binding("F", "clear_filter", "Clear filter", show=False),
        Binding("t", "toggle_labels", "Labels"),
        Binding("T", "jump_gt", "Go to GT step", show=False),
        Binding("[", "trace(-1)", "Previous trace", key_display="["),
        Binding("]", "trace(1)", "Next trace", key_display="]"),
        Binding("o,enter", "expand", "Show more", show=False),
        Binding("O", "collapse", "Fold content", show=False),
        Binding("r", "toggle_raw", "Raw/rendered", show=False),
        Binding("w", "waterfall", "Waterfall (tree + time)", show=False),
        Binding("W", "toggle_task", "Task in full", show=False),
        Binding("J", "scroll_detail(1)", "Scroll detail down", show=False),
        Binding("K", "scroll_detail(-1)", "Scroll detail up", show=False),
        Binding("e", "edit", "Open in $EDITOR", show=False),
        Binding("x", "export", "Export HTML page (share)", show=False),
        Binding("y", "copy", "Copy step", show=False),
        Binding("<", "resize(-5)", "Narrower list", show=False, key_display="<"),
        Binding(">", "resize(5)", "Wider list", show=False, key_display=">"),
        Binding("z", "zoom", "Zoom detail", show=False),
        # injection (tuiinject): inject at this step, diff a counterfactual with its seed
        Binding("i", "inject", "Inject"),
        Binding("d", "diff", "Diff with seed", show=False),
        # tuimedia: images full size, keyframe strip
        Binding("m", "open_media", "Media full size", show=False),
        Binding("M", "focus_media", "Keyframe strip", show=False),
        Binding("?", "help", "Help", key_display="?"),
        # attribution (tuiattr): esc cancels a running attribution, else falls through
        Binding("a", "attribute", "Attribute"),
        Binding("A", "next_verdict", "Next verdict / hide", show=False),
        Binding("escape", "cancel_attribution", "Cancel a running attribution", show=False),
        *LEAVE_BINDINGS,  # q back (quit on the first screen); escape closes, never quits
    ]

    #: What works on the first steps of a large file while the rest loads (``partial``):
    #: moving, reading and copying a step; the rest needs the whole trace.
    WHILE_LOADING = frozenset(
        {
            "step", "first", "last", "page", "half_page", "same_agent", "expand", "collapse", "toggle_raw",
            "toggle_task", "scroll_detail", "resize", "zoom", "help", "edit", "copy", "open_media", "focus_media",
            "back", "quit_here", "escape", "cancel_attribution", "quit",
        }
    )  # fmt: skip

    def __init__(
        self,
        trace: Trace,
        *,
        siblings: list[str] | None = None,
        position: int | None = None,
        is_root: bool = False,
        partial: bool = False,
        on_shown: Callable[[Trace, str], None] | None = None,
    ) -> None:
        super().__init__()
        #: True while ``trace`` holds only the first steps of a file still loading (not
        #: ``loading``: Textual's own reactive, which covers the screen with a spinner)
        #: (:meth:`finish_loading` shows the whole trace)
        self.partial = partial
        self.trace = trace
        self.trace_refs = siblings or []
        self.position = position
        #: the sibling position being loaded (``]``/``[`` count from it), else None
        self._wanted: int | None = None
        #: the sibling position that last failed to open (``]``/``[`` count from it next)
        self._failed_at: int | None = None
        #: told of each sibling trace ``]``/``[`` shows, with its reference (the library
        #: fills its row)
        self.on_shown = on_shown
        self.is_root = is_root
        self.step_filter = StepFilter()
        self.search: SearchResult | None = None
        self.levels: dict[int, int] = {}
        self.raw = False
        self.task_expanded = False
        self.list_width = 45
        self._detail_pending = False
        #: attribute (``a``), cancel (Esc), browse verdicts (``A``); the verdict panel
        self.attribution = AttributionController(self)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield TraceHeaderView(id="header")
        with Horizontal(id="panes"):
            with Vertical(id="list-pane"):
                yield StepList(id="steps")
                yield Static(id="status", markup=False)
            yield StepDetail(id="detail")
        yield FittedFooter()

    #: Below this terminal width the list sits above the detail pane.
    NARROW_WIDTH = 110
    #: Below this terminal height the header and the list are compact (80x24 is designed).
    SHORT_HEIGHT = 32

    # Textual runs the handler of every class up the chain: the parts and subclasses
    # define none of these handlers; they are called through explicit hooks.
    def on_resize(self, event: events.Resize) -> None:
        self._fit_classes(event.size.width, event.size.height)
        self.media_resized()

    def _fit_classes(self, width: int, height: int) -> None:
        self.set_class(width < self.NARROW_WIDTH, "narrow")
        self.set_class(height < self.SHORT_HEIGHT, "short")

    def on_key(self, event: events.Key) -> None:
        """Keys typed ahead of a prompt first (:class:`StepFinding`), then count prefixes
        (:class:`CountPrefix`): one handler, so the order is written down. While only the
        first steps of a large file are there, ``/`` and ``:`` wait for the rest."""
        if self.partial and event.key in ("slash", "colon"):
            event.stop()
            self.notify("Still loading the trace: search and go-to work once every step is there.")
            return
        self.find_key(event)
        self.count_key(event)

    def on_mount(self) -> None:
        self._fit_classes(self.app.size.width, self.app.size.height)
        self.watch(self.app, "show_labels", self._labels_changed, init=False)
        self.show_trace(self.trace, self.position)
        if self.trace.steps:
            self._show_current()  # in the first paint, not the one after it
        self.query_one(StepList).focus()
        self.attribution.mounted()
        self.after_mount()
        self.call_after_refresh(getattr(self.app, "first_paint", lambda: None))

    def on_unmount(self) -> None:
        self.before_unmount()
        # the trace was frozen out of GC passes when loaded (whenpro_core.storage.gcpause)
        release_long_lived()

    def after_mount(self) -> None:
        """Hook for subclasses: runs once, at the end of ``on_mount``."""

    def before_unmount(self) -> None:
        """Hook for subclasses: runs once, at the start of ``on_unmount``."""

    @property
    def show_labels(self) -> bool:
        return labels_shown(self.app)

    @property
    def steps(self) -> StepList:
        return self.query_one(StepList)

    def show_trace(self, trace: Trace, position: int | None = None) -> None:
        """Show ``trace`` in the existing widgets (also used by ``[``/``]``)."""
        self.trace = trace
        self.position = position
        tally = tally_steps(trace.steps)  # one pass over the steps for the header and the list
        self.header_model = trace_header(trace, tally=tally)
        self.slots = agent_slots([a for a, _ in self.header_model.agents], len(AGENT_COLOURS))
        self.step_filter = StepFilter()
        self.search = None
        self.levels = {}
        steps = self.steps
        steps.show_labels = self.show_labels
        steps.set_trace(trace, list(range(len(trace.steps))), self.slots, tally=tally)
        self._render_header()
        if not trace.steps:
            self.query_one(StepDetail).show_empty("This trace has no steps.")
        self._update_status()
        notes = trace.extras.get("whenpro_warnings") or []
        if notes:  # e.g. skipped bad lines: what the CLI prints on stderr
            more = f" (and {len(notes) - 1} more)" if len(notes) > 1 else ""
            self.notify(clean(str(notes[0])) + more, title="Imported with warnings", severity="warning", timeout=10)

    def _render_header(self) -> None:
        pos = ""
        if self.trace_refs and self.position is not None:
            pos = f"trace {self.position + 1:,}/{len(self.trace_refs):,}"
        self.query_one(TraceHeaderView).show(
            self.header_model, self.slots, show_labels=self.show_labels, task_expanded=self.task_expanded, position=pos
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "trace" and not self.trace_refs:
            return False  # one trace only: hide [ and ] from the footer
        if self.partial and action not in self.WHILE_LOADING:
            return None  # shown, greyed, until the whole trace is there
        return super().check_action(action, parameters)

    def finish_loading(self, trace: Trace) -> None:
        """Show the whole ``trace`` in place of its first steps, the cursor where it was."""
        at = self.steps.step_index
        self.partial = False
        self.show_trace(trace, self.position)
        self.attribution.trace_changed(trace)
        if at is not None and trace.steps:
            self._go_to_step(min(at, len(trace.steps) - 1), center=False)
        self.refresh_bindings()

    # ------------------------------------------------------------------ showing a step

    @on(VirtualList.Highlighted, "#steps")
    def _on_step_highlighted(self, event: VirtualList.Highlighted) -> None:
        # The list and status repaint at once; the detail pane follows right after
        # that paint, once per burst of keys (key repeat stays cheap on any trace).
        self._update_status()
        if not self._detail_pending:
            self._detail_pending = True
            self.call_after_refresh(self._flush_detail)

    def _flush_detail(self) -> None:
        self._detail_pending = False
        self._show_current()

    def _show_current(self) -> None:
        idx = self.steps.step_index
        detail = self.query_one(StepDetail)
        if idx is None:
            detail.show_empty(
                "No step to show." if not self.trace.steps else "Every step is filtered out (F clears the filter)."
            )
            self.show_media(None)  # tuimedia
            self._update_status()
            return
        step = self.trace.steps[idx]
        row = self.steps.row_model(idx)
        query = self.search.query if self.search and idx in self.search.fields else ""
        detail.show_step(
            step,
            row,
            DetailOptions(
                show_labels=self.show_labels,
                raw=self.raw,
                level=self.levels.get(idx, 0),
                query=query,
                agent_slot=self.slots.get(row.agent),
            ),
        )
        self.show_media(idx)  # tuimedia
        self._update_status()

    def _update_status(self) -> None:
        steps = self.steps
        parts = []
        idx = steps.step_index
        if idx is not None:
            coord = steps.row_model(idx).coord or f"#{idx}"
            parts.append(f"step {coord} ({steps.cursor + 1:,}/{steps.row_count:,})")
        if self._typing_count:
            parts.append(f"count {self._typing_count}…")
        if self.step_filter.active:
            parts.append(f"filter {self.step_filter.describe()}")
        if self.partial:
            parts.append(f"loading the rest of the file… (first {self.steps.row_count:,} steps shown)")
        if self.search is not None:
            rank = self.search.position(idx) if idx is not None else None
            where = f"{rank} of " if rank else ""
            parts.append(
                f"/{self.search.query}: {where}{plural(len(self.search.steps), 'step')} "
                f"({plural(self.search.matches, 'hit')})"
            )
        self.query_one("#status", Static).update(Text(" · ".join(parts)), layout=False)

    def _go_to_step(self, idx: int, *, center: bool = True) -> None:
        """Move the cursor to step ``idx``, clearing the filter if it hides it."""
        pos = self.steps.position_of(idx)
        if pos is None:
            self.step_filter = StepFilter()
            self.steps.set_shown(filter_steps(self.trace.steps, self.step_filter), cursor=idx)
            self.notify("Filter cleared to show that step.")
            pos = idx
        self.steps.move_cursor(pos, center=center)

    # ------------------------------------------------------------------ navigation

    def count_changed(self, count: int) -> None:
        self._update_status()

    def action_step(self, delta: int) -> None:
        self.steps.move_cursor(self.steps.cursor + delta * self.take_count())

    def action_first(self) -> None:
        self.steps.move_cursor(self.take_count() - 1)

    def action_last(self) -> None:
        # 12G goes to row 12 (as in vim and less); G alone to the last row
        self.steps.move_cursor(self.take_count(self.steps.row_count) - 1)

    def _page_rows(self) -> int:
        return max(1, self.steps.scrollable_content_region.height - 1)

    def action_page(self, direction: int) -> None:
        self.steps.move_cursor(self.steps.cursor + direction * self.take_count() * self._page_rows())

    def action_half_page(self, direction: int) -> None:
        half = max(1, (self._page_rows() + 1) // 2)
        self.steps.move_cursor(self.steps.cursor + direction * self.take_count() * half)

    def action_same_agent(self, direction: int) -> None:
        idx = self.steps.step_index
        if idx is None:
            return
        target = idx
        for _ in range(min(self.take_count(), len(self.trace.steps))):
            step_to = same_agent_step(self.trace.steps, target, backwards=direction < 0, allowed=self.steps.shown)
            if step_to is None:
                break
            target = step_to
        if target == idx:
            agent = clean(self.trace.steps[idx].agent)
            self.notify(f"No {'earlier' if direction < 0 else 'later'} step by {agent}.")
            return
        self._go_to_step(target)

    # ------------------------------------------------------------------ labels

    def action_toggle_labels(self) -> None:
        set_labels(self.app, not self.show_labels)

    def _labels_changed(self, show: bool) -> None:
        self.steps.set_labels(show)
        self._render_header()
        self._show_current()
        if self.is_current:
            gt = self.header_model.gt
            if show:
                where = f" — GT ★ step {gt.step} (T jumps there)" if gt else " (no GT label)"
                self.notify("Labels shown" + where)
            else:
                self.notify("Labels hidden")

    def action_jump_gt(self) -> None:
        if not self.show_labels:
            self.notify("Labels are hidden: press t to show them first.", severity="warning")
            return
        idx = gt_step_index(self.trace)
        if idx is None:
            self.notify("This trace has no ground-truth step.", severity="warning")
            return
        self._go_to_step(idx)

    # ------------------------------------------------------------------ traces

    def action_trace(self, delta: int) -> None:
        if not self.trace_refs or self.position is None:
            self.notify("No other traces here (this file holds one trace).")
            return
        # a press during a load moves on from the trace being loaded, so none is lost; one
        # after a trace failed to open moves on from that one (it cannot be shown)
        start = next(p for p in (self._wanted, self._failed_at, self.position) if p is not None)
        target = start + delta
        if not 0 <= target < len(self.trace_refs):
            self.notify("This is the " + ("first" if delta < 0 else "last") + " trace.")
            return
        self.load_sibling(target)

    def load_sibling(self, position: int) -> None:
        """Open sibling trace ``position`` (loaded in a thread; only the last asked shows)."""
        self._wanted = position
        self._load_sibling(position)

    @work(thread=True, exclusive=True, group="load-trace", exit_on_error=False, description="open a sibling trace")
    def _load_sibling(self, position: int) -> None:
        self.post_message(load_trace_message(self.trace_refs[position], position))

    def on_trace_loaded(self, message: TraceLoaded) -> None:
        message.stop()
        if message.position != self._wanted:
            return  # superseded by a later press
        self._wanted = self._failed_at = None
        self.show_trace(message.trace, message.position)
        self.attribution.trace_changed(message.trace)
        if self.on_shown is not None:
            self.on_shown(message.trace, message.ref)

    def on_trace_load_failed(self, message: TraceLoadFailed) -> None:
        message.stop()
        if message.position is not None and message.position != self._wanted:
            return
        self._wanted, self._failed_at = None, message.position
        where = "" if message.position is None else f" (trace {message.position + 1}; ]/[ move on from it)"
        self.notify(clean(message.error) + where, title="Could not open trace", severity="error", timeout=10)

    def on_siblings_found(self, message: SiblingsFound) -> None:
        self.trace_refs = message.refs
        self.position = message.position
        self._render_header()
        self.refresh_bindings()

    # ------------------------------------------------------------------ detail pane

    def action_expand(self) -> None:
        idx = self.steps.step_index
        if idx is None:
            return
        detail = self.query_one(StepDetail)
        level = self.levels.get(idx, 0)
        if detail.complete:
            self.notify("The whole step is shown.")
            return
        if level >= len(LEVELS) - 1:
            self.notify("Display cap reached: press e to read the rest in $EDITOR.", severity="warning")
            return
        self.levels[idx] = level + 1
        self._show_current()

    def action_collapse(self) -> None:
        idx = self.steps.step_index
        if idx is not None and self.levels.pop(idx, 0):
            self._show_current()

    def action_toggle_raw(self) -> None:
        self.raw = not self.raw
        self._show_current()
        self.notify("Raw text" if self.raw else "Rendered (Markdown / code / JSON)")

    def action_toggle_task(self) -> None:
        self.task_expanded = not self.task_expanded
        self._render_header()

    def action_waterfall(self) -> None:
        """``w``: the run as a tree with time (:mod:`whenpro_tui.screens.waterfall`); a row
        chosen there is the step shown here."""
        from whenpro_tui.screens.waterfall import WaterfallScreen  # loaded on first use

        def chosen(index: int | None) -> None:
            if index is not None:
                self._go_to_step(index)

        self.app.push_screen(WaterfallScreen(self.trace), chosen)

    def action_scroll_detail(self, direction: int) -> None:
        body = self.query_one(StepDetail).body
        body.scroll_relative(y=direction * self.take_count() * max(1, body.size.height // 2), animate=False)

    def action_resize(self, delta: int) -> None:
        """Grow or shrink the step list (its width, or its height when stacked)."""
        self.list_width = max(20, min(80, self.list_width + delta))
        pane = self.query_one("#list-pane")
        if self.has_class("narrow"):
            pane.styles.height = f"{self.list_width}%"
        else:
            pane.styles.width = f"{self.list_width}%"

    def action_zoom(self) -> None:
        if self.maximized is not None:
            self.minimize()
        else:
            self.maximize(self.query_one(StepDetail), container=False)
        self.attribution.show_panel()  # the whole reason while zoomed

    # ------------------------------------------------------------------ editor, copy

    def _step_text(self, max_chars: int | None = None) -> str | None:
        idx = self.steps.step_index
        if idx is None:
            return None
        return step_as_text(
            self.trace.steps[idx],
            TextOptions(
                show_labels=self.show_labels, max_chars=max_chars, extra_header=[f"Trace: {clean(self.trace.id)}"]
            ),
        )

    def action_edit(self) -> None:
        text = self._step_text()
        if text is None:
            return
        problem = open_in_editor(self.app, text)
        if problem:
            self.notify(problem, severity="error", timeout=8)

    def action_copy(self) -> None:
        idx = self.steps.step_index
        text = self._step_text(max_chars=COPY_LIMIT)
        if idx is None or text is None:
            return
        coord = self.steps.row_model(idx).coord or ""
        report = copy_text(self.app, text, name=f"{self.trace.id}-step-{coord}")
        full = self._step_text() if len(text) >= COPY_LIMIT else None  # cut only at the limit
        if full is not None and len(full) > len(text):
            self.notify(
                f"Copied only the first {human_size(COPY_LIMIT)} of step {coord} "
                f"({human_size(len(full))}). e opens it all in $EDITOR. " + report.message("it"),
                severity="warning",
                timeout=10,
            )
        else:
            self.notify(report.message(f"step {coord} ({human_size(len(text))})"), timeout=6 if report.tool else 10)

    # ------------------------------------------------------------------ export

    def action_export(self) -> None:
        """Ask where to write a self-contained HTML page of this trace (``x``); a name
        ending in ``.md`` writes bounded Markdown instead."""
        name = safe_name(self.trace.id if self.show_labels else unlabelled_id(self.trace.id))

        def done(text: str | None) -> None:
            if not text or not text.strip():
                return
            try:
                taken = Path(text.strip()).exists()
            except OSError as exc:  # a name the file system refuses (too long, ...)
                self.notify(
                    f"{shown_path(text.strip())}: {exc.strerror or exc}",
                    title="Export failed",
                    severity="error",
                    timeout=10,
                )
                return
            if taken:  # never replace a file from here
                self.notify(
                    f"{shown_path(text.strip())} exists: press x and give another name.", severity="warning", timeout=8
                )
                return
            self._write_export(text.strip())

        self.app.push_screen(
            PromptScreen(
                "export to", value=f"{name}.html", placeholder="OUT.html (or OUT.md)", input_id="export-input"
            ),
            done,
        )

    @work(thread=True, exclusive=True, group="export", exit_on_error=False, description="export the trace")
    def _write_export(self, out: str) -> None:
        try:
            path = write_export(self.trace, out, markdown=out.lower().endswith(".md"), labels=self.show_labels)
        except WhenproError as exc:
            self.app.call_from_thread(self.notify, exc.one_line(), title="Export failed", severity="error", timeout=10)
            return
        except OSError as exc:  # write_export turns write errors into ExportError; this is the rest
            self.app.call_from_thread(
                self.notify,
                f"cannot write {shown_path(out)}: {exc.strerror or exc}",
                title="Export failed",
                severity="error",
                timeout=10,
            )
            return
        labels = " with labels" if self.show_labels else " (labels left out)"
        self.app.call_from_thread(self.notify, f"Wrote {shown_path(path)}{labels}.", timeout=8)

    # ------------------------------------------------------------------ attribution

    def action_attribute(self) -> None:
        self.attribution.open_dialog()

    def action_next_verdict(self) -> None:
        self.attribution.next_verdict()

    def action_cancel_attribution(self) -> None:
        """Esc: cancel a running attribution; otherwise Esc keeps its meaning (back)."""
        if not self.attribution.running:
            raise SkipAction()
        self.attribution.cancel()

    def on_verdicts_loaded(self, message: VerdictsLoaded) -> None:
        self.attribution.verdicts_loaded(message)

    def on_attribution_progress(self, message: AttributionProgress) -> None:
        self.attribution.progressed(message)

    def on_attribution_done(self, message: AttributionDone) -> None:
        self.attribution.done(message)

    def on_attribution_failed(self, message: AttributionFailed) -> None:
        self.attribution.failed(message)

    def on_verdict_saved(self, message: VerdictSaved) -> None:
        self.attribution.saved(message)

    # ------------------------------------------------------------------ help, back

    def help_dialogs(self) -> tuple[tuple[str, type[Screen]], ...]:
        """The dialogs this screen opens, titled with their key, whose keys help lists."""
        from whenpro_tui.screens.attribute_picker import AttributePicker
        from whenpro_tui.screens.inject_dialog import InjectDialog
        from whenpro_tui.screens.media_modal import MediaModal
        from whenpro_tui.screens.picker import FacetPicker
        from whenpro_tui.screens.request_preview import RequestPreview

        return (
            ("Attribute dialog (a)", AttributePicker),
            ("Request preview (f2 in the attribute dialog)", RequestPreview),
            ("Inject dialog (i)", InjectDialog),
            ("Filter dialog (f)", FacetPicker),
            ("Media full size (m)", MediaModal),
        )

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Trace screen keys", collect_bindings(self), dialogs=self.help_dialogs()))

    def close_local(self) -> bool:
        """Escape first un-zooms the detail pane, then folds the task shown in full,
        then clears the search highlight."""
        if self.maximized is not None:
            self.action_zoom()
        elif self.task_expanded:
            self.action_toggle_task()
        elif self.search is not None:
            self.clear_search()
        else:
            return False
        return True

    def action_back(self) -> None:
        if self.maximized is not None:
            self.action_zoom()
            return
        if self.is_root:
            self.app.exit()
        else:
            self.dismiss(self.position)
