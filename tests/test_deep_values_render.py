"""Values as deep as the importers accept are shown by every renderer (issue 33, item 4).

The readers take JSON nested up to :data:`whenpro_core.storage.jsonio.MAX_DEPTH` levels
(1,024); tool-call arguments (or a step's content holding JSON) nested about 1,000 levels
used to give ``export`` a RecursionError traceback, ``diff`` a pydantic ValueError and
the TUI a blank screen at 100% CPU. Renderers pretty-print the first
:data:`~whenpro_core.storage.jsonio.SHOWN_DEPTH` levels and show what is deeper as its
compact JSON text: nothing is lost, nothing recurses past that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import screen_text, settle, team_trace
from tests.support.cli import run_whenpro
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.storage import jsonio
from whenpro_core.views.stepview import content_blocks, pretty_arguments
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.trace import TraceScreen

LEVELS = 1_000


def nested(levels: int) -> Any:
    """Alternating lists and objects ``levels`` deep around ``{"leaf": "DEEPEST-LEAF"}``."""
    value: Any = {"leaf": "DEEPEST-LEAF"}
    for i in range(levels - 1):
        value = {"k": value} if i % 2 else [value]
    return value


@pytest.fixture
def deep_file(tmp_path: Path) -> Path:
    trace = team_trace()
    trace.steps[2].tool_calls[0].arguments = {"deep": nested(LEVELS)}
    trace.steps[3].content = jsonio.dumps(nested(LEVELS)).decode()  # content that is JSON
    path = write_trace(trace, tmp_path / "deep.json")
    assert load_trace(path).steps[2].tool_calls[0].arguments  # the importer accepts it
    return path


def test_pretty_printing_is_bounded_and_loses_nothing() -> None:
    block = pretty_arguments({"deep": nested(LEVELS)})
    assert block.kind == "json" and "DEEPEST-LEAF" in block.text
    widest = max(len(line) - len(line.lstrip()) for line in block.text.splitlines())
    assert widest <= 2 * (jsonio.SHOWN_DEPTH + 1)
    (only,) = content_blocks(jsonio.dumps(nested(LEVELS)).decode())
    assert "DEEPEST-LEAF" in only.text


def test_attribute_and_search_take_the_deepest_arguments(deep_file: Path) -> None:
    out = run_whenpro("attribute", str(deep_file), "--no-save")
    assert out.returncode == 0, out.stderr[-2000:]
    from whenpro_core.views.search import search_steps

    assert 2 in search_steps(load_trace(deep_file).steps, "DEEPEST-LEAF").steps


@pytest.mark.parametrize("output", ["--markdown", "--html"])
def test_export_shows_the_deepest_arguments(deep_file: Path, output: str) -> None:
    out = run_whenpro("export", str(deep_file), output, "-")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    # the page shows the whole value; the Markdown caps each field and says so
    assert "DEEPEST-LEAF" in out.stdout if output == "--html" else "step 2 arguments:" in out.stdout


def test_diff_compares_the_deepest_arguments(deep_file: Path, tmp_path: Path) -> None:
    other = load_trace(deep_file)
    other.steps[2].tool_calls[0].arguments = {"deep": nested(LEVELS - 1)}
    b = write_trace(other, tmp_path / "other.json")
    out = run_whenpro("diff", str(deep_file), str(b), "--text")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert "first divergence: A step 2 / B step 2" in out.stdout


async def test_the_tui_shows_the_step_with_the_deepest_arguments(deep_file: Path) -> None:
    app = WhenproApp(str(deep_file), cursor_blink=False)
    async with app.run_test(size=(150, 50)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        for _ in range(2):
            await pilot.press("j")
            await settle(pilot)
        text = screen_text(app)
        assert "Step 2 · coder" in text and '"deep"' in text, text
        await pilot.press("j")  # the step whose content is that deep JSON
        await settle(pilot)
        text = screen_text(app)
        assert "Step 3 · coder" in text and '"k": [' in text, text


def test_the_part_deeper_than_shown_is_unquoted_compact_json(tmp_path: Path) -> None:
    """Deeper than SHOWN_DEPTH is compact JSON text, not a quoted string with escaped
    quotes (which would look like an agent passing JSON as a string)."""
    shown = jsonio.pretty({"deep": nested(40)})
    assert '\\"' not in shown and '{"leaf":"DEEPEST-LEAF"}' in shown, shown[-400:]
    assert jsonio.loads(shown) == {"deep": nested(40)}  # still JSON, equal to the value
    as_string = jsonio.pretty({"deep": jsonio.dumps(nested(40)).decode()})
    assert '\\"' in as_string  # JSON passed as a string still reads as one
    trace = team_trace()
    trace.steps[2].tool_calls[0].arguments = {"deep": nested(40)}
    out = run_whenpro("export", str(write_trace(trace, tmp_path / "d.json")), "--markdown", "-")
    assert out.returncode == 0 and '\\"' not in out.stdout and '"leaf":"DEEPEST-LEAF"' in out.stdout, out.stdout[-2000:]
