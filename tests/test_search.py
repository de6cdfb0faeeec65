"""Step search, filters, coordinates, same-agent moves and the GT step
(whenpro_core.views.search)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import team_trace
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Step, Trace
from whenpro_core.views.search import (
    StepFilter,
    filter_steps,
    find_coord,
    gt_step_index,
    same_agent_step,
    search_steps,
    step_facets,
)


def test_search_is_case_insensitive_across_fields() -> None:
    steps = team_trace().steps
    r = search_steps(steps, "SUBTOTAL")
    assert r.steps == [2, 4] and r.matches == 4
    assert search_steps(steps, "14.58").fields == {2: ("observation",)}
    assert search_steps(steps, "print(3*4.5").fields == {2: ("tool_calls",)}
    assert search_steps(steps, "rejected").fields == {5: ("error",)}
    assert search_steps(steps, "   ").steps == []


def test_hidden_fields_are_searched_only_with_labels() -> None:
    steps = team_trace().steps
    assert search_steps(steps, "is_injected").steps == []
    assert search_steps(steps, "is_injected", include_hidden=True).steps == [3]


def test_search_can_be_cancelled() -> None:
    steps = [Step(index=i, content="hay") for i in range(2000)]
    r = search_steps(steps, "hay", should_stop=lambda: True)
    assert r.cancelled and r.steps == []


def test_next_after_wraps_and_position() -> None:
    r = search_steps(team_trace().steps, "subtotal")
    assert r.next_after(2) == 4 and r.next_after(4) == 2
    assert r.next_after(4, backwards=True) == 2 and r.next_after(2, backwards=True) == 4
    assert r.position(4) == 2 and r.position(3) is None


def test_filters_and_facets() -> None:
    trace = team_trace()
    assert filter_steps(trace.steps, StepFilter(agents=frozenset({"coder"}))) == [2, 3, 5]
    assert filter_steps(trace.steps, StepFilter(kinds=frozenset({"action"}))) == [2, 3]
    assert filter_steps(trace.steps, StepFilter()) == list(range(7))
    facets = step_facets(trace)
    assert facets["agent"] == [("user", 1), ("planner", 2), ("coder", 3), ("checker", 1)]
    assert facets["kind"][0] == ("action", 2)
    assert StepFilter(agents=frozenset({"b", "a"})).describe() == "agent: a, b"


def test_find_coord_accepts_coordinates_words_and_positions() -> None:
    trace = team_trace()
    assert find_coord(trace, "3") == 3
    assert find_coord(trace, "Step 5") == 5
    assert find_coord(trace, "#6") == 6
    assert find_coord(trace, "#60") is None and find_coord(trace, "99") is None
    assert find_coord(trace, "") is None
    nested = Trace(id="n", steps=[Step(index=0, coord="0.0"), Step(index=1, coord="1.1")])
    assert find_coord(nested, "round 1.1") == 1


def test_same_agent_moves_respect_filters() -> None:
    steps = team_trace().steps
    assert same_agent_step(steps, 2) == 3
    assert same_agent_step(steps, 3) == 5
    assert same_agent_step(steps, 5) is None
    assert same_agent_step(steps, 5, backwards=True) == 3
    assert same_agent_step(steps, 2, allowed=[2, 5]) == 5


def test_gt_step_index() -> None:
    trace = team_trace()
    assert gt_step_index(trace) == 3
    trace.ground_truth.step_index = None
    assert gt_step_index(trace) == 3  # from the coordinate
    trace.ground_truth = None
    assert gt_step_index(trace) is None


@pytest.mark.real_traces
def test_search_a_real_hand_crafted_trace(whowhen: Path) -> None:
    trace = load_trace(whowhen / "Hand-Crafted" / "1.json")
    r = search_steps(trace.steps, "Jidokwan")
    assert 12 in r.steps and r.matches >= len(r.steps)
    assert gt_step_index(trace) == 12
    assert same_agent_step(trace.steps, 12) == 16
