"""The attribute dialog's dry-run preview (issue 15, item 2), driven with Pilot: ``a``
opens the dialog, a protocol and a typed model are chosen, ``f2`` shows the first
request the protocol would send (inert, scrollable), nothing reaches a server, and
``esc`` returns to the dialog with the choice intact."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES, settle
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.attribute_picker import AttributePicker
from whenpro_tui.screens.request_preview import RequestPreview

SIZE = (120, 40)


@pytest.fixture
def sample_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "WHENPRO_MODEL"):
        monkeypatch.delenv(key, raising=False)  # a preview needs no key
    copy = tmp_path / "trace.json"
    shutil.copy(SAMPLES / "team_text" / "trace.json", copy)
    return copy


async def test_f2_previews_the_first_request_and_esc_returns(
    sample_copy: Path, llm_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)  # a call, if one were made, lands here
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, AttributePicker)
        await pilot.press("down", "down")  # heuristic -> all-at-once -> step-by-step
        assert picker.protocol == "step-by-step"
        picker.query_one("#ap-model-input").value = "openai:gpt-4.1"
        await pilot.press("f2")
        await settle(pilot)
        preview = app.screen
        assert isinstance(preview, RequestPreview), [str(n.message) for n in app._notifications]
        body = str(preview.query_one("#rp-body").content)
        assert body.startswith("=== request to openai:gpt-4.1")
        assert "--- system" in body and "--- user" in body and "=== later calls: each later call" in body
        scroll = preview.query_one("#rp-scroll")
        assert scroll.max_scroll_y > 0  # longer than the screen: it scrolls
        await pilot.press("pagedown")
        await settle(pilot)
        assert scroll.scroll_y > 0 or scroll.scroll_target_y > 0
        assert not llm_server.requests  # nothing was sent
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is picker and picker.protocol == "step-by-step"


async def test_f2_without_a_model_says_why(sample_copy: Path) -> None:
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("down")  # all-at-once, no model configured or typed
        await pilot.press("f2")
        await settle(pilot)
        assert isinstance(app.screen, AttributePicker)
        assert any("needs a model" in str(n.message) for n in app._notifications)
