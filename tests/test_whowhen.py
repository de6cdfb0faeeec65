"""The original Who&When importer, on the real files and on small made-up cases."""

from __future__ import annotations

import json

import pytest

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, walk

#: Files where the labelled agent is not the speaker at the labelled step, as the
#: SOURCE.md of real_traces/who-and-when lists (20.json is in the holdout set).
KNOWN_DISAGREEMENTS = {
    ("Algorithm-Generated", "14"),
    ("Algorithm-Generated", "15"),
    ("Algorithm-Generated", "59"),
    ("Hand-Crafted", "20"),
    ("Hand-Crafted", "22"),
    ("Hand-Crafted", "49"),
}


def test_all_real_files_import_and_gt_points_at_the_labelled_agent(real_traces):
    root = real_traces / "who-and-when" / "Who&When"
    files = sorted(root.glob("*/*.json"))
    assert len(files) == 129
    for f in files:
        trace = load_trace(f)
        gt = trace.ground_truth
        assert gt is not None and gt.step == trace.ground_truth.native["mistake_step"].strip()
        step = trace.steps[gt.step_index]
        assert step.coord == gt.step
        if (f.parent.name, f.stem) not in KNOWN_DISAGREEMENTS:
            assert step.agent.lower() == gt.agent.lower(), f
        else:
            assert step.agent.lower() != gt.agent.lower(), f


def test_hand_crafted_speaker_comes_from_the_decorated_role(real_traces):
    trace = load_trace(real_traces / "who-and-when/Who&When/Hand-Crafted/1.json")
    assert trace.framework == "magentic-one"
    assert trace.steps[0].agent == "human" and trace.steps[0].kind == "user"
    orchestrator = [s for s in trace.steps if s.agent == "Orchestrator"]
    assert {s.kind for s in orchestrator} >= {"plan", "instruction"}
    routed = next(s for s in orchestrator if s.kind == "instruction")
    assert routed.meta["to"] in {"WebSurfer", "Assistant", "FileSurfer", "ComputerTerminal"}
    assert trace.task.answer == "Renzo Gracie Jiu-Jitsu Wall Street"


def test_algorithm_generated_speaker_is_name_not_role(real_traces):
    trace = load_trace(real_traces / "who-and-when/Who&When/Algorithm-Generated/1.json")
    assert trace.framework == "captainagent"
    assert trace.steps[0].agent == "Excel_Expert"
    assert trace.steps[1].agent == "Computer_terminal" and trace.steps[1].kind == "observation"
    assert "system_prompt" in trace.extras and "mistake_agent" not in trace.extras


def test_walk_sorts_file_names_numerically(real_traces):
    rows = list(walk(real_traces / "who-and-when/Who&When/Algorithm-Generated"))
    numbers = [int(r.id.rsplit("-", 1)[1]) for r in rows]
    assert numbers == sorted(numbers) and not any(r.error for r in rows)


def _write(tmp_path, doc, name="7.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_made_up_algorithm_generated_case(tmp_path):
    doc = {
        "question": "2+2?",
        "ground_truth": "4",
        "is_correct": False,
        "history": [
            {"content": "Compute 2+2", "role": "assistant", "name": "Math_Expert"},
            {"content": ["exitcode: 0", "5"], "role": "user", "name": "Computer_terminal"},
            {"content": "", "role": "user", "name": "Verification_Expert"},
        ],
        "mistake_agent": "Math_Expert",
        "mistake_step": "0",
        "mistake_reason": "bad code",
    }
    trace = load_trace(_write(tmp_path, doc))
    assert [s.coord for s in trace.steps] == ["0", "1", "2"]
    assert trace.steps[1].content == "exitcode: 0\n5"
    assert trace.ground_truth.agent == "Math_Expert" and trace.ground_truth.step == "0"
    assert trace.ground_truth.mode is None


@pytest.mark.parametrize(
    "doc, json_path",
    [
        ({"history": [{"content": "x", "role": "human"}], "mistake_step": "4", "mistake_agent": "a"}, "$.mistake_step"),
        (
            {"history": [{"content": "x", "role": "human"}], "mistake_step": "two", "mistake_agent": "a"},
            "$.mistake_step",
        ),
        ({"history": ["just a string"], "mistake_step": "0", "mistake_agent": "a"}, "$.history[0]"),
        (
            {"history": [{"content": 5, "role": "human"}], "mistake_step": "0", "mistake_agent": "a"},
            "$.history[0].content",
        ),
        (
            {
                "history": [{"content": "x", "role": "user", "name": "A"}, {"content": "y", "role": "user"}],
                "mistake_step": "0",
                "mistake_agent": "A",
            },
            "$.history[1].name",
        ),
    ],
)
def test_bad_who_and_when_files_name_the_json_path(tmp_path, doc, json_path):
    with pytest.raises(TraceFormatError) as info:
        load_trace(_write(tmp_path, doc))
    assert json_path in str(info.value) and str(tmp_path) in str(info.value)
