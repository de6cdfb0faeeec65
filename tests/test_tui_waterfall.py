"""The waterfall (``w`` on the trace screen, issue 32 item 7): the run as a tree with time.
The tree and its figures (:mod:`whenpro_core.views.waterfall`) on an OpenTelemetry trace with
nested spans, a Claude Code session with a sub-agent and a Who&When trace (no times); the
screen driven with Pilot (errors only, by tool, enter goes to the step); snapshots at 80x24
and 200x50 on the three. Update with ``--snapshot-update`` after checking the pictures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REAL_TRACES, settle
from whenpro_core.formats import load_trace
from whenpro_core.views.waterfall import waterfall
from whenpro_tui.app import WhenproApp

OTEL = Path(__file__).parent / "fixtures" / "otel" / "genai_current.json"
SPOTTER = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
CLAUDE = REAL_TRACES / "claude-code" / "spotter" / f"{SPOTTER}.jsonl"
WHOWHEN = REAL_TRACES / "who-and-when" / "Who&When" / "Hand-Crafted" / "1.json"
SIZES = {"80x24": (80, 24), "200x50": (200, 50)}


def _need(path: Path) -> None:
    if not path.is_file():
        pytest.skip(f"real trace not present at {path} (set WHENPRO_REAL_TRACES)")


def test_otel_spans_nest_under_their_parents_with_times_and_usage() -> None:
    trace = load_trace(OTEL)
    tree = waterfall(trace)
    assert [(r.index, r.depth) for r in tree.rows] == [(0, 1), (1, 1), (2, 2), (3, 2), (4, 1)]
    assert tree.span_s is not None and all(r.start_s is not None and r.duration_s for r in tree.rows)
    assert tree.rows[0].start_s == 0.0
    planner = next(a for a in tree.agents if a.name == "planner")
    assert planner.steps == 3 and planner.tokens == sum(
        r.tokens or 0 for r in tree.rows if trace.steps[r.index].agent == "planner"
    )
    assert [t.name for t in tree.tools] == ["get_weather", "search_museums"]


def test_a_claude_sub_agent_nests_under_the_task_call_that_started_it() -> None:
    _need(CLAUDE)
    trace = load_trace(CLAUDE)
    tree = waterfall(trace)
    sub = [r for r in tree.rows if trace.steps[r.index].meta.get("parent_tool_use_id")]
    assert (
        sub
        and all(r.depth == 1 for r in sub)
        and any(trace.steps[r.index].agent == "task-check-otel-hex-package-versions" for r in sub)
    )
    first = tree.rows.index(sub[0])
    parent = next(r for r in reversed(tree.rows[:first]) if r.depth == 0)
    assert "Task" in [c.name for c in trace.steps[parent.index].tool_calls]  # the call that started it
    assert tree.span_s is not None and tree.span_s > 60  # a session of nearly an hour
    assert sum(a.errors for a in tree.agents) == sum(1 for s in trace.steps if s.error)


def test_a_trace_without_times_has_rows_without_bars() -> None:
    _need(WHOWHEN)
    tree = waterfall(load_trace(WHOWHEN))
    assert tree.span_s is None and all(r.start_s is None and r.depth == 0 for r in tree.rows)


def _otel_native(folder: Path) -> Path:
    """The first trace of the OpenTelemetry fixture (which holds several) as one native file,
    its spans' ids, parents, times and usage kept in the steps' meta."""
    from whenpro_core.formats.native import write_trace

    return write_trace(load_trace(OTEL), folder / "otel_trace.json")


async def test_w_opens_the_waterfall_filters_and_enter_goes_to_the_step(tmp_path: Path) -> None:
    from whenpro_tui.screens.trace import TraceScreen
    from whenpro_tui.screens.waterfall import WaterfallScreen
    from whenpro_tui.widgets.step_list import StepList
    from whenpro_tui.widgets.waterfall_list import WaterfallList

    app = WhenproApp(str(_otel_native(tmp_path)), cursor_blink=False)
    async with app.run_test(size=(140, 34)) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, WaterfallScreen)
        rows = screen.query_one(WaterfallList)
        assert rows.row_count == 5
        await pilot.press("o")  # the first tool
        assert screen.tool == "get_weather" and rows.row_count == 2
        await pilot.press("o", "o")  # the next, then every step again
        assert screen.tool is None and rows.row_count == 5
        await pilot.press("e")
        assert rows.row_count == sum(1 for r in screen.waterfall.rows if r.error)
        await pilot.press("e", "j", "j", "enter")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        assert app.screen.query_one(StepList).step_index == screen.waterfall.rows[2].index


def _copy_here(src: Path, here: Path) -> str:
    """The trace copied into the working folder (a short, stable path on screen)."""
    shutil.copy(src, here / src.name)
    if src.with_suffix("").is_dir():  # a Claude session's sub-agent files
        shutil.copytree(src.with_suffix(""), here / src.stem)
    return src.name


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("which", ["otel", "claude", "whowhen"])
def test_waterfall_snapshot(snap_compare, in_tmp: Path, which: str, size: str) -> None:
    if which == "otel":
        name = _otel_native(in_tmp).name
    else:
        src = CLAUDE if which == "claude" else WHOWHEN
        _need(src)
        name = _copy_here(src, in_tmp)
    app = WhenproApp(name, cursor_blink=False)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        if which == "claude":
            await pilot.press(*"jjjjjj")  # down to the sub-agent's steps
            await settle(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


def test_the_html_export_has_the_timeline(tmp_path: Path) -> None:
    """The same tree with time in the shared page: a row per step (linked to it, indented by
    depth, its bar), and the totals per agent and per tool."""
    from whenpro_core.attribution.export import trace_html

    trace = load_trace(_otel_native(tmp_path))
    page = trace_html(trace)
    assert "<h2>Timeline</h2>" in page and page.count('<div class=bar style="left:') == len(trace.steps)
    assert 'href="#step-2"' in page and "padding-left:2.8em" in page  # depth 2
    assert "<th>agent</th>" in page and "<th>tool</th>" in page and "get_weather" in page
