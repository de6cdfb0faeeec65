"""Retries, timeouts, non-retryable errors and API-key redaction, against the local server."""

from __future__ import annotations

import email.utils
import logging
import time
import traceback

import pytest

from tests.support.fixtures import TEST_KEY
from tests.support.llm_server import Fault
from tests.support.waiting import ANSWER_S
from whenpro_core.errors import BackendError
from whenpro_core.llm import LLMRequest, open_backend
from whenpro_core.llm.retry import is_retryable, retry_after_seconds

MODELS = ["openai:gpt-4.1", "openai-responses:gpt-4.1", "anthropic:claude-sonnet-4-6"]


@pytest.fixture(params=[False, True], ids=["async", "threaded"])
def make_backend(llm_settings, request):
    """Backends as every command opens them, and (``threaded``) as ``whenpro bench`` does:
    chat completions on the blocking SDK client in worker threads; the same faults must
    give the same outcomes."""

    def make(model: str = "openai:gpt-4.1", **overrides):
        overrides.setdefault("cache", False)
        return open_backend(model, llm_settings(model, **overrides), threaded=request.param)

    return make


@pytest.mark.parametrize("model", MODELS)
async def test_429_waits_for_retry_after(model, make_backend, llm_server, caplog):
    llm_server.fail(Fault.http(429, retry_after="1"))
    llm_server.script("ok after the wait")
    backend = make_backend(model)  # backoff base 10 ms: only Retry-After can explain a 1 s wait
    with caplog.at_level(logging.WARNING, logger="whenpro.llm"):
        reply = await backend.complete(LLMRequest.simple("hi"))
    assert reply.text == "ok after the wait" and reply.retries == 1
    first, second = llm_server.requests
    assert first.status == 429 and second.status == 200
    assert "retry 1/" in caplog.text and " in 1.00 s" in caplog.text  # the wait the server asked for
    assert backend.stats.retries == 1
    await backend.aclose()


async def test_retry_after_is_capped(make_backend, llm_server, caplog):
    llm_server.fail(Fault.http(429, retry_after="3600"))
    llm_server.script("ok")
    backend = make_backend(retry_after_max_s=0.2)
    with caplog.at_level(logging.WARNING, logger="whenpro.llm"):
        reply = await backend.complete(LLMRequest.simple("hi"))
    assert reply.text == "ok" and len(llm_server.requests) == 2
    assert " in 0.20 s" in caplog.text  # the cap, not the server's hour
    await backend.aclose()


def test_retry_after_header_forms():
    class Resp:
        def __init__(self, headers):
            self.headers = headers

    class Exc(Exception):
        def __init__(self, headers):
            self.response = Resp(headers)

    now = time.time()
    in_30s = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after_seconds(Exc({"retry-after": "2"})) == 2.0
    assert retry_after_seconds(Exc({"retry-after": "0.5"})) == 0.5
    assert 28 <= retry_after_seconds(Exc({"retry-after": in_30s}), now=now) <= 30
    assert retry_after_seconds(Exc({"retry-after": email.utils.formatdate(now - 100, usegmt=True)}), now=now) == 0.0
    assert retry_after_seconds(Exc({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after_seconds(Exc({"retry-after": "soon"})) is None
    assert retry_after_seconds(Exc({})) is None
    assert retry_after_seconds(ValueError("no response")) is None


@pytest.mark.parametrize("model", MODELS)
async def test_500_then_success(model, make_backend, llm_server):
    llm_server.fail(Fault.http(500), Fault.http(503))
    llm_server.script("recovered")
    backend = make_backend(model)
    reply = await backend.complete(LLMRequest.simple("hi"))
    assert reply.text == "recovered" and reply.retries == 2
    assert [r.status for r in llm_server.requests] == [500, 503, 200]
    await backend.aclose()


@pytest.mark.parametrize("model", ["openai:gpt-4.1", "anthropic:claude-sonnet-4-6"])
async def test_hang_past_timeout_then_success(model, make_backend, llm_server):
    llm_server.fail(Fault.hang(3600.0))  # answers only when the server stops (teardown)
    llm_server.script("fast answer")
    backend = make_backend(model, timeout_s=ANSWER_S)
    reply = await backend.complete(LLMRequest.simple("hi"))
    assert reply.text == "fast answer" and reply.retries == 1
    assert len(llm_server.requests) == 2
    # the hung call is still unanswered: the client gave up on it instead of waiting it out
    assert llm_server.requests[0].fault == "hang" and not llm_server.requests[0].finished
    await backend.aclose()


async def test_timeouts_exhausted(make_backend, llm_server):
    llm_server.fail(Fault.hang(5.0), Fault.hang(5.0))
    backend = make_backend(timeout_s=0.3, max_retries=1)
    with pytest.raises(BackendError) as info:
        await backend.complete(LLMRequest.simple("hi"))
    assert "no answer within 0.3 s (after 2 attempts)" in str(info.value)
    assert backend.stats.failures == 1
    await backend.aclose()


@pytest.mark.parametrize("model", MODELS)
async def test_malformed_body_fails_at_once(model, make_backend, llm_server):
    # Decision: a 200 whose body is not the expected JSON is not retried (a broken proxy or
    # server does not heal in seconds); the user gets BackendError immediately.
    llm_server.fail(Fault.malformed())
    llm_server.script("never used")
    backend = make_backend(model)
    with pytest.raises(BackendError, match="malformed response") as info:
        await backend.complete(LLMRequest.simple("hi"))
    assert len(llm_server.requests) == 1
    assert "\n" not in str(info.value)
    await backend.aclose()


async def test_retries_exhausted(make_backend, llm_server):
    llm_server.fail(*[Fault.http(500, message="upstream exploded")] * 3)
    backend = make_backend(max_retries=2)
    with pytest.raises(BackendError) as info:
        await backend.complete(LLMRequest.simple("hi"))
    msg = str(info.value)
    assert "HTTP 500" in msg and "upstream exploded" in msg and "after 3 attempts" in msg
    assert msg.startswith("openai:gpt-4.1 at http://127.0.0.1:")
    assert info.value.status == 500 and info.value.attempts == 3
    assert len(llm_server.requests) == 3
    await backend.aclose()


@pytest.mark.parametrize("status", [400, 403, 404, 422])
async def test_client_errors_are_not_retried(status, make_backend, llm_server):
    llm_server.fail(Fault.http(status, message="the server says no"))
    backend = make_backend()
    with pytest.raises(BackendError, match=f"HTTP {status}.*the server says no") as info:
        await backend.complete(LLMRequest.simple("hi"))
    assert info.value.attempts == 1 and len(llm_server.requests) == 1
    await backend.aclose()


async def test_connection_refused_is_retried_then_reported(llm_settings, llm_server):
    backend = open_backend("openai:gpt-4.1", llm_settings(max_retries=1, cache=False))
    llm_server.stop()  # nothing listens on its port any more
    with pytest.raises(BackendError, match="cannot connect .after 2 attempts") as info:
        await backend.complete(LLMRequest.simple("hi"))
    assert "reachable server" in info.value.one_line()
    await backend.aclose()


def test_retry_classification():
    class Status(Exception):
        def __init__(self, code):
            self.status_code = code

    assert all(is_retryable(Status(c)) for c in (408, 409, 429, 500, 502, 503, 529))
    assert not any(is_retryable(Status(c)) for c in (400, 401, 403, 404, 422))
    assert is_retryable(TimeoutError()) and is_retryable(ConnectionResetError())
    assert not is_retryable(ValueError("bug"))


# ---------------------------------------------------------------- key redaction


def _all_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc) + str(exc) + exc.one_line()


@pytest.mark.parametrize("model", MODELS)
async def test_api_key_never_leaks(model, make_backend, llm_server, whenpro_env, monkeypatch, caplog):
    """The key is in the environment and is echoed back by the server in error bodies; it must
    appear in no exception, no log record (any logger, DEBUG) and no cache file."""
    caplog.set_level(logging.DEBUG)
    env = "ANTHROPIC_API_KEY" if model.startswith("anthropic") else "OPENAI_API_KEY"
    monkeypatch.setenv(env, TEST_KEY)
    errors: list[BackendError] = []

    # 401: the server echoes the presented key in its message
    llm_server.api_key = "the-right-key-xyz"
    backend = make_backend(model, cache=True, openai_api_key=None, anthropic_api_key=None)  # key from env
    with pytest.raises(BackendError) as info:
        await backend.complete(LLMRequest.simple("hi"))
    assert "HTTP 401" in str(info.value) and len(llm_server.requests) == 1  # not retried
    errors.append(info.value)

    # other errors carrying the key in their bodies, retried or not
    llm_server.api_key = None
    for fault in (
        Fault.http(404, message=f"model not found for key {TEST_KEY}"),
        Fault.http(400, message=f"bad request from Bearer {TEST_KEY}"),
    ):
        llm_server.fail(fault)
        with pytest.raises(BackendError) as info:
            await backend.complete(LLMRequest.simple("hi"))
        errors.append(info.value)
    llm_server.fail(*[Fault.http(500, message=f"boom {TEST_KEY}")] * 4, Fault.malformed())
    for _ in range(2):
        with pytest.raises(BackendError) as info:
            await backend.complete(LLMRequest.simple("hi"))
        errors.append(info.value)

    # a successful, cached call
    llm_server.script("fine")
    reply = await backend.complete(LLMRequest.simple("hi"))
    assert reply.text == "fine"
    await backend.aclose()

    for err in errors:
        assert TEST_KEY not in _all_text(err)
    assert "[redacted]" in str(errors[1]) and "[redacted]" in str(errors[2])
    for record in caplog.records:
        assert TEST_KEY not in record.getMessage()
        assert TEST_KEY not in str(record.__dict__)
    files = [p for p in whenpro_env.cache_dir.rglob("*") if p.is_file()]
    assert files, "the response cache wrote nothing"
    for path in files:
        assert TEST_KEY.encode() not in path.read_bytes()
    assert TEST_KEY not in reply.model_dump_json()
    assert all(TEST_KEY not in str(r.headers) for r in llm_server.requests)
    assert all(r.had_key for r in llm_server.requests)


def test_redact_masks_keys_but_not_ordinary_words():
    from whenpro_core.safety.redact import public_url, redact

    text = "task-manager failed: key sk-proj-abcdef123456, header Bearer tok.123, x-api-key: zzzz9999"
    out = redact(text, ["zzzz9999"])
    assert out == "task-manager failed: key [redacted], header Bearer [redacted], x-api-key: [redacted]"
    basic = redact("GET http://user:pw@127.0.0.1:9/v1 sent Authorization: Basic dXNlcjpwdw==")
    assert basic == "GET http://[redacted]@127.0.0.1:9/v1 sent Authorization: Basic [redacted]"
    prose = "a basic arithmetic slip; the bearer of news; token counts; https://example.com/a@b"
    assert redact(prose) == prose
    located = "cfg.json at $.llm.api_key: wrong type (expected a string)"  # a JSON path is not a secret
    assert redact(located) == located
    assert redact('{"api_key": "abc123", "password":"pw1234"}') == '{"api_key": "[redacted]", "password":"[redacted]"}'
    assert public_url("https://user:pw@host:8443/v1?key=secret#frag") == "https://host:8443/v1"


async def test_a_refused_connection_is_tried_twice_not_max_retries_times(llm_settings, llm_server):
    """Nothing listening is not a transient fault: one retry (a server restarting), then
    the error — not four back-offs (a user waited 18 s on a closed port)."""
    backend = open_backend("openai:gpt-4.1", llm_settings(max_retries=4, cache=False))
    llm_server.stop()
    with pytest.raises(BackendError, match="cannot connect .after 2 attempts"):
        await backend.complete(LLMRequest.simple("hi"))
    await backend.aclose()


async def test_threaded_backend_starts_its_workers_before_the_first_call(llm_settings, llm_server):
    """bench's threaded client starts all ``concurrency`` worker threads when it is made, so
    no call in flight waits on the event loop for a thread to start (on a loaded machine
    that wait held every other call)."""
    import threading

    llm_server.script("first", "second")
    backend = open_backend("openai:gpt-4.1", llm_settings("openai:gpt-4.1", cache=False, concurrency=6), threaded=True)
    before = {t.ident for t in threading.enumerate()}
    reply = await backend.complete(LLMRequest.simple("hi"))
    workers = [t for t in threading.enumerate() if t.name.startswith("whenpro-llm") and t.ident not in before]
    assert reply.text == "first" and len(workers) == 6
    assert (await backend.complete(LLMRequest.simple("again"))).text == "second"
    await backend.aclose()
