"""Snapshot tests of the media parts of the trace screen at a fixed size, on the
sample traces of this repository (never real traces, so the pictures stay stable):
the detail pane with an image thumbnail, the keyframe strip of the sample video, and
the full-size modal. Half-cell renderer, 10×20 px cells. Update with
``pytest tests/test_tui_media_snapshots.py --snapshot-update`` after checking the diff."""

from __future__ import annotations

import pytest

from tests.conftest import SAMPLES, settle
from whenpro_tui import imaging
from whenpro_tui.app import WhenproApp
from whenpro_tui.widgets.step_list import StepList

SIZE = (100, 30)


@pytest.fixture(autouse=True)
def fixed_cells() -> None:
    imaging.fix_cell_size(10, 20)


def at_step(index: int, *keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.screen.query_one(StepList).move_cursor(index)
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run_before


def test_detail_pane_with_an_image(snap_compare) -> None:
    app = WhenproApp(str(SAMPLES / "bar_chart" / "trace.json"), cursor_blink=False, images="halfcell")
    assert snap_compare(app, terminal_size=SIZE, run_before=at_step(0))


def test_keyframe_strip_of_the_sample_video(snap_compare) -> None:
    app = WhenproApp(str(SAMPLES / "video_scene_qa" / "trace.json"), cursor_blink=False, images="halfcell")
    assert snap_compare(app, terminal_size=SIZE, run_before=at_step(1, "M", "right", "right"))


def test_full_size_modal(snap_compare) -> None:
    app = WhenproApp(str(SAMPLES / "bar_chart" / "trace.json"), cursor_blink=False, images="halfcell")
    assert snap_compare(app, terminal_size=SIZE, run_before=at_step(0, "m"))
