"""The trace header model and stable agent colour slots (whenpro_core.views.traceview)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import team_trace
from whenpro_core.formats import load_trace
from whenpro_core.views.traceview import agent_slots, trace_header


def test_agent_slots_are_stable_and_distinct() -> None:
    a = agent_slots(["Orchestrator", "WebSurfer", "human"], 12)
    b = agent_slots(["human", "WebSurfer", "Orchestrator", "Assistant"], 12)
    assert len(set(a.values())) == 3
    assert len(set(b.values())) == 4
    assert a["Orchestrator"] == agent_slots(["Orchestrator"], 12)["Orchestrator"]
    many = agent_slots([f"agent{i}" for i in range(20)], 12)
    assert set(many.values()) <= set(range(12)) and len(set(many.values())) == 12


def test_header_names_the_mode_and_counts_steps() -> None:
    header = trace_header(team_trace())
    assert header.gt.line() == "GT: agent coder · step 3 · mode R.3 Numerical/calculation error"
    assert header.gt.step_index == 3
    assert dict(header.agents) == {"user": 1, "planner": 2, "coder": 3, "checker": 1}
    assert header.gold == "14.58" and header.final == "21.50" and header.outcome == "failure"


def test_header_cleans_untrusted_text() -> None:
    t = team_trace()
    t.task.query = "q\x1b[2J"
    t.id = "id\x1b]0;x\x07"
    header = trace_header(t)
    assert header.task == "q␛[2J" and "\x1b" not in header.id


@pytest.mark.real_traces
def test_header_of_a_real_trace(whowhen: Path) -> None:
    header = trace_header(load_trace(whowhen / "Hand-Crafted" / "1.json"))
    assert header.gt.line() == "GT: agent WebSurfer · step 12 · mode —"
    assert ("Orchestrator", 21) in header.agents


def test_unlabelled_id_masks_the_mode_and_step_an_id_carries() -> None:
    from whenpro_core.views.traceview import unlabelled_id

    assert unlabelled_id("eva__lvbench__P.1__task_2393__20260423") == ("eva__lvbench__‹mode›__task_2393__20260423")
    assert unlabelled_id("smolagents__mmsearch__PL.1__task_0274_auto_9__20260309_legacy") == (
        "smolagents__mmsearch__‹mode›__task_0274_auto_9__20260309_legacy"
    )
    assert unlabelled_id("sample-workshop__R.3__1.2__s7") == "sample-workshop__‹mode›__‹step›__s7"
    for plain in ("dabench_smolagents_0004", "sample-workshop-schedule", "v1.2__final", ""):
        assert unlabelled_id(plain) == plain


def test_tally_gathers_what_the_header_and_list_need_in_one_pass() -> None:
    from whenpro_core.trace.model import MediaRef
    from whenpro_core.trace.usage import total_usage
    from whenpro_core.views.traceview import tally_steps

    trace = team_trace()
    trace.steps[1].media = [MediaRef(kind="video", path="clip.mp4")]
    trace.steps[2].meta = {"usage": {"input_tokens": 12, "output_tokens": 3}, "duration_ms": 40}
    trace.steps[4].coord = "4.10"
    tally = tally_steps(trace.steps)
    counts: dict[str, int] = {}
    for step in trace.steps:
        counts[step.agent] = counts.get(step.agent, 0) + 1
    assert tally.agents == counts and list(tally.agents) == [a for a in trace.agent_ids() if a in counts]
    assert tally.coord_width == 4
    assert tally.errors is any(s.error for s in trace.steps) is True
    assert tally.media_kinds == {m.kind for s in trace.steps for m in s.media} == {"image", "video"}
    assert tally.hidden is True  # the GT step's injection marker
    assert tally.usage == total_usage(trace.steps) and tally.usage.input_tokens == 12
    assert trace_header(trace, tally=tally) == trace_header(trace)
    empty = tally_steps([])
    assert (empty.agents, empty.coord_width, empty.errors, empty.media_kinds, empty.hidden) == (
        {},
        0,
        False,
        set(),
        False,
    )
    assert empty.usage.empty


def test_header_lists_declared_agents_first_as_agent_ids_does() -> None:
    from whenpro_core.trace.model import Agent

    trace = team_trace()
    trace.agents = [Agent(id="checker"), Agent(id="nobody"), Agent(id="coder")]
    header = trace_header(trace)
    assert [a for a, _ in header.agents] == [a for a in trace.agent_ids() if a != "nobody"]
    assert [a for a, _ in header.agents][:2] == ["checker", "coder"]
