"""The HTML export's timeline (issue 32, item 7): the run as a tree with time, as ``w``
shows it in the TUI, with the filters "errors only" and by tool name working in a real
headless Chromium (no script: the page's policy runs none), and the thinking blocks the
TUI shows. On the OpenTelemetry fixture (nested spans) and a real Claude Code session
(sub-agents, tool errors, thinking)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REAL_TRACES
from tests.support.browser import browser, chromium_path  # noqa: F401  (fixtures)
from tests.support.cli import run_whenpro
from whenpro_core.formats import load_trace
from whenpro_core.views.stepview import step_reasoning
from whenpro_core.views.waterfall import waterfall

OTEL = Path(__file__).parent / "fixtures" / "otel" / "genai_current.json"
CLAUDE = REAL_TRACES / "claude-code" / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"


def _export(src: Path, tmp_path: Path) -> Path:
    out = tmp_path / "page.html"
    done = run_whenpro("export", str(src), "--html", str(out))
    assert done.returncode == 0, done.stderr
    return out


def _open(browser, out: Path):  # noqa: F811
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri())
    page.wait_for_load_state("load")
    page.locator("#timeline summary").click()
    assert errors == [] and page.locator("script").count() == 0
    return page


def _shown(page) -> list[int]:
    rows = page.locator("table.wf-steps tr.row:visible")
    return [int(rows.nth(i).get_attribute("data-step") or -1) for i in range(rows.count())]


def test_the_timeline_nests_and_filters_an_otel_trace(browser, tmp_path: Path) -> None:  # noqa: F811
    trace = load_trace(OTEL)
    tree = waterfall(trace)
    page = _open(browser, _export(OTEL, tmp_path))
    assert _shown(page) == [r.index for r in tree.rows]  # tree order, every step
    depths = [int(page.locator(f"tr.row[data-step='{r.index}']").get_attribute("data-depth") or -1) for r in tree.rows]
    assert depths == [r.depth for r in tree.rows] and max(depths) == 2  # nested spans
    assert page.locator("table.wf-steps .bar").count() == len(tree.rows)  # a bar per timed step
    for tool in tree.tools:
        page.locator(f"label:has-text('{tool.name}')").click()
        assert _shown(page) == [r.index for r in tree.filtered(trace, tool=tool.name)], tool.name
    page.locator("label:has-text('errors only')").click()
    assert _shown(page) == [r.index for r in tree.filtered(trace, errors_only=True)]
    page.locator("label:has-text('all steps')").click()
    assert len(_shown(page)) == len(tree.rows)
    # roll-ups per agent and per tool, with tokens
    agents = page.inner_text("table.wf-agents")
    assert all(a.name in agents for a in tree.agents) and f"{tree.agents[0].tokens:,}" in agents
    page.close()


def test_a_claude_session_exports_sub_agents_errors_and_thinking(browser, tmp_path: Path) -> None:  # noqa: F811
    if not CLAUDE.is_file():
        pytest.skip(f"real Claude Code session not present at {CLAUDE} (set WHENPRO_REAL_TRACES)")
    trace = load_trace(CLAUDE)
    tree = waterfall(trace)
    page = _open(browser, _export(CLAUDE, tmp_path))
    assert len(_shown(page)) == len(tree.rows)
    assert page.locator("tr.row[data-depth='1']").count() == sum(1 for r in tree.rows if r.depth == 1)
    page.locator("label:has-text('errors only')").click()
    errors = [r.index for r in tree.filtered(trace, errors_only=True)]
    assert errors and _shown(page) == errors
    bash = next(t for t in tree.tools if t.name == "Bash")
    page.locator("label:has-text('tool: Bash')").click()
    assert len(_shown(page)) == bash.steps
    thinking = [s.index for s in trace.steps if step_reasoning(s) is not None]
    assert thinking, "the session has thinking blocks"
    for index in thinking[:3]:
        assert "Reasoning" in page.inner_text(f"#step-{index}")
    page.close()
