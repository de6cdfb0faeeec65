"""Turn :class:`whenpro_core.views.stepview.Block` s into Rich renderables.

Text from a trace is never parsed as console markup: plain blocks become ``Text``
objects, Markdown goes through Rich's Markdown (no hyperlinks: a link shows its URL), and
code/JSON through ``Syntax``. Above a size limit each falls back to plain ``Text`` so a
long step costs no more than its length.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.style import Style
from rich.text import Text

from whenpro_core.views.stepview import Block

#: Above these sizes (characters) a block is shown as plain text.
MARKDOWN_LIMIT = 40_000
SYNTAX_LIMIT = 80_000
SYNTAX_THEME = "ansi_dark"
HIGHLIGHT = Style(bgcolor="#806000", color="#ffffff", bold=True)


def plain(text: str, *, style: str | Style = "", query: str = "") -> Text:
    """``text`` as a Rich ``Text`` (never markup), with ``query`` highlighted
    case-insensitively."""
    out = Text(text, style=style)
    if query.strip():
        out.highlight_words([query.strip()], HIGHLIGHT, case_sensitive=False)
    return out


def render_block(block: Block, *, raw: bool = False, query: str = "") -> RenderableType:
    """One block as a renderable; ``raw`` forces plain text (the ``r`` key)."""
    if block.kind == "label":
        return plain(block.text, style="bold dim", query=query)
    if raw or block.kind == "text" or not block.text:
        return plain(block.text, query=query)
    if block.kind == "markdown":
        if len(block.text) > MARKDOWN_LIMIT or query.strip():
            return plain(block.text, query=query)
        return trace_markdown(block.text)
    if len(block.text) > SYNTAX_LIMIT or query.strip():
        # plain text shows search hits highlighted; Syntax cannot
        return plain(block.text, query=query)
    from rich.syntax import Syntax  # lazy: pygments

    lexer = "json" if block.kind == "json" else (block.language or "text")
    return Syntax(block.text, lexer, theme=SYNTAX_THEME, word_wrap=True, background_color="default")


def render_blocks(blocks: list[Block], *, raw: bool = False, query: str = "") -> RenderableType:
    """Several blocks stacked (an empty ``Text`` when there are none)."""
    if not blocks:
        return Text("")
    if len(blocks) == 1:
        return render_block(blocks[0], raw=raw, query=query)
    return Group(*(render_block(b, raw=raw, query=query) for b in blocks))


def trace_markdown(text: str) -> RenderableType:
    """Rich Markdown of agent text with HTML off: tags agents write (``<answer>``,
    ``<think>``, ``<tool_call>``) are text to show, not HTML for Rich to drop. Every line
    break is kept (a soft break becomes a hard one): agents write lines, not paragraphs to
    reflow, and a prompt joined into one paragraph is hard to read (issue 32)."""
    from markdown_it import MarkdownIt  # lazy: markdown-it costs ~50 ms at startup
    from rich.markdown import Markdown

    rendered = Markdown("", hyperlinks=False, code_theme=SYNTAX_THEME)
    parser = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")
    rendered.markup = text
    tokens = parser.parse(text)
    for token in tokens:
        for child in token.children or ():
            if child.type == "softbreak":
                child.type = "hardbreak"
    rendered.parsed = tokens
    return rendered
