"""Dialogs of validation mode: :class:`VerdictMenu` (``v``: accept, reject or relabel)
and :class:`DecisionDialog` (the reason, and for a relabel the new agent, step and
failure mode picked from the trace's agents and coordinates and the dataset's
taxonomy). The dialog records the decision itself
(:func:`whenpro_core.dataset.validate.record`, in a thread worker) and stays open with
the error when the decision is refused (no reason, a relabel that changes nothing...).
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Select, Static

from whenpro_core.dataset import validate
from whenpro_core.dataset.review import RelabelChoices, label_line
from whenpro_core.dataset.validate import ReviewItem, ValidationEntry
from whenpro_core.errors import WhenproError
from whenpro_core.safety.textsafe import clean, one_line
from whenpro_tui.widgets.footer import FittedFooter

_DIALOG_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{
    width: 80%; min-width: 50; max-width: 110; height: auto; max-height: 90%;
    background: $panel; border: round $accent; padding: 0 1; overflow-y: auto;
}}
"""


class VerdictMenu(ModalScreen[str | None]):
    """Choose a verdict with one key; dismisses with ``accept``, ``reject``,
    ``relabel`` or ``None``."""

    BINDINGS = [
        Binding("a", "choose('accept')", "Accept"),
        Binding("x", "choose('reject')", "Reject"),
        Binding("r", "choose('relabel')", "Relabel"),
        Binding("escape,q", "choose('')", "Cancel"),
    ]
    DEFAULT_CSS = _DIALOG_CSS.format(name="VerdictMenu")

    def __init__(self, item: ReviewItem, taxonomy=None) -> None:
        super().__init__()
        self.item = item
        self.taxonomy = taxonomy

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text.assemble(("Review ", "bold"), (clean(self.item.id), "bold cyan")), markup=False)
            yield Static(Text("built label: " + label_line(self.item.built, self.taxonomy)), markup=False)
            yield Static(
                Text.assemble(
                    ("a", "bold cyan"),
                    " accept   ",
                    ("x", "bold cyan"),
                    " reject (with a reason)   ",
                    ("r", "bold cyan"),
                    " relabel agent / step / mode   ",
                    ("esc", "bold cyan"),
                    " cancel",
                ),
                markup=False,
                id="verdict-keys",
            )
        yield FittedFooter()

    def action_choose(self, verdict: str) -> None:
        self.dismiss(verdict or None)


class DecisionDialog(ModalScreen[ValidationEntry | None]):
    """Record a reject or relabel (or an accept with a note) on ``item`` of the dataset
    at ``root``. For a relabel, ``choices`` lists what may be picked and ``step`` is
    the coordinate to preselect (the step under the cursor). Enter in the reason box
    or ctrl+s saves; escape cancels."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]
    DEFAULT_CSS = (
        _DIALOG_CSS.format(name="DecisionDialog")
        + """
    DecisionDialog Horizontal.row { height: auto; margin-top: 1; }
    DecisionDialog Label { width: 8; padding: 0 1 0 0; text-style: bold; }
    DecisionDialog Select { width: 1fr; }
    DecisionDialog Input { width: 1fr; }
    DecisionDialog #decision-error { color: $error; height: auto; }
    """
    )

    def __init__(
        self,
        root: str | Path,
        item: ReviewItem,
        verdict: str,
        *,
        choices: RelabelChoices | None = None,
        step: str | None = None,
        taxonomy=None,
    ) -> None:
        super().__init__()
        self.root = Path(root)
        self.item = item
        self.verdict = verdict
        self.choices = choices
        self.step = step
        self.taxonomy = taxonomy

    def compose(self) -> ComposeResult:
        title = {"accept": "Accept", "reject": "Reject", "relabel": "Relabel"}[self.verdict]
        blink = getattr(self.app, "cursor_blink", True)
        with Vertical():
            yield Static(Text.assemble((f"{title} ", "bold"), (clean(self.item.id), "bold cyan")), markup=False)
            yield Static(Text("built label: " + label_line(self.item.built, self.taxonomy), style="dim"), markup=False)
            if self.verdict == "relabel" and self.choices is not None:
                c = self.choices
                built = c.built
                with Horizontal(classes="row"):
                    yield Label("agent")
                    yield Select(
                        [(Text(clean(a)), a) for a in c.agents],
                        value=built.agent if built.agent in c.agents else Select.NULL,
                        allow_blank=built.agent not in c.agents,
                        id="relabel-agent",
                        compact=True,
                    )
                steps = [s for s, _, _ in c.steps]
                pick = self.step if self.step in steps else built.step
                with Horizontal(classes="row"):
                    yield Label("step")
                    yield Select(
                        [(Text(one_line(f"{s}  {a}: {summary}", 44)), s) for s, a, summary in c.steps],
                        value=pick if pick in steps else Select.NULL,
                        allow_blank=pick not in steps,
                        id="relabel-step",
                        compact=True,
                    )
                codes = [code for code, _ in c.modes]
                with Horizontal(classes="row"):
                    yield Label("mode")
                    yield Select(
                        [(Text(clean(f"{code} {name}")), code) for code, name in c.modes],
                        value=built.mode if built.mode in codes else Select.NULL,
                        allow_blank=built.mode not in codes,
                        id="relabel-mode",
                        compact=True,
                    )
            with Horizontal(classes="row"):
                yield Label("reason")
                box = Input(
                    placeholder="why (required)" if self.verdict != "accept" else "a note (optional)",
                    id="decision-reason",
                    compact=True,
                )
                box.cursor_blink = blink
                yield box
            yield Static(id="decision-error", markup=False)
            yield Static(Text("enter or ctrl+s: save · escape: cancel · tab: next field", style="dim"), markup=False)
        yield FittedFooter()

    def on_mount(self) -> None:
        self.query_one("#decision-reason", Input).focus()

    def _value(self, select_id: str) -> str | None:
        found = self.query(f"#{select_id}")
        if not found:
            return None
        value = found.first(Select).value
        return None if value is Select.NULL else str(value)

    @on(Input.Submitted, "#decision-reason")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_save()

    def action_save(self) -> None:
        reason = self.query_one("#decision-reason", Input).value
        kw: dict[str, str | None] = {}
        if self.verdict == "relabel":
            built = self.item.built
            agent, step, mode = (self._value("relabel-agent"), self._value("relabel-step"), self._value("relabel-mode"))
            # only what changed is sent: the step decides the agent unless the agent changed too
            kw = {
                "agent": agent if agent != built.agent else None,
                "step": step if step != built.step else None,
                "mode": mode if mode != built.mode else None,
            }
            if reason.strip() and not any(kw.values()):
                self._failed("choose a new agent, step or mode (or escape and accept)")
                return
        self.query_one("#decision-error", Static).update(Text("saving…", style="dim"))
        self.save(reason, kw)

    @work(thread=True, exclusive=True, group="decision", exit_on_error=False, description="save the review decision")
    def save(self, reason: str, kw: dict) -> None:
        try:
            entry = validate.record(self.root, self.item.id, self.verdict, reason, **kw)
        except WhenproError as exc:
            self.app.call_from_thread(self._failed, exc.one_line())
            return
        except OSError as exc:
            self.app.call_from_thread(self._failed, f"cannot write the decision: {exc}")
            return
        self.app.call_from_thread(self.dismiss, entry)

    @on(Input.Changed)
    @on(Select.Changed)
    def _edited(self) -> None:
        """An edit makes the last refusal stale: clear it."""
        self.query_one("#decision-error", Static).update("")

    def _failed(self, error: str) -> None:
        self.query_one("#decision-error", Static).update(Text(clean(error), style="red"))

    def action_cancel(self) -> None:
        self.dismiss(None)
