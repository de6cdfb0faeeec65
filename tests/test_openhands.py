"""OpenHands event streams and evaluation output lines (real_traces/openhands-trajectories,
each quirk of its SOURCE.md) and small made-up cases."""

from __future__ import annotations

import json

import pytest

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, load_traces, walk
from whenpro_core.formats.native import dumps_trace
from whenpro_core.trace.model import Outcome

OH = "openhands-trajectories"
MSB = f"{OH}/evaluation/benchmarks/multi_swe_bench/examples"
GUI = f"{OH}/tests/runtime/trajs/basic_gui_mode.json"
RESOLVER = f"{OH}/tests/unit/resolver/mock_output/output__issue5.jsonl"


def test_every_real_file_imports(real_traces):
    rows = list(walk(real_traces / OH))
    assert len(rows) == 6 and not [r for r in rows if r.error]
    assert {r.framework for r in rows} == {"openhands"}


def test_observations_pair_to_actions_by_cause_not_position(real_traces):
    raw = json.loads((real_traces / f"{MSB}/output__ponylang__ponyc-4588.jsonl").read_text())
    ids = [e["id"] for e in raw["history"]]
    assert ids[:4] == [0, 1, 2, 4]  # not contiguous: 3 was a hidden event
    trace = load_trace(real_traces / f"{MSB}/output__ponylang__ponyc-4588.jsonl")
    by_coord = {s.coord: s for s in trace.steps}
    recall = by_coord["2"]  # action 2 answered by observation 4 (cause 2)
    assert recall.meta["action"] == "recall" and recall.observation == "Added workspace context"
    run = by_coord["5"]
    assert run.tool_calls[0].arguments["command"] == "cd /workspace/ponylang__ponyc__0.1 && ls -l"
    assert run.observation.startswith("total 296") and run.meta["exit_code"] == 0
    assert "4" not in by_coord and "6" not in by_coord  # observations are not steps of their own


def test_null_string_observations_add_nothing(real_traces):
    raw = json.loads((real_traces / GUI).read_text())
    assert any(e.get("observation") == "null" for e in raw)
    trace = load_trace(real_traces / GUI)
    user = next(s for s in trace.steps if s.kind == "user")
    assert user.observation is None and user.meta["null_observation"] is True
    assert not any("No observation" in (s.observation or "") for s in trace.steps)


def test_masked_api_key_never_shown(real_traces):
    path = real_traces / f"{MSB}/output__ponylang__ponyc-4593.jsonl"
    assert '"api_key":"**********"' in path.read_text().replace(" ", "")
    trace = load_trace(path)
    dumped = dumps_trace(trace).decode()
    assert "**********" not in dumped and "api_key" in dumped
    assert trace.extras["metadata"]["llm_config"]["api_key"] == "[redacted]"


def test_max_iteration_error_is_the_outcome(real_traces):
    trace = load_trace(real_traces / f"{MSB}/output__ponylang__ponyc-4588.jsonl")
    assert trace.outcome == Outcome.failure
    last = trace.steps[-1]
    assert last.kind == "error" and "maximum iteration" in last.error and last.coord is None
    ok = load_trace(real_traces / f"{MSB}/output__ponylang__ponyc-4595.jsonl")
    assert ok.outcome == Outcome.unknown and ok.steps[-1].kind == "final_answer"


def test_error_observation_without_cause_is_its_own_step(real_traces):
    trace = load_trace(real_traces / f"{MSB}/output__ponylang__ponyc-4588.jsonl")
    err = next(s for s in trace.steps if s.coord == "55")
    assert err.kind == "error" and err.error.startswith("Parameter 'command' is expected")


def test_long_histories_and_agent_counts(real_traces):
    for name, events in (("4588", 103), ("4593", 70), ("4595", 49)):
        raw = json.loads((real_traces / f"{MSB}/output__ponylang__ponyc-{name}.jsonl").read_text())
        assert len(raw["history"]) == events
        trace = load_trace(real_traces / f"{MSB}/output__ponylang__ponyc-{name}.jsonl")
        actions = sum(1 for e in raw["history"] if "action" in e)
        assert len([s for s in trace.steps if s.meta.get("action")]) == actions
        assert trace.agents[0].role == "CodeActAgent" or "agent" in trace.agent_ids()
        assert "CodeActAgent" in {a.role for a in trace.agents}


def test_resolver_line_success_and_explanation(real_traces):
    trace = load_trace(real_traces / RESOLVER)
    assert trace.outcome == Outcome.success and trace.id == "openhands-neubig-pr-viewer-issue5"
    assert "MIT License" in trace.extras["result_explanation"]
    assert trace.steps[0].kind == "user" and trace.steps[0].content.startswith("Please fix")
    run = trace.steps[1]  # older id-less events: the observation right after its action
    assert run.tool_calls[0].arguments["command"] == "touch LICENSE" and "root@" in run.observation
    assert trace.final_answer.startswith("diff --git a/LICENSE") or trace.steps[-1].kind == "final_answer"


def test_jsonl_with_several_runs_keys_by_row(real_traces, tmp_path):
    lines = [(real_traces / f"{MSB}/output__ponylang__ponyc-{n}.jsonl").read_text().strip() for n in ("4593", "4595")]
    p = tmp_path / "output.jsonl"
    p.write_text(lines[0] + "\n\n" + lines[1] + "\n")
    rows = list(walk(p))
    assert [r.key for r in rows] == ["1", "3"] and not [r for r in rows if r.error]
    assert load_trace(f"{p}#3").id == "openhands-ponylang__ponyc-4595"
    assert len(load_traces(p)) == 2


def test_a_bad_row_is_an_error_row_and_the_others_list(real_traces, tmp_path):
    good = (real_traces / f"{MSB}/output__ponylang__ponyc-4595.jsonl").read_text().strip()
    p = tmp_path / "output.jsonl"
    broken = json.loads(good)
    broken["history"][3] = {"action": 5}
    p.write_text(good + "\n" + json.dumps(broken) + "\n")
    rows = list(walk(p))
    assert rows[0].error is None and "$.history[3].action" in rows[1].error and ":2" in rows[1].error


@pytest.mark.parametrize(
    "events, json_path",
    [
        ([{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}}, "oops"], "$[1]"),
        ([{"id": 0, "source": "user", "action": "message"}, {"id": 1, "observation": 7}], "$[1].observation"),
        ([{"id": [1], "source": "agent", "action": "run", "args": {}}], "$[0].id"),
        ([{"id": 0, "source": 3, "action": "run", "args": {}}], "$[0].source"),
    ],
)
def test_half_broken_event_lists_name_the_json_path(tmp_path, events, json_path):
    p = tmp_path / "events.json"
    p.write_text(json.dumps(events, indent=1))
    with pytest.raises(TraceFormatError) as info:
        load_trace(p)
    assert json_path in str(info.value) and str(p) in str(info.value)


def test_half_broken_output_line(tmp_path):
    p = tmp_path / "out.json"
    p.write_text(
        json.dumps(
            {
                "instance_id": "x",
                "instruction": "do",
                "history": [
                    {"id": 0, "source": "agent", "action": "run", "args": {"command": "ls"}},
                    {
                        "id": 1,
                        "source": "agent",
                        "observation": "run",
                        "cause": 0,
                        "content": "a",
                        "startTimeUnixNano": 0,
                    },
                    "junk",
                ],
            },
            indent=1,
        )
    )
    with pytest.raises(TraceFormatError, match=r"\$\.history\[2\]"):
        load_trace(p)
