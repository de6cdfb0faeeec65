"""The help screen (``?``): every key of the screen it was opened from, with what it
does, built from the live bindings so it can never miss one; then the keys of the dialogs
that screen opens (``dialogs``: title and dialog class, read from the class's bindings),
so a key that only works inside a dialog (``f2`` in the attribute dialog) is listed too."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from whenpro_tui.commands import KeyAction, dialog_bindings

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

    def __init__(
        self,
        title: str,
        actions: list[KeyAction],
        *,
        markers: bool = True,
        dialogs: tuple[tuple[str, type[Screen]], ...] = (),
    ) -> None:
        super().__init__()
        self.title_text = title
        self.actions = actions
        self.markers = markers
        self.dialogs = dialogs
        #: (title, keys) per dialog, filled by compose (key names need the app).
        self.dialog_actions: list[tuple[str, list[KeyAction]]] = []

    #: From this terminal width on, a long key list is shown in two columns.
    TWO_COLUMNS_WIDTH = 110

    def _key_table(self, actions: list[KeyAction], title: str = "") -> Table:
        table = Table(
            box=None,
            show_header=True,
            header_style="bold",
            expand=True,
            title=Text(title, style="bold") if title else None,
            title_justify="left",
        )
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("action")
        for item in actions:
            table.add_row(Text(item.keys), Text(item.description))
        return table

    def compose(self) -> ComposeResult:
        if len(self.actions) > 16 and self.app.size.width >= self.TWO_COLUMNS_WIDTH:
            half = (len(self.actions) + 1) // 2
            table: Table = Table.grid(expand=True, padding=(0, 2))
            table.title = Text(self.title_text, style="bold")
            table.title_justify = "left"
            table.add_column(ratio=1)
            table.add_column(ratio=1)
            table.add_row(self._key_table(self.actions[:half]), self._key_table(self.actions[half:]))
        else:
            table = self._key_table(self.actions, self.title_text)
        self.dialog_actions = [(name, dialog_bindings(self.app, cls, name)) for name, cls in self.dialogs]
        with VerticalScroll():
            yield Static(table, id="help-keys")
            if self.markers:
                marks = Table(
                    box=None,
                    show_header=True,
                    header_style="bold",
                    title=Text("Step markers", style="bold"),
                    title_justify="left",
                )
                marks.add_column("marker", no_wrap=True)
                marks.add_column("meaning")
                for ch, meaning in MARKERS_HELP:
                    marks.add_row(Text(ch), Text(meaning))
                yield Static(marks, id="help-markers")
            for n, (name, actions) in enumerate(self.dialog_actions):
                yield Static(self._key_table(actions, name), id=f"help-dialog-{n}")
            palette = "ctrl+p opens the command palette: every action of this screen is also a command there"
            if self.dialog_actions:
                palette += " (a dialog's keys: ctrl+p inside the dialog)"
            yield Static(Text(palette + ".", style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)
