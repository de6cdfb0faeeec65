"""What a judge sees (render) and how its answers are read (parse)."""

from __future__ import annotations

import pytest

from conftest import SAMPLES
from whenpro_core.attribution.parse import parse_answer
from whenpro_core.attribution.prompts import all_at_once
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Step, Trace
from whenpro_core.trace.taxonomy import Taxonomy
from whenpro_core.views.transcript import cut_middle, render_transcript

TAX = Taxonomy.builtin()


def test_headers_and_fields_and_no_label_leak():
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    trace.steps[3].hidden["is_injected"] = True
    text = all_at_once(trace, render_transcript(trace), TAX, with_gold=True)[1].plain()
    assert "Step 3 | Agent: solver" in text
    assert "[tool call]\ncalculator(" in text and "[observation]\n155" in text
    assert "The correct answer to the task is: 11:55" in text
    assert "is_injected" not in text and "ground_truth" not in text and "R.3" not in text.split("## ")[0]
    no_gold = all_at_once(trace, render_transcript(trace), TAX, with_gold=False)[1].plain()
    assert "11:55" not in no_gold


def test_escape_sequences_are_removed():
    t = Trace(id="x", steps=[Step(index=0, coord="0", content="ok\x1b[2J\x1b]0;pwned\x07 done\x00")])
    block = render_transcript(t).blocks[0]
    assert block.fields[0][1] == "ok done"


def test_long_content_keeps_head_and_tail_and_every_step():
    big = "HEAD " + "x" * 200_000 + " TAIL"
    t = Trace(id="x", steps=[Step(index=i, coord=str(i), content=big if i == 1 else f"step {i}") for i in range(5)])
    tr = render_transcript(t, budget_tokens=5_000)
    assert [b.coord for b in tr.blocks] == ["0", "1", "2", "3", "4"]
    text = tr.blocks[1].fields[0][1]
    assert text.startswith("HEAD") and text.endswith("TAIL") and "characters omitted" in text
    assert tr.warnings and "token budget" in tr.warnings[0]


def test_shared_coordinates_render_under_one_header():
    t = Trace(
        id="x",
        framework="eva",
        steps=[
            Step(index=0, coord=None, kind="system", content="sys"),
            Step(index=1, coord="0", kind="assistant", content="call"),
            Step(index=2, coord="0", kind="tool", content="frames"),
        ],
    )
    tr = render_transcript(t)
    assert tr.coords() == ["0"] and tr.blocks[0].agent == "agent"
    assert tr.context and tr.context[0][1] == "sys"


def test_cut_middle():
    assert cut_middle("abc", 10) == "abc"
    out = cut_middle("a" * 50 + "b" * 50, 20)
    assert out.startswith("a" * 12) and out.endswith("b" * 8) and "80 characters omitted" in out


@pytest.mark.parametrize(
    "text, agent, step, mode",
    [
        ("Agent Name: solver\nStep Number: 3\nError Mode: R.3\nReason: wrong sum", "solver", "3", "R.3"),
        (
            "Sure.\n**Agent Name:** WebSurfer\n**Step Number:** Step 12\n**Error Mode:** R.1 (Hallucination)\n"
            "**Reason:** made up",
            "WebSurfer",
            "12",
            "R.1",
        ),
        (
            "agent name:planner\nstep number:round 1.1\nerror mode: goal drift\nreason: drifted",
            "planner",
            "1.1",
            "PL.2",
        ),
        ("Agent Name: x\nStep Number: 2\nReason: this is a V.2 failure", "x", "2", "V.2"),
    ],
)
def test_lenient_parsing(text, agent, step, mode):
    p = parse_answer(text, TAX)
    assert (p.agent, p.step, p.mode) == (agent, step, mode)


def test_parse_failures_are_warnings_not_exceptions():
    for text in (None, "", "I cannot tell.", "Agent Name: (the agent whose step...)\nStep Number:"):
        p = parse_answer(text, TAX)
        assert p.warnings and p.agent is None and p.step is None
