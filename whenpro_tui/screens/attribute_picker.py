"""The attribution picker (``a`` on the trace screen): protocol, model (the configured
default, models from config, or one typed as ``provider:model``), and whether the judge
sees the gold answer. Enter starts; ``a`` then enter runs the offline heuristic (the protocol always starts
there; the model and gold setting of the last run are kept). ``f2`` shows the first request(s) the
choice would send (``preview``, the ``--dry-run`` text; :mod:`.request_preview`), without sending;
``f1`` lists the dialog's keys (so does the trace screen's help, and ctrl+p inside the dialog).

The choice is checked by ``validate`` (:func:`whenpro_core.attribution.request.make_request`)
before the picker closes: an unusable model or a missing key is a one-line notification
and the picker stays open to fix it. Dismisses with the
:class:`~whenpro_core.attribution.request.AttributionRequest`, or ``None``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, OptionList, Static
from textual.widgets.option_list import Option

from whenpro_core.attribution.interactive import ModelChoice
from whenpro_core.attribution.request import AttributionRequest
from whenpro_core.errors import WhenproError
from whenpro_core.safety.textsafe import clean
from whenpro_tui.screens.request_preview import RequestPreview

Validate = Callable[[str, str | None, bool], AttributionRequest]
#: (protocol, model or None, with_gold) -> the dry-run preview text; raises WhenproError.
Preview = Callable[[str, str | None, bool], str]


class AttributePicker(ModalScreen[AttributionRequest | None]):
    """Choose protocol, model and gold setting (see module docstring)."""

    BINDINGS = [
        Binding("enter", "start", "Start", priority=True),
        Binding("escape", "cancel", "Cancel"),
        Binding("f2", "preview", "Preview requests", priority=True),
        Binding("f1", "help", "Help", priority=True),
    ]
    DEFAULT_CSS = """
    AttributePicker { align: center middle; }
    AttributePicker > Vertical {
        width: 72; max-width: 100%; height: auto; max-height: 100%;
        background: $panel; border: round $accent; padding: 0 1;
    }
    AttributePicker .ap-label { text-style: bold; color: $accent; }
    AttributePicker OptionList, AttributePicker OptionList:focus {
        height: auto; max-height: 6; border: none; padding: 0; background: $panel;
    }
    AttributePicker OptionList:focus { background: $boost; }
    AttributePicker #ap-model-input { border: none; height: 1; padding: 0 1; background: $surface; }
    AttributePicker #ap-model-input:focus { background: $primary 30%; }
    AttributePicker Checkbox, AttributePicker Checkbox:focus {
        border: none; height: 1; padding: 0; background: $panel;
    }
    AttributePicker Checkbox:focus { background: $boost; }
    AttributePicker #ap-note { color: $text-muted; height: auto; }
    AttributePicker #ap-help { color: $text-muted; }
    AttributePicker .-off { color: $text-disabled; }
    """

    def __init__(
        self,
        *,
        protocols: list[tuple[str, str]],
        models: list[ModelChoice],
        has_gold: bool,
        validate: Validate,
        initial: AttributionRequest | None = None,
        settings_error: str | None = None,
        preview: Preview | None = None,
        offline: frozenset[str] = frozenset({"heuristic"}),
    ) -> None:
        super().__init__()
        self.offline = offline  # protocols that run on this trace without a model
        self.preview = preview
        self.protocols = protocols
        self.models = models
        self.has_gold = has_gold
        self.validate = validate
        self.initial = initial
        self.settings_error = settings_error

    def compose(self) -> ComposeResult:
        names = [p for p, _ in self.protocols]
        model_names = [m.name for m in self.models]
        typed = ""
        model_at = 0
        if self.initial and self.initial.model:
            if self.initial.model in model_names:
                model_at = model_names.index(self.initial.model)
            else:
                typed = self.initial.model
        width = max(len(p) for p in names) + 2
        with Vertical():
            yield Static(Text("Attribute the decisive error: who, when, what", style="bold"))
            yield Static("Protocol", classes="ap-label")
            protocol_list = OptionList(
                *(
                    Option(Text.assemble((name.ljust(width), "bold"), (note, "dim")), id=name)
                    for name, note in self.protocols
                ),
                id="ap-protocol",
            )
            protocol_list.highlighted = 0  # always the offline default: ``a`` enter is cheap
            yield protocol_list
            yield Static("Model", classes="ap-label", id="ap-model-label")
            if self.models:
                width = max(len(m.name) for m in self.models) + 2
                model_list = OptionList(
                    *(
                        Option(Text.assemble((clean(m.name).ljust(width), "bold"), (m.note, "dim")))
                        for m in self.models
                    ),
                    id="ap-models",
                )
                model_list.highlighted = model_at
                yield model_list
            else:
                yield Static(
                    Text("none configured (model, OPENAI_API_KEY, ANTHROPIC_API_KEY)", style="dim"), id="ap-models-none"
                )
            yield Input(value=typed, placeholder="or type provider:model (e.g. openai:gpt-4.1)", id="ap-model-input")
            gold_label = (
                "Show the judge the gold answer"
                if self.has_gold
                else "Show the judge the gold answer (this trace has none)"
            )
            yield Checkbox(
                gold_label,
                value=self.has_gold and (self.initial.with_gold if self.initial else True),
                disabled=not self.has_gold,
                id="ap-gold",
            )
            yield Static(id="ap-note")
            yield Static(
                Text(
                    "enter start · f2 preview requests · ↑↓ choose · tab next field · space toggle"
                    " · f1 help · esc cancel"
                ),
                id="ap-help",
            )

    def on_mount(self) -> None:
        self.query_one("#ap-model-input", Input).cursor_blink = getattr(self.app, "cursor_blink", True)
        self.query_one("#ap-protocol", OptionList).focus()
        self._update_model_state()

    @property
    def protocol(self) -> str:
        """The highlighted protocol."""
        plist = self.query_one("#ap-protocol", OptionList)
        index = plist.highlighted or 0
        return self.protocols[index][0]

    @property
    def model(self) -> str | None:
        """The typed model, else the highlighted one, else ``None``."""
        typed = self.query_one("#ap-model-input", Input).value.strip()
        if typed:
            return typed
        lists = self.query("#ap-models")
        if lists:
            index = lists.first(OptionList).highlighted
            if index is not None:
                return self.models[index].name
        return None

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_list.id == "ap-protocol":
            self._update_model_state()

    def _update_model_state(self) -> None:
        offline = self.protocol in self.offline
        for widget in self.query("#ap-models, #ap-model-input"):
            widget.disabled = offline
        self.query_one("#ap-model-label").set_class(offline, "-off")
        note = ""
        if self.protocol == "heuristic":
            note = "heuristic needs no model: it reads the trace's own signals, offline."
        elif offline:
            note = "counterfactual needs no model here: the built-in system replays each fix, offline."
        elif self.settings_error:
            note = "Settings could not be loaded: " + self.settings_error
        self.query_one("#ap-note", Static).update(Text(clean(note)))

    def action_start(self) -> None:
        gold = self.query_one("#ap-gold", Checkbox).value
        try:
            request = self.validate(self.protocol, None if self.protocol in self.offline else self.model, gold)
        except WhenproError as exc:
            self.app.notify(clean(exc.one_line()), title="Cannot attribute", severity="error", timeout=10)
            return
        self.dismiss(request)

    async def action_preview(self) -> None:
        """Build the preview off the event loop (it renders the trace), then show it."""
        if self.preview is None:
            return

        protocol, model = self.protocol, self.model
        gold = self.query_one("#ap-gold", Checkbox).value
        try:
            text = await asyncio.to_thread(self.preview, protocol, model, gold)
        except WhenproError as exc:
            self.app.notify(clean(exc.one_line()), title="Cannot preview", severity="error", timeout=10)
            return
        self.app.push_screen(RequestPreview(text, f"Requests {protocol} would send (dry run)"))

    def action_help(self) -> None:
        """The dialog's keys (``f1``: ``?`` would be typed into the model field)."""
        from whenpro_tui.commands import collect_bindings
        from whenpro_tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen("Attribute dialog keys", collect_bindings(self), markers=False))

    def action_cancel(self) -> None:
        self.dismiss(None)
