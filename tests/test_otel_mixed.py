"""Who did it, in mixed OpenTelemetry traces: agents marked with the GenAI conventions
(``invoke_agent`` + ``gen_ai.agent.name``) and OpenInference (``AGENT`` spans), model
calls traced by the real ``openinference-instrumentation-openai`` around the real
``openai`` SDK talking to the local LLM test server, all exported by the real
OpenTelemetry SDK over OTLP/HTTP to the receiver ``whenpro serve --otlp`` runs. Every
step's agent is the nearest enclosing agent span; agent spans frame steps, not steps."""

from __future__ import annotations

import pytest
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor

from tests.support.otel_agent import provider, run_mixed_team
from whenpro_core.formats import load_trace
from whenpro_core.live.otlp_server import OtlpReceiver
from whenpro_core.live.store import LiveStore


@pytest.fixture
def receiver(tmp_path):
    rx = OtlpReceiver(LiveStore(tmp_path / "store", flush_interval=0.02), "127.0.0.1", 0)
    with rx:
        yield rx


@pytest.fixture
def instrumented(receiver):
    """A TracerProvider exporting to ``receiver``, with OpenInference's OpenAI
    instrumentation installed on it (removed afterwards)."""
    tp = provider(receiver.endpoint, service="team-service")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tp)
    try:
        yield tp
    finally:
        instrumentor.uninstrument()
        tp.shutdown()


def test_every_step_gets_the_agent_of_its_nearest_agent_span(receiver, instrumented, llm_server):
    llm_server.script(
        "Sessions 135 + breaks 30 = 165 minutes.", "165 is right.", "The check holds.", "The workshop ends at 11:55."
    )
    client = OpenAI(base_url=llm_server.openai_base_url, api_key="sk-test-not-a-key")
    trace_id = run_mixed_team(instrumented, client)
    instrumented.force_flush()
    receiver.store.flush()
    trace = load_trace(receiver.store.folder / f"{trace_id}.json")

    assert [(s.agent, s.kind) for s in trace.steps] == [
        ("planner", "assistant"),
        ("planner", "tool"),
        ("checker", "assistant"),
        ("reviewer", "assistant"),
        ("planner", "assistant"),
    ]
    # the model steps are OpenInference's LLM spans, read as such, with the server's answers
    assert [s.meta.get("span_kind") for s in trace.steps] == ["LLM", None, "LLM", "LLM", "LLM"]
    assert [s.content for s in trace.steps if s.kind == "assistant"] == [
        "Sessions 135 + breaks 30 = 165 minutes.",
        "165 is right.",
        "The check holds.",
        "The workshop ends at 11:55.",
    ]
    assert trace.steps[1].tool_calls[0].name == "calculator" and trace.steps[1].observation == "165"
    # agent spans (both conventions) frame the steps instead of being steps; none is a bare span
    assert all(s.kind not in ("span", "agent") for s in trace.steps)
    assert sorted(f["name"] for f in trace.extras["agent_spans"]) == [
        "invoke_agent checker",
        "invoke_agent planner",
        "reviewer",
    ]
    assert trace.agent_ids() == ["planner", "checker", "reviewer"]
    assert trace.task.query.startswith("A workshop starts at 09:10")
    assert "sk-test-not-a-key" not in (receiver.store.folder / f"{trace_id}.json").read_text()
