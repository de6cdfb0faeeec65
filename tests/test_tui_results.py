"""The results screen driven with Pilot, on results that ``whenpro bench --protocol
heuristic`` wrote for the real Who&When Hand-Crafted traces: the leaderboard shows
``aggregate()``'s numbers, breakdowns switch by key, a cell drills down to exactly the
traces behind it, and a trace opens with its prediction set against the ground truth.
A snapshot of the screen on made-up results keeps its layout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rich.console import Console
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from bench_data import team_trace, write_dataset
from tests.conftest import WHOWHEN, screen_text, settle
from whenpro_core.bench.aggregate import aggregate
from whenpro_core.bench.records import read_records
from whenpro_core.bench.report import breakdown_rows, leaderboard_rows
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.formats.native import write_trace
from whenpro_core.views.search import find_coord
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.result_trace import ResultTraceScreen
from whenpro_tui.screens.results import LEAD, ResultsScreen
from whenpro_tui.screens.results_cell import CellScreen
from whenpro_tui.starts import results_start
from whenpro_tui.widgets.outcome_list import OutcomeList
from whenpro_tui.widgets.prediction_bar import PredictionBar

HAND = WHOWHEN / "Hand-Crafted"
#: Metric columns the results table and the report's leaderboard share, in order.
SHARED = ["n", "Agent", "Step", "Error F1", "Joint", "agt", "stp", "stp±1"]


def quiet() -> Console:
    return Console(file=open("/dev/null", "w"), width=120)


@pytest.fixture(scope="module")
def hand_results(tmp_path_factory) -> Path:
    """``whenpro bench --protocol heuristic`` over Hand-Crafted (gold), plus the first 6
    traces without gold (a second leaderboard row), into one results file."""
    if not HAND.is_dir():
        pytest.skip(f"Who&When Hand-Crafted traces not present at {HAND}")
    out = tmp_path_factory.mktemp("results") / "r.jsonl"
    bench_command(str(HAND), BenchOptions(protocols="heuristic", out=out, report=False), console=quiet())
    bench_command(
        str(HAND), BenchOptions(protocols="heuristic", gold=False, limit=6, out=out, report=False), console=quiet()
    )
    return out


def table_text(app) -> list[list[str]]:
    table = app.screen.query_one(DataTable)
    return [
        [table.get_cell_at(Coordinate(r, c)).plain for c in range(len(table.columns))] for r in range(table.row_count)
    ]


def columns_of(app) -> list[str]:
    table = app.screen.query_one(DataTable)
    return [str(col.label.plain if hasattr(col.label, "plain") else col.label) for col in table.columns.values()]


async def open_results(pilot) -> ResultsScreen:
    await settle(pilot)
    assert isinstance(pilot.app.screen, ResultsScreen)
    return pilot.app.screen


async def test_view_sniffs_a_results_file_and_shows_aggregates_numbers(hand_results):
    records, _ = read_records(hand_results)
    report = aggregate(records)
    expected = leaderboard_rows(report)
    app = WhenproApp(str(hand_results), cursor_blink=False)
    async with app.run_test(size=(140, 30)) as pilot:
        await open_results(pilot)
        cols = columns_of(app)
        idx = [cols.index(c) for c in SHARED]
        rows = table_text(app)
        assert len(rows) == len(expected) == 2
        label = ""
        for got, want in zip(rows, expected, strict=False):
            label = got[0] or label  # the setting is printed once per group
            assert [label, got[1]] == want[:2]
            assert [got[i] for i in idx] == want[2:]
        assert [r[0] for r in rows] == ["heuristic · gold", "heuristic · no-gold"]
        text = screen_text(app)
        assert "r.jsonl" in text and "47 records · 2 settings" in text

        # breakdowns by key: 3 = benchmark, b cycles, 1 is the leaderboard again
        await pilot.press("3")
        _headers, want = breakdown_rows(report, "benchmark")
        got = table_text(app)
        label = ""
        for g, w in zip(got, want, strict=False):
            label = g[0] or label
            assert [label, g[1], *[g[i] for i in idx]] == w
        assert "benchmark" in columns_of(app)[1]
        await pilot.press("b")
        assert "gold mode" in columns_of(app)[1] and table_text(app)[0][1] == "(none)"
        await pilot.press("b")
        assert {r[1] for r in table_text(app)} <= {"<4K", "4-8K", "8-12K", ">12K"}
        await pilot.press("B", "B", "B")
        assert "framework" in columns_of(app)[1] and table_text(app)[0][1] == "magentic-one"
        await pilot.press("1")
        assert len(table_text(app)) == 2


async def test_a_cell_drills_down_to_the_traces_behind_it(hand_results):
    records, _ = read_records(hand_results)
    gold = [r for r in records if r.with_gold]
    app = WhenproApp(str(hand_results), cursor_blink=False)
    async with app.run_test(size=(140, 36)) as pilot:
        screen = await open_results(pilot)
        await pilot.press("3")  # by benchmark
        table = screen.query_one(DataTable)
        row = next(i for i, r in enumerate(screen.rows) if r.value == "gaia" and r.group[2])
        col = next(i for i, c in enumerate(screen.cols) if c.key == "step")
        table.move_cursor(row=row, column=LEAD + col)
        await pilot.press("enter")
        await settle(pilot)
        cell = app.screen
        assert isinstance(cell, CellScreen)
        behind = [r for r in gold if r.trace.benchmark == "gaia"]
        listed = [o.record for o in cell.outcomes]
        assert sorted(r.trace.id for r in listed) == sorted(r.trace.id for r in behind)
        right = [o for o in cell.outcomes if o.correct]
        assert {o.record.trace.id for o in right} == {r.trace.id for r in behind if r.score.step}
        share = screen.rows[row].metrics.step_acc
        assert len(right) == round(share * len(behind))
        text = screen_text(app)
        assert f"{len(right)} of {len(behind)} correct" in text
        assert "✓" in text and "✗" in text and "ground truth" in text and "prediction" in text
        # x: only the wrong ones, then only the right ones
        await pilot.press("x")
        ol = cell.query_one(OutcomeList)
        assert len(ol.shown) == len(behind) - len(right)
        assert all(cell.outcomes[i].correct is False for i in ol.shown)
        await pilot.press("x")
        assert len(ol.shown) == len(right)
        await pilot.press("x", "q")
        assert app.screen is screen


async def test_a_trace_opens_with_its_prediction_against_the_ground_truth(hand_results):
    app = WhenproApp(str(hand_results), cursor_blink=False)
    async with app.run_test(size=(150, 40)) as pilot:
        screen = await open_results(pilot)
        table = screen.query_one(DataTable)
        col = next(i for i, c in enumerate(screen.cols) if c.key == "step_acc")
        table.move_cursor(row=0, column=LEAD + col)
        await pilot.press("enter")
        await settle(pilot)
        cell = app.screen
        await pilot.press("x")  # the wrong ones: a prediction that differs from the GT
        first = cell.outcomes[cell.query_one(OutcomeList).shown[0]].record
        await pilot.press("enter")
        await settle(pilot)
        trace_screen = app.screen
        assert isinstance(trace_screen, ResultTraceScreen)
        assert trace_screen.trace.id == first.trace.id
        bar = trace_screen.query_one(PredictionBar)
        assert bar.record is first
        text = screen_text(app)
        pred = first.prediction
        assert f"step {pred.step} (GT {first.trace.gt_step}" in text
        assert f"agent {pred.agent} (GT {first.trace.gt_agent})" in text
        assert "✗ step" in text
        # the predicted step is marked and `p` goes there; T goes to the GT step
        predicted = find_coord(trace_screen.trace, pred.step)
        assert trace_screen.steps.attributed == frozenset({predicted})
        assert trace_screen.steps.step_index == predicted
        await pilot.press("T")
        assert trace_screen.steps.step_index == find_coord(trace_screen.trace, first.trace.gt_step)
        await pilot.press("p")
        assert trace_screen.steps.step_index == predicted
        # ] moves to the next trace of the cell, and the bar follows
        await pilot.press("]")
        await settle(pilot)
        second = cell.outcomes[cell.query_one(OutcomeList).shown[1]].record
        assert trace_screen.trace.id == second.trace.id
        assert trace_screen.query_one(PredictionBar).record is second
        await pilot.press("q")
        assert app.screen is cell and cell.query_one(OutcomeList).cursor == 1


@pytest.fixture
def moved(tmp_path) -> tuple[Path, Path]:
    """Results over two Hand-Crafted traces copied to data/, then data/ moved away."""
    if not HAND.is_dir():
        pytest.skip(f"Who&When Hand-Crafted traces not present at {HAND}")
    data = tmp_path / "data"
    data.mkdir()
    for name in ("1.json", "2.json"):
        shutil.copy(HAND / name, data / name)
    out = tmp_path / "r.jsonl"
    bench_command(str(data), BenchOptions(out=out, report=False), console=quiet())
    data.rename(tmp_path / "moved")
    return out, tmp_path / "moved"


async def test_traces_open_from_the_dataset_when_the_results_point_elsewhere(moved):
    out, moved = moved
    app = WhenproApp("", cursor_blink=False, start=results_start([str(out)], dataset=str(moved)))
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_results(pilot)
        assert screen.by_id is not None and len(screen.by_id) == 2
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ResultTraceScreen)
        assert app.screen.trace.source.path.startswith(str(moved))


async def test_a_file_that_is_not_results_is_refused_before_the_tui(tmp_path):
    from whenpro_core.errors import TraceFormatError

    (tmp_path / "t.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    with pytest.raises(TraceFormatError, match="not a whenpro bench results file"):
        results_start([str(tmp_path / "t.jsonl")])


@pytest.fixture
def small_results(tmp_path) -> Path:
    """``whenpro bench --protocol heuristic`` over the made-up bench dataset."""
    out = tmp_path / "r.jsonl"
    bench_command(str(write_dataset(tmp_path)), BenchOptions(out=out, report=False), console=quiet())
    return out


async def test_a_repaint_before_the_table_settles_leaves_no_cut_cells(small_results):
    """A breakdown key refills the table. DataTable widens auto-width columns to their
    cells only when it is next idle, and caches what it draws without the widths in the
    key: a repaint that came first (a loaded machine) kept every cell cut at its header's
    width for good. Here the repaint comes first every time."""
    app = WhenproApp(str(small_results), cursor_blink=False)
    async with app.run_test(size=(150, 40)) as pilot:
        screen = await open_results(pilot)
        table = screen.query_one(DataTable)
        screen.action_dimension(1)  # by framework
        for y in range(table.size.height):  # what a repaint before the table's idle draws
            table.render_line(y)
        await settle(pilot)
        text = screen_text(app)
        lead = {cell for row in table_text(app) for cell in row[:LEAD] if cell}
        assert lead and all(cell in text for cell in lead), (sorted(lead), text)


@pytest.fixture
def numbered_results(tmp_path) -> Path:
    """Heuristic results for four runs whose ids differ by a number: run-1, -2, -10, -21."""
    data = tmp_path / "data"
    for n in (10, 2, 1, 21):
        trace = team_trace(n, wrong=str(n * 12 + 2), gt_step="2", gt_agent="solver", mode="R.3")
        trace.id = f"run-{n}"
        write_trace(trace, data / trace.framework / f"{trace.id}.json")
    out = tmp_path / "r.jsonl"
    bench_command(str(data), BenchOptions(out=out, report=False), console=quiet())
    return out


async def test_a_cell_lists_its_traces_in_natural_order(numbered_results):
    """Trace ids with numbers list as a person counts: run-2 before run-10."""
    app = WhenproApp(str(numbered_results), cursor_blink=False)
    async with app.run_test(size=(140, 30)) as pilot:
        await open_results(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, CellScreen)
        text = screen_text(app)
        where = [text.find(f"run-{n} ") for n in (1, 2, 10, 21)]
        assert all(w >= 0 for w in where) and where == sorted(where), text


# --------------------------------------------------------------------------- snapshot


def test_results_screen_snapshot(snap_compare, tmp_path: Path, monkeypatch) -> None:
    data = write_dataset(tmp_path)
    bench_command(str(data), BenchOptions(out=tmp_path / "r.jsonl", both=True, report=False), console=quiet())
    monkeypatch.chdir(tmp_path)
    app = WhenproApp("r.jsonl", cursor_blink=False)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("right", "down")
        await pilot.wait_for_scheduled_animations()  # the table scrolls to the cursor
        await settle(pilot)

    assert snap_compare(app, terminal_size=(110, 24), run_before=run_before)


def test_results_cell_snapshot(snap_compare, tmp_path: Path, monkeypatch) -> None:
    data = write_dataset(tmp_path)
    bench_command(str(data), BenchOptions(out=tmp_path / "r.jsonl", report=False), console=quiet())
    monkeypatch.chdir(tmp_path)
    app = WhenproApp("r.jsonl", cursor_blink=False)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("2", "enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(110, 24), run_before=run_before)
