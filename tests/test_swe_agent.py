"""SWE-agent ``.traj`` files (every schema version in real_traces/swe-agent-traj, each
quirk of its SOURCE.md) and mini-swe-agent trajectories (hand-made fixtures matching
``SWE-agent/mini-swe-agent`` ``run/utils/save.py``)."""

from __future__ import annotations

import json

import pytest

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, walk
from whenpro_core.trace.model import Outcome

SWE = "swe-agent-traj"
PYDICOM = f"{SWE}/tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj"  # noqa: E501
DEMOS = f"{SWE}/trajectories/demonstrations"
FC_INSTALL = f"{DEMOS}/replay__marshmallow-code__marshmallow-1867__function_calling__install-1/marshmallow-code__marshmallow-1867.traj"  # noqa: E501
FC_REPLACE = f"{DEMOS}/replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source/marshmallow-code__marshmallow-1867.traj"  # noqa: E501


def test_every_real_traj_imports_with_actions_numbered_from_one(real_traces):
    rows = list(walk(real_traces / SWE))
    assert len(rows) == 9 and not [r for r in rows if r.error]
    for row in rows:
        trace = load_trace(row.ref())
        assert trace.framework == "swe-agent" and trace.source.format == "swe-agent"
        actions = [s for s in trace.steps if s.kind == "action"]
        assert [s.coord for s in actions] == [str(n) for n in range(1, len(actions) + 1)]
        assert all(s.coord is None for s in trace.steps if s.kind != "action")
        assert trace.task.query and all(s.tool_calls for s in actions)


def test_state_as_json_string_in_old_files_and_dict_in_new_ones(real_traces):
    raw_old = json.loads((real_traces / PYDICOM).read_text())
    assert isinstance(raw_old["trajectory"][0]["state"], str)
    old = load_trace(real_traces / PYDICOM)
    assert old.steps[3].meta["state"] == {"open_file": "n/a", "working_dir": "/pydicom__pydicom"}
    new = load_trace(real_traces / FC_INSTALL)
    assert isinstance(json.loads((real_traces / FC_INSTALL).read_text())["trajectory"][0]["state"], dict)
    assert new.steps[2].meta["state"]["working_dir"] == "/testbed"


def test_execution_time_and_messages_only_in_newer_files(real_traces):
    new = load_trace(real_traces / FC_REPLACE)
    action = next(s for s in new.steps if s.kind == "action")
    assert action.meta["execution_time_s"] > 0
    assert "messages" not in action.raw  # the per-step copy of the conversation is left out
    old = load_trace(real_traces / PYDICOM)
    assert all("execution_time_s" not in s.meta for s in old.steps)


def test_replay_config_absent_or_dict_is_kept(real_traces):
    assert "replay_config" not in load_trace(real_traces / PYDICOM).extras
    new = load_trace(real_traces / FC_INSTALL)
    assert isinstance(new.extras["replay_config"], dict)
    assert new.benchmark == "swe-bench"  # from the recorded SWE-bench image, not the path


def test_only_history_file_pairs_actions_with_tool_results(real_traces):
    trace = load_trace(real_traces / f"{DEMOS}/function_calling_simple.traj")
    assert [s.kind for s in trace.steps[:3]] == ["system", "user", "action"]
    first = trace.steps[2]
    assert first.tool_calls[0].name == "find_file"
    assert first.tool_calls[0].arguments == {"file_name": "missing_colon.py"}
    assert "Found 1 matches" in first.observation
    assert trace.final_answer is None and trace.outcome == Outcome.unknown


def test_demonstrations_are_marked_and_folded(real_traces):
    trace = load_trace(real_traces / PYDICOM)
    demos = [s for s in trace.steps if s.kind == "demonstration"]
    assert len(demos) == 1 and demos[0].meta["is_demo"] is True and demos[0].meta["folded"] == 1
    assert demos[0].coord is None and "DEMONSTRATION" in demos[0].content
    assert "Pixel Representation" in trace.task.query  # the task is not the demonstration


def test_several_demo_messages_fold_into_one_step(tmp_path):
    doc = {
        "environment": "swe_main",
        "info": {"exit_status": "exit_cost"},
        "history": [
            {"role": "system", "content": "sys", "agent": "primary"},
            {"role": "user", "content": "demo 1", "agent": "primary", "is_demo": True},
            {"role": "assistant", "content": "demo 2", "agent": "primary", "is_demo": True},
            {"role": "user", "content": "fix the bug", "agent": "primary"},
            {"role": "assistant", "content": "ls", "thought": "look", "action": "ls", "agent": "primary"},
        ],
        "trajectory": [
            {
                "action": "ls",
                "observation": "a.py",
                "response": "ls",
                "thought": "look",
                "state": '{"open_file": "n/a"}',
            }
        ],
    }
    p = tmp_path / "run.traj"
    p.write_text(json.dumps(doc))
    trace = load_trace(p)
    assert [s.kind for s in trace.steps] == ["system", "demonstration", "user", "action"]
    assert trace.steps[1].meta["folded"] == 2 and trace.steps[1].content == "demo 1\n\ndemo 2"
    assert trace.outcome == Outcome.failure  # exit_cost: the run hit its budget


def test_longest_file_loads_and_keeps_the_submission(real_traces):
    trace = load_trace(real_traces / FC_REPLACE)
    assert trace.final_answer.lstrip().startswith("diff --git")
    assert trace.outcome == Outcome.unknown  # submitted, not evaluated


@pytest.mark.parametrize(
    "doc, json_path",
    [
        ({"environment": "x", "history": ["nope"]}, "$.history[0]"),
        ({"environment": "x", "history": [{"role": "system", "content": "s"}], "trajectory": [5]}, "$.trajectory[0]"),
        (
            {"environment": "x", "history": [], "trajectory": [{"action": 3, "observation": "o"}]},
            "$.trajectory[0].action",
        ),
        ({"environment": "x", "history": [{"content": "no role"}]}, "$.history[0].role"),
        ({"environment": "x", "history": [{"role": "user", "content": 7}]}, "$.history[0].content"),
        (
            {"history": [{"role": "assistant", "content": "c", "agent": "main", "tool_calls": [{"function": {}}]}]},
            "$.history[0].tool_calls[0].function.name",
        ),
    ],
)
def test_half_broken_traj_files_name_the_json_path(tmp_path, doc, json_path):
    p = tmp_path / "bad.traj"
    p.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError) as info:
        load_trace(p)
    assert json_path in str(info.value) and str(p) in str(info.value) and "\n" not in str(info.value)


# ------------------------------------------------------------------ mini-swe-agent

MINI_V1 = {
    "info": {
        "exit_status": "Submitted",
        "submission": "diff --git a/x.py b/x.py\n",
        "model_stats": {"instance_cost": 0.02, "api_calls": 2},
        "mini_version": "1.9.0",
        "config": {"model": {"model_name": "gpt-4.1", "model_kwargs": {"api_key": "sk-live-123"}}},
    },
    "messages": [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": "Your task: fix the off-by-one in x.py."},
        {"role": "assistant", "content": "THOUGHT: look first.\n\n```bash\ncat x.py\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\nfor i in range(n+1):\n</output>"},
        {
            "role": "assistant",
            "content": "THOUGHT: fix and submit.\n\n```bash\nsed -i s/n+1/n/ x.py && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```",  # noqa: E501
        },
        {"role": "user", "content": "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},
    ],
    "trajectory_format": "mini-swe-agent-1",
}

MINI_V11 = {
    "trajectory_format": "mini-swe-agent-1.1",
    "info": {"model_stats": {"instance_cost": 0.0, "api_calls": 2}, "mini_version": "2.0.0"},
    "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Make the tests pass."},
        {
            "role": "assistant",
            "content": "Run the tests.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "pytest -q"}'},
                }
            ],
            "extra": {"actions": [{"command": "pytest -q", "tool_call_id": "call_1"}]},
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "1 failed"},
        {
            "role": "assistant",
            "content": "Still failing; out of budget.",
            "extra": {"actions": [{"command": "pytest -q -x"}]},
        },
        {"role": "tool", "content": "1 failed"},
        {"role": "exit", "content": "", "extra": {"exit_status": "LimitsExceeded", "submission": ""}},
    ],
}


def test_mini_swe_agent_v1_text_actions(tmp_path):
    p = tmp_path / "astropy-1234.traj.json"
    p.write_text(json.dumps(MINI_V1))
    trace = load_trace(p)
    assert trace.source.format == "mini-swe-agent" and trace.framework == "mini-swe-agent"
    assert [(s.kind, s.coord) for s in trace.steps] == [
        ("system", None),
        ("user", None),
        ("action", "1"),
        ("action", "2"),
    ]
    assert trace.steps[2].tool_calls[0].arguments == "cat x.py"
    assert "range(n+1)" in trace.steps[2].observation
    assert trace.final_answer.startswith("diff --git") and trace.outcome == Outcome.unknown
    assert "sk-live-123" not in json.dumps(trace.model_dump(mode="json"))


def test_mini_swe_agent_v11_tool_calls_and_exit_message(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(json.dumps(MINI_V11))
    trace = load_trace(p)
    first, second = trace.steps[2], trace.steps[3]
    assert first.tool_calls[0].id == "call_1" and first.tool_calls[0].arguments == {"command": "pytest -q"}
    assert first.observation == "1 failed"
    assert second.tool_calls[0].arguments == "pytest -q -x"  # from extra.actions
    assert trace.outcome == Outcome.failure and trace.extras["exit_message"]["role"] == "exit"


def test_half_broken_mini_swe_agent(tmp_path):
    doc = dict(MINI_V1, messages=[{"role": "system", "content": "s"}, {"content": "no role"}])
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match=r"\$\.messages\[1\]\.role"):
        load_trace(p)
