"""A JSON list of LangSmith batch bodies holding several trace ids is one trace per trace
id (as for OpenTelemetry), each with its own prompts; one trace id stays one trace."""

from __future__ import annotations

import json
from pathlib import Path

from whenpro_core.formats import load_trace, load_traces, walk


def _llm_body(trace_id: str, prompt: str, reply: str, stamp: str) -> dict:
    run = {
        "id": trace_id,
        "trace_id": trace_id,
        "name": "ChatOpenAI",
        "run_type": "llm",
        "dotted_order": f"{stamp}Z{trace_id}",
        "inputs": {"messages": [{"role": "user", "content": prompt}]},
    }
    patch = {"id": trace_id, "trace_id": trace_id, "dotted_order": run["dotted_order"]}
    patch["outputs"] = {"choices": [{"message": {"role": "assistant", "content": reply}}]}
    return {"post": [run], "patch": [patch]}


def test_two_trace_ids_with_the_same_prompt_are_two_traces(tmp_path: Path) -> None:
    p = tmp_path / "list.json"
    bodies = [
        _llm_body("t-1", "Say hi", "hi", "20241013T070537170001"),
        _llm_body("t-2", "Say hi", "hello", "20241013T070538000001"),
    ]
    p.write_text(json.dumps(bodies))
    traces = load_traces(p)
    assert [t.id for t in traces] == ["langsmith-t-1", "langsmith-t-2"]
    assert [[(s.kind, s.content) for s in t.steps] for t in traces] == [
        [("user", "Say hi"), ("assistant", "hi")],
        [("user", "Say hi"), ("assistant", "hello")],
    ]
    assert [r.key for r in walk(p)] == ["t-1", "t-2"]
    assert load_trace(f"{p}#t-2").final_answer == "hello"


def test_one_trace_id_over_several_bodies_stays_one_trace(tmp_path: Path) -> None:
    p = tmp_path / "one.json"
    body = _llm_body("t-1", "Say hi", "hi", "20241013T070537170001")
    p.write_text(json.dumps([{"post": body["post"]}, {"patch": body["patch"]}]))
    (trace,) = load_traces(p)
    assert [s.kind for s in trace.steps] == ["user", "assistant"] and trace.final_answer == "hi"


def test_the_real_sdk_bodies_in_one_list_keep_every_prompt(real_traces: Path, tmp_path: Path) -> None:
    files = sorted((real_traces / "langsmith" / "langsmith-sdk").glob("*.json"))
    p = tmp_path / "list.json"
    p.write_text(json.dumps([json.loads(f.read_text(encoding="utf-8")) for f in files]))
    traces = load_traces(p)
    alone = [load_trace(f) for f in files]
    assert len(traces) == 4 and sum(len(t.steps) for t in traces) == 8
    assert sorted(t.id for t in traces) == sorted(t.id for t in alone)
    assert all(t.steps[0].kind == "user" and t.steps[0].content for t in traces)
