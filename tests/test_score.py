"""Scoring one prediction against a ground truth (docs/architecture.md, 'Scoring')."""

from __future__ import annotations

import pytest

from whenpro_core.trace.model import Accepted, Attribution, GroundTruth, Step, Trace
from whenpro_core.trace.score import score_prediction


def _trace(framework="whenpro-team", n=15, gt=None):
    steps = [Step(index=i, coord=str(i), agent="a" if i % 2 else "b") for i in range(n)]
    return Trace(
        id="t", framework=framework, steps=steps, ground_truth=gt or GroundTruth(agent="Solver", step="1", mode="R.3")
    )


def test_exact_match_and_case_insensitive_agent():
    s = score_prediction(_trace(), Attribution(agent="solver", step="Step 1", mode="r.3"))
    assert (s.agent, s.step, s.mode, s.joint) == (True, True, True, True)


def test_step_one_does_not_match_twelve():
    """The original Who&When code matched by substring; whenpro does not."""
    s = score_prediction(_trace(), Attribution(agent="solver", step="12", mode="R.3"))
    assert not s.step and not s.joint


def test_missing_prediction_is_wrong_on_every_axis():
    s = score_prediction(_trace(), None)
    assert (s.agent, s.step, s.mode) == (False, False, False)


def test_tolerance_counts_positions():
    t = _trace()
    assert not score_prediction(t, Attribution(step="3")).step
    assert score_prediction(t, Attribution(step="3"), tolerance=2).step
    assert not score_prediction(t, Attribution(step="4"), tolerance=2).step


def test_round_only_for_debate():
    gt = GroundTruth(agents=["alice", "bob"], step="2", mode="C.3", round_only=True)
    t = Trace(
        id="d",
        framework="debate",
        ground_truth=gt,
        steps=[Step(index=i, coord=f"{r}.{p}") for i, (r, p) in enumerate([(1, 0), (2, 0), (2, 1)])],
    )
    s = score_prediction(t, Attribution(agent="Bob", step="2.1", mode="C.3"))
    assert s.agent and s.step and s.joint
    assert not score_prediction(t, Attribution(agent="carol", step="1.0")).step


def test_accepted_alternatives_score_per_axis():
    gt = GroundTruth(agent="x", step="4", mode="R.1", accepted=Accepted(agent=["y"], step=["5"], mode=["R.2"]))
    s = score_prediction(_trace(gt=gt), Attribution(agent="Y", step="5", mode="R.2"))
    assert s.joint


def test_single_agent_frameworks_expect_agent():
    gt = GroundTruth(agent=None, step="2", mode="R.2")
    assert score_prediction(_trace("smolagents", gt=gt), Attribution(agent="agent", step="2")).agent


def test_no_mode_in_gt_leaves_mode_unscored():
    gt = GroundTruth(agent="a", step="3")
    s = score_prediction(_trace(gt=gt), Attribution(agent="a", step="3", mode="R.1"))
    assert s.mode is None and s.joint


def test_no_ground_truth_raises():
    with pytest.raises(ValueError):
        score_prediction(Trace(id="x"), Attribution())
