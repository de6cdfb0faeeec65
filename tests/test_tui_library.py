"""The library screen driven with Pilot: streamed rows, error rows for bad files,
facet and text filters with the live count, opening traces, and [/] between them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import screen_text, settle, team_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import TraceSummary
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.library import LibraryScreen
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.trace_table import TraceTable


def make_app(target, **kw) -> WhenproApp:
    return WhenproApp(str(target), cursor_blink=False, **kw)


def notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def open_library(pilot) -> LibraryScreen:
    await settle(pilot)
    assert isinstance(pilot.app.screen, LibraryScreen)
    return pilot.app.screen


async def test_dataset_lists_traces_and_error_rows(dataset_dir: Path) -> None:
    app = make_app(dataset_dir)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_library(pilot)
        table = screen.query_one(TraceTable)
        ids = [r.id for r in table.rows if r.error is None]
        assert ids == ["team-1", "team-2", "team-3"]
        errors = [r.error for r in table.rows if r.error is not None]
        assert len(errors) == 2
        assert any("binary" in e for e in errors)
        assert any("truncated" in e for e in errors)
        text = screen_text(app)
        assert "5 of 5 rows (3 traces, 2 failed to import)" in text
        assert "✗" in text
        # enter on an error row explains instead of crashing
        bad = next(i for i, r in enumerate(table.rows) if r.error)
        table.move_cursor(table.shown.index(bad))
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, LibraryScreen)
        assert any("binary" in n or "truncated" in n for n in notes(app))


async def test_facet_and_text_filters_update_the_count(dataset_dir: Path) -> None:
    app = make_app(dataset_dir)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_library(pilot)
        table = screen.query_one(TraceTable)
        await pilot.press("f")
        await pilot.pause()
        picker = app.screen
        assert "mode" not in picker.facets  # a GT label: hidden with labels
        picker.query_one("#facet-benchmark").select("gaia")
        await pilot.press("a")
        await pilot.pause()
        assert [table.rows[i].id for i in table.shown] == ["team-2", "team-3"]
        assert "2 of 5 rows" in screen_text(app)
        await pilot.press("/")
        await pilot.press(*"TEAM-3")
        await pilot.pause()
        assert [table.rows[i].id for i in table.shown] == ["team-3"]
        assert "1 of 5 rows" in screen_text(app)
        await pilot.press("escape", "c")
        await pilot.pause()
        assert len(table.shown) == 5
        # free text finds error rows by their message
        await pilot.press("/")
        await pilot.press(*"binary")
        await pilot.pause()
        assert [table.rows[i].error is not None for i in table.shown] == [True]


async def test_facet_picker_shows_ticks_without_colour(dataset_dir: Path) -> None:
    app = make_app(dataset_dir)
    async with app.run_test(size=(120, 30)) as pilot:
        await open_library(pilot)
        await pilot.press("f")
        await pilot.pause()
        text = screen_text(app)
        assert "nothing ticked = all" in text and "✓" not in text and "▐X▌" not in text
        await pilot.press("space")
        await pilot.pause()
        ticked = [line for line in screen_text(app).splitlines() if "✓" in line]
        first = app.screen.facets[next(iter(app.screen.facets))][0][0]
        assert len(ticked) == 1 and first in ticked[0]
        await pilot.press("space")  # unticked again: a blank box
        await pilot.pause()
        assert "✓" not in screen_text(app)


async def test_mode_facet_and_gt_column_only_with_labels(dataset_dir: Path) -> None:
    app = make_app(dataset_dir)
    async with app.run_test(size=(120, 30)) as pilot:
        await open_library(pilot)
        assert "R.3" not in screen_text(app)
        await pilot.press("t")
        await pilot.pause()
        assert "3/R.3" in screen_text(app)
        await pilot.press("f")
        await pilot.pause()
        assert app.screen.facets["mode"] == [("R.3", 3)]


async def test_ids_that_carry_the_failure_mode_are_masked_while_labels_are_hidden(tmp_path: Path) -> None:
    for i, mode in enumerate(("R.3", "PL.1")):
        write_trace(team_trace(f"run{i}__{mode}__3"), tmp_path / f"t{i}.json")
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await open_library(pilot)
        text = screen_text(app)
        assert "run0__‹mode›__‹step›" in text and "run1__‹mode›__‹step›" in text
        assert "R.3" not in text and "PL.1" not in text
        library = app.screen
        await pilot.press("/")
        await pilot.press(*"PL.1")  # find cannot probe what the screen hides
        await pilot.pause()
        assert library.table.shown == [] and "0 of 2 traces" in screen_text(app)
        await pilot.press("escape", "t")
        await pilot.pause()
        assert "run1__PL.1__3" in screen_text(app)
        assert [library.table.rows[i].id for i in library.table.shown] == ["run1__PL.1__3"]


async def test_open_trace_and_switch_with_brackets(dataset_dir: Path) -> None:
    app = make_app(dataset_dir)
    async with app.run_test(size=(120, 30)) as pilot:
        library = await open_library(pilot)
        table = library.query_one(TraceTable)
        # sorted by id in natural order, the two files that failed to import last
        assert [table.rows[i].id for i in table.shown][:3] == ["team-1", "team-2", "team-3"]
        assert all(table.rows[i].error is not None for i in table.shown[3:])
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TraceScreen)
        assert screen.trace.id == "team-1"
        assert "trace 1/3" in screen_text(app)
        await pilot.press("]")
        await settle(pilot)
        assert screen.trace.id == "team-2"
        await pilot.press("]")
        await settle(pilot)
        assert screen.trace.id == "team-3"
        await pilot.press("q")
        await settle(pilot)
        assert app.screen is library
        assert table.current is not None and table.current.id == "team-3"


def burst(app, keys: str) -> None:
    """Keys arriving all at once, as from a terminal (Pilot.press waits after each key)."""
    from textual import events

    names = {"]": "right_square_bracket", "[": "left_square_bracket", "/": "slash", ":": "colon"}
    for key in keys:
        event = events.Key(names.get(key, key), key)
        event.set_sender(app)
        app._driver.send_message(event)


async def test_a_burst_of_brackets_moves_one_trace_per_press(tmp_path: Path) -> None:
    from tests.conftest import team_trace
    from whenpro_core.formats.native import write_trace

    for i in range(1, 9):
        write_trace(team_trace(f"team-{i}", n_extra=40 * i), tmp_path / f"team-{i}.json")
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await open_library(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TraceScreen) and screen.trace.id == "team-1"
        burst(app, "]]]]]")  # presses arrive while traces load
        await settle(pilot)
        assert screen.trace.id == "team-6" and "trace 6/8" in screen_text(app)
        burst(app, "[[[]")
        await settle(pilot)
        assert screen.trace.id == "team-4"


async def test_text_typed_at_once_after_slash_goes_to_the_find_box(dataset_dir: Path) -> None:
    """'/query' pasted or typed fast: every character lands in the find box (the q used
    to quit the app; the t toggled labels)."""
    app = make_app(dataset_dir)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_library(pilot)
        burst(app, "/qtoe")
        await settle(pilot)
        assert app.is_running and app.screen is screen
        assert screen.query_one("#lib-text").value == "qtoe"
        assert not screen.show_labels


async def test_ten_thousand_rows_filter_and_scroll() -> None:
    rows = [
        TraceSummary(
            id=f"t{i:05d}",
            path=f"/data/t{i}.json",
            framework=("a", "b", "c")[i % 3],
            benchmark="gaia" if i % 2 else "math",
            modality="text",
            step_count=i % 50,
        )
        for i in range(10_000)
    ]
    app = make_app("/data")
    async with app.run_test(size=(100, 30)) as pilot:
        app.push_screen(LibraryScreen("/data", rows=rows))
        await pilot.pause()
        screen = app.screen
        table = screen.query_one(TraceTable)
        assert table.row_count == 10_000
        assert "10,000 of 10,000 traces" in screen_text(app)
        await pilot.press("G")
        assert table.current.id == "t09999"
        assert "t09999" in screen_text(app)
        await pilot.press("/")
        await pilot.press(*"t0999")
        await pilot.pause()
        assert "10 of 10,000 traces" in screen_text(app)


async def test_long_ids_use_the_width_and_cut_with_an_ellipsis() -> None:
    long_id = "magentic-one__simpleqa_verified__R.1__simpleqav_0094__20260407_184133"
    rows = [
        TraceSummary(
            id=long_id,
            path="/data/a.json",
            framework="magentic-one",
            benchmark="simpleqa_verified",
            modality="text",
            step_count=8,
        )
    ]
    app = make_app("/data")
    async with app.run_test(size=(200, 20)) as pilot:
        app.push_screen(LibraryScreen("/data", rows=rows))
        await settle(pilot)
        text = screen_text(app)
        shown = long_id.replace("R.1", "‹mode›")  # labels hidden: the id's mode is masked
        assert shown in text and "simpleqa_verified" in text  # wide: nothing cut
        header = next(line for line in text.splitlines() if line.strip().startswith("id▲ "))
        row = next(line for line in text.splitlines() if shown in line)
        assert header.index("framework") == row.index("magentic-one ")  # titles aligned
        await pilot.resize_terminal(80, 20)
        await settle(pilot)
        text = screen_text(app)
        row = next(line for line in text.splitlines() if "magentic-one__" in line)
        # narrow: the id is cut, and benchmark and modality give way to the task column
        assert shown not in row and "…" in row and "simpleqa_verified" not in row
        header = next(line for line in text.splitlines() if line.strip().startswith("id▲ "))
        assert header.index("framework") == row.index("magentic-one ", 5)


@pytest.mark.real_traces
async def test_real_who_and_when_folder(whowhen: Path) -> None:
    app = make_app(whowhen / "Hand-Crafted")
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_library(pilot)
        table = screen.query_one(TraceTable)
        n = len(list((whowhen / "Hand-Crafted").glob("*.json")))
        assert len(table.rows) == n
        assert all(r.framework == "magentic-one" for r in table.rows)
        assert f"{n} of {n} traces" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        assert app.screen.trace.id == "whowhen-hc-1"


@pytest.mark.real_traces
async def test_real_glob_mixing_subsets(whowhen: Path) -> None:
    pattern = str(whowhen / "*" / "1*.json")
    app = make_app(pattern)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_library(pilot)
        table = screen.query_one(TraceTable)
        frameworks = {r.framework for r in table.rows}
        assert frameworks == {"magentic-one", "captainagent"}
        await pilot.press("f")
        await pilot.pause()
        app.screen.query_one("#facet-framework").select("magentic-one")
        await pilot.press("a")
        await pilot.pause()
        assert {table.rows[i].framework for i in table.shown} == {"magentic-one"}


async def test_a_named_pipe_in_a_folder_is_an_error_row_and_the_walk_ends(tmp_path: Path) -> None:
    import os

    write_trace(team_trace("team-1"), tmp_path / "a.json")
    os.mkfifo(tmp_path / "pipe.json")
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        library = await open_library(pilot)
        text = screen_text(app)
        assert "2 of 2 rows (1 trace, 1 failed to import)" in text and "scanning" not in text
        [bad] = [r for r in library.query_one(TraceTable).rows if r.error]
        assert "not a regular file (a named pipe)" in bad.error and "✗" in text
