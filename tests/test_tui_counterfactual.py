"""The counterfactual protocol in the TUI, driven with Pilot on a built-in counterfactual
(offline): picked in the attribute dialog, each tested step shown as progress in the
step list, the verdict panel, then the diff screen of the fixing replay."""

from __future__ import annotations

from pathlib import Path

from conftest import settle
from test_replay import run_inject, seed_run
from test_tui_attribute import SIZE, opened, panel, pick, steps
from whenpro_core.attribution.protocols import PROTOCOLS
from whenpro_core.formats.native import write_trace
from whenpro_tui.app import WhenproApp
from whenpro_tui.messages import AttributionProgress
from whenpro_tui.screens.diff import DiffScreen


async def test_counterfactual_from_the_attribute_dialog_shows_each_replay_and_the_fixing_diff(tmp_path: Path) -> None:
    cf = run_inject(seed_run("arith_team", 1), 4, "R.3").counterfactual
    path = tmp_path / "cf.json"
    write_trace(cf, path)
    views = []

    def hook(message) -> None:
        if isinstance(message, AttributionProgress):
            views.append(message.view)

    app = WhenproApp(str(path), cursor_blink=False)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        screen = await opened(pilot)
        await pick(pilot, downs=PROTOCOLS.index("counterfactual"))
        await settle(pilot, rounds=6)
        # one progress event per tested step, each focusing that step; the last one fixed the run
        focus = [v.focus for v in views]  # in the heuristic's order; the earliest fixing step last
        assert focus[-1] == 4 and {1, 2, 3} <= set(focus)
        assert "needs no correction" in views[0].text and "replayed: fixed" in views[-1].text
        assert isinstance(app.screen, DiffScreen)
        assert app.screen.cf.final_answer == cf.task.answer and app.screen.cf.outcome.value == "success"
        assert app.screen.injected == 4
        await pilot.press("q")
        await settle(pilot)
        assert app.screen is screen
        assert "counterfactual · reference" in panel(app) and steps(app).attributed == {4}
