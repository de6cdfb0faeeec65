"""``whenpro convert IN OUT --to otlp-json`` (issue 17, item 3): any trace whenpro reads is
written as OpenTelemetry GenAI spans in an OTLP/JSON ``ExportTraceServiceRequest`` that
the real ``opentelemetry-proto`` message accepts, and reads back (from the file and
through the OTLP receiver ``whenpro serve --otlp`` runs) with the same steps, agents,
tool calls and observations. Without whenpro's own ``whenpro.*`` attributes the spans
still say who spoke, which tools were called with what, and what they returned."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from google.protobuf.json_format import Parse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.conftest import REPO, team_trace
from tests.support.waiting import TIMEOUT_S
from tests.test_atif_export import REFS
from whenpro_core.formats import load_trace
from whenpro_core.formats.otlp_write import PEOPLE, STEP_KEY, TRACE_KEY, trace_to_otlp, write_otlp
from whenpro_core.live.otlp_server import OtlpReceiver
from whenpro_core.live.store import LiveStore
from whenpro_core.trace.model import Trace

OTLP_REFS = [*REFS, "who-and-when/Who&When/Hand-Crafted/1.json", "who-when-pro-samples/data/traces/mmsearch_car.json"]


def shape(trace: Trace) -> list[tuple]:
    return [
        (
            s.agent,
            s.kind,
            s.coord,
            s.content,
            s.observation,
            s.error,
            [(c.id, c.name, c.arguments) for c in s.tool_calls],
            s.meta.get("reasoning"),
            [m.model_dump() for m in s.media],
        )
        for s in trace.steps
    ]


def spans(doc: dict) -> list[dict]:
    return [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]


def round_trip(trace: Trace, tmp_path: Path) -> Trace:
    path = write_otlp(trace, tmp_path / f"{len(list(tmp_path.iterdir()))}.otlp.json")
    Parse(path.read_text(encoding="utf-8"), ExportTraceServiceRequest())  # the real proto message
    back = load_trace(path)
    assert back.source.format == "otel"
    return back


def strip_whenpro(doc: dict) -> dict:
    """The export without whenpro's own attributes: what another tool reads."""
    for rs in doc["resourceSpans"]:
        rs["resource"]["attributes"] = [a for a in rs["resource"]["attributes"] if a["key"] != TRACE_KEY]
    for sp in spans(doc):
        sp["attributes"] = [a for a in sp["attributes"] if a["key"] != STEP_KEY]
    return doc


@pytest.mark.real_traces
@pytest.mark.parametrize("ref", OTLP_REFS)
def test_real_traces_export_otlp_json_and_read_back(real_traces: Path, ref: str, tmp_path: Path) -> None:
    trace = load_trace(f"{real_traces}/{ref}")
    back = round_trip(trace, tmp_path)
    assert shape(back) == shape(trace)
    assert [a.id for a in back.agents] == [a.id for a in trace.agents]
    assert back.id == trace.id and back.final_answer == trace.final_answer and back.outcome == trace.outcome
    assert back.task == trace.task and back.framework == trace.framework


@pytest.mark.real_traces
@pytest.mark.parametrize("ref", OTLP_REFS)
def test_the_conventions_alone_carry_agents_calls_and_results(real_traces: Path, ref: str, tmp_path: Path) -> None:
    trace = load_trace(f"{real_traces}/{ref}")
    doc = trace_to_otlp(trace)
    frames = [sp for sp in spans(doc) if sp["name"].startswith("invoke_agent ")]
    assert {sp["name"].removeprefix("invoke_agent ") for sp in frames} == {
        s.agent for s in trace.steps if s.kind not in ("user", "system") and s.agent not in PEOPLE
    }
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(strip_whenpro(doc)), encoding="utf-8")
    plain = load_trace(path)
    assert len(plain.steps) == len(trace.steps)
    for mine, theirs in zip(trace.steps, plain.steps, strict=True):
        if mine.kind in ("user", "system") or mine.agent in PEOPLE:
            continue  # people's turns: no GenAI span type; whenpro.step holds them
        assert theirs.agent == mine.agent
        if theirs.kind == "tool" or theirs.tool_calls:  # an execute_tool or chat span with calls
            assert [c.name for c in theirs.tool_calls] == [c.name for c in mine.tool_calls]
        if theirs.meta.get("operation") == "execute_tool" and mine.observation is not None:
            assert theirs.observation is not None
        assert (theirs.error is None) == (mine.error is None)


def test_made_up_team_trace_round_trips_with_labels(tmp_path: Path) -> None:
    trace = team_trace()
    back = round_trip(trace, tmp_path)
    assert shape(back) == shape(trace)
    assert back.ground_truth == trace.ground_truth and back.agents == trace.agents
    assert "hidden" not in json.dumps(spans(trace_to_otlp(trace)))  # injection markers never leave
    names = [sp["name"] for sp in spans(trace_to_otlp(trace))]
    assert any(n.startswith("invoke_agent ") for n in names) and any(n.startswith("execute_tool ") for n in names)


def test_the_export_posted_to_the_otlp_receiver_is_the_same_trace(tmp_path: Path) -> None:
    trace = team_trace()
    body = json.dumps(trace_to_otlp(trace)).encode()
    with OtlpReceiver(LiveStore(tmp_path / "store", flush_interval=0.02), "127.0.0.1", 0) as rx:
        req = urllib.request.Request(
            rx.endpoint, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            assert resp.status == 200
        rx.store.flush()
        stored = [load_trace(p) for p in (tmp_path / "store").glob("*.json")]
    assert len(stored) == 1 and shape(stored[0]) == shape(trace)


@pytest.mark.real_traces
def test_convert_to_otlp_json_on_the_command_line(real_traces: Path, tmp_path: Path) -> None:
    out = tmp_path / "codex.otlp.json"
    src = real_traces / REFS[4]
    cmd = [sys.executable, "-m", "whenpro_core.cli", "convert", str(src), str(out), "--to", "otlp-json"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    trace = load_trace(src)
    step_spans = [sp for sp in spans(doc) if not sp["name"].startswith("invoke_agent ")]
    assert len(step_spans) == len(trace.steps)
    assert any(sp["name"].startswith("execute_tool ") for sp in step_spans)  # calls paired with their output
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(strip_whenpro(doc)), encoding="utf-8")
    plain = load_trace(path)
    assert sum(len(s.tool_calls) for s in plain.steps) == sum(len(s.tool_calls) for s in trace.steps)


def test_damaged_whenpro_attributes_are_ignored_and_the_trace_still_opens(tmp_path: Path) -> None:
    doc = trace_to_otlp(team_trace())
    for sp in spans(doc):
        for a in sp["attributes"]:
            if a["key"] == STEP_KEY:
                a["value"] = {
                    "stringValue": json.dumps(
                        {
                            "kind": 7,
                            "tool_calls": [{"name": "x", "id": {"no": 1}}],
                            "media": [{"kind": "sound"}],
                            "string_arguments": {"a": 1},
                        }
                    )
                }
    doc["resourceSpans"][0]["resource"]["attributes"][1]["value"] = {"stringValue": '{"task": 5, "outcome": "?"}'}
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    back = load_trace(path)
    assert len(back.steps) == len(team_trace().steps)
    # the agents' own steps still name their agent (the framing invoke_agent spans say it)
    for mine, theirs in zip(team_trace().steps, back.steps, strict=True):
        assert mine.agent in PEOPLE or theirs.agent == mine.agent
