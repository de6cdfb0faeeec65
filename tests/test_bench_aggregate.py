"""Benchmark aggregates on a constructed case with hand-computed numbers (docs/architecture.md, 'Scoring',
Who&When Pro leaderboard rules): per-framework means, single-agent frameworks left out
of Agent, round-only steps, accepted alternatives, macro-F1 over gold classes only,
missing predictions counted as wrong, ±k tolerance, composite over modalities."""

from __future__ import annotations

import pytest

from whenpro_core.bench.aggregate import aggregate, length_bucket, macro_f1
from whenpro_core.bench.records import build_record
from whenpro_core.trace.model import Accepted, Attribution, GroundTruth, Modality, Step, Trace, TraceSummary

APPROX = dict(abs=1e-9)


def team(tid: str, gt: GroundTruth) -> Trace:
    """Multi-agent: coordinates 0..5, planner on even steps, solver on odd ones."""
    steps = [Step(index=i, coord=str(i), agent="planner" if i % 2 == 0 else "solver") for i in range(6)]
    return Trace(id=tid, framework="team", steps=steps, ground_truth=gt)


def smol(tid: str, step: str, mode: str) -> Trace:
    """Single-agent smolagents, image modality (to test the composite)."""
    steps = [Step(index=i, coord=str(i), agent="agent") for i in range(6)]
    return Trace(
        id=tid,
        framework="smolagents",
        modality=Modality.image,
        steps=steps,
        ground_truth=GroundTruth(step=step, mode=mode),
    )


def debate(tid: str, round_: str, agents: list[str], mode: str) -> Trace:
    """Round-only: steps R.P for rounds 1..2."""
    coords = [("1.0", "alice"), ("1.1", "bob"), ("2.0", "alice"), ("2.1", "bob")]
    steps = [Step(index=i, coord=c, agent=a) for i, (c, a) in enumerate(coords)]
    return Trace(
        id=tid,
        framework="debate",
        steps=steps,
        ground_truth=GroundTruth(agents=agents, step=round_, mode=mode, round_only=True),
    )


def rec(trace: Trace, agent=None, step=None, mode=None, *, failed=False, tolerance=1):
    pred = None if failed else Attribution(agent=agent, step=step, mode=mode, protocol="all-at-once", model="m")
    return build_record(
        ref=f"/d/{trace.id}.json",
        protocol="all-at-once",
        model="m",
        with_gold=True,
        trace=trace,
        prediction=pred,
        tolerance=tolerance,
        error="BackendError: gave up" if failed else None,
        error_kind="backend" if failed else None,
    )


def case() -> list:
    """Nine labelled traces in three frameworks plus one unreadable file.

    team (text, multi-agent)            agent step  mode  joint  step-distance
      t1 solver/3/R.3 -> solver 3 R.3     ✓    ✓     ✓     ✓      0
      t2 planner/2/R.2 -> solver 0 R.3    ✗    ✗     ✗     ✗      2
      t3 solver/5/R.3, accepted planner and R.2 -> planner 4 R.2
                                          ✓    ✗     ✓     ✗      1
      t4 planner/1/R.2 -> failed          ✗    ✗     ✗     ✗      -
    smolagents (image, single-agent)
      s1 2/R.2 -> agent 2 R.2             ✓    ✓     ✓     ✓      0
      s2 3/R.3 -> agent 1 A.1             ✓    ✗     ✗     ✗      2
      s3 4/R.3 -> agent 4 R.3             ✓    ✓     ✓     ✓      0
    debate (text, round-only)
      d1 round 2, {alice,bob}, C.3 -> bob 2.1 R.2
                                          ✓    ✓     ✗     ✗      0
      d2 round 1, {alice}, R.2 -> carol 2.0 R.2
                                          ✗    ✗     ✓     ✗      -
    """
    t3_gt = GroundTruth(agent="solver", step="5", mode="R.3", accepted=Accepted(agent=["planner"], mode=["R.2"]))
    records = [
        # an earlier, superseded record for t1 (the last record of a key wins)
        rec(team("t1", GroundTruth(agent="solver", step="3", mode="R.3")), "planner", "0", "A.4"),
        rec(team("t1", GroundTruth(agent="solver", step="3", mode="R.3")), "Solver", "Step 3", "r.3"),
        rec(team("t2", GroundTruth(agent="planner", step="2", mode="R.2")), "solver", "0", "R.3"),
        rec(team("t3", t3_gt), "planner", "4", "R.2"),
        rec(team("t4", GroundTruth(agent="planner", step="1", mode="R.2")), failed=True),
        rec(smol("s1", "2", "R.2"), "agent", "2", "R.2"),
        rec(smol("s2", "3", "R.3"), "agent", "1", "A.1"),
        rec(smol("s3", "4", "R.3"), "agent", "4", "R.3"),
        rec(debate("d1", "2", ["alice", "bob"], "C.3"), "bob", "2.1", "R.2"),
        rec(debate("d2", "1", ["alice"], "R.2"), "carol", "2.0", "R.2"),
        build_record(
            ref="/d/bad.json",
            protocol="all-at-once",
            model="m",
            with_gold=True,
            trace=None,
            prediction=None,
            summary=TraceSummary(id="bad", path="/d/bad.json"),
            error="/d/bad.json: not valid JSON",
            error_kind="trace",
        ),
    ]
    return records


def test_per_record_scores_follow_the_rules():
    recs = {r.trace.id: r for r in case()}
    assert recs["t3"].score.agent and recs["t3"].score.mode and not recs["t3"].score.step
    assert recs["t3"].step_distance == 1 and recs["t3"].score_tol.step
    assert recs["d1"].score.step and recs["d1"].step_distance == 0  # round only
    assert recs["d2"].step_distance is None  # no tolerance for round-only scoring
    assert recs["t4"].score.model_dump() == {"agent": False, "step": False, "mode": False, "joint": False}
    assert recs["bad"].score is None and recs["bad"].error_kind == "trace"


def test_pooled_metrics_match_hand_computation():
    g = aggregate(case()).groups[0]
    o = g.overall
    assert (o.n, o.frameworks) == (9, 3)
    # Agent: team 2/4, debate 1/2; smolagents (3/3) left out -> (0.5 + 0.5) / 2
    assert o.agent == pytest.approx(0.5, **APPROX)
    # Step: team 1/4, smolagents 2/3, debate 1/2 -> mean, not the pooled 4/9
    assert o.step == pytest.approx((1 / 4 + 2 / 3 + 1 / 2) / 3, **APPROX)
    # Joint: team 1/4, smolagents 2/3, debate 0
    assert o.joint == pytest.approx((1 / 4 + 2 / 3 + 0) / 3, **APPROX)
    # Error: gold classes R.3 (F1 6/8), R.2 (F1 4/7), C.3 (0); A.1 is only predicted
    assert o.error == pytest.approx((0.75 + 4 / 7 + 0) / 3, **APPROX)
    # Plain Who&When-style accuracies over all 9 traces, the failed one counted wrong
    assert o.agent_acc == pytest.approx(6 / 9, **APPROX)
    assert o.step_acc == pytest.approx(4 / 9, **APPROX)
    assert o.step_acc_tol == pytest.approx(5 / 9, **APPROX)  # + t3 at distance 1
    assert o.mode_acc == pytest.approx(5 / 9, **APPROX)
    assert o.joint_acc == pytest.approx(3 / 9, **APPROX)
    assert (g.records, g.scored, g.errors, g.error_kinds) == (10, 9, 2, {"backend": 1, "trace": 1})


def test_cells_and_composite_over_modalities():
    g = aggregate(case()).groups[0]
    text, image = g.cells["text"], g.cells["image"]
    assert list(g.cells) == ["text", "image"]
    assert (text.n, image.n) == (6, 3)
    assert text.agent == pytest.approx(0.5, **APPROX) and image.agent is None
    assert text.step == pytest.approx((0.25 + 0.5) / 2, **APPROX)
    assert text.joint == pytest.approx((0.25 + 0) / 2, **APPROX)
    # text: R.3 tp2 fp1 fn0 -> 0.8; R.2 tp1 fp1 fn2 -> 0.4; C.3 -> 0
    assert text.error == pytest.approx((0.8 + 0.4 + 0) / 3, **APPROX)
    # image: R.2 tp1 -> 1.0; R.3 tp1 fn1 -> 2/3
    assert image.error == pytest.approx((1 + 2 / 3) / 2, **APPROX)
    c = g.composite
    assert c.agent == pytest.approx(0.5, **APPROX)  # only text has multi-agent traces
    assert c.step == pytest.approx((0.375 + 2 / 3) / 2, **APPROX)
    assert c.joint == pytest.approx((0.125 + 2 / 3) / 2, **APPROX)
    assert c.error == pytest.approx((0.4 + 5 / 6) / 2, **APPROX)


def test_confusion_matrix_and_classes():
    g = aggregate(case()).groups[0]
    conf = g.confusion
    assert conf.gold == ["C.3", "R.2", "R.3"]
    assert conf.predicted == ["A.1", "R.2", "R.3", "—"]
    cell = {(gold, p): conf.counts[i][j] for i, gold in enumerate(conf.gold) for j, p in enumerate(conf.predicted)}
    assert cell[("R.3", "R.3")] == 3  # t1, s3, and t3 through its accepted mode
    assert cell[("R.2", "—")] == 1 and cell[("C.3", "R.2")] == 1 and cell[("R.3", "A.1")] == 1
    r2 = next(c for c in g.classes if c.code == "R.2")
    assert (r2.support, r2.predicted) == (4, 3)
    assert r2.precision == pytest.approx(2 / 3) and r2.recall == pytest.approx(0.5)
    assert r2.f1 == pytest.approx(4 / 7)


def test_breakdowns_and_tolerance_reapplied_from_distances():
    rep = aggregate(case(), tolerance=2)
    g = rep.groups[0]
    assert rep.tolerance == 2
    assert g.overall.step_acc_tol == pytest.approx(7 / 9)  # + t2 and s2 at distance 2
    by_fw = {r.value: r.metrics for r in g.breakdowns["framework"]}
    assert by_fw["smolagents"].agent is None and by_fw["team"].agent == pytest.approx(0.5)
    assert by_fw["debate"].step == pytest.approx(0.5)
    assert [r.value for r in g.breakdowns["modality"]] == ["text", "image"]
    assert {r.value for r in g.breakdowns["mode"]} == {"C.3", "R.2", "R.3"}
    assert [r.value for r in g.breakdowns["length"]] == ["unknown"]
    assert aggregate(case()).tolerance == 1  # default: as run


def test_macro_f1_counts_gold_classes_only():
    assert macro_f1([("A", "A"), ("A", "B")]) == pytest.approx(2 / 3)  # B adds no class
    assert macro_f1([("A", "B")]) == 0.0
    assert macro_f1([]) is None


def test_length_buckets():
    assert [length_bucket(t) for t in (0, 3999, 4000, 7999, 8000, 12000, None)] == [
        "<4K",
        "<4K",
        "4-8K",
        "4-8K",
        "8-12K",
        ">12K",
        "unknown",
    ]


def test_groups_are_separate_and_ranked_by_composite_joint():
    good = case()
    bad = [
        r.model_copy(
            update={
                "model": "weak",
                "key": r.key.replace("|m|", "|weak|"),
                "score": r.score and r.score.model_copy(update={"joint": False}),
            }
        )
        for r in case()
    ]
    rep = aggregate(bad + good)
    assert [g.model for g in rep.groups] == ["m", "weak"]
    assert rep.groups[1].overall.joint == 0.0
