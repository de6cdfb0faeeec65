"""Untrusted trace content in the TUI: terminal escape sequences never reach the
terminal, markup-like text stays literal, and a 10 MB step is capped and expandable."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import screen_text, settle, terminal_output
from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import Agent, Step, Task, ToolCall, Trace
from whenpro_core.views.stepview import fold
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.library import LibraryScreen
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.step_detail import LEVELS, StepDetail
from whenpro_tui.widgets.step_list import StepList

EVIL = (
    "A\x1b[2J\x1b[H clear \x1b]52;c;SGVsbG8=\x07 osc52 "
    "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ \x9b31m c1 \x07bell \u202ebidi Z"
)
# Textual's own output: cursor moves and colours only.
OWN_SEQUENCES = re.compile(r"\x1b\[[0-9;]*[mH]")


def evil_trace() -> Trace:
    return Trace(
        id="evil\x1b[2Jtrace",
        framework="x\x1b[31m",
        agents=[Agent(id="ag\x1b]0;title\x07ent")],
        task=Task(query="task " + EVIL, answer="gold " + EVIL),
        steps=[
            Step(
                index=0,
                coord="0",
                agent="ag\x1b]0;title\x07ent",
                kind="assistant",
                content=EVIL + "\n[bold red]not markup[/bold red] [link=http://x]y[/link]",
                tool_calls=[ToolCall(name="run\x1b[2J", arguments={"cmd": EVIL})],
                observation="obs " + EVIL,
                error="err " + EVIL,
                hidden={"is_injected": EVIL},
            )
        ],
        final_answer="final " + EVIL,
    )


def leaked(output: str) -> list[str]:
    rest = OWN_SEQUENCES.sub("", output)
    return [repr(ch) for ch in ("\x1b", "\x07", "\x9b", "\u202e") if ch in rest]


async def test_escape_sequences_do_not_reach_the_terminal(tmp_path: Path) -> None:
    path = write_trace(evil_trace(), tmp_path / "evil.json")
    app = WhenproApp(str(path), cursor_blink=False, show_labels=True)
    async with app.run_test(size=(150, 50), notifications=True) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        out = terminal_output(app)
        assert not leaked(out), leaked(out)
        text = screen_text(app)
        assert "␛[2J" in text  # shown, inert
        assert "[bold red]not markup[/bold red]" in text
        assert "[link=http://x]y[/link]" in text
        # every pane, including copy and the help screen, stays clean
        await pilot.press("y", "?")
        await pilot.pause()
        assert not leaked(terminal_output(app))
        assert "\x1b" not in app.clipboard and "␛" in app.clipboard


async def test_escape_sequences_in_library_rows_and_errors(tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    folder.mkdir()
    write_trace(evil_trace(), folder / "evil.json")
    (folder / "bad\x1b[2J.json").write_text("{ not json")
    app = WhenproApp(str(folder), cursor_blink=False)
    async with app.run_test(size=(150, 30), notifications=True) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, LibraryScreen)
        assert "evil␛[2Jtrace" in screen_text(app)
        await pilot.press("enter")  # the error row sorts first: its message is a toast
        await settle(pilot)
        assert not leaked(terminal_output(app))


def huge_trace(n_chars: int = 10_000_000) -> Trace:
    line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ [bold]x[/bold]\n"
    body = line * (n_chars // len(line)) + "NEEDLE-AT-THE-END"
    return Trace(
        id="huge",
        steps=[
            Step(index=0, coord="0", agent="a", content="short first step"),
            Step(index=1, coord="1", agent="b", content=body),
            Step(index=2, coord="2", agent="a", content="one more"),
        ],
    )


async def test_ten_megabyte_step_is_capped_and_expands_in_chunks(tmp_path: Path) -> None:
    path = write_trace(huge_trace(), tmp_path / "huge.json", indent=False)
    app = WhenproApp(str(path), cursor_blink=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TraceScreen)
        steps = screen.query_one(StepList)
        assert len(steps.row_model(1).summary) <= 160
        body = screen.trace.steps[1].content
        notes = [fold(body, max_lines=n, max_chars=c).note() for n, c in LEVELS]
        assert notes[-1].endswith("256.0 K chars of 10.0 M chars shown")
        await pilot.press("j")
        await pilot.pause()
        text = screen_text(app)
        assert notes[0] in text and "of 10.0 M chars shown" in text
        assert "o: show more" in text
        for note in notes[1:]:
            await pilot.press("o")
            await pilot.pause()
            assert note in screen_text(app)
        await pilot.press("o")
        await pilot.pause()
        assert any("Display cap reached" in str(n.message) for n in app._notifications)
        assert not screen.query_one(StepDetail).complete
        await pilot.press("O")
        await pilot.pause()
        assert notes[0] in screen_text(app)
        # search reaches the end of the huge step
        await pilot.press("/")
        await pilot.press(*"needle-at", "enter")
        await settle(pilot)
        assert screen.search is not None and screen.search.steps == [1]
        # copying caps the text and says how big the step is
        await pilot.press("y")
        await pilot.pause()
        assert len(app.clipboard) < 1_100_000 and "10.0 M chars in total" in app.clipboard
        toast = str(list(app._notifications)[-1].message)
        assert "Copied only the first 1.0 M chars of step 1" in toast and "e opens it all" in toast


async def test_html_like_tags_in_markdown_stay_visible(tmp_path: Path) -> None:
    """Agents write <answer>…</answer>, <tool_call> and <think>; Markdown must not eat them
    as HTML (the EVA system prompt of the Who&When Pro samples lost its answer format)."""
    content = (
        "## Answer format\nWhen ready, emit EXACTLY: <answer>X</answer> where X is a letter.\n\n"
        "<think>\nhidden reasoning\n</think>\n\n- never emit <tool_call> and <answer> together"
    )
    trace = Trace(
        id="tags", framework="x", steps=[Step(index=0, coord="0", agent="agent", kind="assistant", content=content)]
    )
    path = write_trace(trace, tmp_path / "tags.json")
    app = WhenproApp(str(path), cursor_blink=False)
    async with app.run_test(size=(150, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "\u2502 Answer format" in text or "▕ Answer format" in text  # a Markdown heading
        assert "<answer>X</answer>" in text
        assert "<think>" in text and "hidden reasoning" in text and "</think>" in text
        assert "<tool_call> and <answer> together" in text


async def test_copy_and_editor_survive_a_lone_surrogate(tmp_path: Path, monkeypatch) -> None:
    """ "\\ud800" is valid JSON and decodes to a lone surrogate, which UTF-8 cannot encode:
    y (OSC 52 copy) and e (editor temp file) crashed the app."""
    path = tmp_path / "surrogate.json"
    trace = Trace(
        id="sur",
        framework="x",
        steps=[Step(index=0, coord="0", agent="agent", kind="assistant", content="Session X time")],
    )
    write_trace(trace, path)
    path.write_text(path.read_text().replace("Session X time", "Session \\ud800 time"))
    monkeypatch.setenv("EDITOR", "true")
    app = WhenproApp(str(path), cursor_blink=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await settle(pilot)
        assert "Session ⟨U+D800⟩ time" in screen_text(app)
        await pilot.press("y")
        await pilot.pause()
        assert "Session ⟨U+D800⟩ time" in app.clipboard
        await pilot.press("e")
        await pilot.pause()
        assert app.is_running and app.return_code is None
