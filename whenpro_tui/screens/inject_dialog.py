"""The injection dialog (``i`` on a step): pick a failure mode (each with its meaning;
modes the chosen generator cannot make at this step are disabled with the reason), a
generator (offline mutator, your own text, an llm), an executor (builtin, ``cmd:``,
simulate, plugins), look at the new step and edit it, then Run.

The preview is made by the generator in a worker (offline: a thread; llm: an async worker
after the SDK was imported in a thread) and is editable; Run replays exactly what the
preview shows (:class:`~whenpro_core.injection.generate.PreparedGenerator`). Every rule is
a ``whenpro_core.injection`` call (:mod:`~whenpro_core.injection.choices`).
Dismisses with an :class:`InjectionPlan`, or ``None`` when cancelled.
"""

from __future__ import annotations

import asyncio

from rich.console import Group
from rich.padding import Padding
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Select, Static, TextArea
from textual.widgets.option_list import Option

from whenpro_core.config import load_settings
from whenpro_core.errors import WhenproError
from whenpro_core.injection.choices import (
    GENERATORS,
    ExecutorChoice,
    ModeChoice,
    default_executor,
    executor_choices,
    mode_choices,
)
from whenpro_core.injection.generate import (
    GeneratedStep,
    InjectionRequest,
    OfflineGenerator,
    TextGenerator,
    edit_generated,
    parse_tool_calls,
    tool_calls_text,
)
from whenpro_core.injection.llm_generate import LLMGenerator
from whenpro_core.injection.mutators import applicable_modes
from whenpro_core.injection.registry import get_executor
from whenpro_core.llm.generation import preload_sdk
from whenpro_core.safety.textsafe import clean, one_line
from whenpro_core.trace.model import Trace
from whenpro_tui.messages import InjectionPlan, ModesChecked, PreviewFailed, PreviewReady
from whenpro_tui.widgets.footer import FittedFooter


def configured_model() -> str:
    """The configured default model when it is an LLM (``""`` for ``heuristic`` or a
    broken config: the dialog then asks for one)."""

    try:
        model = load_settings().model or ""
    except WhenproError:
        return ""
    return "" if model in ("heuristic", "reference", "none") else model


class InjectDialog(ModalScreen[InjectionPlan | None]):
    """See the module docstring."""

    BINDINGS = [
        Binding("ctrl+r", "run", "Run", priority=True),
        Binding("ctrl+g", "generate", "New preview", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]

    #: Below this width the mode list sits above the settings and the preview.
    NARROW_WIDTH = 110

    def __init__(self, trace: Trace, index: int) -> None:
        super().__init__()
        self.trace = trace
        self.index = index
        self.original = trace.steps[index]
        self.model = configured_model()
        self.executors: list[ExecutorChoice] = [e for e in executor_choices(trace) if e.available]
        self.generator = "offline"
        self.mode: str | None = None
        self.applicable: list[str] | None = None  # offline-fitting modes, once checked
        self.generated: GeneratedStep | None = None
        self.generated_for: tuple[str, str] | None = None  # (mode, generator kind)
        self.seed = 0
        self._token = 0
        self._filling = False  # set while the preview is written (not a user edit)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        step = self.original
        with Vertical(id="inj-box"):
            title = Text("Inject an error at step ", style="bold")
            title.append(clean(step.coord or f"#{step.index}"), style="bold")
            title.append(f" · {clean(step.agent)} · {clean(step.kind)}  ", style="bold")
            title.append(one_line(step.content or "", 200), style="dim")
            yield Static(title, id="inj-title", markup=False)
            with Horizontal(id="inj-cols"):
                with Vertical(id="inj-left"):
                    yield Label("Failure mode", classes="inj-head")
                    yield OptionList(id="inj-modes")
                with VerticalScroll(id="inj-right"):
                    with Horizontal(classes="inj-row"):
                        yield Label("Generator ", classes="inj-key")
                        yield Select(
                            [(Text(label), kind) for kind, label in GENERATORS],
                            value="offline",
                            allow_blank=False,
                            compact=True,
                            id="inj-gen",
                        )
                        yield Input(self.model, placeholder="provider:model", compact=True, id="inj-gen-model")
                    with Horizontal(classes="inj-row"):
                        yield Label("Executor  ", classes="inj-key")
                        yield Select(
                            [(Text(clean(e.label)), e.kind) for e in self.executors],
                            value=default_executor(self.trace),
                            allow_blank=False,
                            compact=True,
                            id="inj-exec",
                        )
                        yield Input(compact=True, id="inj-exec-arg")
                    yield Static(id="inj-exec-note", markup=False)
                    yield Static(id="inj-flaw", markup=False)
                    yield Label("New step content (editable)", classes="inj-head")
                    yield TextArea("", soft_wrap=True, compact=True, id="inj-content")
                    yield Label("Tool calls, JSON (editable)", classes="inj-head", id="inj-calls-label")
                    yield TextArea("", soft_wrap=True, compact=True, id="inj-calls")
            with Horizontal(id="inj-buttons"):
                yield Button("Run ^r", id="inj-run", variant="primary", compact=True)
                yield Button("New preview ^g", id="inj-generate", compact=True)
                yield Button("Cancel esc", id="inj-cancel", compact=True)
        yield FittedFooter()

    def on_mount(self) -> None:
        self.set_class(self.app.size.width < self.NARROW_WIDTH, "narrow")
        self.query_one("#inj-right").can_focus = False  # tab goes from the modes to the generator
        for area in self.query(TextArea):
            area.cursor_blink = getattr(self.app, "cursor_blink", True)
        for box in self.query(Input):
            box.cursor_blink = getattr(self.app, "cursor_blink", True)
        self._show_executor_arg()
        self.query_one("#inj-gen-model").display = False
        modes = self.query_one("#inj-modes", OptionList)
        modes.set_options([Option(Text("Checking which failure modes fit this step…", style="italic"), disabled=True)])
        modes.focus()
        self.check_modes()

    @work(thread=True, exclusive=True, group="inject-modes", exit_on_error=False)
    def check_modes(self) -> None:
        """Which offline mutators fit the step (scans earlier steps: off the UI thread)."""
        try:
            applicable = applicable_modes(self.trace, self.index)
        except Exception:  # noqa: BLE001 - a mutator bug leaves text and llm available
            applicable = []
        self.post_message(ModesChecked(applicable))

    def on_modes_checked(self, message: ModesChecked) -> None:
        message.stop()
        self.applicable = message.applicable
        self._fill_modes()
        self._regenerate()

    def on_resize(self, event) -> None:
        narrow = self.app.size.width < self.NARROW_WIDTH
        if narrow != self.has_class("narrow"):
            self.set_class(narrow, "narrow")
            if self.applicable is not None:
                self._fill_modes()

    # ------------------------------------------------------------------ modes

    def _fill_modes(self) -> None:
        """(Re)build the mode list for the current generator, keeping the chosen mode
        when it is still available."""
        choices = mode_choices(self.trace, self.index, self.generator, applicable=self.applicable)
        options: list[Option | None] = []
        family = None
        for c in choices:
            if family is not None and c.family != family and not self.has_class("narrow"):
                options.append(None)
            family = c.family
            options.append(Option(self._mode_prompt(c), id=c.code, disabled=not c.available))
        modes = self.query_one("#inj-modes", OptionList)
        modes.set_options(options)
        available = [c.code for c in choices if c.available]
        if self.mode not in available:
            self.mode = available[0] if available else None
        if self.mode is not None:
            modes.highlighted = modes.get_option_index(self.mode)

    def _mode_prompt(self, c: ModeChoice) -> Text | Group:
        """Code, name and meaning (and why it is unavailable): three lines, or one line
        cut to the width on a narrow terminal."""
        strong = "bold" if c.available else ""
        if self.has_class("narrow"):
            prompt = Text(no_wrap=True, overflow="ellipsis")
            prompt.append(f"{c.code:<5}{c.name}", style=strong)
            if c.reason:
                prompt.append(f"  ✗ {c.reason}", style="italic #ff8787")
            else:
                prompt.append(f" · {c.meaning}", style="dim")
            return prompt
        head = Text(f"{c.code:<5}{c.name}", style=strong)
        body = Text(c.meaning, style="dim")
        if c.reason:
            body.append(f"\n✗ {c.reason}", style="italic #ff8787")
        return Group(head, Padding(body, (0, 0, 0, 5)))

    @on(OptionList.OptionHighlighted, "#inj-modes")
    def _mode_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        code = event.option.id
        if code == self.mode or code is None:
            return
        self.mode = code
        self._regenerate()

    @on(OptionList.OptionSelected, "#inj-modes")
    def _mode_selected(self, event: OptionList.OptionSelected) -> None:
        self.query_one("#inj-content", TextArea).focus()

    # ------------------------------------------------------------------ generator

    @on(Select.Changed, "#inj-gen")
    def _generator_changed(self, event: Select.Changed) -> None:
        kind = str(event.value)
        if kind == self.generator:
            return
        self.generator = kind
        self.query_one("#inj-gen-model").display = kind == "llm"
        if self.applicable is not None:
            self._fill_modes()
            self._regenerate()

    def _regenerate(self) -> None:
        """Make the preview for the current mode and generator: offline at once (a
        thread), ``text`` starts from the recorded step, ``llm`` waits for ^g (each call
        costs)."""
        self.query_one("#inj-gen-model").display = self.generator == "llm"
        if self.mode is None:
            self._set_flaw(
                Text("No mode fits this step with this generator: choose another generator.", style="italic #ff8787")
            )
            return
        if self.generator == "offline":
            self.seed = 0
            self._start_preview()
        elif self.generator == "text":
            if self.generated_for is None or self.generated_for[1] != "text":
                self.generated, self.generated_for = None, (self.mode, "text")
                self._fill_preview(self.original.content, tool_calls_text(self.original.tool_calls))
            self._set_flaw(Text(f"Your own text for {self.mode}: edit the step below, then Run (^r).", style="italic"))
        else:
            if self.generated_for != (self.mode, "llm"):
                self.generated = None
                self._fill_preview(self.original.content, tool_calls_text(self.original.tool_calls))
                self._set_flaw(
                    Text(
                        f"^g asks the model for a {self.mode} flaw at this step and a rewrite (two calls).",
                        style="italic",
                    )
                )

    def action_generate(self) -> None:
        """A new preview: the next variant (seed + 1) when one is shown already."""
        if self.mode is None:
            self.notify("No mode is available here.", severity="warning")
            return
        if self.generator == "text":
            self.notify("With your own text there is nothing to generate: edit the step.")
            return
        if self.generated is not None and self.generated_for == (self.mode, self.generator):
            self.seed += 1
        self._start_preview()

    def _start_preview(self) -> None:
        self._token += 1
        request = InjectionRequest(self.trace, self.index, self.mode or "", self.seed)
        if self.generator == "llm":
            model = self.query_one("#inj-gen-model", Input).value.strip()
            self._set_flaw(
                Text(
                    f"Asking {model or 'the configured model'} (stage 1: the flaw, stage 2: the rewrite)…",
                    style="italic",
                )
            )
            self.generate_llm(self._token, request, model)
        else:
            self.generate_offline(self._token, request)

    @work(
        thread=True,
        exclusive=True,
        group="inject-preview",
        exit_on_error=False,
        description="generate an injected step",
    )
    def generate_offline(self, token: int, request: InjectionRequest) -> None:
        try:
            generated = OfflineGenerator().generate(request)
        except WhenproError as exc:
            self.post_message(PreviewFailed(token, exc.one_line()))
            return
        except Exception as exc:  # noqa: BLE001 - a mutator bug must not crash the dialog
            self.post_message(PreviewFailed(token, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(PreviewReady(token, generated))

    @work(
        exclusive=True,
        group="inject-preview",
        exit_on_error=False,
        description="generate an injected step with a model",
    )
    async def generate_llm(self, token: int, request: InjectionRequest, model: str) -> None:
        try:
            gen = await asyncio.to_thread(LLMGenerator, model or "")
            await asyncio.to_thread(preload_sdk, gen.model)
            generated = await gen.agenerate(request)
        except WhenproError as exc:
            self.post_message(PreviewFailed(token, exc.one_line()))
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - shown, never a crash
            self.post_message(PreviewFailed(token, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(PreviewReady(token, generated))

    def on_preview_ready(self, message: PreviewReady) -> None:
        message.stop()
        if message.token != self._token:
            return
        gen = message.generated
        self.generated = gen
        self.generated_for = (self.mode or "", self.generator)
        self._fill_preview(gen.step.content, tool_calls_text(gen.step.tool_calls))
        flaw = Text("Flaw: ", style="bold")
        flaw.append(clean(gen.description))
        flaw.append(f"   ({clean(gen.generator)}, variant {self.seed + 1})", style="dim")
        self._set_flaw(flaw)

    def on_preview_failed(self, message: PreviewFailed) -> None:
        message.stop()
        if message.token != self._token:
            return
        self.generated = None
        self._set_flaw(Text("Could not generate: " + clean(message.error), style="#ff8787"))
        self.notify(clean(message.error), title="Generator", severity="error", timeout=10)

    def _fill_preview(self, content: str, calls: str) -> None:
        self.query_one("#inj-content", TextArea).load_text(content)
        self.query_one("#inj-calls", TextArea).load_text(calls)
        has_calls = calls.strip() not in ("", "[]") or bool(self.original.tool_calls)
        self.query_one("#inj-calls").display = has_calls
        self.query_one("#inj-calls-label").display = has_calls

    def _set_flaw(self, text: Text) -> None:
        self.query_one("#inj-flaw", Static).update(text)

    # ------------------------------------------------------------------ executor

    @on(Select.Changed, "#inj-exec")
    def _executor_changed(self, event: Select.Changed) -> None:
        self._show_executor_arg()

    def _executor(self) -> ExecutorChoice:
        kind = self.query_one("#inj-exec", Select).value
        return next(e for e in self.executors if e.kind == kind)

    def _show_executor_arg(self) -> None:
        choice = self._executor()
        box = self.query_one("#inj-exec-arg", Input)
        box.display = choice.argument is not None
        if choice.argument == "command":
            box.placeholder = "python my_agents.py (JSON lines, docs/replay-protocol.md)"
            if box.value == self.model:
                box.value = ""
        elif choice.argument == "model":
            box.placeholder = "provider:model"
            if not box.value:
                box.value = self.model
        note = ""
        builtin = executor_choices(self.trace)[0]
        if not builtin.available:
            note = f"builtin: {builtin.reason}"
        self.query_one("#inj-exec-note", Static).update(Text(note, style="dim"))
        self.query_one("#inj-exec-note").display = bool(note)

    # ------------------------------------------------------------------ run / cancel

    @on(Button.Pressed)
    def _button(self, event: Button.Pressed) -> None:
        event.stop()
        {"inj-run": self.action_run, "inj-generate": self.action_generate, "inj-cancel": self.action_cancel}[
            event.button.id or "inj-cancel"
        ]()

    def action_run(self) -> None:
        plan = self._plan()
        if plan is not None:
            self.workers.cancel_group(self, "inject-preview")
            self.dismiss(plan)

    def _plan(self) -> InjectionPlan | None:
        """The plan from what the dialog shows, or ``None`` after telling the user what
        is missing."""

        if self.mode is None:
            self.notify("No failure mode is available at this step.", severity="warning")
            return None
        content = self.query_one("#inj-content", TextArea).text
        try:
            calls = parse_tool_calls(self.query_one("#inj-calls", TextArea).text)
            if self.generator == "text":
                base = TextGenerator(content).generate(InjectionRequest(self.trace, self.index, self.mode))
            elif self.generated is None or self.generated_for != (self.mode, self.generator):
                self.notify("No preview yet: press ^g to generate the new step.", severity="warning")
                return None
            else:
                base = self.generated
            generated = edit_generated(base, content, calls)
            if not content.strip() and not generated.step.tool_calls:
                self.notify("The new step is empty: write its content.", severity="warning")
                return None
            same = (
                generated.step.content == self.original.content
                and generated.step.kind == self.original.kind
                and [c.model_dump() for c in generated.step.tool_calls]
                == [c.model_dump() for c in self.original.tool_calls]
            )
            if same:
                self.notify("The new step is the same as the recorded one: edit it first.", severity="warning")
                return None
            choice = self._executor()
            arg = self.query_one("#inj-exec-arg", Input).value
            if choice.argument == "command" and not arg.strip():
                self.notify("Type the command that runs your agents (cmd:).", severity="warning")
                return None
            executor = get_executor(choice.spec(arg))
        except WhenproError as exc:
            self.notify(clean(exc.one_line()), severity="error", timeout=10)
            return None
        return InjectionPlan(self.trace, self.index, self.mode, generated, executor, self.seed)

    def action_cancel(self) -> None:
        self.workers.cancel_group(self, "inject-preview")
        self.dismiss(None)
