"""Choose an attribution protocol (and its model) to attribute a counterfactual (or run B
of a diff where nothing was injected) from the diff screen. Dismisses with
``(protocol, model)`` or ``None``. (The attribution screen of the trace screen has its
own, richer picker.)"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Select, Static

from whenpro_core.attribution.protocols import PROTOCOLS


class AttributeChoice(ModalScreen[tuple[str, str] | None]):
    """Protocol and model (the model is needed by every protocol but ``heuristic``)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+r", "go", "Attribute", priority=True)]
    DEFAULT_CSS = """
    AttributeChoice { align: center middle; }
    AttributeChoice > Vertical {
        width: 70; max-width: 95%; height: auto; background: $panel; border: round $accent; padding: 1 2;
    }
    AttributeChoice Horizontal { height: auto; margin-top: 1; }
    AttributeChoice Select, AttributeChoice Input { margin-top: 1; }
    AttributeChoice Button { margin-right: 2; }
    """

    def __init__(
        self,
        protocol: str = "heuristic",
        model: str = "",
        *,
        title: str = "Attribute the counterfactual",
        question: str = "Does the protocol find the injected step?",
    ) -> None:
        super().__init__()
        self.protocol = protocol
        self.model = model
        self.title_text = title
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"))
            yield Static(Text(f"{self.question} heuristic runs offline; the others ask a model.", style="dim"))
            yield Select(
                [(Text(p), p) for p in PROTOCOLS],
                value=self.protocol,
                allow_blank=False,
                compact=True,
                id="ac-protocol",
            )
            yield Input(self.model, placeholder="provider:model (for LLM protocols)", compact=True, id="ac-model")
            with Horizontal():
                yield Button("Attribute ^r", id="ac-go", variant="primary", compact=True)
                yield Button("Cancel esc", id="ac-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#ac-model", Input).cursor_blink = getattr(self.app, "cursor_blink", True)
        self.query_one("#ac-protocol").focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ac-go":
            self.action_go()
        else:
            self.action_cancel()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_go()

    def action_go(self) -> None:
        protocol = str(self.query_one("#ac-protocol", Select).value)
        model = self.query_one("#ac-model", Input).value.strip()
        if protocol != "heuristic" and not model:
            self.notify(f"{protocol} needs a model (provider:model).", severity="warning")
            return
        self.dismiss((protocol, model))

    def action_cancel(self) -> None:
        self.dismiss(None)
