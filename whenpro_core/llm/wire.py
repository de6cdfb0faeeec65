"""Shared pieces of the provider adapters: resolved call parameters, the raw result an
adapter returns, JSON-body checks and lenient structured-output parsing."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from whenpro_core.llm.retry import ErrorInBody, MalformedResponse
from whenpro_core.safety.textsafe import one_line


@dataclass(frozen=True)
class Params:
    """Sampling parameters after filling the request's ``None``s from the settings."""

    temperature: float | None
    max_tokens: int
    reasoning_effort: str | None


@dataclass
class RawResult:
    """What an adapter extracted from one successful HTTP call (token counts as the
    provider reported them, normalised: ``input_tokens`` includes cached tokens)."""

    text: str
    parsed: Any = None
    parse_error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    finish_reason: str | None = None
    served_model: str | None = None
    warnings: list[str] = field(default_factory=list)


def json_body(raw: Any) -> dict[str, Any]:
    """The JSON object of an SDK raw response; :class:`MalformedResponse` if it is not one,
    :class:`ErrorInBody` if it is an error document sent with a 2xx status."""
    http = raw.http_response
    try:
        data = json.loads(http.content)
    except (ValueError, UnicodeDecodeError):
        ctype = http.headers.get("content-type", "?")
        raise MalformedResponse(
            f"body is not JSON (content-type {one_line(ctype, 60)}, {len(http.content)} bytes)"
        ) from None
    if not isinstance(data, dict):
        raise MalformedResponse(f"body is JSON {type(data).__name__}, not an object")
    if data.get("error") and not any(data.get(k) for k in ("choices", "output", "content")):
        raise ErrorInBody(data)  # a 200 carrying {"error": ...}: the server's message, retried as a 5xx
    return data


def validation_summary(exc: Exception) -> str:
    """A one-line reason why an answer did not validate (without echoing the whole answer)."""
    if isinstance(exc, ValidationError):
        errs = exc.errors(include_input=False, include_url=False)
        loc = ".".join(str(p) for p in errs[0]["loc"]) if errs else ""
        msg = errs[0]["msg"] if errs else ""
        return one_line(f"answer does not match the schema ({len(errs)} error(s); {loc or 'answer'}: {msg})", 240)
    return one_line(f"answer does not match the schema ({type(exc).__name__}: {exc})", 240)


def lenient_parse(text: str, model: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
    """Validate ``text`` as ``model`` JSON, tolerating code fences and prose around the
    outermost ``{...}``. Returns ``(instance, None)`` or ``(None, reason)``; never raises."""
    candidates = [text.strip()]
    stripped = candidates[0]
    if stripped.startswith("```"):
        inner = stripped.strip("`")
        if inner.lower().startswith("json"):
            inner = inner[4:]
        candidates.append(inner.strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    error: Exception | None = None
    for cand in candidates:
        try:
            return model.model_validate_json(cand), None
        except ValidationError as exc:
            error = exc
    return None, validation_summary(error) if error else "empty answer"
