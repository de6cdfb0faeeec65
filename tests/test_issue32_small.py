"""The small defects of issue 32, item 6, one test each: what ``m`` says on a trace without
images, ``diff --text`` on framing steps and on text that differs only in a trailing newline,
``:151`` typed quickly, ``6j`` in the library, ``j``/``k`` in the filter dialog, plain text
shown as it is (not joined as Markdown), the sessions library's date and project columns
(local time, zone shown), thinking blocks in the HTML export."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SAMPLES, settle
from whenpro_tui.app import WhenproApp

TEAM = SAMPLES / "team_text" / "trace.json"


def _notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_m_on_a_trace_without_images_does_not_blame_an_option_never_given() -> None:
    app = WhenproApp(str(TEAM), cursor_blink=False)  # --images left at auto
    async with app.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        assert "This step has no images or frames." in _notes(app)
        assert not any("--images off" in n for n in _notes(app))
    off = WhenproApp(str(TEAM), cursor_blink=False, images="off")
    async with off.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        assert "Images are off (--images off)." in _notes(off)
