"""The step detail pane: the selected step's content (Markdown, code, JSON or text, as
fits), tool calls with pretty arguments, observation, error, media, and (with labels
shown) the hidden label fields.

The pane is composed once; showing another step updates the same widgets (no re-mount),
and hides the sections a step does not have. Long fields are folded (:func:`fold`) at the
current expansion level; the ``o`` key of the screen raises the level chunk by chunk.

Extension points for later phases: ``#d-media`` is a container where image widgets and a
keyframe strip can be mounted (phase 2), and ``#d-verdict`` holds the attribution verdict
(phase 3).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from whenpro_core.model import Step
from whenpro_core.stepview import StepRow, content_blocks, fold, media_label, pretty_arguments
from whenpro_core.textsafe import clean, human_size
from whenpro_tui.widgets.blocks import plain, render_block, render_blocks
from whenpro_tui.widgets.palette import MARKER_STYLES, agent_style

#: (max lines, max characters) shown per field at each expansion level. The last level
#: is a hard cap: beyond it the step is read in $EDITOR (``e``).
LEVELS = ((60, 6_000), (600, 32_000), (6_000, 128_000), (60_000, 256_000))


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


class StepDetail(VerticalScroll):
    """Detail pane (see module docstring)."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    StepDetail {
        padding: 0 1;
        & > Static { width: 1fr; height: auto; }
        & > #d-title { text-style: bold; margin-bottom: 1; }
        & > .section { margin-top: 1; }
        & > #d-fold { color: $text-muted; text-style: italic; }
        & > #d-media { height: auto; margin-top: 1; }
        & > #d-verdict { display: none; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.can_focus = True
        self.complete = True  # False when some field was cut at this level

    def compose(self) -> ComposeResult:
        yield Static(id="d-title", markup=False)
        yield Static(id="d-content", markup=False)
        yield Static(id="d-fold", markup=False)
        yield Static(id="d-tools", classes="section", markup=False)
        yield Static(id="d-observation", classes="section", markup=False)
        yield Static(id="d-error", classes="section", markup=False)
        with Vertical(id="d-media"):
            yield Static(id="d-media-list", markup=False)
        yield Static(id="d-hidden", classes="section", markup=False)
        yield Static(id="d-verdict", classes="section", markup=False)

    def _set(self, widget_id: str, renderable: RenderableType | None) -> None:
        widget = self.query_one(f"#{widget_id}")
        if renderable is None:
            widget.display = False
            return
        widget.display = True
        if isinstance(widget, Static):
            widget.update(renderable)

    def show_empty(self, message: str) -> None:
        """Show a message instead of a step (empty trace, everything filtered out)."""
        self._set("d-title", Text(message, style="italic"))
        for wid in ("d-content", "d-fold", "d-tools", "d-observation", "d-error", "d-media",
                    "d-hidden"):
            self._set(wid, None)

    def show_step(self, step: Step, row: StepRow, opts: DetailOptions) -> None:
        """Show ``step`` (its list row ``row`` gives coordinate and markers)."""
        max_lines, max_chars = LEVELS[min(opts.level, len(LEVELS) - 1)]
        cut: list[str] = []

        title = Text()
        title.append(f"Step {row.coord or '#' + str(step.index)}", style="bold")
        title.append(" · ")
        title.append(row.agent, style=agent_style(opts.agent_slot))
        title.append(f" · {row.kind}", style="italic")
        title.append(f"  (#{step.index})", style="dim")
        marks = row.markers(opts.show_labels)
        if marks:
            title.append("  ")
            for ch in marks:
                title.append(ch, style=MARKER_STYLES.get(ch))
        if opts.show_labels and row.gt:
            title.append(" ground-truth decisive step", style=MARKER_STYLES["★"])
        self._set("d-title", title)

        # content
        if step.content:
            folded = fold(step.content, max_lines=max_lines, max_chars=max_chars)
            self._set("d-content", render_blocks(content_blocks(folded.text), raw=opts.raw,
                                                 query=opts.query))
            if not folded.complete:
                cut.append(folded.note())
        else:
            self._set("d-content", Text("(no content)", style="dim italic")
                      if not (step.tool_calls or step.observation or step.error) else None)

        # tool calls
        if step.tool_calls:
            parts: list[RenderableType] = [Text(f"Tool calls ({len(step.tool_calls)})", style="bold")]
            for call in step.tool_calls:
                head = Text("→ ", style="bold cyan")
                head.append(clean(call.name), style="bold")
                if call.id:
                    head.append(f"  id {clean(call.id)}", style="dim")
                parts.append(head)
                block = pretty_arguments(call.arguments)
                if block.text:
                    if len(block.text) > max_chars:
                        cut.append(f"… tool arguments: {human_size(max_chars)} of "
                                   f"{human_size(len(block.text))} shown")
                        block = type(block)("text", block.text[:max_chars])
                    parts.append(render_block(block, raw=opts.raw, query=opts.query))
            self._set("d-tools", Group(*parts))
        else:
            self._set("d-tools", None)

        # observation
        if step.observation:
            folded = fold(step.observation, max_lines=max_lines, max_chars=max_chars)
            body = render_blocks(content_blocks(folded.text), raw=opts.raw, query=opts.query)
            parts = [Text("Observation", style="bold"), body]
            if not folded.complete:
                parts.append(Text(folded.note(), style="dim italic"))
                cut.append("observation " + folded.note())
            self._set("d-observation", Group(*parts))
        else:
            self._set("d-observation", None)

        # error
        if step.error:
            folded = fold(step.error, max_lines=max_lines, max_chars=max_chars)
            self._set("d-error", Group(Text("Error", style="bold red"),
                                       plain(folded.text, style=Style(color="#ff5f5f"))))
        else:
            self._set("d-error", None)

        # media (phase 1: one placeholder line per item)
        media = self.query_one("#d-media")
        media.display = bool(step.media)
        if step.media:
            lines = Text("\n".join(media_label(m) for m in step.media), style="cyan")
            self.query_one("#d-media-list", Static).update(Group(Text("Media", style="bold"), lines))

        # hidden label fields
        if opts.show_labels and step.hidden:
            text = Text("Hidden fields (labels)\n", style="bold #ffaf5f")
            for key, value in step.hidden.items():
                text.append(f"{clean(str(key))}: ", style="bold")
                text.append(clean(str(value))[:2000] + "\n")
            self._set("d-hidden", text)
        else:
            self._set("d-hidden", None)

        self.complete = not cut
        note = cut[0] if cut else ""
        if cut:
            note += "   o: show more · O: fold · e: open in $EDITOR"
        self._set("d-fold", Text(note) if note else None)
        self.scroll_home(animate=False)
