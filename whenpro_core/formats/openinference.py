"""OpenInference span attributes (Arize ``openinference-semantic-conventions``), read
from OTLP files by :mod:`whenpro_core.formats.otel` for every trace whose spans carry
``openinference.span.kind``.

Attributes used: ``openinference.span.kind`` (``AGENT``, ``CHAIN``, ``LLM``, ``TOOL``,
``RETRIEVER``, ``EMBEDDING``, ``RERANKER``, ``GUARDRAIL``, ``EVALUATOR``); the flattened
message lists ``llm.input_messages.<i>.message.{role,content,name}``,
``...message.contents.<j>.message_content.{type,text,image.image.url}`` and
``...message.tool_calls.<k>.tool_call.{id,function.name,function.arguments}`` (same
under ``llm.output_messages``); ``llm.model_name``, ``llm.token_count.{prompt,completion}``;
``tool.name``, ``tool.parameters``; ``input.value``, ``output.value``; ``agent.name``.

Steps (one per span, by start time; :mod:`whenpro_core.formats.otel` decides the agent
and which spans are agent frames rather than steps): ``LLM`` -> ``assistant``
(``action`` when the output calls tools), content = the output messages' text; ``TOOL``
-> ``tool`` with the call (``tool.parameters`` or ``input.value`` as arguments) and
``output.value`` as the observation; ``AGENT`` -> ``agent`` and ``CHAIN`` -> ``chain``
with ``input.value`` as content and ``output.value`` as observation; other kinds are
lower-cased. The task query is the root span's ``input.value``, else the first user
message an LLM span received.
"""

from __future__ import annotations

from typing import Any

from whenpro_core.formats.base import as_text, maybe_json
from whenpro_core.formats.chat import data_url_media
from whenpro_core.formats.otlp import Span, base_step
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import MediaRef, Step, ToolCall

KIND = "openinference.span.kind"


def is_openinference(spans: list[Span]) -> bool:
    """True if any span of the trace carries ``openinference.span.kind``."""
    return any(KIND in s.attributes for s in spans)


def unflatten(attrs: dict[str, Any], prefix: str) -> list[JSONObject]:
    """The list stored flat under ``prefix`` (``llm.input_messages``): entries
    ``<prefix>.<i>.<path>`` become ``[{<path>: value}, ...]`` in index order (gaps kept
    out). Nested lists inside an entry stay flat (``message.tool_calls.0.tool_call...``)."""
    items: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(head):
            continue
        idx, _, rest = key[len(head) :].partition(".")
        if idx.isdigit() and rest:
            items.setdefault(int(idx), {})[rest] = value
    return [items[i] for i in sorted(items)]


def message_of(flat: dict[str, Any]) -> tuple[str, str, list[ToolCall], list[MediaRef]]:
    """(role, text, tool calls, media) of one flattened ``message.*`` entry."""
    role = as_text(flat.get("message.role"))
    texts = [as_text(flat.get("message.content"))] if flat.get("message.content") is not None else []
    media: list[MediaRef] = []
    for part in unflatten(flat, "message.contents"):
        ptype = part.get("message_content.type")
        if ptype == "text":
            texts.append(as_text(part.get("message_content.text")))
        elif ptype == "image" and isinstance(part.get("message_content.image.image.url"), str):
            media.append(data_url_media(part["message_content.image.image.url"], f"image #{len(media)}"))
    calls = []
    for call in unflatten(flat, "message.tool_calls"):
        name = call.get("tool_call.function.name")
        if isinstance(name, str):
            cid = call.get("tool_call.id")
            calls.append(
                ToolCall(
                    id=str(cid) if cid is not None else None,
                    name=name,
                    arguments=maybe_json(call.get("tool_call.function.arguments")),
                )
            )
    return role, "\n".join(t for t in texts if t), calls, media


def root_query(spans: list[Span]) -> str:
    """The task query an OpenInference trace states: the first root span's ``input.value``
    (``""`` when absent)."""
    roots = [s for s in spans if s.depth == 0]
    if roots and roots[0].attributes.get("input.value") is not None:
        return as_text(maybe_json(roots[0].attributes["input.value"]))
    return ""


def _llm_step(i: int, span: Span, agent: str) -> tuple[Step, str]:
    a = span.attributes
    text, calls, media = "", list[ToolCall](), list[MediaRef]()
    for flat in unflatten(a, "llm.output_messages"):
        _, t, c, m = message_of(flat)
        text, calls, media = "\n".join(x for x in (text, t) if x), calls + c, media + m
    if not text and not calls and a.get("output.value") is not None:
        text = as_text(maybe_json(a["output.value"]))
    step = base_step(i, span, agent, "action" if calls else "assistant")
    step.content, step.tool_calls, step.media = text, calls, media
    ins = [message_of(f) for f in unflatten(a, "llm.input_messages")]
    user = ""
    if ins:
        step.meta["input"] = ins[-1][1]
        user = next((t for r, t, _, _ in ins if r == "user" and t), "")
    for key in ("llm.model_name", "llm.token_count.prompt", "llm.token_count.completion"):
        if key in a:
            step.meta[key.removeprefix("llm.")] = a[key]
    return step, user


def span_step(i: int, span: Span, agent: str) -> tuple[Step, str]:
    """Step ``i`` made of one span carrying ``openinference.span.kind``, spoken by
    ``agent``, and the first user message it received (``""`` if none)."""
    a = span.attributes
    kind = str(a.get(KIND) or "").upper()
    user = ""
    if kind == "LLM":
        step, user = _llm_step(i, span, agent)
    elif kind == "TOOL":
        step = base_step(i, span, agent, "tool")
        args = a.get("tool.parameters", a.get("input.value"))
        step.tool_calls = [ToolCall(name=str(a.get("tool.name") or span.name), arguments=maybe_json(args))]
        out = a.get("output.value")
        step.observation = None if out is None else as_text(maybe_json(out))
    else:
        step = base_step(i, span, agent, kind.lower() or "span")
        inp, out = a.get("input.value"), a.get("output.value")
        step.content = as_text(maybe_json(inp)) if inp is not None else span.name
        step.observation = None if out is None else as_text(maybe_json(out))
    step.meta["span_kind"] = kind or None
    return step, user
