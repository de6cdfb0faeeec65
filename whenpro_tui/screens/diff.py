"""The step-aligned diff screen: the seed run and its counterfactual side by side
(:func:`whenpro_core.injection.diff.diff_traces`, computed in a thread worker), the shared
prefix collapsed, the injected step highlighted, an outcome banner
(:func:`whenpro_core.injection.provenance.headline`), the selected row's two steps with the
changed lines marked, saving (atomic; an existing file is overwritten only after a yes),
and attribution of the counterfactual at once (the offline heuristic on opening, any
protocol on ``a``; :func:`whenpro_core.attribution.request.run_request` in an async worker, as ``whenpro attribute``)
with whether it finds the injected step.

Opened after a replay, or by ``d`` on a counterfactual that has injection provenance.
With ``plain=True`` (``whenpro diff A B``, ``whenpro view --diff A B``) it diffs any two
runs: sides titled A and B, outcomes and final answers side by side in the banner, the
first divergence marked ▶ and under the cursor, and no attribution until ``a``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Static

from whenpro_core.attribution.protocols import protocol_name
from whenpro_core.attribution.request import AttributionRequest, run_request
from whenpro_core.errors import WhenproError
from whenpro_core.formats.native import write_trace
from whenpro_core.injection.diff import TraceDiff, changed_lines, diff_traces, row_step
from whenpro_core.injection.inject import default_output
from whenpro_core.injection.provenance import check_attribution, headline
from whenpro_core.injection.verify import Verdict, check_answer
from whenpro_core.safety.textsafe import clean, one_line, plural, shown_path
from whenpro_core.trace.model import Trace
from whenpro_core.views.stepview import step_as_text
from whenpro_core.views.traceview import agent_slots
from whenpro_tui.commands import collect_bindings
from whenpro_tui.messages import CounterfactualAttributed, CounterfactualSaved, DiffComputed, OpenTrace
from whenpro_tui.screens.attribute_choice import AttributeChoice
from whenpro_tui.screens.confirm import ConfirmScreen
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.screens.inject_dialog import configured_model
from whenpro_tui.screens.leaving import LEAVE_BINDINGS, Leaving
from whenpro_tui.screens.prompt import PromptScreen
from whenpro_tui.widgets.diff_list import Collapsed, DiffList
from whenpro_tui.widgets.footer import FittedFooter
from whenpro_tui.widgets.palette import AGENT_COLOURS
from whenpro_tui.widgets.step_detail import StepBody
from whenpro_tui.widgets.virtual_list import VirtualList

BANNER_CLASSES = {"decisive": "bad", "not_kept": "warn", "succeeds": "good", "seed_failed": "warn", "unknown": "warn"}
OLD_LINE = "on #4a1f1f"
NEW_LINE = "on #1f4a2a"


class DiffScreen(Leaving, Screen[None]):
    """See the module docstring. ``original`` is the seed run, ``counterfactual`` the
    injected run, ``verdict`` its verification (``None``: read from its provenance)."""

    BINDINGS = [
        Binding("j,down", "row(1)", "Next row", show=False),
        Binding("k,up", "row(-1)", "Previous row", show=False),
        Binding("g,home", "first", "First row", show=False),
        Binding("G,end", "last", "Last row", show=False),
        Binding("enter,space", "toggle_prefix", "Expand identical steps", show=False),
        Binding("s", "save", "Save"),
        Binding("a", "attribute", "Attribute"),
        Binding("o", "open_counterfactual", "Open counterfactual"),
        Binding("o", "open_run_b", "Open run B"),  # the same, named for a diff of two plain runs
        Binding("J", "scroll_detail(1)", "Scroll steps down", show=False),
        Binding("K", "scroll_detail(-1)", "Scroll steps up", show=False),
        Binding("?", "help", "Help", key_display="?"),
        *LEAVE_BINDINGS,  # q back (quit on the first screen); escape never quits
    ]

    def __init__(
        self,
        original: Trace,
        counterfactual: Trace,
        verdict: Verdict | None = None,
        *,
        slots: dict[str, int] | None = None,
        plain: bool = False,
        is_root: bool = False,
    ) -> None:
        super().__init__()
        self.plain = plain
        self.is_root = is_root
        self.titles = ("A", "B") if plain else ("original", "counterfactual")
        self.original = original
        self.cf = counterfactual
        self.verdict = verdict
        self.inj = counterfactual.injection
        self.injected = self.inj.step_index if self.inj is not None else None
        ids = [a.id for a in counterfactual.agents] or sorted({s.agent for s in counterfactual.steps})
        self.slots = slots or agent_slots(ids, len(AGENT_COLOURS))
        self.diff: TraceDiff | None = None
        self.saved: str | None = counterfactual.source.path
        self.attribution_text = Text(
            "a: attribute run B" if plain else "attributing with the offline heuristic…", style="italic"
        )

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Static(id="df-banner", markup=False)
        yield Static(id="df-inject", markup=False)
        yield Static(id="df-attr", markup=False)
        with Horizontal(id="df-heads"):
            yield Static(id="df-head-a", markup=False)
            yield Static(id="df-head-b", markup=False)
        yield DiffList(id="df-rows")
        with Horizontal(id="df-detail"):
            with Vertical(id="df-a-pane"):
                yield StepBody(id="df-a")
            with Vertical(id="df-b-pane"):
                yield StepBody(id="df-b")
        yield FittedFooter()

    def on_mount(self) -> None:
        self._banner()
        self._heads()
        self._attr_line()
        self.query_one(DiffList).focus()
        self.compute_diff()
        if not self.plain:
            self.attribute_counterfactual("heuristic", "")

    @work(thread=True, exclusive=True, group="diff", exit_on_error=False)
    def compute_diff(self) -> None:
        self.post_message(DiffComputed(diff_traces(self.original, self.cf)))

    def on_diff_computed(self, message: DiffComputed) -> None:
        message.stop()
        self.diff = message.diff
        self.query_one(DiffList).show(self.original, self.cf, self.diff, self.injected, self.slots)
        self._heads()
        if self.plain:
            self._plain_banner()

    # ------------------------------------------------------------------ banner and heads

    def _plain_banner(self) -> None:
        """Two runs side by side: outcomes, final answers (✓/✗ against gold), and where
        they part."""
        text = Text()
        for title, trace in (("A", self.original), ("B", self.cf)):
            mark = check_answer(trace.final_answer, trace.task.answer).success
            text.append(f" {title} {trace.outcome.value}", style="bold")
            text.append(f" · final {_answer(trace.final_answer)}")
            text.append("" if mark is None else (" ✓" if mark else " ✗"), style="bold")
            text.append("   ")
        diff = self.diff
        first = diff.first_divergence if diff is not None else None
        where = Text()
        if diff is None:
            where.append("aligning…", style="italic")
        elif first is None:
            where.append("The two runs have the same steps.", style="bold")
        else:
            row = diff.rows[first]
            where.append("▶ first divergence: ", style="bold #afafff")
            where.append(f"A step {row_step(row.a_coord, row.a)} / B step {row_step(row.b_coord, row.b)} ({row.op})")
            where.append(
                f" · {len(diff.changed)} changed, {len(diff.removed)} only in A, "
                f"{len(diff.added)} only in B · aligned by content, then by agent, kind and tools",
                style="dim",
            )
        banner = self.query_one("#df-banner", Static)
        banner.set_classes("warn" if diff is None or first is not None else "good")
        banner.update(text)
        self.query_one("#df-inject", Static).update(where)

    def _banner(self) -> None:
        if self.plain:
            self._plain_banner()
            return
        banner = self.query_one("#df-banner", Static)
        v = self.verdict
        if v is None:
            text = Text(f" outcome {self.cf.outcome.value} (no verification recorded)", style="bold")
            kind = "unknown"
        else:
            line = headline(v)
            kind = line.kind
            text = Text(f" {line.text}", style="bold")
            text.append(f"  ·  final answer {_answer(self.original.final_answer)} → {_answer(self.cf.final_answer)}")
            gold = self.original.task.answer
            if gold and v.counterfactual_success is not None:
                text.append(f" (gold {_answer(gold)})")
            elif v.detail:
                text.append(f"  ·  {clean(v.detail)}", style="italic")
        banner.set_classes(BANNER_CLASSES.get(kind, "warn"))
        banner.update(text)
        inj = self.inj
        inject_line = Text()
        if inj is not None:
            inject_line.append(
                f"{clean(str(inj.mode))} at step {clean(str(inj.step))} ({clean(str(inj.agent))})",
                style="bold #ffaf5f",
            )
            inject_line.append(
                f" · {clean(str(inj.generator))} · {clean(one_line(str(inj.executor), 50))}: ",
                style="dim",
            )
            inject_line.append(clean(one_line(inj.description or "", 300)))
        else:
            inject_line.append("No injection provenance: a plain step-aligned diff.", style="italic")
        self.query_one("#df-inject", Static).update(inject_line)

    def _heads(self) -> None:
        def head(title: str, trace: Trace) -> Text:
            text = Text(f"{title} ", style="bold")
            text.append(clean(one_line(trace.id, 60)))
            text.append(f" · {trace.outcome.value} · {plural(len(trace.steps), 'step')}", style="dim")
            return text

        b = head(self.titles[1], self.cf)
        if not self.plain:
            b.append(f" · saved: {clean(self.saved)}" if self.saved else " · not saved (s)", style="dim italic")
        self.query_one("#df-head-a", Static).update(head(self.titles[0], self.original))
        self.query_one("#df-head-b", Static).update(b)

    def _attr_line(self) -> None:
        self.query_one("#df-attr", Static).update(self.attribution_text)

    # ------------------------------------------------------------------ detail

    @on(VirtualList.Highlighted, "#df-rows")
    def _row_highlighted(self, event: VirtualList.Highlighted) -> None:
        item = self.query_one(DiffList).current
        left, right = self.query_one("#df-a", StepBody), self.query_one("#df-b", StepBody)
        if item is None:
            return
        if isinstance(item, Collapsed):
            why = "" if self.plain else ": the replay reproduced them from the record"
            note = Text(
                f"The first {item.count} steps are the same in both runs{why} (enter shows them).", style="italic"
            )
            left.show(note)
            right.show(note)
            return
        a_text = step_as_text(self.original.steps[item.a]) if item.a is not None else ""
        b_text = step_as_text(self.cf.steps[item.b]) if item.b is not None else ""
        only_a, only_b = changed_lines(a_text, b_text) if item.op == "changed" else (set(), set())
        injected = item.b is not None and item.b == self.injected
        ta, tb = self.titles
        left.show(
            _marked(ta, a_text, only_a, OLD_LINE, f"(not in run {ta})" if self.plain else "(not in the original run)")
        )
        right.show(
            _marked(
                f"⚑ {tb}: the injected step" if injected else tb,
                b_text,
                only_b,
                NEW_LINE,
                f"(not in run {tb})" if self.plain else "(not in the counterfactual)",
                injected,
            )
        )

    # ------------------------------------------------------------------ actions

    def action_row(self, delta: int) -> None:
        rows = self.query_one(DiffList)
        rows.move_cursor(rows.cursor + delta)

    def action_first(self) -> None:
        self.query_one(DiffList).move_cursor(0)

    def action_last(self) -> None:
        rows = self.query_one(DiffList)
        rows.move_cursor(rows.row_count - 1)

    def action_toggle_prefix(self) -> None:
        if self.diff is None or not self.diff.shared_prefix:
            self.notify("No identical steps to expand.")
            return
        self.query_one(DiffList).toggle_prefix()

    def action_scroll_detail(self, direction: int) -> None:
        for body in self.query(StepBody):
            body.scroll_relative(y=direction * max(1, body.size.height // 2), animate=False)

    def action_open_counterfactual(self) -> None:
        self.app.post_message(OpenTrace(self.cf))

    def action_open_run_b(self) -> None:
        self.action_open_counterfactual()

    def action_help(self) -> None:
        from whenpro_tui.screens.attribute_choice import AttributeChoice

        dialogs = (("Attribute dialog (a)", AttributeChoice),)
        self.app.push_screen(HelpScreen("Diff screen keys", collect_bindings(self), markers=False, dialogs=dialogs))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.plain and action == "save":
            return False  # both runs are files already
        if action in ("open_counterfactual", "open_run_b"):  # one "o", named for what run B is
            return (action == "open_run_b") == self.plain
        return super().check_action(action, parameters)

    def action_back(self) -> None:
        if self.is_root:
            self.app.exit()
        else:
            self.dismiss(None)

    # ------------------------------------------------------------------ attribution

    def action_attribute(self) -> None:
        def chosen(choice: tuple[str, str] | None) -> None:
            if choice is not None:
                self.attribute_counterfactual(*choice)

        if self.injected is None:  # nothing was injected into run B: no step to find
            dialog = AttributeChoice(
                "heuristic", configured_model(), title="Attribute run B", question="Which step does the protocol blame?"
            )
        else:
            dialog = AttributeChoice("heuristic", configured_model())
        self.app.push_screen(dialog, chosen)

    @work(exclusive=True, group="diff-attribute", exit_on_error=False, description="attribute the counterfactual")
    async def attribute_counterfactual(self, protocol: str, model: str) -> None:
        """Attribute the counterfactual with ``protocol`` (``model`` for LLM protocols) and
        check whether it names the injected step."""
        self.attribution_text = Text(
            f"attributing with {protocol}{' (' + model + ')' if model else ''}…", style="italic"
        )
        self._attr_line()
        try:
            request = AttributionRequest(protocol_name(protocol), None if protocol == "heuristic" else model)
            result = await run_request(self.cf, request)
        except WhenproError as exc:
            self.post_message(CounterfactualAttributed(protocol, error=exc.one_line()))
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - shown, never a crash
            self.post_message(CounterfactualAttributed(protocol, error=f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(CounterfactualAttributed(protocol, check_attribution(self.cf, result), result))

    def on_counterfactual_attributed(self, message: CounterfactualAttributed) -> None:
        message.stop()
        if message.error is not None:
            self.attribution_text = Text(f"{message.protocol} failed: {clean(message.error)}", style="#ff5f5f")
            self.notify(clean(message.error), title="Attribution", severity="error", timeout=10)
        elif message.check is None:
            att = message.attribution
            step, agent = getattr(att, "step", None) or "?", getattr(att, "agent", None) or "?"
            compare = "" if self.plain else " (no injected step to compare with)"  # a counterfactual without provenance
            self.attribution_text = Text(clean(f"{message.protocol} blames step {step} ({agent}) of run B{compare}"))
        else:
            check = message.check
            self.attribution_text = Text(clean(check.text), style="bold #5fd787" if check.found else "bold #ff8787")
            if self.verdict is not None and self.verdict.counterfactual_success:
                self.attribution_text.append(
                    "  (the run still succeeds: there is no decisive error to find)", style="dim"
                )
            self.attribution_text.append("   a: another protocol", style="dim")
        self._attr_line()

    # ------------------------------------------------------------------ save

    def default_path(self) -> Path:
        """Next to the seed, named after the counterfactual (as ``whenpro inject``)."""
        return default_output(self.original, self.cf.id)

    def action_save(self) -> None:
        def confirmed(path: Path, yes: bool | None) -> None:
            if yes:
                self.save_counterfactual(str(path))
            else:
                self.notify("Not saved.")

        def chosen(text: str | None) -> None:
            if not text or not text.strip():
                return
            path = Path(text.strip()).expanduser()
            if path.is_dir():
                self.notify(f"{shown_path(path)} is a folder: give a file name.", severity="warning")
                return
            if path.exists():
                self.app.push_screen(
                    ConfirmScreen(f"{clean(str(path))} exists. Overwrite it?", yes="Overwrite"),
                    lambda yes: confirmed(path, yes),
                )
                return
            self.save_counterfactual(str(path))

        self.app.push_screen(PromptScreen("Save to", value=str(self.default_path()), input_id="save-input"), chosen)

    @work(thread=True, exclusive=True, group="diff-save", exit_on_error=False, description="save the counterfactual")
    def save_counterfactual(self, path: str) -> None:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            write_trace(self.cf, path)
        except (OSError, WhenproError) as exc:
            error = exc.one_line() if isinstance(exc, WhenproError) else f"{exc.strerror or exc}"
            self.post_message(CounterfactualSaved(path, error))
            return
        self.post_message(CounterfactualSaved(path))

    def on_counterfactual_saved(self, message: CounterfactualSaved) -> None:
        message.stop()
        if message.error is not None:
            self.notify(
                f"Could not save {shown_path(message.path)}: {clean(message.error)}", severity="error", timeout=10
            )
            return
        self.saved = message.path
        self._heads()
        self.notify(f"Saved the counterfactual to {shown_path(message.path)}", title="Saved")


def _answer(text: str | None) -> str:
    return repr(one_line(text, 40)) if text is not None else "none"


def _marked(title: str, text: str, lines: set[int], style: str, empty: str, injected: bool = False) -> Text:
    """A ``title`` line, then ``text`` with ``lines`` on a coloured background."""
    out = Text(title + "\n", style="bold #ffaf5f" if injected else "bold dim")
    if not text:
        return out.append(empty, style="dim italic")
    for i, line in enumerate(text.rstrip("\n").split("\n")):
        out.append(line + "\n", style=style if i in lines else "")
    return out
