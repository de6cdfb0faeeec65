"""One retry policy for every backend (the SDKs' own retries are off: ``max_retries=0``).

Retried: HTTP 408, 409, 429 and 5xx (incl. Anthropic's 529 "overloaded"; an error document
answered with status 200 counts as the status it reports, else 500), timeouts and
connection errors (a refused connection only once: nothing listens there). Not retried:
other 4xx (400 bad request, 401, 403, 404, 422) and a malformed response body (a 200 whose
body is not the expected JSON: a broken proxy or server, which a retry is unlikely to fix)
-> :class:`BackendError` at once.

Waits: exponential backoff with jitter (``backoff_base_s * 2**(n-1) + U(0, backoff_base_s)``,
at most ``backoff_max_s``), or the server's ``Retry-After`` when given (seconds or an
HTTP date, RFC 9110 §10.2.3; OpenAI's ``retry-after-ms`` too), capped at
``retry_after_max_s``. The loop itself is :mod:`tenacity`.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("whenpro.llm")

RETRY_STATUS = frozenset({408, 409, 429})


class MalformedResponse(Exception):
    """The server answered 2xx with a body that is not the expected JSON document."""


class ErrorInBody(Exception):
    """The server answered 2xx with an error document (``{"error": {"message", "code"?}}``,
    as some gateways and proxies do). It stands for the HTTP error it reports:
    ``status_code`` is ``error.code`` when that is an HTTP error status, else 500, so it is
    retried as a 5xx and its message is shown (``body``, as the SDKs' status errors)."""

    def __init__(self, body: dict[str, Any]) -> None:
        err = body.get("error")
        code = err.get("code", err.get("status")) if isinstance(err, dict) else None
        if isinstance(code, str) and code.isdigit():
            code = int(code)
        self.status_code = code if isinstance(code, int) and 400 <= code <= 599 else 500
        self.body = body
        super().__init__(f"HTTP {self.status_code} error sent with status 200")


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an SDK ``APIStatusError`` (openai or anthropic), else ``None``."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _is_connection_error(exc: BaseException) -> bool:
    # openai.APIConnectionError / APITimeoutError and their anthropic twins, without importing the SDKs.
    names = {c.__name__ for c in type(exc).__mro__}
    return bool(names & {"APIConnectionError", "APITimeoutError"})


def is_timeout(exc: BaseException) -> bool:
    """A client-side timeout (SDK timeout or our own deadline)."""
    names = {c.__name__ for c in type(exc).__mro__}
    return "APITimeoutError" in names or isinstance(exc, (TimeoutError, asyncio.TimeoutError))


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed attempt should be retried (see the module docstring)."""
    if isinstance(exc, MalformedResponse):
        return False
    status = status_of(exc)
    if status is not None:
        return status in RETRY_STATUS or status >= 500
    return _is_connection_error(exc) or is_timeout(exc) or isinstance(exc, ConnectionError)


def is_refused(exc: BaseException | None) -> bool:
    """True when nothing listens at the server's address (connection refused anywhere in
    the exception's cause chain): not a transient fault, so it is retried only once."""
    seen = 0
    while exc is not None and seen < 10:
        if (
            isinstance(exc, ConnectionRefusedError)
            or "connection refused" in str(exc).lower()
            or "connect call failed" in str(exc).lower()
        ):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def stop_when_refused_twice(retry_state: Any) -> bool:
    """A tenacity ``stop``: give up after the second refused connection."""
    exc = retry_state.outcome.exception() if retry_state.outcome else None
    return retry_state.attempt_number >= 2 and is_refused(exc)


def retry_after_seconds(exc: BaseException | None, *, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``), or ``None``.

    ``Retry-After`` may be delta-seconds or an HTTP date (RFC 9110 §10.2.3); a date in
    the past gives 0. Unparseable values give ``None``.
    """
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def make_wait(base_s: float, max_s: float, retry_after_max_s: float) -> Callable[[Any], float]:
    """A tenacity ``wait``: the server's Retry-After (capped) or exponential backoff + jitter."""
    from tenacity import wait_exponential_jitter  # lazy: loaded with the first LLM call, not at import

    expo = wait_exponential_jitter(multiplier=base_s, max=max_s, exp_base=2, jitter=base_s)

    def wait(retry_state: Any) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        server = retry_after_seconds(exc)
        if server is not None:
            return min(server, retry_after_max_s)
        return float(expo(retry_state))

    return wait
