"""The verdict panel widget (:class:`~whenpro_tui.widgets.verdict_panel.VerdictPanel`) on
its own, driven through its two reactives as the trace screen's attribution controller
drives them: hidden with nothing to show, the verdict, a run's progress over the
verdict, the verdict again when the run ends; and its CSS (in the widget only) giving it
most of the detail pane on a short screen, half of it on a tall one."""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.app import App, ComposeResult
from textual.css.scalar import Unit

from conftest import SAMPLES, settle
from whenpro_core.attribution.heuristic import attribute_heuristic
from whenpro_core.attribution.interactive import ProgressView
from whenpro_core.attribution.request import AttributionRequest
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Usage
from whenpro_core.trace.taxonomy import Taxonomy
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.verdict_panel import AttributionRunning, VerdictPanel, VerdictShown


class PanelApp(App[None]):
    def compose(self) -> ComposeResult:
        yield VerdictPanel(id="d-verdict")


def _text(panel: VerdictPanel) -> str:
    return str(panel.content) if panel.display else ""


async def test_the_panel_shows_what_its_reactives_say() -> None:
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    verdict = attribute_heuristic(trace)
    shown = VerdictShown(trace, (verdict,), 0, Taxonomy.builtin(), show_labels=True, note="not saved (--no-save)")
    running = AttributionRunning(
        AttributionRequest("step-by-step", "openai:gpt-4.1"),
        ProgressView(2, frozenset({2}), "Is step 2 the decisive error?", 3),
        Usage(calls=2, input_tokens=1200, output_tokens=80, cost_usd=0.0031),
        seconds=1.5,
        frame=4,
        retry_note="429 from the server: retrying in 2 s",
    )
    app = PanelApp()
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.query_one(VerdictPanel)
        assert _text(panel) == ""  # nothing to show: hidden
        panel.verdict = shown
        await pilot.pause()
        text = _text(panel)
        assert "Verdict" in text and "heuristic" in text and f"step {verdict.step}" in text
        assert "✓" in text or "✗" in text  # labels shown: compared with the ground truth
        assert text.rstrip().endswith("not saved (--no-save)")
        verdict_text = text
        panel.running = running  # a run in flight covers the verdict
        await pilot.pause()
        text = _text(panel)
        assert "Attributing · step-by-step · openai:gpt-4.1" in text
        assert "Is step 2 the decisive error?  (call 3)" in text and "esc: cancel" in text
        assert "⟳ 429 from the server: retrying in 2 s" in text
        assert "2 calls · 1,280 tokens · $0.0031 · 1.50 s" in text
        panel.running = None  # the run ended: the verdict again
        await pilot.pause()
        assert _text(panel) == verdict_text
        panel.verdict = None
        await pilot.pause()
        assert _text(panel) == "" and not panel.display


async def test_the_panel_gets_most_of_a_short_detail_pane(tmp_path: Path) -> None:
    """80x24: up to 80% of the detail pane, scrolling; 120x40: up to half."""
    copy = tmp_path / "trace.json"
    shutil.copy(SAMPLES / "team_text" / "trace.json", copy)
    for size, most in (((80, 24), 80), ((120, 40), 50)):
        app = WhenproApp(str(copy), cursor_blink=False, save_verdicts=False)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, TraceScreen)
            panel = screen.query_one(VerdictPanel)
            assert not panel.display  # no verdict yet
            max_height = panel.styles.max_height
            # ``max-height: N%`` is kept as N of the container's height (Unit.HEIGHT)
            assert max_height is not None and (max_height.value, max_height.unit) == (most, Unit.HEIGHT)
            assert panel.styles.border_top[0] == "hkey"
