"""Injection from the TUI, driven with Pilot: the ``i`` dialog (modes with their meanings,
unfit modes disabled with the reason, generators, executors, an editable preview), the live
replay (steps stream in; esc stops the executor), the diff screen (collapsed prefix,
outcome banner, save, attribution at once) and ``d`` on a counterfactual. Seeds are the
successful built-in environment runs of ``sample_traces/arith_team/`` (copied to a temp
folder, so saving never touches the samples); the ``cmd:`` executor is the shipped
``examples/replay_executor.py``; the LLM generator goes through the real SDK to the local
test server."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from textual import events

from tests.conftest import REPO, SAMPLES, screen_text, settle
from tests.support.fixtures import TEST_KEY
from tests.support.inject_model import InjectModel, step_answer
from tests.support.judge_oracle import Oracle
from tests.support.waiting import TIMEOUT_S
from tests.support.waiting import until as wait_for
from whenpro_core.attribution.heuristic import attribute_heuristic
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.injection.cmd_executor import CommandExecutor
from whenpro_core.injection.provenance import check_attribution
from whenpro_core.injection.replay import continued_trace, warm_start
from whenpro_core.trace.model import Agent, Step, Task, Trace
from whenpro_tui.app import WhenproApp
from whenpro_tui.messages import ReplayStep
from whenpro_tui.screens.confirm import ConfirmScreen
from whenpro_tui.screens.diff import DiffScreen
from whenpro_tui.screens.inject_dialog import InjectDialog
from whenpro_tui.screens.replay import ReplayScreen
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.diff_list import Collapsed, DiffList

ARITH = SAMPLES / "arith_team"
EXAMPLE = f"{shlex.quote(sys.executable)} {shlex.quote(str(REPO / 'examples' / 'replay_executor.py'))}"


def seed_copy(tmp_path: Path, name: str) -> Path:
    """A sample seed run copied into ``tmp_path`` (counterfactuals are saved next to it)."""
    target = tmp_path / f"{name}.json"
    shutil.copy(ARITH / f"{name}.json", target)
    return target


def notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def until(pilot, cond, what: str) -> None:
    """:func:`tests.support.waiting.until`, letting every worker finish between checks,
    failing with the screen and notifications."""
    await wait_for(
        pilot,
        cond,
        what,
        between=lambda: settle(pilot, rounds=1),
        detail=lambda: f"screen:\n{screen_text(pilot.app)}\nnotes: {notes(pilot.app)}",
    )


async def open_dialog(pilot, coord: str) -> InjectDialog:
    await until(pilot, lambda: isinstance(pilot.app.screen, TraceScreen), "the trace screen")
    await pilot.press(":", *coord, "enter", "i")
    await until(pilot, lambda: isinstance(pilot.app.screen, InjectDialog), "the injection dialog")
    await settle(pilot)
    return pilot.app.screen


async def pick_mode(pilot, dialog: InjectDialog, code: str) -> None:
    """Move the mode list's highlight (enabled modes only, as a user's arrows do)."""
    for _ in range(20):
        if dialog.mode == code:
            break
        await pilot.press("down")
    assert dialog.mode == code
    await settle(pilot)


async def choose(pilot, select_id: str, letter: str) -> None:
    """Open a Select and pick the option whose label starts with ``letter``."""
    await pilot.click(select_id)
    if type(pilot.app.focused).__name__ != "SelectOverlay":  # a focused Select opens on enter
        await pilot.press("enter")
    await pilot.press(letter, "enter")
    await settle(pilot)


async def paste(pilot, selector: str, text: str, *, replace: bool = False) -> None:
    """Click a text box and paste ``text`` (as a terminal's bracketed paste), replacing
    its content when ``replace`` (select all first: f7 in a TextArea)."""
    await pilot.click(selector)
    if replace:
        await pilot.press("f7")
    pilot.app.post_message(events.Paste(text))  # as the terminal driver does
    await pilot.pause()


async def run_to_diff(pilot) -> DiffScreen:
    await pilot.press("ctrl+r")
    await until(pilot, lambda: isinstance(pilot.app.screen, DiffScreen), "the diff screen")
    screen = pilot.app.screen
    await until(
        pilot,
        lambda: screen.diff is not None and "attributing" not in str(screen.attribution_text),
        "the diff and the attribution",
    )
    return screen


def area(dialog: InjectDialog, name: str) -> str:
    return dialog.query_one(f"#inj-{name}").text


async def test_decisive_r3_injection_end_to_end(tmp_path: Path) -> None:
    seed_path = seed_copy(tmp_path, "arith_team-s1")
    streamed: list[int] = []

    def hook(message) -> None:
        if isinstance(message, ReplayStep):
            streamed.append(message.step.index)

    app = WhenproApp(str(seed_path), cursor_blink=False)
    async with app.run_test(size=(140, 44), message_hook=hook) as pilot:
        dialog = await open_dialog(pilot, "4")
        text = screen_text(app)
        assert "Inject an error at step 4 · solver · action" in text
        assert "Numerical/calculation error" in text and "Arithmetic, unit conversion" in text
        await pick_mode(pilot, dialog, "R.3")
        # the offline mutator's preview: the tool argument and the content changed
        assert area(dialog, "content") == "Computing total = sessions + breaks + 61 = 80 + 5 + 61."
        assert '"expression": "80 + 5 + 61"' in area(dialog, "calls")
        assert "Uses 61 instead of 60" in screen_text(app)
        # the user edits the text before running
        await pilot.click("#inj-content")
        await pilot.press("end", *" Checked twice.")
        assert area(dialog, "content").endswith("80 + 5 + 61. Checked twice.")
        screen = await run_to_diff(pilot)

        # the replay streamed the injected step, then each new step, in order
        assert streamed == [4, 5, 6, 7]
        cf = screen.cf
        assert (
            cf.steps[4].content.endswith("Checked twice.") and cf.extras["injection"]["generator"] == "offline+edited"
        )
        text = screen_text(app)
        assert "now fails — decisive" in text and "final answer '11:55' → '11:56' (gold '11:55')" in text
        assert "steps 0–3 identical" in text
        rows = screen.query_one(DiffList)
        assert isinstance(rows.items[0], Collapsed) and rows.current.b == 4  # the cursor on the injected step
        assert "⚑ counterfactual: the injected step" in text and "R.3 at step 4 (solver)" in text
        # attribution at once: what the heuristic says about this counterfactual, shown as is
        expected = check_attribution(cf, attribute_heuristic(cf))
        assert expected.text in text and ("✓" in expected.text or "✗" in expected.text)
        # the collapsed prefix expands
        await pilot.press("g", "enter")
        await settle(pilot)
        assert not isinstance(rows.items[0], Collapsed) and len(rows.items) == 8

        # save next to the seed, under the CLI's default name
        await pilot.press("s")
        await settle(pilot)
        assert app.screen.query_one("#save-input").value == str(tmp_path / "arith_team-s1__R.3__4.json")
        await pilot.press("enter")
        await until(pilot, lambda: (tmp_path / "arith_team-s1__R.3__4.json").exists(), "the saved file")
        saved = load_trace(str(tmp_path / "arith_team-s1__R.3__4.json"))
        gt = saved.ground_truth
        assert (gt.agent, gt.step, gt.mode) == ("solver", "4", "R.3") and saved.outcome.value == "failure"
        assert saved.extras["injection"]["seed_trace"] == "arith_team-s1"
        # saving again asks before overwriting
        before = (tmp_path / "arith_team-s1__R.3__4.json").stat().st_mtime_ns
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the overwrite question")
        await pilot.press("n")
        await settle(pilot)
        assert "Not saved." in notes(app)
        assert (tmp_path / "arith_team-s1__R.3__4.json").stat().st_mtime_ns == before


async def test_injection_caught_by_the_verifier_still_succeeds(tmp_path: Path) -> None:
    app = WhenproApp(str(seed_copy(tmp_path, "arith_team-s0")), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await open_dialog(pilot, "2")
        await pick_mode(pilot, dialog, "R.3")
        screen = await run_to_diff(pilot)
        text = screen_text(app)
        assert "still succeeds — not decisive" in text and "'51.85' → '51.85'" in text
        assert "there is no decisive error to find" in text
        assert screen.query_one("#df-banner").has_class("good")
        # the verifier's flag is a changed step, side by side
        flagged = next(
            r for r in screen.diff.rows if r.b is not None and screen.cf.steps[r.b].content.startswith("Mismatch")
        )
        assert flagged.op in ("changed", "added")
        assert not list(tmp_path.glob("*__*.json"))  # nothing saved unless asked


async def test_unfit_modes_are_disabled_and_your_own_text_runs(tmp_path: Path) -> None:
    app = WhenproApp(str(seed_copy(tmp_path, "arith_team-s1")), cursor_blink=False)
    async with app.run_test(size=(140, 44)) as pilot:
        dialog = await open_dialog(pilot, "4")
        modes = dialog.query_one("#inj-modes")
        assert modes.get_option("A.2").disabled and modes.get_option("P.1").disabled
        assert not modes.get_option("R.3").disabled
        assert "✗ no offline mutator: type your own text" in screen_text(app)  # P.1, P.2
        # arrows skip the disabled modes, whose reason shows under their meaning
        await pick_mode(pilot, dialog, "A.1")
        await pilot.press("down")
        assert dialog.mode == "A.4"  # A.2 and A.3 skipped (this solver never says it is done)
        await settle(pilot)
        text = screen_text(app)
        assert "A.2  Output format/syntax error" in text and "Malformed structured output" in text
        assert "✗ the offline mutator needs a fenced code" in text
        # your own text: every mode is available, the preview starts from the recorded step
        await choose(pilot, "#inj-gen", "t")
        assert dialog.generator == "text" and not modes.get_option("A.2").disabled
        assert area(dialog, "content") == "Computing total = sessions + breaks + 60 = 80 + 5 + 60."
        await paste(pilot, "#inj-content", "Computing total = sessions + breaks = 80 + 5.", replace=True)
        await paste(
            pilot, "#inj-calls", '[{"name": "calculator", "arguments": {"expression": "80 + 5"}}]', replace=True
        )
        screen = await run_to_diff(pilot)
        step = screen.cf.steps[4]
        assert step.content == "Computing total = sessions + breaks = 80 + 5." and step.observation == "85"
        assert screen.cf.extras["injection"]["generator"] == "text"
        assert "now fails — decisive" in screen_text(app)


async def test_framing_step_and_unchanged_preview_are_refused(tmp_path: Path) -> None:
    app = WhenproApp(str(seed_copy(tmp_path, "arith_team-s1")), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("i")  # step 0, the user's task
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        assert any("Cannot inject here: step 0 is the user's task" in n for n in notes(app))
        dialog = await open_dialog(pilot, "4")
        await choose(pilot, "#inj-gen", "t")
        await pilot.press("ctrl+r")  # nothing edited
        await settle(pilot)
        assert app.screen is dialog
        assert any("same as the recorded one" in n for n in notes(app))
        await pilot.click("#inj-calls")
        await pilot.press("f7", *"[{")
        await pilot.click("#inj-content")
        await pilot.press("end", "x")
        await pilot.press("ctrl+r")  # broken JSON in the tool calls
        await settle(pilot)
        assert app.screen is dialog and any("tool calls are not valid JSON" in n for n in notes(app))
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)


@pytest.fixture(scope="module")
def tally_seed(tmp_path_factory) -> Path:
    """A successful run of the example system, recorded through the protocol itself."""
    query = "Add up these expenses: rent 1200, food 340, travel 85, books 42. What is the total?"
    task_only = Trace(
        id="tally",
        framework="example-tally",
        agents=[Agent(id="user"), Agent(id="adder", role="Adder"), Agent(id="checker", role="Checker")],
        task=Task(query=query, answer="1667"),
        steps=[Step(index=0, coord="0", agent="user", kind="user", content=query)],
    )
    argv = shlex.split(EXAMPLE)
    run = continued_trace(task_only, warm_start(task_only, 1, None, CommandExecutor(argv, message_timeout=20)))
    return write_trace(run, tmp_path_factory.mktemp("tally") / "tally.json")


async def test_cmd_executor_with_the_example(tmp_path: Path, tally_seed: Path) -> None:
    seed = shutil.copy(tally_seed, tmp_path / "tally.json")
    app = WhenproApp(str(seed), cursor_blink=False)
    async with app.run_test(size=(140, 44)) as pilot:
        dialog = await open_dialog(pilot, "3")
        assert "builtin: only for runs of whenpro's built-in environments" in screen_text(app)
        await pick_mode(pilot, dialog, "R.3")  # the adder never answers: no premature final answer here
        await choose(pilot, "#inj-exec", "c")
        await paste(pilot, "#inj-exec-arg", EXAMPLE)
        screen = await run_to_diff(pilot)
        assert screen.cf.extras["injection"]["executor"].startswith("cmd:")
        assert screen.cf.final_answer == "1667"  # the checker recomputes and has the adder start over
        assert "still succeeds — not decisive" in screen_text(app)


async def test_esc_cancels_a_slow_replay(tmp_path: Path, tally_seed: Path) -> None:
    seed = shutil.copy(tally_seed, tmp_path / "tally.json")
    pid_file = tmp_path / "executor.pid"
    script = tmp_path / "slow.py"
    script.write_text(
        textwrap.dedent("""
        import json, os, sys, time
        json.loads(sys.stdin.readline())
        open(sys.argv[1], "w").write(str(os.getpid()))
        step = {"agent": "checker", "kind": "assistant", "content": "Let me think about this for a while."}
        print(json.dumps({"type": "step", "step": step}), flush=True)
        time.sleep(120)
        """)
    )
    command = shlex.join([sys.executable, str(script), str(pid_file)])
    new_step = asyncio.Event()

    def hook(message) -> None:
        if isinstance(message, ReplayStep) and message.step.index > 2:
            new_step.set()

    app = WhenproApp(str(seed), cursor_blink=False)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        dialog = await open_dialog(pilot, "2")
        await pick_mode(pilot, dialog, "R.3")
        await choose(pilot, "#inj-exec", "c")
        await paste(pilot, "#inj-exec-arg", command)
        await pilot.press("ctrl+r")
        await asyncio.wait_for(new_step.wait(), timeout=TIMEOUT_S)
        await pilot.pause()
        assert isinstance(app.screen, ReplayScreen)
        assert "Let me think about this" in screen_text(app) and "1 new step(s)" in screen_text(app)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, TraceScreen), "the trace screen after cancelling")
        assert any(
            "Replay cancelled: the executor was stopped after 1 new step(s). Nothing was saved." in n
            for n in notes(app)
        )
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the executor process is gone
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["tally.json"]


async def test_d_opens_the_diff_of_a_counterfactual(tmp_path: Path) -> None:
    for name in ("arith_team-s1", "arith_team-s1__R.3__4"):
        shutil.copy(ARITH / f"{name}.json", tmp_path / f"{name}.json")
    app = WhenproApp(str(tmp_path / "arith_team-s1__R.3__4.json"), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DiffScreen), "the diff screen")
        screen = app.screen
        await until(
            pilot, lambda: screen.diff is not None and "attributing" not in str(screen.attribution_text), "the diff"
        )
        text = screen_text(app)
        assert "now fails — decisive" in text and "steps 0–3 identical" in text
        assert "original arith_team-s1" in text and "counterfactual arith_team-s1__R.3__4" in text
        assert "heuristic named step 2 ✗" in text  # the offline baseline misses this one
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
    # a decisive counterfactual dropped by a filter says why
    leaky = load_trace(str(tmp_path / "arith_team-s1__R.3__4.json"))
    leaky.extras["injection"]["verdict"].update(revealing=["deliberately"], kept=False)
    write_trace(leaky, tmp_path / "leaky.json")
    app = WhenproApp(str(tmp_path / "leaky.json"), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TraceScreen), "the trace screen")
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DiffScreen), "the diff screen")
        assert "now fails, but not kept: the injected text reveals the construction ('deliberately')" in screen_text(
            app
        )
        assert app.screen.query_one("#df-banner").has_class("warn")
    # a trace without provenance says what d is for
    app = WhenproApp(str(seed_copy(tmp_path, "arith_team-s0")), cursor_blink=False)
    async with app.run_test() as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        assert any("no injection provenance" in n for n in notes(app))


async def test_llm_generator_simulate_executor_and_protocol_through_the_sdk(
    tmp_path: Path, llm_server, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    monkeypatch.setenv("WHENPRO_MODEL", "openai:gpt-4.1")
    model = InjectModel(
        plan={"flaw": "Adds a 65-minute lunch instead of 60.", "wrong_result": "ends at 12:00"},
        rewrites=[
            {
                "content": "Computing total = sessions + breaks + 65 = 80 + 5 + 65.",
                "tool_calls": [{"name": "calculator", "arguments_json": '{"expression": "80 + 5 + 65"}'}],
            }
        ],
    )
    llm_server.respond_with(model)
    app = WhenproApp(str(seed_copy(tmp_path, "arith_team-s1")), cursor_blink=False)
    async with app.run_test(size=(140, 44)) as pilot:
        dialog = await open_dialog(pilot, "4")
        await pick_mode(pilot, dialog, "R.3")
        await choose(pilot, "#inj-gen", "l")
        assert dialog.query_one("#inj-gen-model").value == "openai:gpt-4.1"  # the configured model
        assert "^g asks the model" in screen_text(app) and model.kinds() == []  # nothing asked yet
        await pilot.press("ctrl+g")
        await until(pilot, lambda: dialog.generated is not None, "the model's rewrite")
        assert model.kinds() == ["stage1", "stage2"]
        assert area(dialog, "content") == "Computing total = sessions + breaks + 65 = 80 + 5 + 65."
        assert "Adds a 65-minute lunch" in screen_text(app)
        # the rest of the run is played by the model too (simulate executor)
        await choose(pilot, "#inj-exec", "s")
        assert dialog.query_one("#inj-exec-arg").value == "openai:gpt-4.1"
        players = InjectModel(
            turns={
                "solver": [
                    step_answer(
                        "Computing end = clock(09:30 + total) with total = 150.",
                        [{"name": "clock_add", "arguments": {"minutes": 150, "start": "09:30"}}],
                    )
                ],
                "verifier": [step_answer("Checked sessions = 80, breaks = 5 against the task: correct. Approved.")],
                "reporter": [step_answer("Final answer: 12:00", final_answer="12:00", ends_run=True)],
            },
            tool=lambda calls, prompt: "150" if calls[0]["name"] == "calculator" else "12:00",
        )
        llm_server.respond_with(players)
        screen = await run_to_diff(pilot)
        assert [a.agent for a in players.asked if a.kind == "turn"] == ["solver", "verifier", "reporter"]
        inj = screen.cf.extras["injection"]
        assert inj["generator"] == "llm:openai:gpt-4.1" and inj["executor"] == "simulate:openai:gpt-4.1"
        assert screen.cf.steps[4].observation == "150" and screen.cf.steps[5].meta["simulated"] is True
        assert screen.cf.final_answer == "12:00" and "now fails — decisive" in screen_text(app)
        llm_server.respond_with(Oracle(agent="solver", step="4", mode="R.3", order=[str(i) for i in range(8)]))
        # attribute with an LLM protocol, chosen on the diff screen
        await pilot.press("a")
        await settle(pilot)
        await choose(pilot, "#ac-protocol", "a")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "all-at-once found" in str(screen.attribution_text), "the all-at-once verdict")
        assert "all-at-once found step 4 ✓ (solver, R.3)" in screen_text(app)


async def test_palette_and_help_list_the_injection_actions(tmp_path: Path) -> None:
    from whenpro_tui.commands import BindingsProvider, collect_bindings
    from whenpro_tui.screens.help import HelpScreen

    app = WhenproApp(str(seed_copy(tmp_path, "arith_team-s1")), cursor_blink=False)
    async with app.run_test(size=(120, 60)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TraceScreen), "the trace screen")
        actions = {a.description: a.keys for a in collect_bindings(app.screen)}
        assert actions["Inject"] == "i" and actions["Diff with seed"] == "d" and actions["Task in full"] == "W"
        names = [hit.text async for hit in BindingsProvider(app.screen).discover()]
        assert "Inject" in names and "Diff with seed" in names
        await pilot.press("?")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        text = screen_text(app)
        assert "Inject" in text and "Diff with seed" in text and "Task in full" in text
        await pilot.press("escape")
        dialog = await open_dialog(pilot, "4")
        # ^r runs the previewed step: the offline preview is made in a thread, so wait for it
        await until(pilot, lambda: dialog.generated is not None, "the preview")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, DiffScreen), "the diff screen")
        screen = app.screen
        await settle(pilot)
        keys = {a.description for a in collect_bindings(screen)}
        assert {"Save", "Attribute", "Open counterfactual", "Expand identical steps", "Help", "Back"} <= keys
        await pilot.press("o")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen) and app.screen.trace is screen.cf


async def test_missing_seed_and_missing_model_are_explained(tmp_path: Path) -> None:
    shutil.copy(ARITH / "arith_team-s1__R.3__4.json", tmp_path / "cf.json")  # no seed next to it
    app = WhenproApp(str(tmp_path / "cf.json"), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TraceScreen), "the trace screen")
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        assert any("seed run 'arith_team-s1' not found" in n and "arith_team-s1.json" in n for n in notes(app))
        # an llm generator without a model or key says what to set, in the dialog
        dialog = await open_dialog(pilot, "4")
        await choose(pilot, "#inj-gen", "l")
        await pilot.press("ctrl+g")
        await until(pilot, lambda: "Could not generate" in screen_text(app), "the generator error")
        assert any("needs a model" in n for n in notes(app)) and app.screen is dialog


@pytest.mark.real_traces
def whowhen_step_content(whowhen: Path, index: int) -> str:
    return load_trace(whowhen / "Algorithm-Generated" / "1.json").steps[index].content


async def test_dialog_on_a_real_who_and_when_run(whowhen: Path) -> None:
    app = WhenproApp(str(whowhen / "Algorithm-Generated" / "1.json"), cursor_blink=False)
    async with app.run_test(size=(130, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TraceScreen), "the trace screen")
        await pilot.press("i")  # step 0 opens the run: nothing before it to replay
        await settle(pilot)
        assert any("Cannot inject here: step 0 is the first step" in n for n in notes(app))
        dialog = await open_dialog(pilot, "2")
        assert "Inject an error at step 2 · BusinessLogic_Expert" in screen_text(app)
        # a foreign trace: no builtin executor, the simulate executor by default
        assert dialog.query_one("#inj-exec").value == "simulate"
        assert "builtin: only for runs of whenpro's built-in environments" in screen_text(app)
        await pick_mode(pilot, dialog, "PL.1")  # BusinessLogic_Expert's numbered plan
        assert "The plan leaves out" in screen_text(app)
        assert area(dialog, "content") != whowhen_step_content(whowhen, 2)
        await pilot.press("ctrl+r")  # simulate needs a model, and none is configured
        await settle(pilot)
        assert app.screen is dialog and any("simulate executor needs a model" in n for n in notes(app))
