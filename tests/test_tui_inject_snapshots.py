"""Snapshot tests of the injection dialog (wide and narrow) and of the diff screen, on a
copy of the sample seed ``arith_team-s1`` (R.3 at the solver's step 4). Update with
``pytest tests/test_tui_inject_snapshots.py --snapshot-update`` after checking the diff."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, settle
from tests.support.waiting import until
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.diff import DiffScreen


@pytest.fixture
def seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLES / "arith_team" / "arith_team-s1.json", tmp_path / "seed.json")
    return "seed.json"


async def _dialog_on_r3(pilot) -> None:
    await settle(pilot)
    await pilot.press(":", "4", "enter", "i")
    await settle(pilot)
    await pilot.press("down", "down")  # R.1 -> R.2 -> R.3
    await settle(pilot)


def test_inject_dialog(snap_compare, seed: str) -> None:
    assert snap_compare(WhenproApp(seed, cursor_blink=False), terminal_size=(130, 40), run_before=_dialog_on_r3)


def test_inject_dialog_narrow(snap_compare, seed: str) -> None:
    assert snap_compare(WhenproApp(seed, cursor_blink=False), terminal_size=(80, 24), run_before=_dialog_on_r3)


def test_diff_screen(snap_compare, seed: str) -> None:
    async def run_before(pilot) -> None:
        await _dialog_on_r3(pilot)
        await pilot.press("ctrl+r")
        await until(
            pilot,
            lambda: (
                isinstance(screen := pilot.app.screen, DiffScreen)
                and screen.diff is not None
                and "attributing" not in str(screen.attribution_text)
            ),
            "the diff and the attribution",
            between=lambda: settle(pilot, rounds=1),
        )
        await pilot.press("j")  # the clock step, changed by the injection
        await settle(pilot)

    assert snap_compare(WhenproApp(seed, cursor_blink=False), terminal_size=(130, 40), run_before=run_before)
