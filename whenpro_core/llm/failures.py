"""Turning a failed call into one clear line (:class:`~whenpro_core.errors.BackendError`),
with API keys redacted (brief: keys never appear in messages)."""

from __future__ import annotations

import re
from typing import Any

from whenpro_core.errors import BackendError
from whenpro_core.llm.retry import ErrorInBody, MalformedResponse, is_timeout, status_of
from whenpro_core.safety.redact import redact
from whenpro_core.safety.textsafe import one_line

REASONS = {
    400: "bad request",
    401: "authentication failed",
    402: "payment required",
    403: "permission denied",
    404: "not found",
    408: "request timeout",
    409: "conflict",
    413: "request too large",
    422: "unprocessable request",
    429: "rate limited",
    529: "overloaded",
}


def server_message(exc: BaseException) -> str:
    """The ``error.message`` of an SDK status error's JSON body (one line, <= 200 chars)."""
    body = getattr(exc, "body", None)
    msg: Any = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            msg = inner.get("message") or inner.get("type")
        elif isinstance(inner, str):
            msg = inner
    elif isinstance(body, str):
        msg = body
    return one_line(str(msg), 200) if msg else ""


#: Request parameters a model may reject that can be left out (the official Who&When Pro
#: harness drops them too): the name a provider reports -> the :class:`~whenpro_core.llm.wire.Params` field.
DROPPABLE = {
    "temperature": "temperature",
    "reasoning_effort": "reasoning_effort",
    "reasoning.effort": "reasoning_effort",
}
_UNSUPPORTED = re.compile(r"Unsupported (?:parameter|value): '([\w.]+)'", re.IGNORECASE)


def rejected_parameter(exc: BaseException) -> str | None:
    """The droppable parameter (:data:`DROPPABLE` key) an HTTP 400 says the model rejects:
    the error body's ``param`` (OpenAI: ``"param": "temperature"``), else one named in an
    ``Unsupported parameter: 'X'`` / ``Unsupported value: 'X'`` message; ``None`` otherwise."""
    if status_of(exc) != 400:
        return None
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    param = inner.get("param") if isinstance(inner, dict) else None
    if isinstance(param, str) and param in DROPPABLE:
        return param
    named = _UNSUPPORTED.search(server_message(exc))
    return named.group(1) if named and named.group(1) in DROPPABLE else None


def describe_failure(exc: BaseException, *, timeout_s: float, secrets: list[str]) -> tuple[str, str | None]:
    """``(what, expected)`` for a failed attempt: HTTP status and the server's message,
    malformed body, timeout, connection failure. Redacted, one line."""
    status = status_of(exc)
    expected = None
    if status is not None:
        what = f"HTTP {status} {REASONS.get(status, 'server error' if status >= 500 else 'error')}"
        detail = server_message(exc)
        if detail:
            what += f": {detail}"
        if isinstance(exc, ErrorInBody):
            what += " (sent with HTTP 200)"
        if status in (401, 403):
            expected = "a valid API key for this endpoint"
        elif status == 404:
            expected = "a model id the server serves and a correct base URL"
    elif isinstance(exc, MalformedResponse):
        what = f"malformed response: {exc}"
    elif is_timeout(exc):
        what = f"no answer within {timeout_s:g} s"
    elif "APIConnectionError" in {c.__name__ for c in type(exc).__mro__} or isinstance(exc, ConnectionError):
        what = "cannot connect"
        expected = "a reachable server at the base URL"
    else:
        what = f"{type(exc).__name__}: {exc}"
    return redact(one_line(what, 240), secrets), expected


def backend_error(
    model: str, base_url: str | None, exc: BaseException, attempts: int, *, timeout_s: float, secrets: list[str]
) -> BackendError:
    """The BackendError for a call that failed after ``attempts`` attempts. The error
    carries ``status`` (HTTP status or ``None``) and ``attempts`` attributes."""
    what, expected = describe_failure(exc, timeout_s=timeout_s, secrets=secrets)
    if attempts > 1:
        what += f" (after {attempts} attempts)"
    err = BackendError(redact(f"{model} at {base_url}: {what}", secrets), expected=expected)
    err.status = status_of(exc)
    err.attempts = attempts
    return err
