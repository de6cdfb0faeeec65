"""The small defects of issue 32, item 6, one test each: what ``m`` says on a trace without
images, ``diff --text`` on framing steps and on text that differs only in a trailing newline,
``:151`` typed quickly, ``6j`` in the library, ``j``/``k`` in the filter dialog, plain text
shown as it is (not joined as Markdown), the sessions library's date and project columns
(local time, zone shown), thinking blocks in the HTML export."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SAMPLES, settle
from whenpro_tui.app import WhenproApp

TEAM = SAMPLES / "team_text" / "trace.json"


def burst(app, *keys: str) -> None:
    """Send ``keys`` to the app in one go, as a fast typist or a paste does (``pilot.press``
    lets the app handle each key before the next)."""
    from textual import events

    for key in keys:
        char = {"colon": ":", "slash": "/"}.get(key, key if len(key) == 1 else None)
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)


def _notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_m_on_a_trace_without_images_does_not_blame_an_option_never_given() -> None:
    app = WhenproApp(str(TEAM), cursor_blink=False)  # --images left at auto
    async with app.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        assert "This step has no images or frames." in _notes(app)
        assert not any("--images off" in n for n in _notes(app))
    off = WhenproApp(str(TEAM), cursor_blink=False, images="off")
    async with off.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        assert "Images are off (--images off)." in _notes(off)


def _long_trace(tmp_path: Path, n: int = 200) -> Path:
    from whenpro_core.formats.native import write_trace
    from whenpro_core.trace.model import Step, Task, Trace

    steps = [Step(index=i, coord=str(i), agent="a", kind="action", content=f"step {i}") for i in range(n)]
    return write_trace(Trace(id="long", framework="custom", task=Task(query="q"), steps=steps), tmp_path / "long.json")


async def test_a_step_number_typed_fast_after_colon_keeps_every_digit(tmp_path: Path) -> None:
    from whenpro_tui.widgets.step_list import StepList

    app = WhenproApp(str(_long_trace(tmp_path)), cursor_blink=False)
    async with app.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        burst(app, "colon", "1", "5", "1", "enter")  # no pause between the keys
        await settle(pilot)
        assert app.screen.query_one(StepList).step_index == 151


async def test_a_key_typed_between_the_prompts_compose_and_mount_is_kept() -> None:
    """The window the ``:151`` race fell in: the prompt's input is built with the text typed
    so far, a digit arrives (the trace screen adds it to ``value``, the prompt is not mounted
    yet), then the prompt mounts: the digit must be in the input."""
    from textual.widgets import Input

    from whenpro_tui.screens.prompt import PromptScreen

    class LateKey(PromptScreen):
        def compose(self):
            yield from super().compose()
            self.value += "5"  # typed while mounting

    app = WhenproApp(str(TEAM), cursor_blink=False)
    async with app.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        prompt = LateKey(":", value="1")
        app.push_screen(prompt)
        await pilot.pause()
        assert prompt.query_one(Input).value == "15"


async def test_a_count_moves_the_library_cursor_that_many_rows() -> None:
    from whenpro_tui.screens.library import LibraryScreen

    app = WhenproApp(str(SAMPLES / "arith_team"), cursor_blink=False)
    async with app.run_test(size=(140, 34)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LibraryScreen) and screen.table.row_count == 7
        await pilot.press("6", "j")
        assert screen.table.cursor == 6
        await pilot.press("3", "k")
        assert screen.table.cursor == 3
        await pilot.press("2", "G")
        assert screen.table.cursor == 1
        await pilot.press("j")
        assert screen.table.cursor == 2  # no count: one row


async def test_the_filter_dialog_moves_with_j_and_k() -> None:
    from textual.widgets import SelectionList

    from whenpro_tui.screens.picker import FacetPicker

    app = WhenproApp(str(SAMPLES / "arith_team"), cursor_blink=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, FacetPicker)
        lists = list(app.screen.query(SelectionList))
        first = next(sl for sl in lists if sl.has_focus)
        start = first.highlighted or 0
        await pilot.press("j")
        assert first.highlighted == start + 1 or app.focused is not first
        await pilot.press("k")
        assert app.focused is first and first.highlighted == start


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    from whenpro_core.formats.native import write_trace
    from whenpro_core.trace.model import Step, Task, ToolCall, Trace

    def run(name: str, framing: str, text: str, args: object) -> Path:
        steps = [
            Step(index=0, coord=None, agent="system", kind="system", content=framing),
            Step(
                index=1,
                coord="1",
                agent="a",
                kind="action",
                content=text,
                tool_calls=[ToolCall(name="calc", arguments=args)],
            ),  # fmt: skip
        ]
        trace = Trace(id=name, framework="custom", task=Task(query="q"), steps=steps)
        return write_trace(trace, tmp_path / f"{name}.json")

    return (
        run("a", "You are a helpful agent.", "add the numbers", {"x": 1}),
        run("b", "You are a careful agent.", "add the numbers\n", {"x": "1"}),
    )


def test_diff_text_names_a_framing_step_and_says_what_differs_behind_the_same_text(tmp_path: Path) -> None:
    from tests.support.cli import run_whenpro

    a, b = _pair(tmp_path)
    out = run_whenpro("diff", "--text", str(a), str(b), columns=200)  # rows as wide as COLUMNS: fix it
    assert out.returncode == 0, out.stderr
    first = next(line for line in out.stdout.splitlines() if line.startswith("first divergence"))
    assert "A step —" not in first and "A step #0 / B step #0" in first
    row = next(line for line in out.stdout.splitlines() if "add the numbers" in line)
    assert "≠" in row and "same text; differs in: content whitespace, tool calls" in row


def test_markdown_keeps_the_line_breaks_of_agent_text() -> None:
    """A SWE-agent system prompt with a list is shown as Markdown; its lines must not be
    joined into one paragraph."""
    from rich.console import Console

    from whenpro_core.views.stepview import content_blocks
    from whenpro_tui.widgets.blocks import render_blocks

    prompt = "SETTING: You are an autonomous programmer.\nYou work in a shell.\nCOMMANDS:\n- open <path>\n- goto <line>"
    blocks = content_blocks(prompt)
    assert [b.kind for b in blocks] == ["markdown"]
    console = Console(width=100, record=True, color_system=None)
    console.print(render_blocks(blocks))
    lines = [line.strip() for line in console.export_text().splitlines() if line.strip()]
    assert "SETTING: You are an autonomous programmer." in lines
    assert "You work in a shell." in lines and "COMMANDS:" in lines


def test_the_exports_include_the_thinking_the_tui_shows(tmp_path: Path) -> None:
    from tests.support.cli import run_whenpro
    from whenpro_core.formats.native import write_trace
    from whenpro_core.trace.model import Step, Task, Trace

    step = Step(index=0, coord="0", agent="claude", kind="assistant", content="The answer is 4.")
    step.meta["reasoning"] = "Two plus two: count on from two, three, four."
    path = write_trace(Trace(id="t", framework="custom", task=Task(query="2+2?"), steps=[step]), tmp_path / "t.json")
    out = run_whenpro("export", str(path), "--html", "-", "--markdown", str(tmp_path / "t.md"))
    assert out.returncode == 0, out.stderr
    assert "Reasoning" in out.stdout and "count on from two, three, four." in out.stdout
    assert "count on from two, three, four." in (tmp_path / "t.md").read_text()
