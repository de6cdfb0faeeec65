"""Plain text keeps its lines (issue 32): a prompt or a tool's output is shown verbatim
(line breaks, indentation, ``*``, ``_`` and ``#`` as written); only text a model wrote
(an assistant, plan or final-answer step) with Markdown structure is rendered as
Markdown, and ``r`` shows that verbatim too."""

from __future__ import annotations

import pytest

from tests.conftest import REAL_TRACES, settle
from whenpro_core.trace.model import Step
from whenpro_core.views.stepview import content_blocks, renders_markdown
from whenpro_tui.app import WhenproApp

SWE = (
    REAL_TRACES
    / "swe-agent-traj/trajectories/demonstrations"
    / "replay__marshmallow-code__marshmallow-1867__default__t-0.20__p-0.95__c-2.00__install-1___install_from_source"
    / "marshmallow-code__marshmallow-1867.traj"
)


def test_the_rule_by_step_kind() -> None:
    listing = "COMMANDS:\n- open <path>\n  docstring: opens *the* file"
    for kind in ("system", "user", "tool", "observation", "demonstration"):
        step = Step(index=0, coord="0", kind=kind, content=listing)
        assert not renders_markdown(step)
        assert [b.kind for b in content_blocks(listing, markdown=renders_markdown(step))] == ["text"]
    for kind in ("assistant", "final_answer", "plan"):
        assert renders_markdown(Step(index=0, coord="0", kind=kind, content=listing))
    assert [b.kind for b in content_blocks("## Plan\n\n1. first", markdown=True)] == ["markdown"]


def body_lines(app) -> list[str]:
    body = app.screen.query_one("#d-body")
    return [strip.text.rstrip() for strip in body._lines]


async def test_a_real_swe_agent_system_prompt_keeps_its_lines() -> None:
    if not SWE.exists():
        pytest.skip(f"real SWE-agent trace not present at {SWE} (set WHENPRO_REAL_TRACES)")
    app = WhenproApp(str(SWE), cursor_blink=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        lines = body_lines(app)
        text = "\n".join(lines)
        assert "  signature: open <path> [<line_number>]" in text  # indentation kept
        assert "    - path (string) [required]: the path to the file to open" in text
        assert "SETTING: You are an autonomous programmer" in text
        # each line of the prompt is its own line on screen, in order
        want = ["COMMANDS:", "open:", "  docstring: opens the file at the given path in the editor."]
        starts = [next(i for i, line in enumerate(lines) if w in line) for w in want]
        assert starts == sorted(starts) and starts[1] == starts[0] + 1


def test_a_model_answer_with_markdown_is_still_rendered() -> None:
    from rich.console import Console

    from whenpro_tui.widgets.blocks import render_blocks

    text = "## Plan\n\n1. read the file\n2. **fix** it"
    step = Step(index=0, coord="0", kind="assistant", content=text)
    console = Console(width=80, record=True, color_system=None)
    console.print(render_blocks(content_blocks(text, markdown=renders_markdown(step))))
    shown = console.export_text()
    assert "**fix**" not in shown and "fix it" in shown and "## Plan" not in shown
