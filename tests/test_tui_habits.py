"""Habits of the terminal tools people already use (less, vim, lazygit), on the trace
and results screens: counts (``5j``), paging with ctrl+d/u/f/b and space, search that
opens empty, clears with escape and says when it wraps, a copy that says how it was sent
(with a clipboard tool or a file when OSC 52 may be dropped), and 80x24 as a designed
layout (the whole verdict with where it is kept, toasts at the top)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from textual.widgets import DataTable

from bench_data import write_dataset
from tests.conftest import screen_text, settle, team_trace
from tests.test_tui_results import quiet
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.formats.native import write_trace
from whenpro_core.safety.textsafe import whole_sentences
from whenpro_core.trace.model import Attribution
from whenpro_tui.app import WhenproApp
from whenpro_tui.commands import collect_bindings
from whenpro_tui.screens.trace import TraceScreen


def notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


@pytest.fixture
def long_file(tmp_path: Path) -> Path:
    """The team trace with 60 filler steps (67 steps)."""
    return write_trace(team_trace("long", n_extra=60), tmp_path / "long.json")


async def test_a_search_hit_the_fold_hides_is_pointed_to(tmp_path: Path) -> None:
    """A hit at the end of a 3,000-line step was counted, but the detail showed the first
    lines only, with nothing saying where the hit was."""
    trace = team_trace("long-step")
    trace.steps[2].content = "".join(f"line {n}: nothing to see\n" for n in range(3000)) + "THE_END_MARKER found"
    app = WhenproApp(str(write_trace(trace, tmp_path / "t.json")), cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("/", *"the_end_marker", "enter")
        await settle(pilot)
        text = screen_text(app)
        assert "/the_end_marker further down, line 3,001: THE_END_MARKER found" in text, text


async def test_counts_and_paging_move_the_step_cursor(long_file: Path) -> None:
    app = WhenproApp(str(long_file), cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TraceScreen)
        steps = screen.steps
        await pilot.press("5", "j")
        await pilot.pause()
        assert steps.cursor == 5
        await pilot.press("1", "2", "j", "3", "k")
        await pilot.pause()
        assert steps.cursor == 14
        await pilot.press("j")  # the count was used once
        await pilot.pause()
        assert steps.cursor == 15
        await pilot.press("3", "0", "G")  # 30G: row 30
        await pilot.pause()
        assert steps.cursor == 29
        page = max(1, steps.scrollable_content_region.height - 1)
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert steps.cursor == 29 + (page + 1) // 2
        await pilot.press("ctrl+u", "ctrl+f")
        await pilot.pause()
        assert steps.cursor == 29 + page
        await pilot.press("ctrl+b", "space")
        await pilot.pause()
        assert steps.cursor == 29 + page
        assert screen.levels == {}  # space pages; it no longer unfolds
        await pilot.press("2", "space")
        await pilot.pause()
        assert steps.cursor == min(66, 29 + 3 * page)
        await pilot.press("g", "4")  # a count being typed shows in the status line
        await pilot.pause()
        assert "count 4…" in screen_text(app)
        await pilot.press("escape")  # a key that does not use it drops it
        await pilot.press("j")
        await pilot.pause()
        assert steps.cursor == 1


async def test_search_opens_empty_clears_with_escape_and_says_when_it_wraps(team_file: Path) -> None:
    app = WhenproApp(str(team_file), cursor_blink=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("/", *"tax", "enter")
        await settle(pilot)
        assert screen.search is not None and screen.search.query == "tax"
        hits = screen.search.steps
        assert len(hits) >= 2
        # / opens empty; an empty enter runs nothing (the search stays as it was)
        await pilot.press("/")
        await pilot.pause()
        assert app.screen.query_one("Input").value == ""
        await pilot.press("enter")
        await settle(pilot)
        assert screen.search is not None and screen.search.steps == hits
        # n past the last hit wraps to the first and says so
        await pilot.press("G")
        await pilot.pause()
        before = len(notes(app))
        await pilot.press("n")
        await pilot.pause()
        assert screen.steps.step_index == hits[0]
        assert any("wrapped past the last hit" in n for n in notes(app)[before:])
        # escape clears the highlight
        assert screen.steps.matches
        await pilot.press("escape")
        await pilot.pause()
        assert screen.search is None and not screen.steps.matches
        assert app.is_running


def _fake_xclip(folder: Path) -> Path:
    """An ``xclip`` stand-in on PATH that stores what it is given."""
    folder.mkdir()
    tool = folder / "xclip"
    tool.write_text(f"#!/bin/sh\n/bin/cat > {folder / 'got.txt'}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return folder / "got.txt"


async def test_copy_says_how_it_was_sent_with_a_clipboard_tool(
    team_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = _fake_xclip(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    app = WhenproApp(str(team_file), cursor_blink=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("j", "j", "y")
        await pilot.pause()
        assert got.read_text().startswith("Step 2 | Agent: coder")
        assert any(n.startswith("Copied step 2") and "with xclip" in n for n in notes(app))


async def test_copy_without_a_tool_says_osc52_and_saves_a_file(
    team_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("TMUX", "/tmp/tmux-1/default,1,0")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    app = WhenproApp(str(team_file), cursor_blink=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("j", "j", "y")
        await pilot.pause()
        note = notes(app)[-1]
        assert "by OSC 52" in note and "set-clipboard on" in note and "saved to " in note
        saved = Path(note.split("saved to ")[1])
        assert saved.read_text() == app.clipboard


def test_whole_sentences_cut_after_a_sentence() -> None:
    reason = "Step 3 used 8 as a flat tax. The total is therefore wrong by 7.42 dollars. More."
    assert whole_sentences(reason, 60, more="…") == "Step 3 used 8 as a flat tax. …"
    assert whole_sentences(reason, 500) == reason
    assert whole_sentences("word " * 40, 22).endswith("word…")


async def test_80x24_shows_the_whole_verdict_and_where_it_is_kept(team_file: Path) -> None:
    reason = (
        "The coder added 8 dollars instead of 8 percent at step 3. Every later step "
        "builds on that total. The planner never checks it, and the final answer is "
        "21.50 instead of 14.58. A second long sentence keeps going well past what "
        "three lines at eighty columns can hold, so it must be left out whole."
    )
    app = WhenproApp(str(team_file), cursor_blink=False, show_labels=True)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.has_class("short") and screen.has_class("narrow")
        verdict = Attribution(
            protocol="all-at-once",
            model="openai:gpt-4.1",
            agent="coder",
            step="3",
            mode="R.3",
            reason=reason,
            confidence=0.8,
        )
        screen.attribution.verdicts = [verdict]
        screen.attribution.verdict_pos = 0
        screen.attribution.verdict_notes[id(verdict)] = "not saved (--no-save)"
        screen.attribution.show_panel()
        await pilot.press("3", "j")
        await settle(pilot)
        text = screen_text(app)
        assert "not saved (--no-save)" in text  # the saved/not-saved line is on screen
        assert "instead of 14.58. … (z: the whole reason)" in " ".join(text.split())
        assert "left out whole" not in text
        assert screen.steps.scrollable_content_region.height >= 6
        await pilot.press("z")  # zoomed: the whole reason
        await pilot.pause()
        assert "left out whole" in " ".join(screen_text(app).split())
        app.notify("a toast")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert any("a toast" in line for line in lines[:3])  # at the top, not over the detail


async def test_every_new_key_is_in_help_and_the_palette(team_file: Path) -> None:
    app = WhenproApp(str(team_file), cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        listed = {a.description: a.keys for a in collect_bindings(app.screen)}
        assert "^d" in listed["Half a page down"] and "^u" in listed["Half a page up"]
        assert "space" in listed["Page down"] and "^b" in listed["Page up"]
        assert "5G" in " ".join(listed)


@pytest.fixture
def results_file(tmp_path: Path) -> Path:
    """Heuristic benchmark results (with and without gold) on the small made-up dataset."""
    data = write_dataset(tmp_path)
    bench_command(str(data), BenchOptions(out=tmp_path / "r.jsonl", both=True, report=False), console=quiet())
    return tmp_path / "r.jsonl"


async def test_results_leaderboard_moves_with_hjkl(results_file: Path) -> None:
    app = WhenproApp(str(results_file), cursor_blink=False)
    async with app.run_test(size=(110, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        start = table.cursor_coordinate
        await pilot.press("l", "j")
        await pilot.pause()
        assert table.cursor_coordinate == (start.row + 1, start.column + 1)
        await pilot.press("h", "k")
        await pilot.pause()
        assert table.cursor_coordinate == start
