"""The library as a place to find the failed run: outcome, task, final answer against
gold (✓/✗), steps and agents columns; sorting by any column (``s``/``S``, ids in natural
order); the outcome facet; a JSONL release row filled in once its trace was opened."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import screen_text, settle, team_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.library.listing import facet_counts, natural_key, sort_rows, walk_rows
from whenpro_core.trace.model import Outcome, TraceSummary
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.library import LibraryScreen
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.trace_table import TraceTable


def test_natural_order_puts_ag_2_before_ag_10() -> None:
    ids = ["ag-10", "ag-2", "ag-1", "Ag-3", "b"]
    assert sorted(ids, key=natural_key) == ["ag-1", "ag-2", "Ag-3", "ag-10", "b"]
    rows = [TraceSummary(id=i, path=f"{i}.json") for i in ids]
    assert [rows[i].id for i in sort_rows(rows, list(range(5)), "id")] == ["ag-1", "ag-2", "Ag-3", "ag-10", "b"]


def test_sort_keeps_rows_without_a_value_and_errors_last() -> None:
    rows = [
        TraceSummary(id="a", path="a", step_count=None),
        TraceSummary(id="b", path="b", step_count=9),
        TraceSummary(id="c", path="c", error="bad"),
        TraceSummary(id="d", path="d", step_count=3),
    ]
    assert sort_rows(rows, [0, 1, 2, 3], "steps") == [3, 1, 0, 2]
    assert sort_rows(rows, [0, 1, 2, 3], "steps", reverse=True) == [1, 3, 0, 2]


def _mixed_folder(tmp_path: Path) -> Path:
    """ag-2 (failure, wrong answer), ag-10 (success, right answer), ag-1 (unknown, no gold)."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for name, outcome, final, gold in [
        ("ag-2", Outcome.failure, "21.50", "14.58"),
        ("ag-10", Outcome.success, "14.58", "14.58"),
        ("ag-1", Outcome.unknown, "x", None),
    ]:
        t = team_trace(name, n_extra=int(name.split("-")[1]))
        t.outcome, t.final_answer, t.task.answer = outcome, final, gold
        write_trace(t, folder / f"{name}.json")
    return folder


def test_listing_rows_carry_outcome_task_answers_and_agents(tmp_path: Path) -> None:
    rows = {r.id: r for r in walk_rows(_mixed_folder(tmp_path))}
    assert rows["ag-2"].outcome == "failure" and rows["ag-10"].outcome == "success"
    assert rows["ag-2"].task and rows["ag-2"].task.startswith("Compute the total cost")
    assert (rows["ag-2"].final_answer, rows["ag-2"].gold, rows["ag-2"].agent_count) == ("21.50", "14.58", 4)
    assert dict(facet_counts(rows.values())["outcome"]) == {"failure": 1, "success": 1, "unknown": 1}


async def test_library_columns_sort_and_outcome_filter(tmp_path: Path) -> None:
    app = WhenproApp(str(_mixed_folder(tmp_path)), cursor_blink=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LibraryScreen)
        table = screen.query_one(TraceTable)
        text = screen_text(app)
        header = next(line for line in text.splitlines() if line.lstrip().startswith("id"))
        for title in ("out", "=", "steps", "ag", "task"):
            assert title in header.split()
        line = {ln.split()[0]: ln for ln in text.splitlines() if ln.strip().startswith("ag-")}
        assert " ok " in line["ag-10"] and " ✓ " in line["ag-10"] and "Compute the total" in line["ag-10"]
        assert " fail " in line["ag-2"] and " ✗ " in line["ag-2"]
        assert " ? " in line["ag-1"] and " · " in line["ag-1"]
        # a dataset opens sorted by id, natural order
        assert [table.rows[i].id for i in table.shown] == ["ag-1", "ag-2", "ag-10"]
        assert "id▲" in screen_text(app)
        await pilot.press("S")
        await pilot.pause()
        assert [table.rows[i].id for i in table.shown] == ["ag-10", "ag-2", "ag-1"]
        await pilot.press("s")  # by outcome: failures first
        await pilot.pause()
        assert [table.rows[i].outcome for i in table.shown] == ["failure", "unknown", "success"]
        await pilot.press("s", "s", "s")  # task, answer, steps
        await pilot.pause()
        assert table.sort_column == "steps"
        assert [table.rows[i].step_count for i in table.shown] == [8, 9, 17]
        # filter by outcome (the facet picker's choice, as the f dialog returns it)
        screen.row_filter = screen.row_filter.__class__({"outcome": frozenset({"success"})})
        screen._refilter()
        await pilot.pause()
        assert [table.rows[i].id for i in table.shown] == ["ag-10"]


async def test_jsonl_release_row_is_filled_once_opened(real_traces: Path) -> None:
    release = real_traces / "who-when-pro-jsonl"
    app = WhenproApp(str(release), cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(TraceTable)
        first = table.rows[table.shown[0]]
        assert first.step_count is None and first.task is None and first.outcome == "failure"
        await pilot.press("enter")
        await settle(pilot)
        trace_screen = app.screen
        assert isinstance(trace_screen, TraceScreen)
        n_steps = len(trace_screen.trace.steps)
        await pilot.press("q")
        await settle(pilot)
        row = table.rows[table.shown[0]]
        assert row.step_count == n_steps and row.task and row.agent_count
        assert f"{n_steps:,}" in screen_text(app).splitlines()[4]


async def test_a_dataset_opens_in_natural_id_order_whatever_its_file_names(tmp_path: Path) -> None:
    """Files listed a, b, c hold task_10, task_2, task_1: the library opens task_1, task_2,
    task_10 (the id sorted ▲); ``s`` moves on to the next column, listing order comes last."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for name, tid in (("a", "task_10"), ("b", "task_2"), ("c", "task_1")):
        write_trace(team_trace(tid), folder / f"{name}.json")
    app = WhenproApp(str(folder), cursor_blink=False)
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(TraceTable)
        assert [table.rows[i].id for i in table.shown] == ["task_1", "task_2", "task_10"]
        assert "id▲" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen) and app.screen.trace.id == "task_1"
