"""A large native trace opens on its first steps while the whole file loads (issue 18:
first paint of a 100,000-step trace): the partial read in whenpro_core, and the trace
screen under Pilot showing the preview, then the whole trace in its place; a file that
fails past its first steps is reported as any file that fails to open."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.conftest import screen_text, settle, until
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import is_previewable, read_native_prefix, write_trace
from whenpro_core.trace.model import Agent, GroundTruth, Outcome, Step, Trace
from whenpro_tui import app as app_module
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.prompt import PromptScreen
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.step_list import StepList

STEPS = 3000


def long_trace(n: int = STEPS) -> Trace:
    agents = ["planner", "coder", "tester"]
    steps = [
        Step(index=i, coord=str(i), agent=agents[i % 3], kind="assistant", content=f"step {i}: " + "words " * (i % 40))
        for i in range(n)
    ]
    return Trace(
        id="long-run",
        framework="team",
        agents=[Agent(id=a) for a in agents],
        steps=steps,
        ground_truth=GroundTruth(agent="coder", step="4", mode="R.1"),
        outcome=Outcome.failure,
        final_answer="42",
    )


def shown_steps(app: WhenproApp) -> int:
    """Rows of the trace screen's step list once it is up, else 0."""
    lists = app.screen.query(StepList) if isinstance(app.screen, TraceScreen) else []
    return lists[0].row_count if lists else 0


@pytest.fixture
def long_file(tmp_path: Path) -> Path:
    return write_trace(long_trace(), tmp_path / "long.json")


@pytest.fixture
def small_preview(monkeypatch) -> None:
    """Files from 64 KiB up open with a preview of their first 64 KiB."""
    monkeypatch.setattr("whenpro_core.formats.native.PREVIEW_MIN_BYTES", 64 << 10)
    monkeypatch.setattr("whenpro_core.formats.native.PREVIEW_BYTES", 64 << 10)


def test_the_first_steps_of_a_large_file_read_from_its_head(long_file: Path) -> None:
    whole = load_trace(long_file)
    prefix = read_native_prefix(long_file, min_bytes=0, head_bytes=64 << 10)
    assert prefix is not None and 10 < len(prefix.steps) < STEPS
    assert prefix.steps == whole.steps[: len(prefix.steps)]  # the step cut at 64 KiB is left out
    assert (prefix.id, prefix.agents) == (whole.id, whole.agents)
    assert prefix.ground_truth is None and prefix.final_answer is None  # written after the steps
    assert prefix.source.path == str(long_file)


def test_no_preview_for_small_files_other_formats_or_a_bad_head(long_file: Path, tmp_path: Path) -> None:
    assert not is_previewable(long_file) and read_native_prefix(long_file) is None  # under 32 MB
    other = tmp_path / "ww.json"
    other.write_text(json.dumps({"history": [{"role": "a", "content": "x" * 100_000}], "question": "q"}))
    assert read_native_prefix(other, min_bytes=0) is None
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "whenpro.trace/1", "id": 5, "steps": [' + '{"index": 0},' * 10_000)
    assert is_previewable(bad, min_bytes=0) and read_native_prefix(bad, min_bytes=0) is None
    assert read_native_prefix(tmp_path / "missing.json", min_bytes=0) is None
    assert read_native_prefix(tmp_path, min_bytes=0) is None


async def test_the_trace_screen_shows_the_first_steps_then_the_whole_trace(
    long_file: Path, small_preview: None, monkeypatch
) -> None:
    """While the whole file loads (held here until the preview has been looked at) the
    screen shows the first steps and says so; moving works, searching waits; then the
    whole trace takes their place on the same screen, the cursor where it was."""
    release = threading.Event()
    real_open = app_module.open_target

    def held_open(target: str, **kw):
        release.wait(60)
        return real_open(target, **kw)

    monkeypatch.setattr(app_module, "open_target", held_open)
    app = WhenproApp(str(long_file), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await until(pilot, lambda: shown_steps(app) and app.screen, "the preview")
        steps = screen.query_one(StepList)
        assert screen.partial and 10 < steps.row_count < STEPS
        assert "loading the rest of the file" in screen_text(app)
        await pilot.press("j", "j", "j")
        assert steps.step_index == 3
        await pilot.press("slash", "t")  # search and labels need the whole trace
        assert app.screen is screen and not isinstance(app.screen, PromptScreen) and not app.show_labels
        release.set()
        await settle(pilot)
        assert app.screen is screen and not screen.partial
        assert steps.row_count == STEPS and steps.step_index == 3
        assert screen.trace.ground_truth is not None and "loading the rest" not in screen_text(app)
        await pilot.press("G")
        assert steps.step_index == STEPS - 1


async def test_a_file_that_fails_past_its_first_steps_is_reported(
    long_file: Path, small_preview: None, tmp_path: Path
) -> None:
    """The preview goes, the error line is shown (and kept for the shell), q exits 2."""
    doc = json.loads(long_file.read_text())
    doc["steps"][STEPS - 10]["agent"] = 5
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(doc))
    app = WhenproApp(str(broken), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert not isinstance(app.screen, TraceScreen)
        assert app.failure is not None and f"$.steps[{STEPS - 10}].agent" in app.failure
        assert "Could not open" in screen_text(app)
        await pilot.press("q")
    assert app.return_code == 2
