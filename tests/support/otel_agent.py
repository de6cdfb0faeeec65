"""A tiny agent instrumented with the real OpenTelemetry SDK the way GenAI
instrumentations do it (semantic-conventions gen-ai: ``invoke_agent`` around the run,
``chat`` spans with ``gen_ai.input.messages``/``gen_ai.output.messages`` JSON, and
``execute_tool`` spans), exporting with the real OTLP/HTTP exporter to an endpoint."""

from __future__ import annotations

import json

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

from tests.support.waiting import TIMEOUT_S


def provider(
    endpoint: str, *, service: str = "workshop-agent", gzip: bool = False, batch: bool = False
) -> TracerProvider:
    """A TracerProvider exporting to ``endpoint`` (the full /v1/traces URL). The exporter's
    timeout (retries included) is the tests' hang guard: a loaded machine never trips it."""
    exporter = OTLPSpanExporter(
        endpoint=endpoint, timeout=TIMEOUT_S, compression=Compression.Gzip if gzip else Compression.NoCompression
    )
    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    tp.add_span_processor(
        BatchSpanProcessor(exporter, schedule_delay_millis=50) if batch else SimpleSpanProcessor(exporter)
    )
    return tp


def _chat(tracer, user: str, answer: str, tool: tuple[str, dict] | None = None) -> None:
    parts = [{"type": "text", "content": answer}]
    if tool:
        parts.append({"type": "tool_call", "id": f"call_{tool[0]}", "name": tool[0], "arguments": tool[1]})
    with tracer.start_as_current_span(
        "chat gpt-4.1",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4.1",
            "gen_ai.usage.input_tokens": 120,
            "gen_ai.usage.output_tokens": 20,
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": user}]}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
        },
    ):
        pass


def _tool(tracer, name: str, args: dict, result: object) -> None:
    with tracer.start_as_current_span(
        f"execute_tool {name}",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": json.dumps(args),
            "gen_ai.tool.call.result": json.dumps(result),
        },
    ):
        pass


QUESTION = "A workshop starts at 09:10 with 3 sessions of 45 minutes and 2 breaks of 15 minutes. When does it end?"


def run_workshop_agent(tp: TracerProvider, *, wrong: bool = True) -> str:
    """One run: a planner agent that adds up the times (wrongly: 2 * 15 = 20, when
    ``wrong``) and answers. Returns the trace id (hex)."""
    tracer = tp.get_tracer("workshop.agents", "1.0")
    breaks = "2 * 15 = 20" if wrong else "2 * 15 = 30"
    total = 155 if wrong else 165
    with tracer.start_as_current_span(
        "invoke_agent planner", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}
    ) as root:
        _chat(tracer, QUESTION, "Sessions: 3 * 45 = 135 minutes.", ("calculator", {"expr": "3*45"}))
        _tool(tracer, "calculator", {"expr": "3*45"}, 135)
        _chat(tracer, "135", f"Breaks: {breaks} minutes. Total {total} minutes.", ("clock_add", {"minutes": total}))
        _tool(tracer, "clock_add", {"start": "09:10", "minutes": total}, "11:45" if wrong else "11:55")
        _chat(tracer, "11:45" if wrong else "11:55", f"The workshop ends at {'11:45' if wrong else '11:55'}.")
        return format(root.get_span_context().trace_id, "032x")


def _agent_span(tracer, name: str, convention: str):
    """An agent span in either convention: GenAI ``invoke_agent`` with ``gen_ai.agent.name``
    or an OpenInference ``AGENT`` span with ``agent.name``."""
    if convention == "genai":
        return tracer.start_as_current_span(
            f"invoke_agent {name}", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
        )
    return tracer.start_as_current_span(name, attributes={"openinference.span.kind": "AGENT", "agent.name": name})


def run_mixed_team(tp: TracerProvider, client) -> str:
    """A team whose agents are marked with the GenAI conventions (``planner``, ``checker``)
    and OpenInference (``reviewer``), whose model calls go through ``client`` (a real
    ``openai.OpenAI``, traced by whatever instrumentation is installed) and whose tools are
    GenAI ``execute_tool`` spans. Four model calls: planner, checker, reviewer, planner.
    Returns the trace id (hex)."""
    tracer = tp.get_tracer("team.agents", "1.0")

    def ask(text: str) -> None:
        client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": text}])

    with _agent_span(tracer, "planner", "genai") as root:
        ask(QUESTION)
        _tool(tracer, "calculator", {"expr": "3*45 + 2*15"}, 165)
        with _agent_span(tracer, "checker", "genai"):
            ask("Check: 3*45 + 2*15 = 165")
            with _agent_span(tracer, "reviewer", "openinference"):
                ask("Review the check.")
        ask("165 minutes after 09:10?")
        return format(root.get_span_context().trace_id, "032x")
