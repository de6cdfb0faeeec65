"""Snapshot tests of the main screens at a fixed size, on small made-up native traces
(never real traces, so the pictures stay stable). Update with
``pytest tests/test_tui_snapshots.py --snapshot-update`` after checking the diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import settle, team_trace
from whenpro_core.formats.native import write_trace
from whenpro_tui.app import WhenproApp

SIZE = (100, 30)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from tmp_path so paths on screen are short and stable."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_library_screen(snap_compare, dataset_dir: Path, in_tmp: Path) -> None:
    app = WhenproApp("dataset", cursor_blink=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_trace_screen(snap_compare, in_tmp: Path) -> None:
    write_trace(team_trace(), in_tmp / "team.json")
    app = WhenproApp("team.json", cursor_blink=False)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("j", "j")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_trace_screen_with_labels_wide(snap_compare, in_tmp: Path) -> None:
    write_trace(team_trace(), in_tmp / "team.json")
    app = WhenproApp("team.json", cursor_blink=False, show_labels=True)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("T")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(140, 34), run_before=run_before)


def test_help_screen(snap_compare, in_tmp: Path) -> None:
    write_trace(team_trace(), in_tmp / "team.json")
    app = WhenproApp("team.json", cursor_blink=False)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("?")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 50), run_before=run_before)
