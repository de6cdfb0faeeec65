"""The request preview (``f2`` in the attribute dialog): the first request(s) the chosen
protocol would send, as ``whenpro attribute --dry-run`` prints them. Inert text (the
trace's content is never read as markup), scrollable; ``esc`` or ``q`` closes it and
returns to the dialog. Nothing is sent.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from whenpro_core.safety.textsafe import clean


class RequestPreview(ModalScreen[None]):
    """Shows a dry-run preview text (see module docstring)."""

    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
    ]
    DEFAULT_CSS = """
    RequestPreview { align: center middle; }
    RequestPreview > Vertical {
        width: 100%; height: 100%; background: $panel; border: round $accent; padding: 0 1;
    }
    RequestPreview #rp-title { text-style: bold; color: $accent; }
    RequestPreview #rp-help { color: $text-muted; }
    """

    def __init__(self, text: str, title: str) -> None:
        super().__init__()
        self.text = text
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(clean(self.title_text)), id="rp-title")
            with VerticalScroll(id="rp-scroll"):
                yield Static(Text(clean(self.text)), id="rp-body")
            yield Static(Text("nothing was sent · ↑↓ pgup pgdn scroll · esc back"), id="rp-help")

    def on_mount(self) -> None:
        self.query_one("#rp-scroll", VerticalScroll).focus()

    def action_close(self) -> None:
        self.dismiss(None)
