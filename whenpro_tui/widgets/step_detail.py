"""The step detail pane: the selected step's content (Markdown, code, JSON or text, as
fits), tool calls with pretty arguments, observation, error, media, and (with labels
shown) the hidden label fields.

Layout (composed once; showing another step updates these widgets, never re-mounts):

* ``#d-title`` — one line: coordinate, agent, kind, markers;
* ``#d-body`` — a :class:`StepBody` line-API view of the text sections. Showing a step
  re-renders its lines and repaints the region: no layout pass, so stepping through a
  trace costs a partial repaint, not a full one;
* ``#d-media`` — one placeholder line per media item (``--images off``);
* ``#d-media-panel`` — thumbnails and the keyframe strip (:mod:`.media_panel`), mounted
  on the first step that has media (:meth:`StepDetail.request_media_panel`): a trace
  without images never pays for the image renderer's import and the panel's tiles;
* ``#d-verdict`` — the :class:`~whenpro_tui.widgets.verdict_panel.VerdictPanel` (hidden
  until the trace screen's attribution shows a verdict or a run's progress).

Long fields are folded (:func:`whenpro_core.views.stepview.fold`) at the current expansion
level; the screen's ``o`` key raises the level chunk by chunk.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from whenpro_core.safety.textsafe import clean, human_size
from whenpro_core.trace.model import Step
from whenpro_core.trace.usage import step_usage
from whenpro_core.views.search import folded_hit
from whenpro_core.views.stepview import (
    Block,
    Folded,
    StepRow,
    call_blocks,
    content_blocks,
    fold,
    media_label,
    renders_markdown,
    step_reasoning,
)
from whenpro_tui import imaging
from whenpro_tui.app_settings import images_setting
from whenpro_tui.widgets.blocks import plain, render_block, render_blocks
from whenpro_tui.widgets.media_panel import MediaPanel, panel_enabled
from whenpro_tui.widgets.palette import MARKER_STYLES, agent_style
from whenpro_tui.widgets.verdict_panel import VerdictPanel

#: (max lines, max characters) shown per field at each expansion level. The last level
#: is a hard cap: beyond it the step is read in $EDITOR (``e``).
LEVELS = ((60, 6_000), (600, 32_000), (6_000, 128_000), (60_000, 256_000))
FOLD_STYLE = Style(color="#e5c07b", italic=True)


@dataclass(frozen=True)
class DetailOptions:
    """How to show a step: ``show_labels`` (hidden fields, GT marker), ``raw`` (plain
    text instead of Markdown/Syntax), ``level`` (index into :data:`LEVELS`),
    ``query`` (search term to highlight), ``agent_slot`` (colour of the agent)."""

    show_labels: bool = False
    raw: bool = False
    level: int = 0
    query: str = ""
    agent_slot: int | None = None


class StepBody(ScrollView, can_focus=True):
    """A scrollable view of one renderable, rendered to lines once per width (Line
    API): replacing the renderable repaints this widget only."""

    DEFAULT_CSS = """
    StepBody { height: 1fr; overflow-x: hidden; overflow-y: scroll; scrollbar-size-vertical: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._renderable: RenderableType = Text("")
        self._lines: list[Strip] = []
        self._width = 0
        self._base: Style | None = None

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._base = None
        if self._width:
            self._render_body(self._width)
            self.refresh()

    @property
    def line_count(self) -> int:
        """Rendered lines at the current width."""
        return len(self._lines)

    def show(self, renderable: RenderableType) -> None:
        """Replace what the view shows and scroll to its top."""
        self._renderable = renderable
        self._render_body(self.scrollable_content_region.width)
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def _render_body(self, width: int) -> None:
        self._width = width
        if width <= 0:
            self._lines = []
        else:
            console = self.app.console
            options = console.options.update(width=width, height=None, highlight=False)
            base = self._base_style()
            self._lines = [
                Strip([Segment(t, base + s if s else base, c) for t, s, c in line]).adjust_cell_length(width, base)
                for line in console.render_lines(self._renderable, options, pad=False)
            ]
        # The vertical scrollbar is always shown (overflow-y: scroll), so a new height
        # needs no layout pass: update the scroll range and repaint this widget only.
        size = Size(width, len(self._lines))
        if size != self.virtual_size:
            self.set_reactive(Widget.virtual_size, size)
            self._scroll_update(size)

    def on_resize(self, event: events.Resize) -> None:
        width = self.scrollable_content_region.width
        if width != self._width:
            self._render_body(width)
            # the compositor already painted this size from the old lines (and caches
            # those strips): repaint with the new wrap now
            self.refresh()

    def _base_style(self) -> Style:
        if self._base is None:
            self._base = self.rich_style
        return self._base

    def plain_text(self) -> str:
        """The rendered text (for tests and copy)."""
        return "\n".join(line.text for line in self._lines)

    def render_line(self, y: int) -> Strip:
        index = round(self.scroll_y) + y
        if index >= len(self._lines):
            return Strip.blank(self.scrollable_content_region.width, self._base_style())
        return self._lines[index]


class StepDetail(Vertical):
    """Detail pane (see module docstring)."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    StepDetail {
        padding: 0 0 0 1;
        & > #d-title { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
        & > #d-media { height: auto; max-height: 40%; border-top: hkey $primary 40%; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.complete = True  # False when some field was cut at this level
        self.shown_index: int | None = None  # the step on display
        self._panel_requested = False
        #: The media panel once it is mounted with all its strips and tiles (``None``
        #: before, and while it mounts: it is in the DOM then, its children are not).
        self.media_panel: MediaPanel | None = None

    class MediaPanelMounted(Message):
        """The media panel is mounted: the screen shows the current step's media."""

    def compose(self) -> ComposeResult:
        yield Static(id="d-title", markup=False)
        yield StepBody(id="d-body")
        with Vertical(id="d-media"):
            yield Static(id="d-media-list", markup=False)
        yield VerdictPanel(id="d-verdict")

    def request_media_panel(self) -> None:
        """Mount the media panel (tuimedia) if it is enabled and not mounted or coming
        yet; posts :class:`MediaPanelMounted` when it is there. The image renderer is
        imported in a thread first (~0.2 s), so the step list never waits for it.
        Until then :attr:`media_panel` is ``None``: a resize or another step shown
        meanwhile (a browser session's first events) leaves the panel alone, and the
        message shows the step on display once the panel is complete."""
        if not self._panel_requested and panel_enabled(self.app):
            self._panel_requested = True
            self._mount_media_panel()

    @work(group="media-panel", exit_on_error=False, description="mount the media panel")
    async def _mount_media_panel(self) -> None:
        try:
            await asyncio.to_thread(imaging.import_widgets)
        except Exception as exc:  # a broken install: say so, keep the text placeholders
            self.notify(f"Images cannot be shown: {type(exc).__name__}: {exc}", severity="error", markup=False)
            return
        mode = imaging.resolve(images_setting(self.app))
        panel = MediaPanel(mode, id="d-media-panel")
        await self.mount(panel, after="#d-media")  # returns once every descendant is mounted
        self.media_panel = panel
        self.post_message(self.MediaPanelMounted())

    @property
    def body(self) -> StepBody:
        return self.query_one(StepBody)

    def show_empty(self, message: str) -> None:
        """Show a message instead of a step (empty trace, everything filtered out)."""
        self.shown_index = None
        self.query_one("#d-title", Static).update(Text(message, style="italic"), layout=False)
        self.body.show(Text(""))
        self._set_media([])

    def _set_media(self, lines: list[str]) -> None:
        if panel_enabled(self.app):  # tuimedia: the media panel shows them instead
            lines = []
        media = self.query_one("#d-media")
        if lines:
            self.query_one("#d-media-list", Static).update(
                Text("Media  ", style="bold") + Text("  ".join(lines), style="cyan")
            )
        if media.display != bool(lines):
            media.display = bool(lines)

    def show_step(self, step: Step, row: StepRow, opts: DetailOptions) -> None:
        """Show ``step`` (its list row ``row`` gives coordinate and markers)."""
        self.shown_index = step.index
        self.query_one("#d-title", Static).update(_step_title(step, row, opts), layout=False)
        body = _StepBody(opts)
        body.reasoning(step)
        body.content(step)
        body.tool_calls(step)
        body.observation(step)
        body.error(step)
        body.hidden(step)
        self.complete = not body.cut
        self.body.show(body.group())
        self._set_media([media_label(m) for m in step.media])


def _step_title(step: Step, row: StepRow, opts: DetailOptions) -> Text:
    """``Step 3 · agent · kind  (#4)  ⚑★ ground-truth decisive step  usage``."""
    title = Text()
    title.append(f"Step {row.coord or '#' + str(step.index)}", style="bold")
    title.append(" · ")
    title.append(row.agent, style=agent_style(opts.agent_slot))
    title.append(f" · {row.kind}", style="italic")
    if row.coord != str(step.index):
        title.append(f"  (#{step.index})", style="dim")
    marks = row.markers(opts.show_labels)
    if marks:
        title.append("  ")
        for ch in marks:
            title.append(ch, style=MARKER_STYLES.get(ch))
    if opts.show_labels and row.gt:
        title.append(" ground-truth decisive step", style=MARKER_STYLES["★"])
    usage = step_usage(step)
    if not usage.empty:  # tokens, cost, latency where the format records them
        title.append("  " + usage.text(), style="dim")
    return title


class _StepBody:
    """The renderables of a step's body, section by section, folded to the display
    level of ``opts`` (:data:`LEVELS`); ``cut`` says what was folded."""

    def __init__(self, opts: DetailOptions) -> None:
        self.opts = opts
        self.max_lines, self.max_chars = LEVELS[min(opts.level, len(LEVELS) - 1)]
        self.parts: list[RenderableType] = []
        self.cut: list[str] = []
        self.hits: list[Text] = []  # search hits the folds hide (shown under the fold note)

    def reasoning(self, step: Step) -> None:
        reasoning = step_reasoning(step)
        if reasoning is None:
            return
        # thinking: folded tighter than the content
        folded = fold(clean(reasoning), max_lines=self.max_lines // 10, max_chars=self.max_chars // 10)
        self.parts.append(Text("Reasoning", style="bold dim"))
        self.parts.append(plain(folded.text, style=Style(dim=True, italic=True), query=self.opts.query))
        if not folded.complete:
            self.parts.append(Text(folded.note(), style=FOLD_STYLE))
            self.cut.append("reasoning " + folded.note())
        self.parts.append(Text(""))

    def content(self, step: Step) -> None:
        if step.content:
            folded = fold(step.content, max_lines=self.max_lines, max_chars=self.max_chars)
            blocks = content_blocks(folded.text, markdown=renders_markdown(step))
            self.parts.append(render_blocks(blocks, raw=self.opts.raw, query=self.opts.query))
            if not folded.complete:
                self.cut.append(folded.note())
                self._folded_hit(step.content, folded)
        elif not (step.tool_calls or step.observation or step.error):
            self.parts.append(Text("(no content)", style="dim italic"))

    def tool_calls(self, step: Step) -> None:
        if not step.tool_calls:
            return
        self.parts.append(Text(f"\nTool calls ({len(step.tool_calls)})", style="bold"))
        for call in step.tool_calls:
            head = Text("→ ", style="bold cyan")
            head.append(clean(call.name), style="bold")
            if call.id:
                head.append(f"  id {clean(call.id)}", style="dim")
            self.parts.append(head)
            for block in call_blocks(call.arguments):  # code arguments shown as code
                if block.text:
                    self.parts.append(render_block(self._capped(block), raw=self.opts.raw, query=self.opts.query))

    def _capped(self, block: Block) -> Block:
        """``block`` cut to the level's characters (noted in ``cut``)."""
        if len(block.text) <= self.max_chars:
            return block
        self.cut.append(f"tool arguments: {human_size(self.max_chars)} of {human_size(len(block.text))} shown")
        return type(block)("text", block.text[: self.max_chars])

    def observation(self, step: Step) -> None:
        if not step.observation:
            return
        folded = fold(step.observation, max_lines=self.max_lines, max_chars=self.max_chars)
        self.parts.append(Text("\nObservation", style="bold"))
        blocks = content_blocks(folded.text, markdown=False)  # tool output: its lines as written
        self.parts.append(render_blocks(blocks, raw=self.opts.raw, query=self.opts.query))
        if not folded.complete:
            self.parts.append(Text(folded.note(), style=FOLD_STYLE))
            self.cut.append("observation " + folded.note())
            self._folded_hit(step.observation, folded)

    def error(self, step: Step) -> None:
        if not step.error:
            return
        folded = fold(step.error, max_lines=self.max_lines, max_chars=self.max_chars)
        self.parts.append(Text("\nError", style="bold red"))
        self.parts.append(plain(folded.text, style=Style(color="#ff5f5f"), query=self.opts.query))
        if not folded.complete:
            self._folded_hit(step.error, folded)

    def _folded_hit(self, text: str, folded: Folded) -> None:
        """Where the search's first hit is when the fold hides it (a line of its own)."""
        hit = folded_hit(text, folded.shown_chars, self.opts.query)
        if hit is None:
            return
        more = f" (+{hit.more:,} more)" if hit.more else ""
        line = f"▸ /{clean(self.opts.query.strip())} further down, line {hit.line:,}{more}: {hit.excerpt}"
        self.hits.append(plain(line, style=FOLD_STYLE, query=self.opts.query))

    def hidden(self, step: Step) -> None:
        if not (self.opts.show_labels and step.hidden):
            return
        hidden = Text("\nHidden fields (labels)\n", style="bold #ffaf5f")
        for key, value in step.hidden.items():
            hidden.append(f"{clean(str(key))}: ", style="bold")
            hidden.append(clean(str(value))[:2000] + "\n")
        self.parts.append(hidden)

    def group(self) -> Group:
        """The body: the first fold note on top (with the keys) and where the search's
        hits are that the folds hide, then the sections."""
        if not self.cut:
            return Group(*self.parts)
        note = Text(self.cut[0] + "   o: show more · O: fold · e: $EDITOR", style=FOLD_STYLE)
        return Group(note, *self.hits, *self.parts)
