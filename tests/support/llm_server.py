"""A small, real HTTP server on 127.0.0.1 that speaks three LLM wire formats, for tests
and benchmarks that drive the real ``openai`` / ``anthropic`` SDKs (no LLM API is
reachable here, and the SDKs' httpx2 transport cannot be intercepted by respx).

Endpoints (any prefix, so ``base_url=server.openai_base_url`` and
``base_url=server.anthropic_base_url`` both work):

- ``POST .../chat/completions``  OpenAI chat completions (``response_format`` json_schema)
- ``POST .../responses``         OpenAI Responses (``text.format`` json_schema)
- ``POST .../messages``          Anthropic messages (``output_config.format`` json_schema,
  forced tool use via ``tool_choice={"type": "tool"}``, ``cache_control`` breakpoints)

Usage::

    with LLMServer() as srv:                      # or the ``llm_server`` pytest fixture
        srv.script("plain answer", {"agent": "coder"})      # canned answers, in order
        srv.respond_with(lambda body: "yes" if "Step 3" in prompt_text(body) else "no")
        srv.fail(Fault.http(429, retry_after="1"), Fault.http(500))   # next calls fail first
        ... AsyncOpenAI(base_url=srv.openai_base_url, api_key="k") ...
        srv.requests[0].body, srv.max_in_flight

Answers are strings (sent as the text), dicts/lists (sent as JSON text) or pydantic
models. Token usage is estimated as ``ceil(characters / 4)`` (+85 per image). Prompt
caching is emulated: chat/Responses report ``cached_tokens`` for the longest prefix shared
with an earlier prompt of the same model (OpenAI caches prefixes automatically);
messages report ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` for
prefixes ending at ``cache_control`` breakpoints seen before / new. As at the providers,
the structured-output schema or tools lead the cached prefix: requests forcing different
ones share nothing (:func:`~tests.support.llm_wire.output_constraint_key`).

Faults (consumed one per request, before answers): HTTP errors with optional
``Retry-After``, a hang longer than the client's timeout, a malformed 200 body, and an
answer in the wrong format (prose where JSON was asked). ``structured=False`` / ``tools=False``
make the server reject JSON-schema / tool requests with HTTP 400 (like servers without
structured output). ``reject_parameter("temperature")`` makes chat and Responses requests
carrying that parameter fail with HTTP 400 as OpenAI answers reasoning models (o3,
gpt-5): ``{"error": {"message": "Unsupported value: 'temperature' does not support 0 with
this model. ...", "type": "invalid_request_error", "param": "temperature", "code":
"unsupported_value"}}`` (``code="unsupported_parameter"``: "Unsupported parameter: ... is
not supported with this model.").
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.support.llm_wire import (
    IMAGE_TOKENS,
    SeenPrompts,
    approx_tokens,
    chat_payload,
    messages_payload,
    output_constraint_key,
    prompt_text,
    responses_payload,
    segments,
    wants_schema,
)

__all__ = ["Fault", "IMAGE_TOKENS", "LLMServer", "RecordedRequest", "WRONG_FORMAT_TEXT", "approx_tokens", "prompt_text"]
_SECRET_HEADERS = {"authorization", "x-api-key", "api-key", "cookie"}
WRONG_FORMAT_TEXT = "I looked at the run. I think the second agent probably made the mistake."


@dataclass(frozen=True)
class Fault:
    """A failure to inject into one request.

    kinds: ``status`` (HTTP ``status`` with an error body; ``retry_after`` header value
    as given), ``hang`` (wait ``seconds`` before answering 504, to outlast a client
    timeout), ``malformed`` (200 with a truncated JSON body), ``wrong_format`` (a prose
    answer that ignores the requested schema or tool)."""

    kind: Literal["status", "hang", "malformed", "wrong_format"]
    status: int = 500
    retry_after: str | None = None
    seconds: float = 0.0
    message: str = ""
    echo_auth: bool = False
    ok_status: bool = False

    @classmethod
    def http(
        cls,
        status: int,
        *,
        retry_after: str | None = None,
        message: str = "",
        echo_auth: bool = False,
        ok_status: bool = False,
    ) -> Fault:
        """``echo_auth``: the message quotes the request's credentials headers back (as some
        proxies do); ``ok_status``: the error body is sent with HTTP 200 (as some gateways do)."""
        return cls(
            "status", status=status, retry_after=retry_after, message=message, echo_auth=echo_auth, ok_status=ok_status
        )

    @classmethod
    def hang(cls, seconds: float) -> Fault:
        return cls("hang", seconds=seconds)

    @classmethod
    def malformed(cls) -> Fault:
        return cls("malformed")

    @classmethod
    def wrong_format(cls) -> Fault:
        return cls("wrong_format")


@dataclass
class RecordedRequest:
    """One request as the server saw it. ``headers`` are lower-cased and exclude the
    credentials (``authorization``, ``x-api-key``); ``had_key`` says whether one was sent.
    ``started``/``finished`` are ``time.monotonic()`` stamps (``finished``: just before the
    answer is written); ``status`` is what was answered."""

    path: str
    api: str | None
    headers: dict[str, str]
    body: Any
    had_key: bool
    started: float
    finished: float = 0.0
    status: int = 0
    fault: str | None = None

    @property
    def prompt(self) -> str:
        """The prompt as plain text (see :func:`prompt_text`)."""
        return prompt_text(self.body) if isinstance(self.body, dict) else ""


# ------------------------------------------------------------------ the server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # read by listen() in __init__: a small backlog drops SYNs (1 s client stalls)


class LLMServer:
    """The fake LLM server (see the module docstring).

    Args:
        api_key: when set, requests must present it (Bearer or x-api-key) or get HTTP 401
            whose message echoes the presented key (as some providers partly do), to test
            that clients never surface it.
        latency_s: fixed delay before every answer (for throughput benchmarks).
        structured: ``False`` rejects JSON-schema output requests with HTTP 400.
        json_object: ``False`` also rejects ``response_format`` ``json_object`` (chat).
        context_window: tokens of the context window the server reports (llama.cpp's
            ``GET /props`` and ``GET /v1/models``) and enforces: a longer prompt gets HTTP 400
            as llama.cpp answers it. ``None``: no window reported nor enforced.
        structured_status: the status of those rejections; 500 answers as llama-cpp-python
            does (HTTP 500 whose message names the response_format type it accepts).
        tools: ``False`` rejects requests that carry tools (forced tool use) with HTTP 400.
        cache_min_tokens: shortest prefix (tokens) reported as cached (OpenAI uses 1024; an
            Anthropic breakpoint ending a shorter prefix caches nothing, 1024 for Sonnet).
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        latency_s: float = 0.0,
        structured: bool = True,
        json_object: bool = True,
        structured_status: int = 400,
        context_window: int | None = None,
        tools: bool = True,
        cache_min_tokens: int = 0,
    ) -> None:
        self.api_key = api_key
        self.latency_s = latency_s
        self.structured = structured
        self.json_object = json_object
        self.structured_status = structured_status
        self.context_window = context_window
        #: ``False``: the window is enforced but not reported (as llama-cpp-python's server).
        self.report_window = True
        self.over_window = 0
        self.tools = tools
        self.cache_min_tokens = cache_min_tokens
        self.default_answer: Any = None
        self.rejected_params: dict[str, str] = {}
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._answers: deque[Any] = deque()
        self._faults: deque[Fault] = deque()
        self._responder: Callable[[dict[str, Any]], Any] | None = None
        self._seen_prompts: dict[str, SeenPrompts] = {}
        self._anthropic_cache: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0
        self._port: int | None = None

    # -------------------------------------------------------------- lifecycle

    def start(self) -> LLMServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        handler = type("_Handler", (_Handler,), {"llm": self})
        httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd = httpd
        self._port = httpd.server_address[1]
        self._stop.clear()
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Wake hung requests, stop serving and free the port."""
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (still known after :meth:`stop`, e.g. to test refused connections)."""
        assert self._port is not None, "server not started"
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``"""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for ``AsyncOpenAI`` (``.../v1``)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for ``AsyncAnthropic`` (the SDK appends ``/v1/messages``)."""
        return self.url

    # -------------------------------------------------------------- scripting

    def script(self, *answers: Any) -> None:
        """Queue answers (str, dict/list -> JSON text, pydantic model, or a callable
        ``(body) -> answer``), one per successful request, in order."""
        with self._lock:
            self._answers.extend(answers)

    def respond_with(self, responder: Callable[[dict[str, Any]], Any] | None) -> None:
        """Answer with ``responder(request_json)`` once the queue is empty."""
        self._responder = responder

    def reject_parameter(self, name: str, code: str = "unsupported_value") -> None:
        """Answer HTTP 400 to chat/Responses requests that carry ``name`` (module doc)."""
        self.rejected_params[name] = code

    def fail(self, *faults: Fault) -> None:
        """Queue faults; each of the next requests gets one before any answer is used."""
        with self._lock:
            self._faults.extend(faults)

    def reset(self) -> None:
        """Forget answers, faults, recorded requests and the emulated prompt caches."""
        with self._lock:
            self._answers.clear()
            self._faults.clear()
            self.requests.clear()
            self._seen_prompts.clear()
            self._anthropic_cache.clear()
            self.max_in_flight = 0
        self._responder = None

    @property
    def answered(self) -> list[RecordedRequest]:
        """Requests answered with HTTP 200 and a well-formed body."""
        return [r for r in self.requests if r.status == 200 and r.fault is None]

    # -------------------------------------------------------------- internals

    def _next_id(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    def _enter(self, rec: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(rec)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _pop_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def _pop_answer(self, body: dict[str, Any]) -> Any:
        with self._lock:
            answer = self._answers.popleft() if self._answers else None
        if answer is None and self._responder is not None:
            answer = self._responder
        if answer is None:
            answer = self.default_answer
        if callable(answer) and not isinstance(answer, type):
            answer = answer(body)
        return answer

    def _openai_cached(self, model: str, prompt: str) -> int:
        with self._lock:
            best = self._seen_prompts.setdefault(model, SeenPrompts()).add(prompt)
        tokens = best // 4
        return tokens if tokens >= self.cache_min_tokens and tokens > 0 else 0

    def _anthropic_cached(self, model: str, segs: list[tuple[str, bool, int]]) -> tuple[int, int]:
        """(cache read tokens, cache creation tokens) for the breakpoints of a request."""
        prefixes: list[tuple[str, int]] = []
        text, images = "", 0
        for s, bp, img in segs:
            text += s
            images += img
            tokens = approx_tokens(text) + images * IMAGE_TOKENS
            if bp and tokens >= self.cache_min_tokens:  # shorter prefixes are not cached (Anthropic: 1024)
                prefixes.append((text, tokens))
        if not prefixes:
            return 0, 0
        with self._lock:
            read = max((tok for p, tok in prefixes if (model, p) in self._anthropic_cache), default=0)
            longest, longest_tok = prefixes[-1]
            write = 0 if (model, longest) in self._anthropic_cache else max(0, longest_tok - read)
            for p, _ in prefixes:
                self._anthropic_cache.add((model, p))
        return read, write


def _answer_text(answer: Any) -> str:
    if answer is None:
        return ""
    if isinstance(answer, str):
        return answer
    if hasattr(answer, "model_dump_json"):
        return answer.model_dump_json()
    return json.dumps(answer)


class _Handler(BaseHTTPRequestHandler):
    llm: LLMServer
    timeout = 30
    server_version = "whenpro-llm-test/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    # -------------------------------------------------------------- plumbing

    def _send(
        self, status: int, payload: Any, *, headers: dict[str, str] | None = None, raw: bytes | None = None
    ) -> None:
        data = raw if raw is not None else json.dumps(payload).encode("utf-8")
        rec = getattr(self, "_rec", None)
        if rec is not None and not rec.finished:
            # recorded (and counted out of flight) before the client can see the answer, so a
            # test reading the server right after a call never races the handler thread
            rec.status = status
            rec.finished = time.monotonic()
            self.llm._leave()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client gave up (timeout): nothing to do
        self.close_connection = True

    def _error(
        self,
        api: str | None,
        status: int,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        kind_of: int | None = None,
    ) -> None:
        """Send an error body of the API's shape; ``kind_of``: the status whose error type the
        body names (default ``status``; differs when an error is sent with HTTP 200)."""
        etype = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(kind_of or status, "api_error")
        if api == "messages":
            payload = {"type": "error", "error": {"type": etype, "message": message}}
        else:
            payload = {"error": {"message": message, "type": etype, "param": None, "code": None}}
        self._send(status, payload, headers=headers)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        window = self.llm.context_window if self.llm.report_window else None
        path = self.path.split("?", 1)[0]
        if window is not None and path.endswith("/props"):
            self._send(200, {"default_generation_settings": {"n_ctx": window}, "total_slots": 1})
        elif window is not None and path.endswith("/models"):
            self._send(
                200, {"object": "list", "data": [{"id": "smol", "object": "model", "meta": {"n_ctx_train": 8192}}]}
            )
        else:
            self._error(None, 404, f"no GET route {self.path}")

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        llm = self.llm
        path = self.path.split("?", 1)[0]
        api = (
            "chat"
            if path.endswith("/chat/completions")
            else "responses"
            if path.endswith("/responses")
            else "messages"
            if path.endswith("/messages")
            else None
        )
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        auth = self.headers.get("Authorization", "")
        presented = self.headers.get("x-api-key") or (auth[7:] if auth.lower().startswith("bearer ") else "")
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in _SECRET_HEADERS}
        rec = RecordedRequest(path, api, headers, body, bool(presented), time.monotonic())
        self._rec = rec
        llm._enter(rec)
        try:
            self._handle(api, body, presented, rec)
        except Exception as exc:  # a bug in a test's answer callable or here: say so, as a 500
            self._error(api, 500, f"llm_server internal error: {type(exc).__name__}: {exc}")
        finally:
            if not rec.finished:  # no answer was sent
                rec.finished = time.monotonic()
                llm._leave()

    # -------------------------------------------------------------- logic

    def _rejects_parameter(self, api: str, body: dict[str, Any]) -> bool:
        """Send OpenAI's HTTP 400 for a rejected parameter the body carries; True if sent."""
        for name, code in self.llm.rejected_params.items():
            if api == "messages" or name not in body:
                continue
            if code == "unsupported_parameter":
                message = f"Unsupported parameter: '{name}' is not supported with this model."
            else:
                message = (
                    f"Unsupported value: '{name}' does not support {body[name]!r} with this model. "
                    "Only the default (1) value is supported."
                )
            error = {"message": message, "type": "invalid_request_error", "param": name, "code": code}
            self._send(400, {"error": error})
            return True
        return False

    def _handle(self, api: str | None, body: Any, presented: str, rec: RecordedRequest) -> int:
        """Answer one request; returns the HTTP status sent (also recorded by :meth:`_send`)."""
        llm = self.llm
        if api is None:
            self._error(None, 404, f"no route {self.path}")
            return 404
        if not isinstance(body, dict):
            self._error(api, 400, "request body is not a JSON object")
            return 400
        if llm.api_key is not None and presented != llm.api_key:
            self._error(api, 401, f"Incorrect API key provided: {presented}")
            return 401
        fault = llm._pop_fault()
        if fault is not None:
            rec.fault = fault.kind
            if fault.kind == "status":
                hdrs = {"Retry-After": fault.retry_after} if fault.retry_after is not None else None
                message = fault.message or f"injected HTTP {fault.status}"
                if fault.echo_auth:
                    sent = [f"{k}: {v}" for k, v in self.headers.items() if k.lower() in _SECRET_HEADERS]
                    message += f" (request headers: {'; '.join(sent)})"
                sent_status = 200 if fault.ok_status else fault.status
                self._error(api, sent_status, message, headers=hdrs, kind_of=fault.status)
                return sent_status
            if fault.kind == "hang":
                llm._stop.wait(fault.seconds)
                self._error(api, 504, "injected hang ended")
                return 504
            if fault.kind == "malformed":
                self._send(200, None, raw=b'{"id": "broken", "choices": [{"message": ')
                return 200
        if self._rejects_parameter(api, body):
            return 400
        schema_asked = wants_schema(api, body)
        wants_tool = (
            api == "messages"
            and isinstance(body.get("tool_choice"), dict)
            and body["tool_choice"].get("type") == "tool"
        )
        json_asked = api == "chat" and (body.get("response_format") or {}).get("type") == "json_object"
        if (schema_asked and not llm.structured) or (json_asked and not llm.json_object):
            what = {
                "chat": f"response_format {body['response_format'].get('type')}" if api == "chat" else "",
                "responses": "text.format json_schema",
                "messages": "output_config.format",
            }[api]
            message = f"{what} is not supported by this server"
            if llm.structured_status >= 500:  # llama-cpp-python's words for an unknown type
                message = f"[{{'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text'\"}}] {what}"
            self._error(api, llm.structured_status, message)
            return llm.structured_status
        if body.get("tools") and not llm.tools:
            self._error(api, 400, "tools are not supported by this server")
            return 400
        window_segs = segments(body)
        asked = approx_tokens("".join(t for t, _, _ in window_segs)) + IMAGE_TOKENS * sum(i for _, _, i in window_segs)
        if llm.context_window is not None and asked > llm.context_window:
            llm.over_window += 1
            self._error(api, 400, f"Requested tokens ({asked}) exceed context window of {llm.context_window}")
            return 400
        if fault is not None and fault.kind == "wrong_format":
            text = WRONG_FORMAT_TEXT
            wants_tool = False
        else:
            answer = llm._pop_answer(body)
            if answer is None:
                self._error(api, 400, "llm_server: no scripted answer left")
                return 400
            text = _answer_text(answer)
        if llm.latency_s:
            llm._stop.wait(llm.latency_s)
        segs = segments(body)
        prompt = "".join(s for s, _, _ in segs)
        prompt_tokens = approx_tokens(prompt) + IMAGE_TOKENS * sum(i for _, _, i in segs)
        model = str(body.get("model", "unknown"))
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or body.get("max_output_tokens")
        truncated = isinstance(limit, int) and approx_tokens(text) > limit
        if truncated:
            text = text[: limit * 4]
        out_tokens = approx_tokens(text)
        n = llm._next_id()
        lead = output_constraint_key(body)
        if api == "chat":
            cached = llm._openai_cached(f"{api}:{model}:{lead}", prompt)
            payload = chat_payload(n, model, text, truncated, prompt_tokens, out_tokens, cached)
        elif api == "responses":
            cached = llm._openai_cached(f"{api}:{model}:{lead}", prompt)
            payload = responses_payload(n, model, text, truncated, prompt_tokens, out_tokens, cached)
        else:
            read, write = llm._anthropic_cached(f"{model}:{lead}", segs)
            payload = messages_payload(
                n, model, text, truncated, prompt_tokens, out_tokens, read, write, body if wants_tool else None
            )
        self._send(200, payload)
        return 200
