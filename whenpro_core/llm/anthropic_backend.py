"""Anthropic adapter (``anthropic:`` models): the messages API through
``anthropic.AsyncAnthropic`` (imported lazily).

Structured output: ``output_config.format`` with ``anthropic.transform_schema(Model)`` —
the request ``messages.parse(output_format=Model)`` sends — but through
``messages.with_raw_response.create`` (the SDK has no raw variant of ``parse``) so that an
answer failing validation keeps its usage; whenpro validates the text itself. Fallback:
a forced tool call (``tool_choice={"type": "tool", "name": "answer"}``) whose input is the
answer.

Prompt caching: parts marked ``cache_breakpoint`` (and the system prompt with
``cache_system``) get ``cache_control: {"type": "ephemeral"}``; Anthropic allows 4
breakpoints, so the last 4 marks are kept. Usage: ``input_tokens`` (uncached) +
``cache_read_input_tokens`` + ``cache_creation_input_tokens`` = whenpro's input tokens;
cache reads are the cached tokens (docs.anthropic.com, "Prompt caching").
"""

from __future__ import annotations

import json
from typing import Any

import pydantic

from whenpro_core.llm.models import ModelSpec
from whenpro_core.llm.retry import MalformedResponse
from whenpro_core.llm.types import ImagePart, LLMRequest, StructuredMode
from whenpro_core.llm.wire import Params, RawResult, json_body, lenient_parse, validation_summary

ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
MAX_BREAKPOINTS = 4
TOOL_NAME = "answer"
_EFFORT = {"none": "low", "minimal": "low"}
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def make_client(api_key: str, base_url: str, timeout_s: float) -> Any:
    """An ``anthropic.AsyncAnthropic`` with the SDK's retries off (whenpro retries itself)."""
    import anthropic  # lazy: provider SDK, loaded on the first call

    return anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)


def build_messages(request: LLMRequest) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """``(system blocks, messages)`` in Anthropic's format, with cache breakpoints."""
    blocks: list[tuple[dict[str, Any], bool]] = []  # every block with its breakpoint flag, in prompt order
    system = None
    if request.system:
        sblock: dict[str, Any] = {"type": "text", "text": request.system}
        system = [sblock]
        blocks.append((sblock, request.cache_system))
    messages: list[dict[str, Any]] = []
    for msg in request.messages:
        content: list[dict[str, Any]] = []
        for p in msg.content:
            if isinstance(p, ImagePart):
                block = {"type": "image", "source": {"type": "base64", "media_type": p.mime, "data": p.data}}
            else:
                block = {"type": "text", "text": p.text}
            content.append(block)
            blocks.append((block, p.cache_breakpoint))
        messages.append({"role": msg.role, "content": content})
    marked = [b for b, flag in blocks if flag]
    for block in marked[-MAX_BREAKPOINTS:]:
        block["cache_control"] = {"type": "ephemeral"}
    return system, messages


def _messages_kwargs(request: LLMRequest, spec: ModelSpec, params: Params, mode: StructuredMode) -> dict[str, Any]:
    """The keyword arguments of ``messages.create``: model, max tokens, system and messages
    (:func:`build_messages`), and for a structured answer ``output_config.format``
    (``schema``) or a forced tool call (``tool``)."""
    import anthropic  # lazy: provider SDK, loaded on the first call

    system, messages = build_messages(request)
    kwargs: dict[str, Any] = {"model": spec.model, "max_tokens": params.max_tokens, "messages": messages}
    if system:
        kwargs["system"] = system
    # the messages API of anthropic>=2 takes no sampling temperature (the SDK has no such
    # parameter); a requested one is left out and said in the response's warnings
    output_config: dict[str, Any] = {}
    if params.reasoning_effort:
        output_config["effort"] = _EFFORT.get(params.reasoning_effort, params.reasoning_effort)
    model = request.output_model
    if mode == "schema" and model is not None:
        output_config["format"] = {"type": "json_schema", "schema": anthropic.transform_schema(model)}
    if mode == "tool" and model is not None:
        kwargs["tools"] = [
            {
                "name": TOOL_NAME,
                "description": "Record the answer in the required structure.",
                "input_schema": model.model_json_schema(),
            }
        ]
        kwargs["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
    if output_config:
        kwargs["output_config"] = output_config
    return kwargs


def _answer_blocks(blocks: list[Any]) -> tuple[list[str], Any]:
    """``(texts, tool input)`` of a message's content blocks: every text block's text, and
    the input of the forced answer tool's call (None without one)."""
    texts: list[str] = []
    tool_input: Any = None
    for block in blocks:
        btype = getattr(block, "type", None)
        if btype == "text":
            texts.append(block.text)
        elif btype == "tool_use" and getattr(block, "name", None) == TOOL_NAME:
            tool_input = block.input
    return texts, tool_input


def _parse_structured(
    result: RawResult, model: type[pydantic.BaseModel] | None, mode: StructuredMode, tool_input: Any
) -> None:
    """Validate the answer as ``model`` into ``result.parsed`` (or say why not in
    ``result.parse_error``): the forced tool's input (``tool``), the text as JSON
    (``schema``) or leniently (``text``)."""
    if model is None:
        return
    if mode == "tool":
        if tool_input is None:
            result.parse_error = "no forced tool call in the answer"
            return
        result.text = json.dumps(tool_input, ensure_ascii=False)
        try:
            result.parsed = model.model_validate(tool_input)
        except pydantic.ValidationError as exc:
            result.parse_error = validation_summary(exc)
    elif mode == "schema":
        try:
            result.parsed = model.model_validate_json(result.text)
        except pydantic.ValidationError as exc:
            result.parse_error = validation_summary(exc)
    elif mode == "text":
        result.parsed, result.parse_error = lenient_parse(result.text, model)


def _read_usage(result: RawResult, usage: Any) -> None:
    """Token counts of ``usage`` into ``result``: input includes cache reads and writes;
    a warning when the server reported none."""
    if usage is None:
        result.warnings.append("server reported no token usage")
        return
    read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
    write = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    result.input_tokens = int(getattr(usage, "input_tokens", 0) or 0) + read + write
    result.output_tokens = int(getattr(usage, "output_tokens", 0) or 0)
    result.cached_tokens = read
    result.cache_write_tokens = write


async def call_messages(
    client: Any, spec: ModelSpec, request: LLMRequest, params: Params, mode: StructuredMode
) -> RawResult:
    """One messages call. ``mode``: ``schema`` (output_config.format), ``tool`` (forced
    tool call), ``text`` or ``none``."""
    raw = await client.messages.with_raw_response.create(**_messages_kwargs(request, spec, params, mode))
    json_body(raw)
    try:
        message = await raw.parse()  # anthropic's raw response parses asynchronously
        blocks = list(message.content)
        usage = message.usage
    except Exception as exc:  # noqa: BLE001 - any failure here means an unexpected body
        raise MalformedResponse(f"unexpected messages body ({type(exc).__name__})") from None
    texts, tool_input = _answer_blocks(blocks)
    stop = getattr(message, "stop_reason", None)
    result = RawResult(
        text="".join(texts),
        finish_reason=_STOP.get(stop, stop) if stop is not None else None,
        served_model=getattr(message, "model", None),
    )
    if params.temperature is not None:
        result.warnings.append(f"temperature {params.temperature:g} not sent: the Anthropic messages API takes none")
    _parse_structured(result, request.output_model, mode, tool_input)
    if result.parse_error and result.finish_reason == "length":
        result.parse_error = "answer cut off at max_tokens before the structure was complete"
    _read_usage(result, usage)
    return result
