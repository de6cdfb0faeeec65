"""Write any trace as OpenTelemetry spans in the OTLP/JSON encoding
(``whenpro convert IN OUT --to otlp-json``), following the GenAI semantic conventions
(semantic-conventions ``gen-ai``: agent and model spans), the reverse of
:mod:`whenpro_core.formats.otel`. The file is one ``ExportTraceServiceRequest``
(``{"resourceSpans": [...]}``), which ``whenpro serve --otlp`` also accepts as a POST body.

Spans (one trace id, ``sha256(trace.id)[:32]``; span ids ``%016x`` counters):

* ``invoke_agent <agent>`` (``gen_ai.operation.name`` ``invoke_agent``,
  ``gen_ai.agent.name``): one per run of consecutive steps by the same agent, framing
  those steps (their parent). Steps of people (``user``, ``system``, ``environment``) are
  root spans with no frame.
* ``chat <model>`` (kind CLIENT) for a step spoken by an agent that is not a tool step:
  ``gen_ai.output.messages`` = one assistant message whose parts are the content
  (``text``), the tool calls (``tool_call``) and images with data (``blob``);
  ``gen_ai.input.messages`` the last input when known (``meta["input"]``);
  ``gen_ai.request.model`` and ``gen_ai.usage.{input,output}_tokens`` when known.
* ``execute_tool <name>`` for a tool step with one call: ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``
  (the observation).
* any other step: a span named after its kind.

Message content goes in the span attributes (the current conventions; the older
per-message events are deprecated). Times are the steps' ``meta["timestamp"]`` when every
step has one and they never go back, else 1 ms apart from 0, so step order survives.
A step's error is the span status ERROR with the error as its message.

What the conventions have no field for is kept in a ``whenpro.step`` attribute (JSON:
kind, coordinate, error, the agent of people's steps, and content, observation, calls or
media the span type cannot hold) and, for the trace, a ``whenpro.trace`` resource
attribute (id, task, final answer, outcome, agents, framework, benchmark, modality,
ground truth), read back by :func:`restore_step` and :func:`restore_trace`. Without them
the spans still read as the same steps, agents, calls and observations.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from whenpro_core.formats.base import as_text, maybe_json, redact_secrets
from whenpro_core.formats.otlp import Span
from whenpro_core.storage import jsonio
from whenpro_core.storage.fsutil import atomic_write_bytes
from whenpro_core.trace.model import (
    NON_AGENT_SPEAKERS,
    Agent,
    GroundTruth,
    MediaRef,
    Modality,
    Outcome,
    Step,
    Task,
    ToolCall,
    Trace,
)

#: Attribute holding a step's fields the conventions lack (JSON text).
STEP_KEY = "whenpro.step"
#: Resource attribute holding the trace's own fields (JSON text).
TRACE_KEY = "whenpro.trace"
PEOPLE = NON_AGENT_SPEAKERS
_INTERNAL, _CLIENT = 1, 3
_META_KEYS = ("timestamp", "model", "usage", "reasoning", "input")


def _json(value: Any) -> str:
    return jsonio.dumps(value).decode()


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        v: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    else:
        v = {"stringValue": value if isinstance(value, str) else _json(value)}
    return {"key": key, "value": v}


def _is_person(step: Step) -> bool:
    return step.kind in ("user", "system") or step.agent in PEOPLE


def _read_back(value: Any) -> str:
    """What the importer makes of a text it finds in a JSON-valued attribute."""
    return as_text(maybe_json(value))


def _times(trace: Trace) -> list[int]:
    stamps = []
    for step in trace.steps:
        try:
            stamps.append(int(datetime.fromisoformat(str(step.meta["timestamp"])).timestamp() * 1e9))
        except (KeyError, ValueError, TypeError, OverflowError):
            break
    if len(stamps) == len(trace.steps) and all(a <= b for a, b in itertools.pairwise(stamps)):
        return stamps
    return [i * 1_000_000 for i in range(len(trace.steps))]


def _usage(usage: Any) -> list[dict[str, Any]]:
    if not isinstance(usage, dict):
        return []
    out = []
    for key, names in (
        ("gen_ai.usage.input_tokens", ("input_tokens", "prompt_tokens", "input")),
        ("gen_ai.usage.output_tokens", ("output_tokens", "completion_tokens", "output")),
    ):
        value = next(
            (usage[n] for n in names if isinstance(usage.get(n), int) and not isinstance(usage.get(n), bool)), None
        )
        if value is not None:
            out.append(_attr(key, value))
    return out


def _media_parts(step: Step, mine: dict[str, Any]) -> list[dict[str, Any]]:
    """``blob`` parts for images with data; every media entry is kept in ``mine`` (without
    the data when it went into a part)."""
    parts, kept = [], []
    for m in step.media:
        entry = m.model_dump(exclude_none=True)
        if m.data and m.kind != "video":
            parts.append({"type": "blob", "modality": "image", "mime_type": m.mime or "image/png", "content": m.data})
            entry.pop("data")
            entry["blob"] = True
        kept.append(entry)
    if kept:
        mine["media"] = kept
    return parts


def _calls_exact(step: Step, mine: dict[str, Any]) -> None:
    """Note the calls whose id or arguments would not read back as written."""
    strings = {
        str(j): c.arguments
        for j, c in enumerate(step.tool_calls)
        if isinstance(c.arguments, str) and maybe_json(c.arguments) != c.arguments
    }
    if strings:  # JSON text passed as a string: read back as the string, not its value
        mine["string_arguments"] = strings


def _chat_span(step: Step, mine: dict[str, Any]) -> tuple[str, int, list[dict[str, Any]]]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": step.content}] if step.content else []
    parts += [{"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls]
    parts += _media_parts(step, mine)
    _calls_exact(step, mine)
    message = {"role": "assistant", "parts": parts, "finish_reason": "tool_call" if step.tool_calls else "stop"}
    attrs = [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.output.messages", [message])]
    model = step.meta.get("model")
    if isinstance(model, str) and model:
        attrs.append(_attr("gen_ai.request.model", model))
    if isinstance(step.meta.get("input"), str) and step.meta["input"]:
        attrs.append(
            _attr(
                "gen_ai.input.messages", [{"role": "user", "parts": [{"type": "text", "content": step.meta["input"]}]}]
            )
        )
    attrs += _usage(step.meta.get("usage"))
    if step.observation is not None:
        mine["observation"] = step.observation
    return (f"chat {model}" if isinstance(model, str) and model else "chat"), _CLIENT, attrs


def _tool_span(step: Step, mine: dict[str, Any]) -> tuple[str, int, list[dict[str, Any]]]:
    call = step.tool_calls[0]
    attrs = [
        _attr("gen_ai.operation.name", "execute_tool"),
        _attr("gen_ai.tool.name", call.name),
        _attr("gen_ai.tool.type", "function"),
    ]
    if call.id is not None:
        attrs.append(_attr("gen_ai.tool.call.id", call.id))
    if call.arguments is not None:
        args = call.arguments
        attrs.append(_attr("gen_ai.tool.call.arguments", args if isinstance(args, str) else _json(args)))
    _calls_exact(step, mine)
    if step.observation is not None:
        attrs.append(_attr("gen_ai.tool.call.result", step.observation))
        if _read_back(step.observation) != step.observation:
            mine["observation"] = step.observation
    if step.content:
        mine["content"] = step.content
    if step.media:
        mine["media"] = [m.model_dump(exclude_none=True) for m in step.media]
    return f"execute_tool {call.name}", _INTERNAL, attrs


def _other_span(step: Step, mine: dict[str, Any]) -> tuple[str, int, list[dict[str, Any]]]:
    mine["content"] = step.content
    if step.observation is not None:
        mine["observation"] = step.observation
    if step.tool_calls:
        mine["tool_calls"] = [c.model_dump() for c in step.tool_calls]
    if step.media:
        mine["media"] = [m.model_dump(exclude_none=True) for m in step.media]
    return step.kind or "step", _INTERNAL, []


def step_span(step: Step, trace_id: str, span_id: str, parent: str | None, start: int, end: int) -> dict[str, Any]:
    """One step as an OTLP/JSON span (rules in the module doc)."""
    mine: dict[str, Any] = {"kind": step.kind, "coord": step.coord}
    if _is_person(step):
        mine["agent"] = step.agent
        name, kind, attrs = _other_span(step, mine)
    elif len(step.tool_calls) == 1 and (step.kind == "tool" or (step.observation is not None and not step.content)):
        name, kind, attrs = _tool_span(step, mine)
    elif step.content or step.tool_calls or step.media:
        name, kind, attrs = _chat_span(step, mine)
    else:
        name, kind, attrs = _other_span(step, mine)
    if step.error is not None:
        mine["error"] = step.error
    meta = {k: step.meta[k] for k in _META_KEYS if step.meta.get(k) is not None}
    if meta:
        mine["meta"] = meta
    attrs.append(_attr(STEP_KEY, redact_secrets(mine)))
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": attrs,
    }
    if parent:
        span["parentSpanId"] = parent
    if step.error is not None:
        span["status"] = {"code": 2, "message": step.error}
    return span


def _frame(agent: str, trace_id: str, span_id: str, start: int, end: int) -> dict[str, Any]:
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": f"invoke_agent {agent}",
        "kind": _INTERNAL,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [_attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", agent)],
    }


def trace_to_otlp(trace: Trace) -> dict[str, Any]:
    """The ``ExportTraceServiceRequest`` (OTLP/JSON) of ``trace``, a JSON-ready dict."""
    trace_id = hashlib.sha256(trace.id.encode()).hexdigest()[:32]
    times = _times(trace)
    ends = [*times[1:], (times[-1] + 1_000_000) if times else 0]
    spans: list[dict[str, Any]] = []
    counter = 0
    frame: dict[str, Any] | None = None
    for step, start, end in zip(trace.steps, times, ends, strict=True):
        person = _is_person(step)
        if person or frame is None or frame["_agent"] != step.agent:
            frame = None
            if not person:
                counter += 1
                frame = _frame(step.agent, trace_id, f"{counter:016x}", start, end) | {"_agent": step.agent}
                spans.append(frame)
        counter += 1
        parent = frame["spanId"] if frame else None
        spans.append(step_span(step, trace_id, f"{counter:016x}", parent, start, end))
        if frame:
            frame["endTimeUnixNano"] = str(end)
    for s in spans:
        s.pop("_agent", None)
    mine = redact_secrets(
        {
            "id": trace.id,
            "task": trace.task.model_dump(mode="json"),
            "final_answer": trace.final_answer,
            "outcome": trace.outcome.value,
            "agents": [a.model_dump() for a in trace.agents],
            "framework": trace.framework,
            "benchmark": trace.benchmark,
            "modality": trace.modality.value,
            "ground_truth": trace.ground_truth.model_dump(mode="json") if trace.ground_truth else None,
        }
    )
    resource = [_attr("service.name", trace.framework or "whenpro"), _attr(TRACE_KEY, mine)]
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": resource},
                "scopeSpans": [{"scope": {"name": "whenpro.convert"}, "spans": spans}],
            }
        ]
    }


def dumps_otlp(trace: Trace) -> bytes:
    """The OTLP/JSON of ``trace`` (indented UTF-8)."""
    return jsonio.dumps(trace_to_otlp(trace), indent=True)


def write_otlp(trace: Trace, path: str | Path) -> Path:
    """Write ``trace`` to ``path`` as OTLP/JSON, atomically."""
    return atomic_write_bytes(path, dumps_otlp(trace) + b"\n")


# ------------------------------------------------------------------ reading back


def _mine(value: Any) -> dict[str, Any]:
    value = maybe_json(value)
    return value if isinstance(value, dict) else {}


def _restore_media(step: Step, kept: Any) -> None:
    if not isinstance(kept, list):
        return
    blobs = iter([m.data for m in step.media])
    media = []
    try:
        for entry in kept:
            if isinstance(entry, dict):
                data = next(blobs, None) if entry.get("blob") else entry.get("data")
                media.append(MediaRef.model_validate({k: v for k, v in entry.items() if k != "blob"} | {"data": data}))
    except ValidationError:
        return
    step.media = media


def restore_step(step: Step, span: Span) -> Step:
    """``step`` read from ``span`` with the fields whenpro wrote in its ``whenpro.step``
    attribute put back (steps of other spans are returned unchanged). Invalid entries
    are left out: the trace still opens."""
    mine = _mine(span.attributes.get(STEP_KEY))
    if not mine:
        return step
    for name in ("kind", "agent", "content"):
        if isinstance(mine.get(name), str):
            setattr(step, name, mine[name])
    for name in ("coord", "observation", "error"):
        if name in mine and isinstance(mine[name], (str, type(None))):
            setattr(step, name, mine[name])
    if isinstance(mine.get("tool_calls"), list):
        with contextlib.suppress(ValidationError):  # calls that do not validate stay as the span gave them
            step.tool_calls = [
                ToolCall.model_validate(c)
                for c in mine["tool_calls"]
                if isinstance(c, dict) and isinstance(c.get("name"), str)
            ]
    strings = mine.get("string_arguments")
    for j, text in strings.items() if isinstance(strings, dict) else []:
        if j.isdigit() and int(j) < len(step.tool_calls) and isinstance(text, str):
            step.tool_calls[int(j)].arguments = text
    _restore_media(step, mine.get("media"))
    if isinstance(mine.get("meta"), dict):
        step.meta.update(mine["meta"])
    if step.error is None and span.failed and "error" not in mine:
        step.error = span.error_text()
    return step


def restore_trace(trace: Trace, resource: dict[str, Any]) -> Trace:
    """``trace`` with the fields whenpro wrote in the ``whenpro.trace`` resource attribute
    put back (unchanged when there are none or they are invalid)."""
    mine = _mine(resource.get(TRACE_KEY))
    if not mine:
        return trace
    try:
        fields: dict[str, Any] = {
            "task": Task.model_validate(mine.get("task") or {}),
            "agents": [Agent.model_validate(a) for a in mine.get("agents") or []],
        }
        if mine.get("ground_truth"):
            fields["ground_truth"] = GroundTruth.model_validate(mine["ground_truth"])
        if mine.get("outcome") in {o.value for o in Outcome}:
            fields["outcome"] = Outcome(mine["outcome"])
        if mine.get("modality") in {m.value for m in Modality}:
            fields["modality"] = Modality(mine["modality"])
    except ValidationError:
        return trace
    for name in ("id", "framework", "benchmark"):
        if isinstance(mine.get(name), str) and mine[name]:
            fields[name] = mine[name]
    if isinstance(mine.get("final_answer"), (str, type(None))):
        fields["final_answer"] = mine.get("final_answer")
    return trace.model_copy(update=fields)


__all__ = [
    "STEP_KEY",
    "TRACE_KEY",
    "dumps_otlp",
    "restore_step",
    "restore_trace",
    "step_span",
    "trace_to_otlp",
    "write_otlp",
]
