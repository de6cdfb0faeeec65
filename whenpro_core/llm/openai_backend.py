"""OpenAI adapters: chat completions (``openai:`` and ``openai-compatible:``) and the
Responses API (``openai-responses:``), through ``openai.AsyncOpenAI`` (imported lazily).

Structured output uses the SDK's ``chat.completions.parse(response_format=Model)`` and
``responses.parse(text_format=Model)`` through ``with_raw_response`` so that the usage of
an answer that fails to validate is still counted. OpenAI caches prompt prefixes itself
(>= 1024 tokens); cached tokens are read from ``usage.prompt_tokens_details.cached_tokens``
(chat) or ``usage.input_tokens_details.cached_tokens`` (Responses).
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import pydantic
from pydantic import BaseModel, ValidationError

from whenpro_core.llm.models import ModelSpec
from whenpro_core.llm.retry import MalformedResponse
from whenpro_core.llm.types import ImagePart, LLMRequest, StructuredMode
from whenpro_core.llm.wire import Params, RawResult, json_body, lenient_parse, validation_summary

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

T = TypeVar("T")


def make_client(api_key: str, base_url: str, timeout_s: float) -> Any:
    """An ``openai.AsyncOpenAI`` with the SDK's retries off (whenpro retries itself)."""
    import openai  # lazy: provider SDK, loaded on the first call

    return openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)


class ThreadedClient:
    """The blocking ``openai.OpenAI`` client run in a pool of ``workers`` threads, for
    chat completions at high concurrency (``whenpro bench``): each call blocks its own
    thread, which the OS wakes when its answer arrives, instead of one event loop thread
    serving every socket (on a busy machine that loop is scheduled too rarely to keep
    up; see ``benchmarks/bench_throughput.py``). Same requests, answers and errors as
    :func:`make_client`'s client; the SDK's timeout bounds each call."""

    def __init__(self, api_key: str, base_url: str, timeout_s: float, workers: int) -> None:
        import openai

        self.client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)
        self.pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="whenpro-llm")
        start_all_workers(self.pool, max(1, workers))

    async def create_chat(self, then: Callable[[Any], T], **kwargs: Any) -> T:
        """``then(chat.completions.with_raw_response.create(**kwargs))`` in a worker thread:
        reading the answer (``then``) in the thread too keeps it off the event loop, which
        serves every call in flight."""
        create = self.client.chat.completions.with_raw_response.create
        return await asyncio.get_running_loop().run_in_executor(self.pool, lambda: then(create(**kwargs)))

    async def close(self) -> None:
        """Close the HTTP client and let the worker threads end."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()


def start_all_workers(pool: ThreadPoolExecutor, workers: int) -> None:
    """Start ``pool``'s ``workers`` threads now. A ``ThreadPoolExecutor`` starts a thread on
    a submit that finds none idle, and ``Thread.start`` waits until the new thread runs: on
    the event loop, mid-run, on a loaded machine that wait held every call in flight (a
    profile of ``benchmarks/bench_throughput.py`` at concurrency 16: most of the loop's time
    in thread start). Each of ``workers`` held tasks takes a fresh thread; then all are released."""
    release = threading.Event()
    held = [pool.submit(release.wait) for _ in range(workers)]
    release.set()
    wait(held)


def _parse_failure(exc: Exception) -> str | None:
    """A reason string when ``raw.parse()`` failed because of the *answer* (not the body)."""
    import openai  # lazy: provider SDK, loaded on the first call

    if isinstance(exc, openai.LengthFinishReasonError):
        return "answer cut off at max_tokens before the structure was complete"
    if isinstance(exc, openai.ContentFilterFinishReasonError):
        return "answer stopped by the provider's content filter"
    if isinstance(exc, pydantic.ValidationError):
        return validation_summary(exc)
    return None


# ---------------------------------------------------------------- chat completions


def chat_messages(request: LLMRequest) -> list[dict[str, Any]]:
    """The request as chat-completions ``messages`` (system first; images as data URLs)."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for msg in request.messages:
        if msg.role == "assistant" or not any(isinstance(p, ImagePart) for p in msg.content):
            out.append({"role": msg.role, "content": msg.text()})
            continue
        parts: list[dict[str, Any]] = []
        for p in msg.content:
            if isinstance(p, ImagePart):
                parts.append({"type": "image_url", "image_url": {"url": p.data_url()}})
            else:
                parts.append({"type": "text", "text": p.text})
        out.append({"role": "user", "content": parts})
    return out


async def call_chat(
    client: Any, spec: ModelSpec, request: LLMRequest, params: Params, mode: StructuredMode
) -> RawResult:
    """One chat-completions call. ``mode`` is ``schema`` (response_format json_schema),
    ``json`` (json_object, the schema in a last user turn), ``text`` or ``none``.

    The body is plain JSON built here and sent through the SDK's public ``extra_body``, and
    the answer is read from the response's JSON: the SDK's per-call walk of the request
    through its typed-dict annotations, its JSON-schema generation and its typed response
    construction cost more CPU than the rest of a benchmark item together (see
    ``benchmarks/bench_throughput.py``). HTTP, auth, errors and timeouts stay the SDK's.
    """
    body: dict[str, Any] = {"messages": chat_messages(request)}
    if mode == "json" and request.output_model is not None:
        body["messages"].append({"role": "user", "content": schema_instruction(request.output_model)})
    if params.temperature is not None:
        body["temperature"] = params.temperature
    # Official OpenAI wants max_completion_tokens (max_tokens is rejected by reasoning models);
    # OpenAI-compatible servers universally understand max_tokens.
    body["max_completion_tokens" if spec.provider == "openai" else "max_tokens"] = params.max_tokens
    if params.reasoning_effort:
        body["reasoning_effort"] = params.reasoning_effort
    if mode == "schema":
        body["response_format"] = response_format(request.output_model)
    elif mode == "json":
        body["response_format"] = json_object_format(request.output_model)
    if isinstance(client, ThreadedClient):
        read = functools.partial(_read_chat, request=request, mode=mode)
        return await client.create_chat(read, model=spec.model, messages=[], extra_body=body)
    raw = await client.chat.completions.with_raw_response.create(model=spec.model, messages=[], extra_body=body)
    return chat_result(json_body(raw), request, mode)


def _read_chat(raw: Any, *, request: LLMRequest, mode: StructuredMode) -> RawResult:
    return chat_result(json_body(raw), request, mode)


@functools.cache
def response_format(model: type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` of a structured chat request for ``model`` (the SDK's strict
    JSON schema, as ``chat.completions.parse`` sends it), made once per model class."""
    from openai.lib._parsing._completions import type_to_response_format_param

    return dict(cast("dict[str, Any]", type_to_response_format_param(model)))


def json_object_format(model: type[BaseModel] | None) -> dict[str, Any]:
    """``response_format`` of the ``json`` mode: ``{"type": "json_object"}`` with the JSON
    schema under ``schema`` (llama.cpp servers constrain the answer to it; others read
    the schema from :func:`schema_instruction` in the prompt)."""
    out: dict[str, Any] = {"type": "json_object"}
    if model is not None:
        out["schema"] = response_format(model)["json_schema"]["schema"]
    return out


@functools.cache
def schema_instruction(model: type[BaseModel]) -> str:
    """The last user turn of a ``json``-mode request: answer with one JSON object that
    matches ``model``'s JSON schema (put last so the cached prompt prefix stays whole)."""
    schema = json.dumps(response_format(model)["json_schema"]["schema"], separators=(",", ":"))
    return f"Answer with one JSON object matching this JSON schema, and nothing else:\n{schema}"


def chat_result(data: dict[str, Any], request: LLMRequest, mode: StructuredMode) -> RawResult:
    """The :class:`RawResult` of a chat-completions JSON body. A structured answer is
    validated as ``request.output_model``; an answer cut at max tokens, stopped by the
    content filter, refused or not matching the schema is a ``parse_error`` (its text is
    kept). MalformedResponse when the body has no ``choices[0].message``."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
        text = message.get("content") or ""
        refusal = message.get("refusal")
        finish = choice.get("finish_reason")
    except (AttributeError, IndexError, TypeError, KeyError):
        raise MalformedResponse("chat completion without choices[0].message") from None
    if not isinstance(text, str) or not isinstance(finish, str | None):
        raise MalformedResponse("chat completion with a non-text message or finish reason") from None
    result = RawResult(text=text, finish_reason=finish, served_model=_text_or_none(data.get("model")))
    parse_error = None
    if mode == "schema":
        result.parsed, parse_error = _structured(text, refusal, finish, request.output_model)
    elif mode in ("text", "json") and request.output_model is not None:
        result.parsed, parse_error = lenient_parse(text, request.output_model)
    if refusal:
        result.text = text or str(refusal)
        parse_error = parse_error or f"model refused: {str(refusal)[:200]}"
    result.parse_error = parse_error
    _chat_usage(result, _Fields.of(data.get("usage")))
    return result


def _structured(
    text: str, refusal: Any, finish: str | None, model: type[BaseModel] | None
) -> tuple[BaseModel | None, str | None]:
    """``(parsed, parse_error)`` of a schema-mode answer, in the order the SDK's
    ``parse()`` checks: cut off, content filter, then the JSON validated when there is
    text and no refusal."""
    if finish == "length":
        return None, "answer cut off at max_tokens before the structure was complete"
    if finish == "content_filter":
        return None, "answer stopped by the provider's content filter"
    if model is None or not text or refusal:
        return None, None if refusal else "no structured answer"
    try:
        return model.model_validate_json(text), None
    except ValidationError as exc:
        return None, validation_summary(exc)


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _Fields:
    """Attribute access over a JSON object (``usage``), so :func:`_chat_usage` reads a
    body's dict as it reads an SDK object; missing fields are ``None``."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @classmethod
    def of(cls, value: Any) -> _Fields | None:
        return cls(value) if isinstance(value, dict) else None

    def __getattr__(self, name: str) -> Any:
        value = self._data.get(name)
        return _Fields(value) if isinstance(value, dict) else value


def _chat_usage(result: RawResult, usage: Any) -> None:
    if usage is None:
        result.warnings.append("server reported no token usage")
        return
    result.input_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    result.output_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    result.cached_tokens = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0


# ---------------------------------------------------------------- Responses API


def responses_input(request: LLMRequest) -> list[dict[str, Any]]:
    """The request as Responses-API ``input`` items (the system prompt goes to ``instructions``)."""
    out: list[dict[str, Any]] = []
    for msg in request.messages:
        if msg.role == "assistant":
            out.append({"role": "assistant", "content": msg.text()})
            continue
        parts: list[dict[str, Any]] = []
        for p in msg.content:
            if isinstance(p, ImagePart):
                parts.append({"type": "input_image", "image_url": p.data_url(), "detail": "auto"})
            else:
                parts.append({"type": "input_text", "text": p.text})
        out.append({"role": "user", "content": parts})
    return out


def _responses_kwargs(spec: ModelSpec, request: LLMRequest, params: Params) -> dict[str, Any]:
    """The keyword arguments of ``responses.create``/``parse`` (``store=False``)."""
    kwargs: dict[str, Any] = {
        "model": spec.model,
        "input": responses_input(request),
        "max_output_tokens": params.max_tokens,
        "store": False,
    }
    if request.system:
        kwargs["instructions"] = request.system
    if params.temperature is not None:
        kwargs["temperature"] = params.temperature
    if params.reasoning_effort:
        kwargs["reasoning"] = {"effort": params.reasoning_effort}
    return kwargs


async def _responses_send(
    client: Any, request: LLMRequest, kwargs: dict[str, Any], mode: StructuredMode
) -> tuple[Any, str | None]:
    """``(response, parse error)`` of one call. When the SDK cannot parse a structured
    answer, the response is rebuilt from the JSON body and the error says why; any other
    body the SDK rejects raises :class:`MalformedResponse`."""
    from openai.types.responses import Response  # lazy: provider SDK, loaded on the first call

    api = client.responses.with_raw_response
    if mode == "schema":
        raw = await api.parse(text_format=request.output_model, **kwargs)
    else:
        raw = await api.create(**kwargs)
    data = json_body(raw)
    try:
        return raw.parse(), None
    except Exception as exc:  # noqa: BLE001 - sorted below
        parse_error = _parse_failure(exc) if mode == "schema" else None
        if parse_error is None:
            raise MalformedResponse(f"unexpected Responses body ({type(exc).__name__})") from None
        return Response.construct(**data), parse_error


@dataclass
class _ResponsesOutput:
    """What the ``message`` items of a Responses body hold: the ``output_text`` pieces,
    the first structured answer, the last refusal, and the response's status and
    ``incomplete_details``."""

    texts: list[str] = field(default_factory=list)
    parsed: Any = None
    refusal: str | None = None
    status: str | None = None
    incomplete: Any = None


def _responses_output(response: Any) -> _ResponsesOutput:
    """The output of ``response``. Raises :class:`MalformedResponse` when the body has no
    well-formed output messages, or no text, refusal or ``incomplete`` status."""
    out = _ResponsesOutput()
    try:
        for item in response.output or []:
            if getattr(item, "type", None) == "message":
                _read_message(item, out)
        out.status = getattr(response, "status", None)
        out.incomplete = getattr(response, "incomplete_details", None)
    except (AttributeError, TypeError):
        raise MalformedResponse("Responses body without output messages") from None
    if not out.texts and out.refusal is None and out.status not in ("incomplete",):
        raise MalformedResponse("Responses body without output text")
    return out


def _read_message(item: Any, out: _ResponsesOutput) -> None:
    """Add one ``message`` item's text, structured answer and refusal to ``out``."""
    for content in item.content or []:
        ctype = getattr(content, "type", None)
        if ctype == "output_text":
            out.texts.append(content.text)
            if out.parsed is None:
                out.parsed = getattr(content, "parsed", None)
        elif ctype == "refusal":
            out.refusal = content.refusal


def _responses_finish(out: _ResponsesOutput) -> str:
    """The finish reason: ``stop``, ``length`` (max_output_tokens) or the incomplete reason."""
    if out.status != "incomplete":
        return "stop"
    reason = getattr(out.incomplete, "reason", None)
    return "length" if reason == "max_output_tokens" else (reason or "incomplete")


def _responses_usage(result: RawResult, usage: Any) -> None:
    """Copy the Responses ``usage`` token counts into ``result`` (a warning when absent)."""
    if usage is None:
        result.warnings.append("server reported no token usage")
        return
    result.input_tokens = int(getattr(usage, "input_tokens", 0) or 0)
    result.output_tokens = int(getattr(usage, "output_tokens", 0) or 0)
    details = getattr(usage, "input_tokens_details", None)
    result.cached_tokens = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0


async def call_responses(
    client: Any, spec: ModelSpec, request: LLMRequest, params: Params, mode: StructuredMode
) -> RawResult:
    """One Responses-API call (``store=False``: traces are not kept by the provider)."""
    response, parse_error = await _responses_send(client, request, _responses_kwargs(spec, request, params), mode)
    out = _responses_output(response)
    result = RawResult(
        text="".join(out.texts) or (out.refusal or ""),
        finish_reason=_responses_finish(out),
        served_model=getattr(response, "model", None),
    )
    if out.refusal:
        parse_error = parse_error or f"model refused: {out.refusal[:200]}"
    if mode == "schema":
        result.parsed = out.parsed
        if out.parsed is None and parse_error is None:
            parse_error = "no structured answer"
    elif mode == "text" and request.output_model is not None:
        result.parsed, parse_error = lenient_parse(result.text, request.output_model)
    result.parse_error = parse_error
    _responses_usage(result, getattr(response, "usage", None))
    return result
