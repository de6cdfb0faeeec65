"""The help screen (``?``): every key of the screen it was opened from, with what it
does, built from the live bindings so it can never miss one."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from whenpro_tui.commands import KeyAction

MARKERS_HELP = (
    ("✗", "the step recorded a tool/execution error"),
    ("▣", "the step carries images or frames"),
    ("▶", "the step carries a video"),
    ("◆", "a verdict names this step (one colour per verdict; A cycles them)"),
    ("▇", "shaded row: a running attribution is asking about this step or range"),
    ("⚑", "the error was injected at this step (labels shown only)"),
    ("★", "the ground-truth decisive step (labels shown only)"),
)


class HelpScreen(ModalScreen[None]):
    """Keys and markers (escape, q or ? closes)."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%;
        background: $panel; border: round $accent; padding: 0 1;
    }
    """

    def __init__(self, title: str, actions: list[KeyAction], *, markers: bool = True) -> None:
        super().__init__()
        self.title_text = title
        self.actions = actions
        self.markers = markers

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=True, header_style="bold", expand=True,
                      title=Text(self.title_text, style="bold"), title_justify="left")
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("action")
        for item in self.actions:
            table.add_row(Text(item.keys), Text(item.description))
        with VerticalScroll():
            yield Static(table, id="help-keys")
            if self.markers:
                marks = Table(box=None, show_header=True, header_style="bold",
                              title=Text("Step markers", style="bold"), title_justify="left")
                marks.add_column("marker", no_wrap=True)
                marks.add_column("meaning")
                for ch, meaning in MARKERS_HELP:
                    marks.add_row(Text(ch), Text(meaning))
                yield Static(marks, id="help-markers")
            yield Static(Text("ctrl+p opens the command palette: every action above is "
                              "also a command there.", style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)
