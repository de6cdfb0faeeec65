"""The trace, library and results screens at 80x24 (a designed layout: the step list,
the whole verdict with where it is kept, the columns that matter) and at 200x50, on
small made-up data. Update with ``--snapshot-update`` after checking the pictures."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_data import write_dataset
from tests.conftest import settle, team_trace
from tests.test_tui_results import quiet
from whenpro_core.attribution.verdicts import save_verdict
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import Attribution, Outcome
from whenpro_tui.app import WhenproApp

SIZES = {"80x24": (80, 24), "200x50": (200, 50)}


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from tmp_path so paths on screen are short and stable."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("size", SIZES)
def test_trace_screen_with_a_verdict(snap_compare, in_tmp: Path, size: str) -> None:
    path = write_trace(team_trace(n_extra=12), in_tmp / "team.json")
    save_verdict(
        load_trace(path),
        Attribution(
            protocol="all-at-once",
            model="openai:gpt-4.1",
            agent="coder",
            step="3",
            mode="R.3",
            reason=(
                "The coder adds 8 dollars where the task says 8 percent. Every later step builds "
                "on that total, and the planner reports it unchecked. A third sentence that a "
                "short screen leaves out whole rather than cutting it in the middle."
            ),
            confidence=0.85,
        ),
    )
    app = WhenproApp("team.json", cursor_blink=False, show_labels=True)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("3", "j")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_library_screen(snap_compare, in_tmp: Path, size: str) -> None:
    folder = in_tmp / "runs"
    folder.mkdir()
    for i, (outcome, final) in enumerate(
        [(Outcome.failure, "21.50"), (Outcome.success, "14.58"), (Outcome.unknown, None)], start=1
    ):
        t = team_trace(f"ag-{i * 5}", n_extra=i)
        t.outcome, t.final_answer = outcome, final
        write_trace(t, folder / f"ag-{i * 5}.json")
    app = WhenproApp("runs", cursor_blink=False)

    # a dataset opens sorted by id, natural order: ag-5, ag-10, ag-15
    assert snap_compare(app, terminal_size=SIZES[size], run_before=settle)


@pytest.mark.parametrize("size", SIZES)
def test_results_screen(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: str) -> None:
    data = write_dataset(tmp_path)
    bench_command(str(data), BenchOptions(out=tmp_path / "r.jsonl", both=True, report=False), console=quiet())
    monkeypatch.chdir(tmp_path)
    app = WhenproApp("r.jsonl", cursor_blink=False)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("l", "j")
        await pilot.wait_for_scheduled_animations()  # the table scrolls to the cursor
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)
