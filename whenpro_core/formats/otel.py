"""OpenTelemetry traces of agent runs: OTLP/JSON files and JSON lines of OTLP exports,
read with the GenAI semantic conventions (this module) or OpenInference's
(:mod:`whenpro_core.formats.openinference`, chosen per trace when its spans carry
``openinference.span.kind``).

Container (OTLP/JSON, ``opentelemetry-proto`` ``ExportTraceServiceRequest``):
``{"resourceSpans": [{"resource": {"attributes": [...]}, "scopeSpans": [{"scope": {...},
"spans": [{traceId, spanId, parentSpanId, name, kind, startTimeUnixNano,
endTimeUnixNano, attributes, events, status}]}]}]}``; attributes are lists of
``{key, value: {stringValue|intValue|doubleValue|boolValue|arrayValue|kvlistValue|bytesValue}}``
(``intValue`` and times may be strings); ids are hex (OTLP/JSON) or base64 (protobuf
JSON default). A file is one such document, or one per line (a collector's file exporter).

Each trace id in a file is one trace (key = the trace id). Spans are ordered into steps
by start time; coordinate = 0-based position. ``Step.meta`` keeps ``span_id``,
``parent_span_id``, ``depth``, ``name`` and ``duration_ms`` for the tree view. Each span
is read in the convention it carries (OpenInference when it has ``openinference.span.kind``,
else GenAI), so traces mixing both (GenAI agent spans around OpenInference model spans)
read right. Agent spans in either convention (GenAI ``invoke_agent``/``create_agent``/
``invoke_workflow``, OpenInference ``AGENT``) frame their steps instead of being steps
(kept as raw spans in ``Trace.extras["agent_spans"]``; one with no child span stays an
``agent`` step). The agent of a step is the name (``gen_ai.agent.name``, ``agent.name``,
``graph.node.name``, else the span name) of its nearest enclosing agent span, else the
span's own ``gen_ai.agent.name``/``agent.name``, else the service name. The final answer
is the outermost agent span's output when it states one, else the last assistant text.
Spans written by :mod:`whenpro_core.formats.otlp_write` carry whenpro's own fields, put back.

GenAI conventions (semantic-conventions gen-ai, spans and agent spans; the messages JSON
schemas): ``gen_ai.operation.name`` ``chat``/``text_completion``/``generate_content`` ->
a model step whose content is the text parts of ``gen_ai.output.messages`` and whose
``tool_call`` parts are tool calls (``blob`` image parts become media); ``execute_tool``
-> a ``tool`` step (``gen_ai.tool.name``, ``gen_ai.tool.call.arguments`` as the call,
``gen_ai.tool.call.result`` as the observation). The older per-message span events (``gen_ai.system.message``,
``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message``,
``gen_ai.choice``) stand in when the message attributes are absent. A span with status
ERROR gets ``Step.error`` (``error.type`` and the status or ``exception`` event message);
a failed root span makes the outcome ``failure``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import openinference
from whenpro_core.formats.base import (
    FileImporter,
    LoadContext,
    as_text,
    dict_or_empty,
    maybe_json,
    parse_json,
    redact_secrets,
    summarize,
    top_level_keys,
)
from whenpro_core.formats.otlp import Span, base_step, enclosing, order_spans, spans_of
from whenpro_core.formats.otlp_write import restore_step, restore_trace
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.coords import small_int
from whenpro_core.trace.model import (
    Agent,
    MediaRef,
    Modality,
    Outcome,
    Step,
    Task,
    ToolCall,
    Trace,
    TraceSummary,
)

MAX_FILE_BYTES = 1024 * 1024 * 1024
_MODEL_OPS = {"chat", "text_completion", "generate_content"}
_AGENT_OPS = {"invoke_agent", "create_agent", "invoke_workflow"}


# ------------------------------------------------------------------ GenAI conventions


def _op(span: Span) -> str:
    op = span.attributes.get("gen_ai.operation.name")
    if isinstance(op, str):
        return op
    first = span.name.split(" ", 1)[0]
    return first if first in _MODEL_OPS | _AGENT_OPS | {"execute_tool"} else ""


def _agent_name(span: Span) -> str:
    name = span.attributes.get("gen_ai.agent.name")
    if isinstance(name, str) and name:
        return name
    return span.name.split(" ", 1)[1] if " " in span.name else span.name


def parts_message(parts: Any) -> tuple[str, list[ToolCall], list[MediaRef]]:
    """Text, tool calls and media of a GenAI message's ``parts`` (text, reasoning,
    tool_call, tool_call_response, blob, uri, file)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    media: list[MediaRef] = []
    for p in parts if isinstance(parts, list) else []:
        if not isinstance(p, dict):
            continue
        t = p.get("type")
        if t == "text":
            texts.append(as_text(p.get("content")))
        elif t == "reasoning":
            texts.append(f"[reasoning] {as_text(p.get('content'))}")
        elif t == "tool_call" and isinstance(p.get("name"), str):
            calls.append(ToolCall(id=p.get("id"), name=p["name"], arguments=maybe_json(p.get("arguments"))))
        elif t == "tool_call_response":
            texts.append(as_text(p.get("response", p.get("result"))))
        elif t == "blob" and isinstance(p.get("content"), str):
            media.append(
                MediaRef(
                    kind="video" if p.get("modality") == "video" else "image",
                    data=p["content"],
                    mime=p.get("mime_type"),
                    label=f"blob #{len(media)}",
                )
            )
        elif t in ("uri", "file"):
            media.append(MediaRef(kind="image", label=as_text(p.get("uri") or p.get("file_id"))))
    return "\n".join(t for t in texts if t), calls, media


def _messages(value: Any) -> list[JSONObject]:
    value = maybe_json(value)
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _event_messages(span: Span) -> tuple[list[JSONObject], list[JSONObject]]:
    """(input, output) messages from the older per-message span events, as
    ``{role, text, tool_calls}``."""
    ins, outs = [], []
    for ev in span.events:
        a, name = ev["attributes"], ev["name"]
        if name in ("gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message"):
            ins.append(
                {
                    "role": name.split(".")[1],
                    "text": as_text(a.get("content")),
                    "tool_calls": _old_calls(a.get("tool_calls")),
                }
            )
        elif name == "gen_ai.choice":
            msg = maybe_json(a.get("message"))
            msg = msg if isinstance(msg, dict) else {"content": a.get("content")}
            outs.append(
                {
                    "role": "assistant",
                    "text": as_text(msg.get("content")),
                    "tool_calls": _old_calls(msg.get("tool_calls") or a.get("tool_calls")),
                }
            )
        elif name == "gen_ai.content.completion":
            outs.append({"role": "assistant", "text": as_text(a.get("gen_ai.completion")), "tool_calls": []})
        elif name == "gen_ai.content.prompt":
            ins.append({"role": "user", "text": as_text(a.get("gen_ai.prompt")), "tool_calls": []})
    return ins, outs


def _old_calls(value: Any) -> list[ToolCall]:
    calls = []
    for c in maybe_json(value) if isinstance(maybe_json(value), list) else []:
        fn = c.get("function") if isinstance(c, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            calls.append(ToolCall(id=c.get("id"), name=fn["name"], arguments=maybe_json(fn.get("arguments"))))
    return calls


def _model_step(i: int, span: Span, agent: str) -> tuple[Step, str]:
    a = span.attributes
    ins = [
        {"role": m.get("role"), "text": parts_message(m.get("parts"))[0]}
        for m in _messages(a.get("gen_ai.input.messages"))
    ]
    outs = _messages(a.get("gen_ai.output.messages"))
    ev_in, ev_out = _event_messages(span)
    ins = ins or ev_in
    text, calls, media = "", list[ToolCall](), list[MediaRef]()
    for m in outs:
        t, c, md = parts_message(m.get("parts"))
        text, calls, media = "\n".join(x for x in (text, t) if x), calls + c, media + md
    for m in ev_out if not outs else []:
        text = "\n".join(x for x in (text, m["text"]) if x)
        calls += m["tool_calls"]
    step = base_step(i, span, agent, "action" if calls else "assistant")
    step.content, step.tool_calls, step.media = text, calls, media
    user = ""
    if ins:
        step.meta["input"] = ins[-1]["text"]
        user = next((m["text"] for m in ins if m["role"] == "user" and m["text"]), "")
    for key in (
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
    ):
        if key in a:
            step.meta[key.removeprefix("gen_ai.")] = a[key]
    return step, user


def genai_step(i: int, span: Span, agent: str) -> tuple[Step, str]:
    """Step ``i`` made of one span under the GenAI conventions, spoken by ``agent``, and
    the first user message it received (``""`` if none)."""
    op, a, user = _op(span), span.attributes, ""
    if op in _MODEL_OPS:
        step, user = _model_step(i, span, agent)
    elif op == "execute_tool":
        step = base_step(i, span, agent, "tool")
        step.tool_calls = [
            ToolCall(
                id=a.get("gen_ai.tool.call.id"),
                name=str(a.get("gen_ai.tool.name") or _agent_name(span)),
                arguments=maybe_json(a.get("gen_ai.tool.call.arguments")),
            )
        ]
        result = a.get("gen_ai.tool.call.result")
        step.observation = None if result is None else as_text(maybe_json(result))
    elif op in _AGENT_OPS:
        step = base_step(i, span, agent, "agent")
        step.content = f"{op} {_agent_name(span)}"
    else:
        step = base_step(i, span, agent, "span")
        step.content = span.name
    step.meta["operation"] = op or None
    return step, user


# ------------------------------------------------------------------ agents (either convention)


def agent_span_name(span: Span) -> str | None:
    """The agent a span stands for, or ``None`` when it is no agent span: GenAI
    ``invoke_agent``/``create_agent``/``invoke_workflow`` spans and OpenInference
    ``AGENT`` spans, named by ``gen_ai.agent.name``, ``agent.name``, ``graph.node.name``,
    else the span name (without a leading operation word)."""
    a = span.attributes
    if _op(span) not in _AGENT_OPS and str(a.get(openinference.KIND) or "").upper() != "AGENT":
        return None
    for key in ("gen_ai.agent.name", "agent.name", "graph.node.name"):
        if isinstance(a.get(key), str) and a[key]:
            return str(a[key])
    return _agent_name(span)


def _own_agent(span: Span) -> str | None:
    for key in ("gen_ai.agent.name", "agent.name"):
        if isinstance(span.attributes.get(key), str) and span.attributes[key]:
            return str(span.attributes[key])
    return None


def trace_steps(spans: list[Span]) -> tuple[list[Step], str, list[Span]]:
    """Steps of one trace (spans ordered by :func:`order_spans`), its task query, and the
    agent spans that frame steps instead of being steps.

    Each span is read in the convention it carries (OpenInference when it has
    ``openinference.span.kind``, else GenAI), so mixed traces work. The agent of a step is
    the agent of the nearest enclosing agent span in either convention
    (:func:`agent_span_name`), else the span's own ``gen_ai.agent.name``/``agent.name``,
    else the service name. An agent span with child spans is a frame (no step); one with
    none stays an ``agent`` step, so nothing it says is lost."""
    by_id = {s.span_id: s for s in spans}
    parents = {s.parent_span_id for s in spans if s.parent_span_id}
    service = str(spans[0].resource.get("service.name") or "agent") if spans else "agent"
    steps: list[Step] = []
    frames: list[Span] = []
    query = openinference.root_query(spans)
    for span in spans:
        if span.span_id in parents and agent_span_name(span) is not None:
            frames.append(span)
            continue
        owner = enclosing(span, by_id, lambda s: agent_span_name(s) is not None)
        agent = (agent_span_name(owner) if owner else None) or _own_agent(span) or service
        convention = openinference.span_step if openinference.KIND in span.attributes else genai_step
        step, user = convention(len(steps), span, agent)
        steps.append(restore_step(step, span))
        query = query or user
    return steps, query, frames


def _frame_answer(frames: list[Span]) -> str | None:
    """The output of the outermost agent frame (OpenInference ``output.value``, GenAI
    ``gen_ai.output.messages`` text), or ``None``."""
    roots = [f for f in frames if f.depth == 0] or frames[:1]
    for f in roots:
        out = f.attributes.get("output.value")
        if out is not None:
            return as_text(maybe_json(out)) or None
        texts = [parts_message(m.get("parts"))[0] for m in _messages(f.attributes.get("gen_ai.output.messages"))]
        if any(texts):
            return "\n".join(t for t in texts if t)
    return None


# ------------------------------------------------------------------ the importer


def _agents(steps: list[Step], frames: list[Span]) -> list[Agent]:
    names: dict[str, None] = {}
    seen: list[tuple[int, str]] = [(int(s.meta.get("start_ns") or 0), s.agent) for s in steps]
    seen += [(f.start_ns, agent_span_name(f) or f.name) for f in frames]
    for _, name in sorted(seen, key=lambda x: x[0]):
        names.setdefault(name, None)
    return [Agent(id=a) for a in names]


#: Key of ``Trace.extras`` holding the raw agent spans that frame steps (:func:`agent_spans`).
AGENT_SPANS_KEY = "agent_spans"


def agent_spans(trace: Trace) -> list[Span]:
    """The agent spans framing ``trace``'s steps (``extras["agent_spans"]``, written by
    :func:`build_traces`; their resource from ``extras["resource"]``), decoded; entries that
    are not spans are skipped (the trace may come from a file)."""
    frames = trace.extras.get(AGENT_SPANS_KEY)
    resource = dict_or_empty(trace.extras.get("resource"))
    decoded = (Span.from_raw(raw, resource) for raw in (frames if isinstance(frames, list) else []))
    return [span for span in decoded if span is not None]


def build_traces(spans: list[Span], ctx: LoadContext) -> list[Trace]:
    """One trace per trace id, in order of first appearance. Agent frames are kept (as
    raw spans) in ``extras["agent_spans"]``."""
    groups: dict[str, list[Span]] = {}
    for s in spans:
        groups.setdefault(s.trace_id, []).append(s)
    traces = []
    for trace_id, group in groups.items():
        ordered = order_spans(group)
        oi = openinference.is_openinference(ordered)
        steps, query, frames = trace_steps(ordered)
        roots = [s for s in ordered if s.depth == 0]
        final = _frame_answer(frames) or next(
            (s.content for s in reversed(steps) if s.kind == "assistant" and s.content), None
        )
        res = ordered[0].resource if ordered else {}
        fmt = "openinference" if oi else "otel"
        trace = Trace(
            id=trace_id,
            framework=fmt,
            modality=Modality.image if any(s.media for s in steps) else Modality.text,
            agents=_agents(steps, frames),
            task=Task(query=query),
            steps=steps,
            final_answer=final,
            outcome=Outcome.failure if any(r.failed for r in roots) else Outcome.unknown,
            source=ctx.source(fmt, key=trace_id),
            extras={
                "service": res.get("service.name"),
                "resource": redact_secrets(res),
                "span_count": len(ordered),
                AGENT_SPANS_KEY: [f.raw() for f in frames],
            },
        )
        traces.append(restore_trace(trace, res))
    return traces


def _is_json(line: bytes) -> bool:
    """True when ``line`` is a JSON value by itself (the first line of JSON lines)."""
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


class OtlpImporter(FileImporter):
    """OTLP/JSON trace files and JSON lines of OTLP exports (GenAI or OpenInference)."""

    name = "otel"
    priority = 8

    def match_head(self, head: bytes, path: Path) -> bool:
        # the byte test first: scanning the keys of every sniffed file costs ~1 ms
        return b"resourceSpans" in head and "resourceSpans" in top_level_keys(head, limit=8)

    def _spans(self, path: Path, root: Path | None) -> list[Span]:
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise TraceFormatError(f"file is {size} bytes", path=path, expected=f"at most {MAX_FILE_BYTES} bytes")
            data = path.read_bytes()
        except OSError as exc:
            raise TraceFormatError(f"cannot read file: {exc.strerror}", path=path) from None
        ctx = LoadContext(path=path, root=root)
        try:
            docs: list[tuple[Any, int | None]] = [(parse_json(data, path), None)]
        except TraceFormatError as whole:
            lines = [(row, line) for row, line in enumerate(data.split(b"\n"), 1) if line.strip()]
            if not lines or not _is_json(lines[0][1]):  # one document (pretty-printed), cut or broken
                raise whole from None  # where the document breaks, not "line 1 column 2"
            docs = [(parse_json(line, path, row), row) for row, line in lines]
        spans: list[Span] = []
        for doc, row in docs:
            try:
                spans.extend(spans_of(doc, ctx))
            except TraceFormatError as exc:
                raise exc.located(path=path, row=row) from None
        if not spans:
            raise TraceFormatError(
                "no spans in this file", path=path, json_path="$.resourceSpans", expected="at least one span"
            )
        return spans

    def load_all(self, path: Path, root: Path | None) -> list[Trace]:
        return build_traces(self._spans(path, root), LoadContext(path=path, root=root))

    def summaries(self, path: Path, root: Path | None) -> Iterator[TraceSummary]:
        try:
            rows = [summarize(t) for t in self.load_all(path, root)]
        except TraceFormatError as exc:
            rows = [TraceSummary(id=path.stem, path=str(path), format=self.name, error=exc.one_line())]
        yield from rows

    def load(self, path: Path, key: str | None, root: Path | None) -> Trace:
        traces = self.load_all(path, root)
        for t in traces:
            if key is None or t.source.key == key:
                return t
        position = small_int(key) if key else None
        if position is not None and 1 <= position <= len(traces):
            return traces[position - 1]
        raise TraceFormatError(
            f"no trace {key!r} in this file", path=path, expected="a trace id (hex) or a 1-based position"
        )
