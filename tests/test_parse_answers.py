"""Parsing that a model cannot fool (issue 15, item 4): the last complete answer wins,
JSON answers (fenced or bare, string or number fields), yes/no and first/second half in
the phrasings models use, and an unreadable answer is a clear warning.

The answers below are written the way real judges answer (drafts, markdown, JSON fences,
reasoning before the verdict)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conftest import SAMPLES
from whenpro_core.attribution.llm_judge import make_judge
from whenpro_core.attribution.parse import is_readable, parse_answer
from whenpro_core.attribution.run import attribute
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.taxonomy import Taxonomy

TAX = Taxonomy.builtin()
VERDICT = ("Agent Name", "Step Number", "Error Mode", "Reason")
DECISIVE = ("Decisive",)
HALF = ("Half",)

DRAFT_THEN_FINAL = """Let me work through this.

Initial thought:
Agent Name: Orchestrator
Step Number: 2
Error Mode: PL.1
Reason: the plan looks weak.

On closer inspection the plan is fine; the real slip is WebSurfer misreading the table.

**Final answer**
**Agent Name:** WebSurfer
**Step Number:** 7
**Error Mode:** P.1
**Reason:** it read 1,420 as 1,240 from the screenshot."""

FENCED_JSON = """I compared each step with the gold answer.

```json
{
  "agent_name": "Assistant",
  "step_number": 5,
  "error_mode": "R.3",
  "reason": "Adds 17 + 26 and gets 33."
}
```"""

BARE_JSON_STRING_STEP = (
    '{"agent": "Verifier", "step": "Step 1.2", "failure_mode": "V.1 (Missing verification)", '
    '"reason": "accepted the value without checking"}'
)

TEXT_DRAFT_THEN_JSON = """Agent Name: planner
Step Number: 1
Error Mode: PL.1
Reason: first guess

Wait, step 4 is where the number goes wrong. Final:
{"agent_name": "coder", "step_number": 4, "error_mode": "R.3", "reason": "off by one"}"""


@pytest.mark.parametrize(
    "text, agent, step, mode",
    [
        (DRAFT_THEN_FINAL, "WebSurfer", "7", "P.1"),
        (FENCED_JSON, "Assistant", "5", "R.3"),
        (BARE_JSON_STRING_STEP, "Verifier", "1.2", "V.1"),
        (TEXT_DRAFT_THEN_JSON, "coder", "4", "R.3"),
        (
            'Answer:\n```\n{"Agent Name": "Solver", "Step Number": 3.1, "Error Mode": "R.2", "Reason": "x"}\n```',
            "Solver",
            "3.1",
            "R.2",
        ),
        ('{"verdict": {"agent_name": "Critic", "step_number": "12", "error_mode": "C.1"}}', "Critic", "12", "C.1"),
    ],
)
def test_verdict_last_complete_answer_and_json(text: str, agent: str, step: str, mode: str) -> None:
    p = parse_answer(text, TAX, need=VERDICT)
    assert (p.agent, p.step, p.mode) == (agent, step, mode)
    assert p.readable


def test_an_incomplete_correction_does_not_erase_the_complete_answer() -> None:
    # the model restates only its agent at the end: the last *complete* answer stands
    text = "Agent Name: Coder\nStep Number: 6\nError Mode: A.1\nReason: wrong call\n\nAgent: Coder"
    p = parse_answer(text, TAX, need=VERDICT)
    assert (p.agent, p.step, p.mode) == ("Coder", "6", "A.1")


@pytest.mark.parametrize(
    "text, decisive",
    [
        ('```json\n{"decisive": true, "error_mode": "R.1", "reason": "invents a source"}\n```', True),
        ('{"decisive": false, "error_mode": "", "reason": "fine"}', False),
        ('{"decisive": "yes"}', True),
        ("After careful review, yes", True),
        ("After careful review, yes.\nError Mode: R.2\nReason: it misapplies the rule.", True),
        ("The step computes the total from the right rows, so no.", False),
        ("**Decisive:** **Yes**\n**Error Mode:** R.3\n**Reason:** 12*4 is not 46", True),
        ("Decisive: No\nError Mode: None\nReason: correct lookup", False),
        (
            "Let me think. The agent searched and got no results, which is expected. "
            "This step is not the decisive error.",
            False,
        ),
        (
            "The agent copied the value, no arithmetic was done here. Still, this step is the decisive error "
            "because the copied value is from the wrong year.",
            True,
        ),
        ("Decisive: after weighing it, yes\nReason: wrong year", True),
        ("No.\n\nReason: the tool call is correct.", False),
        ("Yes — the agent reports success without running the tests.", True),
        (
            "Decisive: Yes\nReason: wrong\n\nActually, on reflection:\nDecisive: No\nReason: the later step is at fault",  # noqa: E501
            False,
        ),
    ],
)
def test_step_judgement_yes_no_in_any_phrasing(text: str, decisive: bool) -> None:
    p = parse_answer(text, TAX, need=DECISIVE)
    assert p.decisive is decisive
    assert p.readable


@pytest.mark.parametrize(
    "text, half",
    [
        ("Half: second\nReason: the wrong total appears in step 9", "second"),
        ("The error is in the second half.", "second"),
        (
            "Looking at steps 1-4 the setup is fine. The first half is clean, so the decisive error must be in "
            "the second half.",
            "second",
        ),
        ("It is in the first half, not the second half: step 2 already picks the wrong file.", "first"),
        ("**Half:** **First**\n**Reason:** step 3 misreads the chart", "first"),
        ('```json\n{"half": "second", "reason": "the final step"}\n```', "second"),
        ('{"half": 1}', "first"),
        ("Half: The second half\nReason: x", "second"),
        ("The decisive error is not in the first half; it lies in the later part.", "second"),
    ],
)
def test_binary_search_half_in_any_phrasing(text: str, half: str) -> None:
    p = parse_answer(text, TAX, need=HALF)
    assert p.half == half
    assert p.readable


@pytest.mark.parametrize(
    "text, need",
    [
        ("", VERDICT),
        (None, VERDICT),
        ("I cannot determine this from the transcript.", VERDICT),
        ("Hmm, hard to say.", DECISIVE),
        ("Both halves look plausible.", HALF),
        ("Agent Name: (the agent whose step...)\nStep Number:", VERDICT),
    ],
)
def test_unreadable_answers_are_a_clear_warning(text: str | None, need: tuple[str, ...]) -> None:
    p = parse_answer(text, TAX, need=need)
    assert not p.readable
    assert not is_readable(text, TAX, need)
    assert any("could not read a verdict" in w or w == "empty answer" for w in p.warnings)
    assert p.agent is None and p.step is None and p.decisive is None and p.half is None


def test_parser_never_raises_on_hostile_text() -> None:
    for text in (
        "{" * 500,
        '{"step_number": {"nested": [1, 2]}}',
        "Step Number: ```",
        "```json\n{bad json}\n```",
        '{"agent_name": null, "step_number": true}',
        "Half:" * 100,
    ):
        parse_answer(text, TAX, need=VERDICT)
        parse_answer(text, TAX, need=DECISIVE)
        parse_answer(text, TAX, need=HALF)


# ---------------------------------------------------------------- through the real SDKs


def _run(trace: Trace, protocol: str, judge: Any) -> Attribution:
    async def go() -> Attribution:
        try:
            return await attribute(trace, protocol, judge=judge)
        finally:
            await judge.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("model", ["openai:gpt-4.1", "anthropic:claude-sonnet-4-6"])
def test_an_unreadable_answer_is_never_cached_and_a_later_good_one_is(
    llm_server: Any, llm_settings: Any, model: str
) -> None:
    """A judge that first rambles without a verdict: the run warns, and the next run asks
    again (the rambling was not cached); the good answer of the second run is cached."""
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    llm_server.structured = False
    llm_server.tools = False
    llm_server.respond_with(lambda body: "I am not sure what went wrong here.")
    first = _run(trace, "all-at-once", make_judge(model, settings=llm_settings(model)))
    assert first.agent is None and first.step is None
    assert any("could not read a verdict" in w for w in first.warnings)
    assert len(llm_server.answered) == 1

    llm_server.respond_with(
        lambda body: (
            "Thinking...\n```json\n"
            '{"agent_name": "solver", "step_number": 3, "error_mode": "R.3", "reason": "sum"}\n```'
        )
    )
    second = _run(trace, "all-at-once", make_judge(model, settings=llm_settings(model)))
    assert (second.agent, second.step, second.mode) == ("solver", "3", "R.3")
    assert len(llm_server.answered) == 2  # asked again: the unreadable answer was not replayed
    third = _run(trace, "all-at-once", make_judge(model, settings=llm_settings(model)))
    assert (third.agent, third.step) == ("solver", "3") and len(llm_server.answered) == 2
