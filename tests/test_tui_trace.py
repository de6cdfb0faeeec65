"""The trace screen driven with Pilot: navigation, go to, search, filter, labels,
trace switching, copy, editor errors, help and palette."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REAL_TRACES, screen_text, settle, team_trace
from whenpro_core.formats.native import write_trace
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.step_detail import StepDetail
from whenpro_tui.widgets.step_list import StepList


def make_app(target: Path | str, **kw) -> WhenproApp:
    return WhenproApp(str(target), cursor_blink=False, **kw)


def current(app) -> int | None:
    return app.screen.query_one(StepList).step_index


def detail_text(app) -> str:
    return screen_text(app)


def notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def open_trace(pilot) -> TraceScreen:
    await settle(pilot)
    assert isinstance(pilot.app.screen, TraceScreen)
    return pilot.app.screen


async def test_navigation_keys(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_trace(pilot)
        assert current(app) == 0
        await pilot.press("j", "j")
        assert current(app) == 2
        await pilot.press("k")
        assert current(app) == 1
        await pilot.press("G")
        assert current(app) == 6
        await pilot.press("g")
        assert current(app) == 0
        await pilot.press("down", "down", "up")
        assert current(app) == 1
        # l/h: next/previous step of the same agent (coder speaks at 2, 3, 5)
        await pilot.press("j")
        assert current(app) == 2
        await pilot.press("l")
        assert current(app) == 3
        await pilot.press("l")
        assert current(app) == 5
        await pilot.press("h")
        assert current(app) == 3
        await pilot.press("G", "l")  # planner at 6 has no later step
        await pilot.pause()
        assert current(app) == 6
        assert any("No later step by planner" in n for n in notes(app))


async def test_detail_pane_shows_fields_without_remounting(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test(size=(140, 45)) as pilot:
        await open_trace(pilot)
        detail = app.screen.query_one(StepDetail)
        before = {id(w) for w in detail.walk_children()}
        await pilot.press("j", "j")  # step 2: code, tool call, observation
        await pilot.pause()
        text = screen_text(app)
        # the code argument shown as code under its name, not as an escaped JSON string
        assert "Tool calls (1)" in text and "python" in text and "code:" in text and "print(3*4.5*1.08)" in text
        assert "Observation" in text and "14.58" in text
        await pilot.press("j", "j", "j")  # step 5: error
        await pilot.pause()
        text = screen_text(app)
        assert "Error" in text and "ToolError: submit rejected the answer format" in text
        assert "✗" in text
        await pilot.press("k")  # step 4: image thumbnail with its label and size
        await settle(pilot)
        text = screen_text(app)
        assert "receipt" in text and "4×3 · " in text
        after = {id(w) for w in detail.walk_children()}
        panel = detail.query_one("#d-media-panel")  # mounted once, on the first image step
        added = {id(panel)} | {id(w) for w in panel.walk_children()}
        assert after == before | added  # the rest: same widgets, updated in place
        await pilot.press("k", "j", "j")
        await settle(pilot)
        assert {id(w) for w in detail.walk_children()} == after


async def test_rich_markup_in_content_is_literal(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_trace(pilot)
        await pilot.press("j", "j", "j")
        await pilot.pause()
        assert "[bold]13.50 + 8 = 21.50[/bold]" in screen_text(app)


async def test_goto_known_and_unknown_coordinates(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_trace(pilot)
        await pilot.press(":")
        await pilot.press(*"5", "enter")
        await pilot.pause()
        assert current(app) == 5
        await pilot.press(":")
        await pilot.press(*"step 2", "enter")
        await pilot.pause()
        assert current(app) == 2
        await pilot.press(":")
        await pilot.press(*"99", "enter")
        await pilot.pause()
        assert current(app) == 2
        assert any("No step '99'" in n for n in notes(app))


async def test_search_with_n_and_N(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_trace(pilot)
        await pilot.press("/")
        await pilot.press(*"SUBTOTAL", "enter")  # case-insensitive; content + JSON content
        await settle(pilot)
        assert screen.search is not None
        assert screen.search.steps == [2, 4]
        assert current(app) == 2
        assert "1 of 2 steps" in screen_text(app)
        await pilot.press("n")
        assert current(app) == 4
        await pilot.press("n")  # wraps around
        assert current(app) == 2
        await pilot.press("N")
        assert current(app) == 4
        # tool-call arguments and observations are searched too
        await pilot.press("/")
        await pilot.press("ctrl+a", "ctrl+k", *"14.58", "enter")
        await settle(pilot)
        assert screen.search.steps == [2]
        assert set(screen.search.fields[2]) == {"observation"}
        assert "1 step (1 hit)" in screen_text(app) and any("in 1 step (1 hit)" in n for n in notes(app))
        await pilot.press("/")
        await pilot.press("ctrl+a", "ctrl+k", *"rejected the answer", "enter")
        await settle(pilot)
        assert screen.search.steps == [5]
        await pilot.press("/")
        await pilot.press("ctrl+a", "ctrl+k", *"nothing-like-this", "enter")
        await settle(pilot)
        assert any("No match" in n for n in notes(app))


async def test_n_without_search_explains(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test() as pilot:
        await open_trace(pilot)
        await pilot.press("n")
        await pilot.pause()
        assert any("press / to search" in n for n in notes(app))


async def test_filter_by_agent_keeps_coordinates(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_trace(pilot)
        await pilot.press("f")
        await pilot.pause()
        picker = app.screen
        agents = picker.query_one("#facet-agent")
        agents.select("coder")
        await pilot.press("a")
        await pilot.pause()
        steps = screen.query_one(StepList)
        assert steps.shown == [2, 3, 5]
        assert [steps.row_model(i).coord for i in steps.shown] == ["2", "3", "5"]
        text = screen_text(app)
        assert "filter agent: coder" in text
        # j walks the filtered list; go-to a hidden step clears the filter
        await pilot.press("j")
        assert current(app) == 3
        await pilot.press(":", "1", "enter")
        await pilot.pause()
        assert current(app) == 1
        assert steps.shown == list(range(7))
        # F clears a filter
        await pilot.press("f")
        await pilot.pause()
        app.screen.query_one("#facet-kind").select("action")
        await pilot.press("a")
        await pilot.pause()
        assert steps.shown == [2, 3]
        await pilot.press("F")
        await pilot.pause()
        assert steps.shown == list(range(7))


async def test_labels_hidden_by_default_then_toggled(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_trace(pilot)
        text = screen_text(app)
        assert "★" not in text and "⚑" not in text and "GT:" not in text
        assert "Used 8 as an absolute tax" not in text
        await pilot.press("T")  # refuses while labels are hidden
        await pilot.pause()
        assert current(app) == 0
        assert any("Labels are hidden" in n for n in notes(app))
        await pilot.press("t")
        await pilot.pause()
        text = screen_text(app)
        assert "GT: agent coder · step 3 · mode R.3 Numerical/calculation error" in text
        assert "★" in text and "⚑" in text
        await pilot.press("T")
        await pilot.pause()
        assert current(app) == 3
        text = screen_text(app)
        assert "ground-truth decisive step" in text
        assert "Hidden fields (labels)" in text and "is_injected" in text
        await pilot.press("t")
        await pilot.pause()
        text = screen_text(app)
        assert "★" not in text and "Hidden fields" not in text


async def test_an_id_that_carries_the_failure_mode_is_masked_while_labels_are_hidden() -> None:
    path = REAL_TRACES / "who-when-pro-samples" / "data" / "traces" / "mmsearch_car.json"
    if not path.exists():
        pytest.skip(f"real traces not present at {path} (set WHENPRO_REAL_TRACES)")
    app = make_app(path)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_trace(pilot)
        text = screen_text(app)
        assert "smolagents__mmsearch__‹mode›__task_0274_auto_9" in text and "PL.1" not in text
        await pilot.press("t")
        await pilot.pause()
        assert "smolagents__mmsearch__PL.1__task_0274_auto_9" in screen_text(app)


async def test_labels_flag_starts_shown(team_file: Path) -> None:
    app = make_app(team_file, show_labels=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_trace(pilot)
        assert "GT: agent coder" in screen_text(app)


async def test_trace_switching_in_multi_trace_file(tmp_path: Path) -> None:
    traces = [team_trace(f"team-{i}", n_extra=i) for i in range(1, 4)]
    import orjson

    path = tmp_path / "three.json"
    path.write_bytes(orjson.dumps([t.model_dump(mode="json") for t in traces]))
    app = make_app(f"{path}#2")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_trace(pilot)
        await settle(pilot)
        assert screen.trace.id == "team-2"
        assert screen.trace_refs and screen.position == 1
        await pilot.press("]")
        await settle(pilot)
        assert screen.trace.id == "team-3"
        assert "trace 3/3" in screen_text(app)
        await pilot.press("]")
        await pilot.pause()
        assert any("last trace" in n for n in notes(app))
        await pilot.press(
            "[",
        )
        await settle(pilot)
        await pilot.press("[")
        await settle(pilot)
        assert screen.trace.id == "team-1"
        assert current(app) == 0


async def test_copy_puts_step_text_on_clipboard(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_trace(pilot)
        await pilot.press("j", "j", "y")
        await pilot.pause()
        assert app.clipboard.startswith("Step 2 | Agent: coder | action")
        assert "Tool call: python" in app.clipboard and "Observation:\n14.58" in app.clipboard
        assert "is_injected" not in app.clipboard


async def test_editor_missing_is_a_notification(team_file: Path, monkeypatch) -> None:
    monkeypatch.setenv("EDITOR", "no-such-editor-whenpro")
    monkeypatch.delenv("VISUAL", raising=False)
    app = make_app(team_file)
    async with app.run_test() as pilot:
        await open_trace(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert any("Editor not found: 'no-such-editor-whenpro'" in n for n in notes(app))


async def test_editor_without_terminal_is_a_notification(team_file: Path, monkeypatch) -> None:
    monkeypatch.setenv("EDITOR", "true")
    app = make_app(team_file)
    async with app.run_test() as pilot:
        await open_trace(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert any("Cannot hand the terminal" in n for n in notes(app))


async def test_help_lists_every_trace_binding(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test(size=(120, 60)) as pilot:
        screen = await open_trace(pilot)
        descriptions = {b.description for b in screen.BINDINGS if screen.check_action(b.action, ()) is not False}
        assert "Quit" in descriptions and "Back" not in descriptions  # opened directly: q quits
        await pilot.press("?")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        listed = {a.description for a in app.screen.actions}
        assert descriptions <= listed
        text = screen_text(app)
        for words in (
            "Go to step",
            "Next match",
            "Go to GT step",
            "Open in $EDITOR",
            "Copy step",
            "Previous trace",
            "Step markers",
        ):
            assert words in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen


async def test_palette_offers_every_binding(team_file: Path) -> None:
    from whenpro_tui.commands import BindingsProvider

    app = make_app(team_file)
    async with app.run_test() as pilot:
        screen = await open_trace(pilot)
        provider = BindingsProvider(screen)
        names = [hit.text async for hit in provider.discover()]
        for binding in screen.BINDINGS:
            if screen.check_action(binding.action, ()) is not False:
                assert binding.description in names
        assert "Back" not in names
        # running a palette command runs the action
        hits = [hit async for hit in provider.search("Last step")]
        assert hits
        await hits[0].command()
        await pilot.pause()
        assert current(app) == 6


async def test_zoom_and_resize(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await open_trace(pilot)
        await pilot.press("z")
        await pilot.pause()
        assert screen.maximized is screen.query_one(StepDetail)
        await pilot.press("escape")  # un-zooms before leaving
        await pilot.pause()
        assert screen.maximized is None and app.screen is screen
        pane = screen.query_one("#list-pane")
        width = pane.size.width
        await pilot.press(">")
        await pilot.pause()
        assert pane.size.width > width


@pytest.mark.real_traces
async def test_real_hand_crafted_trace(whowhen: Path) -> None:
    app = make_app(whowhen / "Hand-Crafted" / "1.json")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_trace(pilot)
        assert len(screen.trace.steps) == 29
        text = screen_text(app)
        assert "whowhen-hc-1" in text and "Orchestrator 21" in text and "WebSurfer 7" in text
        assert "WebSurfer clicks on an irrelevant website" not in text
        await pilot.press("t", "T")
        await pilot.pause()
        assert current(app) == 12
        text = screen_text(app)
        assert "GT: agent WebSurfer · step 12 · mode —" in text
        await pilot.press("/")
        await pilot.press(*"jidokwan", "enter")
        await settle(pilot)
        assert 12 in screen.search.steps
        # the ledger step renders its JSON tail pretty-printed
        await pilot.press(":", "2", "enter")
        await pilot.pause()
        assert '"is_request_satisfied": {' in screen_text(app)


@pytest.mark.real_traces
async def test_real_algorithm_generated_trace(whowhen: Path) -> None:
    path = sorted((whowhen / "Algorithm-Generated").glob("*.json"))[0]
    app = make_app(path)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_trace(pilot)
        assert screen.trace.framework == "captainagent"
        steps = screen.query_one(StepList)
        assert steps.row_count == len(screen.trace.steps)
        await pilot.press("G")
        assert current(app) == len(screen.trace.steps) - 1


async def test_raw_toggle_and_task_expansion(tmp_path: Path) -> None:
    trace = team_trace()
    trace.task.query = "First line of the task.\n" + "more words " * 30 + "\nLAST-LINE-MARKER"
    path = write_trace(trace, tmp_path / "t.json")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_trace(pilot)
        text = screen_text(app)
        assert "Task: First line of the task. more words" in text  # folded to one line
        assert "LAST-LINE-MARKER" not in text and "…" in text
        await pilot.press("W")
        await pilot.pause()
        assert "LAST-LINE-MARKER" in screen_text(app)  # the whole task now
        await pilot.press("j")  # the Markdown plan step
        await pilot.pause()
        body = app.screen.query_one(StepDetail).body
        assert "Plan" in body.plain_text() and "## Plan" not in body.plain_text()  # a heading
        assert "**8%**" not in body.plain_text()
        await pilot.press("r")
        await pilot.pause()
        assert "## Plan" in body.plain_text() and "**8%**" in body.plain_text()  # raw text


async def test_empty_trace_and_multi_trace_file_library(tmp_path: Path) -> None:
    import orjson

    from whenpro_core.trace.model import Trace
    from whenpro_tui.screens.library import LibraryScreen

    empty = write_trace(Trace(id="empty"), tmp_path / "empty.json")
    app = make_app(empty)
    async with app.run_test() as pilot:
        await open_trace(pilot)
        assert "This trace has no steps." in screen_text(app)
        await pilot.press("j", "G", "l", "n", "y")  # nothing to do, nothing breaks
        await pilot.pause()

    many = tmp_path / "many.json"
    many.write_bytes(orjson.dumps([team_trace(f"m{i}").model_dump(mode="json") for i in range(3)]))
    app = make_app(many)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, LibraryScreen)
        assert "3 of 3 traces" in screen_text(app)
        await pilot.press("j", "enter")
        await settle(pilot)
        assert app.screen.trace.id == "m1"
        await pilot.press("]")
        await settle(pilot)
        assert app.screen.trace.id == "m2"


async def test_a_step_lines_file_with_a_bad_line_says_so_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"agent": "a", "content": "hi"}\nnot json\n{"agent": "b", "content": "yo"}\n')
    app = make_app(path)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await settle(pilot)  # a JSON-lines file lists as a dataset of one row
        await pilot.press("enter")
        screen = await open_trace(pilot)
        assert len(screen.trace.steps) == 2
        assert any("skipped 1 bad line (line 2: not valid JSON" in n for n in notes(app))


async def test_a_100k_step_trace_opens_and_the_list_reaches_its_last_step(tmp_path: Path) -> None:
    """The size ``benchmarks/tui_open.py`` times: the list is virtual and nothing before
    the first paint is per-step widget work, so it opens, and G, k and : reach the far
    end (no time asserted here: the benchmark measures it)."""
    from whenpro_core.trace.model import Agent, Step, Trace

    agents = ["Orchestrator", "WebSurfer", "Coder"]
    n = 100_000
    steps = [
        Step(index=i, coord=str(i), agent=agents[i % 3], kind="action" if i % 2 else "plan", content=f"step {i} says")
        for i in range(n)
    ]
    steps[-1].error = "Boom: the last step failed"
    trace = Trace(id="huge", framework="bench", agents=[Agent(id=a) for a in agents], steps=steps)
    path = write_trace(trace, tmp_path / "huge.json", indent=False)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_trace(pilot)
        steps_list = screen.query_one(StepList)
        assert steps_list.row_count == n and current(app) == 0
        await pilot.press("G")
        await settle(pilot)
        assert current(app) == n - 1
        assert screen.query_one(StepDetail).shown_index == n - 1
        text = screen_text(app)
        assert f"step {n - 1} ({n:,}/{n:,})" in text and "Boom: the last step failed" in text
        await pilot.press("k")
        await settle(pilot)
        assert current(app) == n - 2 and f"step {n - 2} says" in screen_text(app)
        await pilot.press(":", *"50000", "enter")
        await settle(pilot)
        assert current(app) == 50_000
        # the header's legend counts every step of every agent
        assert all(
            f"{agent} {count}" in screen_text(app)
            for agent, count in zip(agents, (33_334, 33_333, 33_333), strict=True)
        )


async def test_no_match_notice_shows_the_query_as_typed(team_file: Path) -> None:
    app = make_app(team_file)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_trace(pilot)
        await pilot.press("/")
        await pilot.press("(", "*", "[", "backslash", "enter")
        await settle(pilot)
        assert "No match for '(*[\\'." in notes(app), notes(app)
        await pilot.press("/")
        await pilot.press(*"[b]zz", "enter")
        await settle(pilot)
        assert "No match for '[b]zz'." in notes(app), notes(app)
