"""OpenTelemetry importer: OTLP/JSON and JSON lines, GenAI conventions (current message
attributes and the older per-message events) and OpenInference. The fixtures in
tests/fixtures/otel/ were produced by the real OpenTelemetry SDK
(tests/fixtures/otel/make_otel_fixtures.py)."""

from __future__ import annotations

import base64
import json

import pytest

from conftest import REPO
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, load_traces, walk
from whenpro_core.formats.native import dumps_trace, load_native, write_trace
from whenpro_core.trace.model import Modality, Outcome

FIX = REPO / "tests" / "fixtures" / "otel"


def _spans(doc):
    return [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]


def test_several_trace_ids_in_one_file_are_several_traces_keyed_by_trace_id():
    doc = json.loads((FIX / "genai_current.json").read_text())
    ids = list(dict.fromkeys(sp["traceId"] for sp in _spans(doc)))
    rows = list(walk(FIX / "genai_current.json"))
    assert len(ids) == 2 and sorted(r.key for r in rows) == sorted(ids)
    for tid in ids:
        assert load_trace(f"{FIX / 'genai_current.json'}#{tid}").id == tid


def test_spans_ordered_by_start_time_with_parent_child_in_meta():
    trace = load_traces(FIX / "genai_current.json")[0]
    starts = [s.meta["start_ns"] for s in trace.steps]
    assert starts == sorted(starts) and [s.coord for s in trace.steps] == [str(i) for i in range(5)]
    # the invoke_agent spans frame steps instead of being steps; they are kept in extras
    frames = {f["span_id"]: f for f in trace.extras["agent_spans"]}
    assert [f["name"] for f in frames.values()] == ["invoke_agent planner", "invoke_agent researcher"]
    assert all(s.kind != "agent" for s in trace.steps)
    by_span = {s.meta["span_id"]: s for s in trace.steps} | frames
    for s in trace.steps:
        parent = by_span[s.meta["parent_span_id"]]
        assert s.meta["depth"] == parent.get("meta", {}).get("depth", s.meta["depth"] - 1) + 1


def test_agent_comes_from_the_enclosing_agent_span():
    trace = load_traces(FIX / "genai_current.json")[0]
    assert [s.agent for s in trace.steps] == ["planner", "planner", "researcher", "researcher", "planner"]
    assert trace.agent_ids() == ["planner", "researcher"]


def test_genai_messages_tool_calls_results_errors_and_media():
    trace = load_traces(FIX / "genai_current.json")[0]
    chat, tool, failed, last = trace.steps[0], trace.steps[1], trace.steps[2], trace.steps[4]
    assert chat.kind == "action" and chat.content == "I will check the weather."
    assert chat.tool_calls[0].name == "get_weather" and chat.tool_calls[0].arguments == {"city": "Paris"}
    assert chat.meta["usage.input_tokens"] == 212 and chat.meta["request.model"] == "gpt-4.1"
    assert trace.task.query == "Plan a day in Paris; check the weather first."
    assert tool.kind == "tool" and tool.tool_calls[0].id == "call_w1" and '"forecast": "rain"' in tool.observation
    assert failed.error == "TimeoutError: museum API timed out after 30 s" and failed.observation is None
    assert last.media[0].mime == "image/png" and trace.modality == Modality.image
    assert trace.final_answer == "Rainy day: Louvre in the morning, cafe after."
    assert trace.outcome == Outcome.unknown  # the failed tool span is not the root


def test_older_per_message_events_and_json_lines():
    lines = (FIX / "genai_events.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(x)["resourceSpans"] for x in lines)
    trace = load_trace(FIX / "genai_events.jsonl")
    assert [s.kind for s in trace.steps] == ["span", "action", "assistant"]
    assert trace.steps[1].tool_calls[0].name == "calc" and trace.steps[1].tool_calls[0].arguments == {"x": "2+2"}
    assert trace.steps[2].content == "It is 4." and trace.task.query == "What is 2+2?"
    assert trace.steps[2].meta["input"] == "4"  # the tool message it was given last


def test_openinference_span_kinds():
    trace = load_trace(FIX / "openinference.json")
    assert trace.source.format == "openinference" and trace.framework == "openinference"
    assert [s.kind for s in trace.steps] == ["action", "tool", "chain", "assistant"]
    assert {s.agent for s in trace.steps} == {"ResearchAgent"}
    llm, tool = trace.steps[0], trace.steps[1]
    assert llm.tool_calls[0].name == "wiki_search" and llm.tool_calls[0].arguments == {"q": "Dune novel"}
    assert llm.meta["input"] == "Who wrote Dune?" and llm.meta["model_name"] == "gpt-4o-mini"
    assert tool.observation == "Dune is a 1965 novel by Frank Herbert."
    assert trace.task.query == "Who wrote Dune?" and trace.final_answer == "Dune was written by Frank Herbert."


def test_base64_ids_int_strings_and_error_root(tmp_path):
    tid = base64.b64encode(bytes(range(16))).decode()
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "x"},
                        "spans": [
                            {
                                "traceId": tid,
                                "spanId": base64.b64encode(b"\x01" * 8).decode(),
                                "name": "invoke_agent boss",
                                "startTimeUnixNano": "10",
                                "endTimeUnixNano": "20",
                                "status": {"code": 2, "message": "boom"},
                                "attributes": [
                                    {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                                    {"key": "n", "value": {"intValue": "7"}},
                                    {"key": "tags", "value": {"arrayValue": {"values": [{"stringValue": "a"}]}}},
                                ],
                            }
                        ],
                    }
                ],
            }
        ]
    }
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    trace = load_trace(p)
    assert trace.id == bytes(range(16)).hex() and trace.steps[0].meta["span_id"] == "01" * 8
    assert trace.steps[0].raw["attributes"]["n"] == 7 and trace.steps[0].raw["attributes"]["tags"] == ["a"]
    assert trace.outcome == Outcome.failure and trace.steps[0].error == "error: boom"


def test_round_trip_through_the_native_format(tmp_path):
    for f in ("genai_current.json", "genai_events.jsonl", "openinference.json"):
        for trace in load_traces(FIX / f):
            back = load_native(write_trace(trace, tmp_path / "n.json"))
            assert back.model_dump(exclude={"source"}) == trace.model_dump(exclude={"source"})


def test_secret_attributes_are_redacted(tmp_path):
    doc = json.loads((FIX / "openinference.json").read_text())
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"].append(
        {"key": "llm.api_key", "value": {"stringValue": "sk-live-secret"}}
    )
    p = tmp_path / "oi.json"
    p.write_text(json.dumps(doc))
    assert "sk-live-secret" not in dumps_trace(load_trace(p)).decode()


@pytest.mark.parametrize(
    "mutate, json_path",
    [
        (lambda d: d["resourceSpans"].__setitem__(0, "x"), "$.resourceSpans[0]"),
        (lambda d: d["resourceSpans"][0].__setitem__("scopeSpans", {}), "$.resourceSpans[0].scopeSpans"),
        (
            lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][0].pop("traceId"),
            "$.resourceSpans[0].scopeSpans[0].spans[0].traceId",
        ),
        (
            lambda d: d["resourceSpans"][1]["scopeSpans"][0]["spans"][0].__setitem__("startTimeUnixNano", "soon"),
            "$.resourceSpans[1].scopeSpans[0].spans[0].startTimeUnixNano",
        ),
        (
            lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][0].__setitem__("events", [3]),
            "$.resourceSpans[0].scopeSpans[0].spans[0].events[0]",
        ),
        (lambda d: d.__setitem__("resourceSpans", []), "$.resourceSpans"),
    ],
)
def test_half_broken_otlp_names_the_json_path(tmp_path, mutate, json_path):
    doc = json.loads((FIX / "openinference.json").read_text())
    mutate(doc)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc, indent=1))
    with pytest.raises(TraceFormatError) as info:
        load_trace(p)
    assert json_path in str(info.value) and str(p) in str(info.value)


def test_half_broken_json_lines_name_the_row(tmp_path):
    lines = (FIX / "genai_events.jsonl").read_text().splitlines()
    p = tmp_path / "spans.jsonl"
    p.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2] + "\n" + lines[2] + "\n")
    with pytest.raises(TraceFormatError) as info:
        load_trace(p)
    assert f"{p}:2" in str(info.value)
    rows = list(walk(p))
    assert len(rows) == 1 and rows[0].error
