"""Toasts that name a file keep its name visible (issue 32): a long path is shown whole
(wrapped) or cut in its middle, never cut at the end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, screen_text, settle
from whenpro_core.safety.textsafe import elide_middle
from whenpro_tui.app import WhenproApp

DEEP = "a-rather-long-folder-name-for-projects/" * 3


def test_elide_middle_keeps_the_file_name() -> None:
    path = "/home/someone/" + DEEP + "trace_export_0001_final.html"
    short = elide_middle(path, 60)
    assert len(short) == 60 and short.endswith("trace_export_0001_final.html") and short.startswith("/home/")
    assert "…" in short
    assert elide_middle("/tmp/a.html", 60) == "/tmp/a.html"
    name = "x" * 100 + ".html"  # a name longer than the room: its end (the extension) stays
    assert elide_middle(name, 40).endswith(".html") and len(elide_middle(name, 40)) == 40


@pytest.mark.parametrize("size", [(80, 24), (120, 30)])
async def test_export_toasts_show_the_file_name_of_a_long_path(tmp_path: Path, size: tuple[int, int]) -> None:
    source = tmp_path / "trace.json"
    shutil.copy(SAMPLES / "team_text" / "trace.json", source)
    folder = tmp_path / DEEP
    folder.mkdir(parents=True)
    out = folder / "the_exported_page_of_this_run.html"
    app = WhenproApp(str(source), cursor_blink=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        for attempt in ("wrote", "exists"):
            await pilot.press("x")
            await pilot.pause()
            app.screen.query_one("Input").value = str(out)
            await pilot.press("enter")
            await settle(pilot)
            text = "".join(screen_text(app).split())  # toast lines joined: wrapped text reads whole
            assert "the_exported_page_of_this_run.html" in text, (attempt, screen_text(app))
        assert out.exists()


async def test_a_name_the_file_system_refuses_is_named_by_both_ends(tmp_path: Path) -> None:
    """A file name too long for the file system: the toast used to keep only the first 80
    characters when the check for an existing file failed; every toast keeps the start
    and the end of the path."""
    source = tmp_path / "trace.json"
    shutil.copy(SAMPLES / "team_text" / "trace.json", source)
    out = str(tmp_path / DEEP / ("n" * 300 + "_END.html"))
    app = WhenproApp(str(source), cursor_blink=False)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await pilot.pause()
        app.screen.query_one("Input").value = out
        await pilot.press("enter")
        await settle(pilot)
        messages = [str(n.message) for n in app._notifications]
        assert any("_END.html" in m and str(tmp_path)[:20] in m for m in messages), messages
        assert "_END.html" in "".join(screen_text(app).split())
