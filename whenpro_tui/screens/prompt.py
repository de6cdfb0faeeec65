"""A one-line prompt docked at the bottom of the screen (``:`` go to step, ``/`` search).
Dismisses with the typed text, or ``None`` on escape."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptScreen(ModalScreen[str | None]):
    """Ask for one line of text."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    PromptScreen { align: left bottom; background: $background 20%; }
    PromptScreen > Horizontal {
        dock: bottom; height: 3; width: 100%; background: $panel; padding: 0 1;
    }
    PromptScreen Label { padding: 1 1 0 0; text-style: bold; }
    PromptScreen Input { width: 1fr; }
    """

    def __init__(self, label: str, *, placeholder: str = "", value: str = "", input_id: str = "prompt-input") -> None:
        super().__init__()
        self.label = label
        self.placeholder = placeholder
        self.value = value
        self.input_id = input_id

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label(self.label, markup=False)
            yield Input(value=self.value, placeholder=self.placeholder, id=self.input_id)

    def on_mount(self) -> None:
        box = self.query_one(Input)
        box.cursor_blink = getattr(self.app, "cursor_blink", True)
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
