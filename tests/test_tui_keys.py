"""Keys a fresh user tripped on: escape never quits (it closes, cancels or leaves; q
quits from the first screen), focus starts where the keys work (the filter dialog's
list, the library after its find box), and ctrl+c says how to quit in plain text."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SAMPLES, screen_text, settle
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.screens.library import LibraryScreen
from whenpro_tui.screens.picker import FacetPicker
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.step_list import StepList
from whenpro_tui.widgets.trace_table import TraceTable

TEAM = SAMPLES / "team_text" / "trace.json"


def notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


def footer_keys(app) -> str:
    return screen_text(app).splitlines()[-1]


async def test_escape_never_quits_a_trace_opened_directly() -> None:
    app = WhenproApp(str(TEAM), cursor_blink=False)
    async with app.run_test(size=(170, 36), notifications=True) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TraceScreen) and screen.is_root
        assert "q Quit" in footer_keys(app)
        await pilot.press("W")  # the task in full
        await pilot.pause()
        assert screen.task_expanded
        await pilot.press("escape")  # closes the task view, nothing else
        await pilot.pause()
        assert not screen.task_expanded and app.is_running and app.screen is screen
        await pilot.press("z", "escape")  # un-zooms
        await pilot.pause()
        assert screen.maximized is None and app.is_running
        await pilot.press("escape", "escape")  # nothing left to close: a hint, no exit
        await settle(pilot)
        assert app.is_running and app.screen is screen
        assert any("press q to quit" in n for n in notes(app))
        await pilot.press("?")  # help says so
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        listed = {a.keys: a.description for a in app.screen.actions if a.group == "screen"}
        assert "Close / back (never quits)" in listed.values() and listed["q"] == "Quit"
        assert "Back" not in listed.values()  # q quits here: its twin "Back" is not listed
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_escape_leaves_a_trace_opened_from_the_library(dataset_dir: Path) -> None:
    app = WhenproApp(str(dataset_dir), cursor_blink=False)
    async with app.run_test(size=(170, 30), notifications=True) as pilot:
        await settle(pilot)
        library = app.screen
        assert isinstance(library, LibraryScreen) and "q Quit" in footer_keys(app)
        await pilot.press("enter")  # team-1: sorted by id, the broken files last
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen) and not app.screen.is_root
        assert "q Back" in footer_keys(app) and "q Quit" not in footer_keys(app)
        await pilot.press("W", "escape")  # first the task view closes
        await pilot.pause()
        assert isinstance(app.screen, TraceScreen)
        await pilot.press("escape")  # then the screen
        await settle(pilot)
        assert app.screen is library
        await pilot.press("escape", "escape")  # the library is the first screen
        await settle(pilot)
        assert app.is_running and app.screen is library
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_escape_on_the_first_results_screen_does_not_quit(tmp_path: Path) -> None:
    import asyncio
    import os

    from rich.console import Console

    from bench_data import write_dataset
    from whenpro_core.cli.bench import BenchOptions, bench_command
    from whenpro_tui.screens.results import ResultsScreen

    data = write_dataset(tmp_path)
    with open(os.devnull, "w") as devnull:
        await asyncio.to_thread(
            bench_command,
            str(data),
            BenchOptions(out=tmp_path / "r.jsonl", report=False),
            console=Console(file=devnull, width=100),
        )
    app = WhenproApp(str(tmp_path / "r.jsonl"), cursor_blink=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ResultsScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running and isinstance(app.screen, ResultsScreen)
        await pilot.press("enter")  # the traces behind a cell: escape comes back
        await settle(pilot)
        assert not isinstance(app.screen, ResultsScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ResultsScreen)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_ctrl_c_says_how_to_quit_in_plain_text() -> None:
    app = WhenproApp(str(TEAM), cursor_blink=False)
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await settle(pilot)
        assert app.is_running
        text = screen_text(app)
        assert "Press q to quit" in text and "[b]" not in text


async def test_filter_dialog_starts_in_its_list() -> None:
    """space/enter toggle at once: no Tab needed to reach the first list."""
    app = WhenproApp(str(TEAM), cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        screen = app.screen
        first_agent = screen.trace.steps[0].agent
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, FacetPicker)
        await pilot.press("space")
        await pilot.pause()
        assert app.screen.selection()["agent"] == frozenset({first_agent})
        await pilot.press("enter")  # toggles it back
        await pilot.pause()
        assert app.screen.selection()["agent"] == frozenset()
        await pilot.press("space", "a")
        await settle(pilot)
        assert app.screen is screen and screen.step_filter.agents == frozenset({first_agent})


async def test_library_find_then_down_then_enter_opens_at_once(dataset_dir: Path) -> None:
    app = WhenproApp(str(dataset_dir), cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        library = app.screen
        table = library.query_one(TraceTable)
        await pilot.press("/", *"team", "down")  # from the find box into the list
        await pilot.pause()
        assert app.focused is table
        assert table.current.id == "team-2"  # down moved past the first match
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen) and app.screen.trace.id == "team-2"
        await pilot.press("q")
        await settle(pilot)
        await pilot.press("/", *"team-3", "enter")  # enter in the find box: to the list
        await pilot.pause()
        assert app.focused is table and table.current.id == "team-3"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen) and app.screen.trace.id == "team-3"


# --------------------------------------------------------------------------- step list columns


def list_rows(app) -> list[str]:
    steps = app.screen.query_one(StepList)
    return [strip.text for strip in (steps.render_row(i, steps.size.width) for i in range(steps.row_count))]


async def test_kind_column_fits_the_longest_kind() -> None:
    """``final_answer`` is shown whole (it was cut to ``final_answe``), at 80 and 200
    columns; a list made narrow abbreviates kinds by their first word, never mid-word."""
    for size in ((80, 24), (200, 60)):
        app = WhenproApp(str(TEAM), cursor_blink=False)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            rows = list_rows(app)
            assert "final_answer" in rows[-1], rows[-1]
            assert "action" in rows[2] and "assistant" in rows[4]
    app = WhenproApp(str(TEAM), cursor_blink=False)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        await pilot.press(*"<<<<<")  # the list at 20% of the width
        await settle(pilot)
        last = list_rows(app)[-1]
        assert "final_answe" not in last and ("final " in last or "fin…" in last), last


# --------------------------------------------------------------------------- resize


WORDS = 150


def long_step_trace_file(tmp_path: Path) -> Path:
    from whenpro_core.formats.native import write_trace
    from whenpro_core.trace.model import Step, Trace

    words = " ".join(f"word{i:03d}" for i in range(WORDS))  # one long paragraph
    return write_trace(
        Trace(
            id="wrap",
            steps=[
                Step(index=0, coord="0", agent="a", content=words),
                Step(index=1, coord="1", agent="b", content="short"),
            ],
        ),
        tmp_path / "wrap.json",
    )


def body_lines(app) -> list[str]:
    from whenpro_tui.widgets.step_detail import StepBody

    return app.screen.query_one(StepBody).plain_text().splitlines()


async def test_step_text_rewraps_when_the_terminal_is_resized(tmp_path: Path) -> None:
    """The detail pane re-wraps at the new width at once, on screen (it kept the old
    wrap, cut at the pane's new edge, until another step was selected)."""
    from whenpro_tui.widgets.step_detail import StepBody

    app = WhenproApp(str(long_step_trace_file(tmp_path)), cursor_blink=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        body = app.screen.query_one(StepBody)
        for width, height in ((150, 50), (120, 50), (100, 50), (200, 50)):
            await pilot.resize_terminal(width, height)
            await settle(pilot)
            region = body.scrollable_content_region.width
            assert max(len(ln.rstrip()) for ln in body_lines(app)) <= region, (width, region)
            shown = screen_text(app)
            missing = [f"word{i:03d}" for i in range(WORDS) if f"word{i:03d}" not in shown]
            assert not missing, (width, missing[:5], shown)


async def test_diff_screen_step_text_rewraps_on_resize(tmp_path: Path) -> None:
    """The diff screen reuses StepBody: its panes follow a resize too."""
    from textual.app import App

    from whenpro_tui.widgets.step_detail import StepBody

    class BodyApp(App):
        def compose(self):  # one StepBody filling the screen, as the diff panes do
            yield StepBody(id="b")

    app = BodyApp()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        body = app.screen.query_one(StepBody)
        body.show(" ".join(f"w{i:03d}" for i in range(200)))
        await pilot.pause()
        for width in (70, 150, 100):
            await pilot.resize_terminal(width, 30)
            await settle(pilot)
            region = body.scrollable_content_region.width
            longest = max(len(ln.rstrip()) for ln in body.plain_text().splitlines())
            assert region - 6 < longest <= region, (width, region, longest)
            shown = screen_text(app)
            assert all(f"w{i:03d}" in shown for i in range(200)), (width, shown)


async def test_search_typed_at_once_goes_to_the_prompt() -> None:
    """'/query' typed fast or pasted on the trace screen: the keys behind '/' reach the
    screen before the prompt is up; they go into the prompt (the q used to quit)."""
    from tests.test_tui_library import burst
    from whenpro_tui.screens.prompt import PromptScreen

    app = WhenproApp(str(TEAM), cursor_blink=False)
    async with app.run_test(size=(140, 36)) as pilot:
        await settle(pilot)
        screen = app.screen
        burst(app, "/quota")
        await settle(pilot)
        assert app.is_running and isinstance(app.screen, PromptScreen)
        assert app.screen.query_one("#search-input").value == "quota"
        await pilot.press("escape")
        await pilot.pause()
        burst(app, ":3")
        await settle(pilot)
        assert app.screen.query_one("#goto-input").value == "3"
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen and screen.steps.step_index == 3


async def test_the_library_help_lists_the_filter_dialog_keys(dataset_dir: Path) -> None:
    """Keys that only work in a dialog are in the help of the screen that opens it."""
    app = WhenproApp(str(dataset_dir), cursor_blink=False)
    async with app.run_test(size=(170, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, LibraryScreen)
        await pilot.press("?")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        dialogs = {name: {a.description: a.keys for a in keys} for name, keys in app.screen.dialog_actions}
        assert dialogs == {"Filter dialog (f)": {"Apply": "a", "Clear all": "c", "Cancel": "esc"}}
        assert "Filter dialog (f)" in screen_text(app)
