"""Snapshot tests of the verdict panel (heuristic verdicts, deterministic: the seconds
are fixed before saving, and the panel is reopened from the sidecar file). Update with
``pytest tests/test_tui_attribute_snapshots.py --snapshot-update`` after checking the diff."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES, settle
from whenpro_core.attribution.heuristic import attribute_heuristic
from whenpro_core.attribution.verdicts import save_verdict
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Usage
from whenpro_tui.app import WhenproApp


@pytest.fixture
def saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample trace in tmp with its heuristic verdict saved beside it."""
    monkeypatch.chdir(tmp_path)
    copy = tmp_path / "trace.json"
    shutil.copy(SAMPLES / "team_text" / "trace.json", copy)
    trace = load_trace(copy)
    verdict = attribute_heuristic(trace)
    verdict.usage = Usage(seconds=0.01)
    save_verdict(trace, verdict)
    return copy


def test_verdict_panel_with_labels(snap_compare, saved: Path) -> None:
    app = WhenproApp("trace.json", cursor_blink=False, show_labels=True)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("T")  # to the GT step, which the verdict names too
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 34), run_before=run_before)


def test_two_verdicts_narrow(snap_compare, saved: Path) -> None:
    trace = load_trace(saved)
    other = attribute_heuristic(trace).model_copy(
        update={
            "protocol": "binary-search",
            "model": "openai:gpt-4.1",
            "agent": "verifier",
            "step": "4",
            "mode": "V.2",
            "reason": "Accepted 155 minutes without checking the breaks.",
            "confidence": None,
            "usage": Usage(
                calls=4, input_tokens=5200, output_tokens=90, cached_tokens=3100, cost_usd=0.0121, seconds=3.2
            ),
            "warnings": ["unclear half for steps 1–6; took the first half"],
        }
    )
    save_verdict(trace, other)
    app = WhenproApp("trace.json", cursor_blink=False)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("A", "A")  # hide, then verdict 1 of 2 (jumps to its step)
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
