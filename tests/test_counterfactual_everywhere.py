"""The offline counterfactual wherever ``attribute`` has it (issue 32, item 5): on a built
dataset, ``bench --protocol counterfactual`` replays each trace from its
``provenance.json`` as ``attribute`` does (it used to fail every item: "not a run of a
built-in system"); the TUI's attribute dialog offers it without a model on such a trace;
a failed item shows in the results screen's ``failed`` column and its drill-down."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import screen_text, settle
from tests.support.cli import run_whenpro
from tests.support.waiting import until
from whenpro_core.bench.explore import cell_outcomes, columns, load_results, table_rows


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A small built dataset of the arith team (its traces hold no env block: it is in
    the dataset's provenance.json)."""
    root = tmp_path_factory.mktemp("cfbuild")
    ran = run_whenpro("run", "arith_team", "--n", "4", "--seed", "100", "--out", str(root / "runs"), timeout=600)
    assert ran.returncode == 0, ran.stderr
    made = run_whenpro("build", str(root / "runs"), "--out", str(root / "ds"), timeout=600)
    assert made.returncode == 0, made.stderr
    assert (root / "ds" / "provenance.json").is_file()
    return root / "ds"


def _released(built: Path) -> list[Path]:
    files = sorted(built.glob("data_release/**/*.json"))
    assert files
    return files


@pytest.fixture(scope="module")
def results(built: Path, tmp_path_factory) -> Path:
    """Bench results: the dataset (replayed offline), then a trace copied out of its
    dataset (no provenance: a failed item), in one file."""
    out = tmp_path_factory.mktemp("cfres") / "r.jsonl"
    ran = run_whenpro("bench", str(built), "--protocol", "counterfactual", "--out", str(out), "--no-report")
    assert ran.returncode == 0, ran.stderr
    lonely = out.parent / "lonely.json"
    shutil.copy(_released(built)[0], lonely)
    run_whenpro("bench", str(lonely), "--protocol", "counterfactual", "--out", str(out), "--no-report")
    return out


def test_bench_counterfactual_replays_a_built_dataset_offline(built: Path, results: Path) -> None:
    records = [json.loads(line) for line in results.read_text().splitlines()]
    in_dataset = [r for r in records if str(built) in r["ref"]]
    assert len(in_dataset) == len(_released(built))
    assert all(r["error"] is None and r["prediction"]["step"] for r in in_dataset), [r["error"] for r in in_dataset]
    assert sum(r["score"]["step"] for r in in_dataset) >= 1  # the replays find decisive steps


def test_the_results_table_has_a_failed_column_that_drills_down_to_the_failed_item(results: Path) -> None:
    loaded = load_results([results])
    failed = next(c for c in columns(loaded.tolerance) if c.key == "failed")
    row = next(r for r in table_rows(loaded, "modality"))
    assert row.cell(failed) == "1"
    listed = cell_outcomes(loaded, row, failed)
    assert len(listed) == 1 and "cannot replay" in (listed[0].record.error or "")


async def test_results_screen_shows_the_failed_count(results: Path) -> None:
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.results import ResultsScreen

    app = WhenproApp(str(results), cursor_blink=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ResultsScreen)
        text = screen_text(app)
        assert "failed" in text


async def test_the_attribute_dialog_offers_the_counterfactual_offline_on_a_built_trace(built: Path) -> None:
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.attribute_picker import AttributePicker
    from whenpro_tui.screens.trace import TraceScreen

    app = WhenproApp(str(_released(built)[0]), cursor_blink=False, save_verdicts=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TraceScreen)
        await pilot.press("a")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, AttributePicker)
        while picker.protocol != "counterfactual":
            await pilot.press("down")
        await pilot.pause()
        assert "needs no model here" in screen_text(app)
        await pilot.press("enter")
        await until(
            pilot,
            lambda: bool(screen.attribution.verdicts),
            "the counterfactual verdict",
            detail=lambda: screen_text(app),
        )
        verdict = screen.attribution.verdicts[-1]
        assert verdict.protocol == "counterfactual" and verdict.step is not None
