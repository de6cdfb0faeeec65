"""A one-line prompt docked at the bottom of the screen (``:`` go to step, ``/`` search).
Dismisses with the typed text, or ``None`` on escape."""

from __future__ import annotations

from textual import events
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
        if box.value != self.value:  # keys typed ahead after compose, before this mount (":151" fast)
            box.value = self.value
            box.cursor_position = len(self.value)
        box.focus()

    def on_key(self, event: events.Key) -> None:
        """A printable key that reaches the screen before its input has focus goes into the input."""
        box = self.query_one(Input)
        if not box.has_focus and event.is_printable and event.character:
            event.stop()
            box.insert_text_at_cursor(event.character)
            box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
