"""Step coordinates (coords) and ground-truth mapping (gt_map) per framework (docs/architecture.md,
'Formats and step coordinates'), on small
made-up trajectories in the release's entry shapes."""

from __future__ import annotations

import pytest

from whenpro_core.errors import TraceFormatError
from whenpro_core.trace import coords, frameworks, gt_map

U = {"kind": "user", "content": "task"}
FA = {"kind": "final_answer", "content": "42"}


def act(n, **kw):
    return {"kind": "action", "step_number": n, "reasoning": f"r{n}", **kw}


def rnd(r, *turns):
    return {"kind": "round", "round": r, "turns": list(turns)}


# (framework, trajectory, ground truth, coords, GT coord, GT step index, GT agent)
CASES = {
    "smolagents-plan": (
        "smolagents",
        [U, {"kind": "planning", "plan": "p"}, act(1), act(2)],
        {"agent": None, "step": 0, "mode": "PL.1"},
        [None, "0", "1", "2"],
        "0",
        1,
        "agent",
    ),
    "smolagents-noplan": (
        "smolagents",
        [U, act(1), act(2), act(3)],
        {"agent": None, "step": 2, "mode": "R.2"},
        [None, "1", "2", "3"],
        "2",
        2,
        "agent",
    ),
    "smolagents-replan": (
        "smolagents",
        [U, {"kind": "planning"}, act(1), {"kind": "planning"}, act(2)],
        {"agent": None, "step": 3, "step_legacy": 2, "mode": "R.1"},
        [None, "0", "1", "2", "3"],
        "3",
        4,
        "agent",
    ),
    "alfagent": (
        "alfagent",
        [U, act(1, action="go to desk 1"), act(2, action="take pen")],
        {"agent": None, "step": 2, "mode": "A.1"},
        [None, "1", "2"],
        "2",
        2,
        "agent",
    ),
    "coact": (
        "coact",
        [U, act(1, agent="orchestrator"), act(2, agent="coder")],
        {"agent": "coder", "step": 2, "mode": "A.1"},
        [None, "1", "2"],
        "2",
        2,
        "coder",
    ),
    "openai_cua": (
        "openai_cua",
        [U, act(1), act(2)],
        {"agent": None, "step": 1, "mode": "P.2"},
        [None, "1", "2"],
        "1",
        1,
        "computer_use_agent",
    ),
    "debate": (
        "debate",
        [
            U,
            rnd(0, {"agent_id": "a1", "output": "x"}, {"agent_id": "a2", "output": "y"}),
            rnd(1, {"agent_id": "a1", "output": "x"}, {"agent_id": "a2", "output": "y"}),
            FA,
        ],
        {"agents": ["a1", "a2"], "round": 1, "mode": "C.3"},
        [None, "0.0", "0.1", "1.0", "1.1", None],
        "1",
        3,
        None,
    ),
    "dylan": (
        "dylan",
        [
            U,
            rnd(0, {"agent_id": "a", "position": 0}, {"agent_id": "b", "position": 1}),
            rnd(1, {"agent_id": "a", "position": 0}, {"agent_id": "c", "position": 2}),
        ],
        {"agents": ["c"], "round": 1, "mode": "R.2"},
        [None, "0.0", "0.1", "1.0", "1.2"],
        "1",
        3,
        None,
    ),
    "macnet": (
        "macnet",
        [
            U,
            {"agent_id": "node_0", "role": "author", "output": "c"},
            {"agent_id": "node_1", "role": "critic", "output": "k", "is_injected": True},
            {"agent_id": "node_1", "role": "rewriter", "output": "c2"},
            {"agent_id": "node_out", "role": "sink", "output": "c2"},
            FA,
        ],
        {"agent": "node_1", "round": 1, "position": 0, "mode": "C.3"},
        [None, "0.0", "1.0", "1.1", "2.0", None],
        "1.0",
        2,
        "node_1",
    ),
    "magentic-one": (
        "magentic",
        [
            U,
            {
                "kind": "agent",
                "agent": "orchestrator",
                "role": "Orchestrator",
                "round": 0,
                "position": 0,
                "output": "o",
            },
            {"kind": "agent", "agent": "websurfer", "role": "WebSurfer", "round": 0, "position": 1, "output": "w"},
        ],
        {"agent": "WebSurfer", "step": "0.1", "mode": "R.1"},
        [None, "0.0", "0.1"],
        "0.1",
        2,
        "websurfer",
    ),
    "mathchat": (
        "mathchat",
        [
            U,
            {"agent_id": "user_proxy", "round": 0, "position": 0, "output": "boot"},
            {"agent_id": "assistant", "round": 0, "position": 1, "output": "a"},
            {"agent_id": "user_proxy", "round": 1, "position": 0, "output": "exec"},
            {"agent_id": "assistant", "round": 1, "position": 1, "output": "b"},
            FA,
        ],
        {"agent": "assistant", "round": 1, "position": 1, "mode": "R.3"},
        [None, None, "1", "2", "3", None],
        "3",
        4,
        "assistant",
    ),
    "metagpt": (
        "metagpt",
        [
            U,
            {"agent_id": "architect", "role": "architect", "stage": 0, "output": "a"},
            {"agent_id": "engineer", "role": "engineer", "stage": 1, "output": "b"},
            {"agent_id": "reviewer", "role": "reviewer", "stage": 2, "output": "c"},
            FA,
        ],
        {"agent": "engineer", "stage": 1, "mode": "A.2"},
        [None, "0", "1", "2", None],
        "1",
        2,
        "engineer",
    ),
    "pixelcraft": (
        "pixelcraft",
        [
            U,
            rnd(0, {"agent_id": "planner", "position": 0}),
            rnd(1, {"agent_id": "critic", "position": 0}, {"agent_id": "reasoner", "position": 1}),
        ],
        {"agent": "reasoner", "round": 1, "position": 1, "mode": "P.1"},
        [None, "0.0", "1.0", "1.1"],
        "1.1",
        3,
        "reasoner",
    ),
    "dvd": (
        "dvd",
        [
            {"kind": "system", "content": "s"},
            U,
            {"kind": "assistant", "tool_calls": [{"id": "c1", "name": "frame_inspect_tool", "arguments": "{}"}]},
            {"kind": "tool", "tool_name": "frame_inspect_tool", "tool_call_id": "c1", "content": "v"},
            {"kind": "assistant", "content": "done"},
            {"kind": "tool", "tool_name": "finish", "content": "B"},
        ],
        {"agent": "frame_inspect_agent", "step": 3, "mode": "P.1"},
        [None, None, "0", "1", "2", "3"],
        "1",
        3,
        "frame_inspect_agent",
    ),
    "eva": (
        "eva",
        [
            {"kind": "system", "content": "s"},
            U,
            {"kind": "assistant", "tool_calls": [{"id": "c", "name": "frame_select", "arguments": "{}"}]},
            {"kind": "tool", "tool_call_id": "c", "content": "frames"},
            {"kind": "assistant", "content": "<answer>B</answer>", "injected": True},
        ],
        {"agent": None, "step": 4, "mode": "P.1"},
        [None, None, "0", "0", "1"],
        "1",
        4,
        "agent",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_coordinates_and_ground_truth_per_framework(name):
    fw, traj, gt, want_coords, want_step, want_index, want_agent = CASES[name]
    lay = coords.layout(fw, traj)
    assert lay.coords() == want_coords
    assert not lay.warnings
    resolved = gt_map.resolve_ground_truth(gt, lay)
    assert (resolved.step, resolved.step_index, resolved.agent) == (want_step, want_index, want_agent)
    assert resolved.mode == gt["mode"] and resolved.native == gt
    assert resolved.round_only == (frameworks.canonical_framework(fw) in ("debate", "dylan"))
    # The trajectory-free formula used by listings agrees with the mapping on the entries.
    assert gt_map.gt_coord(fw, gt) == (want_step, resolved.round_only)


def test_magentic_spelling_and_round_only_agents():
    lay = coords.layout("magentic", CASES["magentic-one"][1])
    assert lay.framework == "magentic-one"
    debate = gt_map.resolve_ground_truth(CASES["debate"][2], coords.layout("debate", CASES["debate"][1]))
    assert debate.agents == ["a1", "a2"] and debate.agent is None


def test_turn_slots_point_at_their_turn():
    lay = coords.layout("dylan", CASES["dylan"][1])
    last = lay.slots[-1]
    assert (last.entry, last.turn, last.agent, last.round, last.position) == (2, 1, "c", 1, 2)


def test_mathchat_round_zero_position_zero_is_unnumbered_user_input():
    lay = coords.layout("mathchat", CASES["mathchat"][1])
    assert lay.slots[1].coord is None and lay.slots[1].agent == "user_proxy"


def test_step_coord_wins_over_step():
    lay = coords.layout("smolagents", CASES["smolagents-noplan"][1])
    gt = gt_map.resolve_ground_truth({"step": 1, "step_coord": "Step 3", "mode": "R.2"}, lay)
    assert (gt.step, gt.step_index) == ("3", 3)


def test_accepted_predictions_become_accepted_alternatives():
    fw, traj, gt, *_ = CASES["macnet"]
    gt = dict(
        gt,
        accepted_predictions=[
            {"agent_name": "NODE_1", "step_coord": "1.1", "mode": "C.3"},
            {"agent_name": "node_1", "step_coord": "step 1.0", "mode": "r.2"},
        ],
    )
    resolved = gt_map.resolve_ground_truth(gt, coords.layout(fw, traj))
    assert resolved.accepted.agent == ["node_1"]
    assert resolved.accepted.step == ["1.1", "1.0"]
    assert resolved.accepted.mode == ["C.3", "R.2"]


def test_unknown_framework_uses_generic_rule_with_warning():
    numbered = coords.layout("newfw", [U, {"kind": "step", "step": 1}, {"kind": "step", "step": 2}])
    assert numbered.coords() == [None, "1", "2"]
    assert numbered.warnings and "unknown framework" in numbered.warnings[0]
    counted = coords.layout("newfw", [U, {"kind": "assistant", "agent": "x"}, {"kind": "tool"}, FA])
    assert counted.coords() == [None, "0", "1", None]
    assert counted.slots[1].agent == "x"
    gt = gt_map.resolve_ground_truth({"step": 1, "mode": "A.1"}, counted)
    assert gt.step_index == 2


@pytest.mark.parametrize(
    "fw,traj,gt,path,valid",
    [
        ("smolagents", CASES["smolagents-noplan"][1], {"step": 9}, "$.ground_truth.step", "1..3"),
        ("dvd", CASES["dvd"][1], {"step": 1}, "$.ground_truth.step", "2..5"),
        ("eva", CASES["eva"][1], {"step": 40}, "$.ground_truth.step", "2..4"),
        ("debate", CASES["debate"][1], {"round": 5}, "$.ground_truth.round", "rounds 0..1"),
        ("mathchat", CASES["mathchat"][1], {"round": 0, "position": 0}, "$.ground_truth.round", "1..3"),
        ("macnet", CASES["macnet"][1], {"round": 3, "position": 0}, "$.ground_truth.round", "0.0, 1.0"),
    ],
)
def test_ground_truth_step_out_of_range(fw, traj, gt, path, valid):
    with pytest.raises(TraceFormatError) as err:
        gt_map.resolve_ground_truth(gt, coords.layout(fw, traj))
    assert "step index out of range" in str(err.value)
    assert err.value.json_path == path
    assert valid in err.value.expected


@pytest.mark.parametrize(
    "fw,traj,gt,path",
    [
        ("smolagents", "not a list", None, "$.trajectory"),
        ("smolagents", [U, "oops"], None, "$.trajectory[1]"),
        ("magentic-one", [{"kind": "agent", "round": "one", "position": 0}], None, "$.trajectory[0].round"),
        ("debate", [{"kind": "round", "round": 0, "turns": {"a": 1}}], None, "$.trajectory[0].turns"),
        ("smolagents", [U, act(1)], {"step": [1]}, "$.ground_truth.step"),
        ("smolagents", [U, act(1)], {"step": 1, "mode": 3}, "$.ground_truth.mode"),
        ("smolagents", [U, act(1)], "step 1", "$.ground_truth"),
        (
            "smolagents",
            [U, act(1)],
            {"step": 1, "accepted_predictions": {"x": 1}},
            "$.ground_truth.accepted_predictions",
        ),
    ],
)
def test_wrong_types_name_the_json_path(fw, traj, gt, path):
    with pytest.raises(TraceFormatError) as err:
        gt_map.resolve_ground_truth(gt, coords.layout(fw, traj))
    assert err.value.json_path == path


def test_no_ground_truth_and_trace_level_labels():
    lay = coords.layout("smolagents", [U, act(1)])
    assert gt_map.resolve_ground_truth(None, lay) is None
    only_mode = gt_map.resolve_ground_truth({"agent": None, "mode": "R.4"}, lay)
    assert (only_mode.step, only_mode.step_index, only_mode.mode) == (None, None, "R.4")


@pytest.mark.parametrize(
    "value,want", [("Step 3", "3"), (" round 1.1 ", "1.1"), (3, "3"), ("03", "3"), ("turn 2.", "2")]
)
def test_normalize_coord(value, want):
    assert coords.normalize_coord(value) == want
