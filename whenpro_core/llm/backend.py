"""The one LLM interface of whenpro: :func:`open_backend` and :meth:`Backend.complete`.

::

    async with open_backend("openai:gpt-4.1") as llm:
        reply = await llm.complete(LLMRequest.simple("Who failed?", output_model=Verdict))
        reply.parsed, reply.text, reply.usage

Per call, in order: the persistent response cache (a hit makes no HTTP call), the
backend's concurrency limit (``settings.concurrency`` calls in flight), then attempts
under one retry policy (:mod:`whenpro_core.llm.retry`, tenacity) each bounded by
``settings.timeout_s``. Structured output falls back ``schema -> json (chat) / tool
(Anthropic) -> text`` when a server rejects it: HTTP 400/422, or any error status whose
message names ``response_format``/``json_schema`` (llama-cpp-python answers HTTP 500),
which is never retried as a server fault. What an OpenAI-compatible server refused, its
models and its context window are remembered per base URL for the run
(:mod:`whenpro_core.llm.capabilities`); the response's ``structured`` says which path
answered. Every failure becomes a one-line
:class:`~whenpro_core.errors.BackendError` with API keys redacted.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from whenpro_core.config import Settings, load_settings
from whenpro_core.errors import BackendError, ConfigError
from whenpro_core.llm import anthropic_backend, openai_backend
from whenpro_core.llm.cache import ResponseCache, request_key, response_from_entry, response_to_entry
from whenpro_core.llm.capabilities import (
    ServerInfo,
    error_text,
    names_structured_output,
    server_info,
    window_in_error,
)
from whenpro_core.llm.endpoints import require_endpoint
from whenpro_core.llm.failures import DROPPABLE, backend_error, describe_failure, rejected_parameter
from whenpro_core.llm.fitting import estimate_tokens, fit_request, prompt_limit
from whenpro_core.llm.models import ModelSpec, context_window, parse_model
from whenpro_core.llm.pricing import Price, cost_usd, find_price
from whenpro_core.llm.retry import is_retryable, make_wait, status_of, stop_when_refused_twice
from whenpro_core.llm.types import LLMRequest, LLMResponse, StructuredMode
from whenpro_core.llm.wire import Params, RawResult
from whenpro_core.safety.redact import public_url
from whenpro_core.trace.model import Usage

log = logging.getLogger("whenpro.llm")

Adapter = Callable[[Any, ModelSpec, LLMRequest, Params, StructuredMode], Awaitable[RawResult]]


@dataclass
class BackendStats:
    """Running totals of one backend: real ``calls``, ``cache_hits``, ``retries``,
    ``failures`` (calls that ended in BackendError) and summed ``usage``."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    usage: Usage = field(default_factory=Usage)


@dataclass
class _LoopState:
    client: Any
    semaphore: asyncio.Semaphore


class _Failed(Exception):
    def __init__(self, exc: BaseException, attempts: int) -> None:
        super().__init__(type(exc).__name__)
        self.exc = exc
        self.attempts = attempts


class _Rejected(Exception):
    """The model rejected a droppable request parameter (HTTP 400 naming it)."""

    def __init__(self, param: str, failed: _Failed) -> None:
        super().__init__(param)
        self.param = param
        self.failed = failed


class Backend:
    """An LLM endpoint with retries, a concurrency limit, a response cache and cost accounting.

    Build it with :func:`open_backend`. One backend may serve many concurrent
    :meth:`complete` calls (``asyncio.gather``); the concurrency limit is per backend
    (and per event loop), so share one backend per model across a run. Usable from
    several event loops, e.g. a TUI worker and a CLI run (an SDK client and a semaphore
    are kept per loop). Close it with :meth:`aclose` or ``async with``.

    Attributes:
        spec: the parsed model name; ``name`` is ``provider:model``.
        settings: the settings it was opened with.
        base_url: the endpoint (with any credentials in it; see ``public_base_url``).
        price: the model's price, or ``None`` when unknown (cost is then 0).
        stats: running totals (:class:`BackendStats`).
    """

    def __init__(
        self,
        spec: ModelSpec,
        settings: Settings,
        *,
        base_url: str,
        api_key: str,
        cache: ResponseCache | None,
        threaded: bool = False,
        server: ServerInfo | None = None,
    ) -> None:
        self.spec = spec
        #: What the OpenAI-compatible server at ``base_url`` can do (probed once per run);
        #: ``None`` for OpenAI and Anthropic.
        self.server = server
        #: Chat-completions calls run the blocking SDK client in threads (one per call in
        #: flight, up to ``settings.concurrency``): :class:`~whenpro_core.llm.openai_backend.ThreadedClient`.
        self.threaded = threaded and spec.api == "chat"
        self.settings = settings
        self.base_url = base_url
        self._api_key = api_key
        self._cache = cache
        self.price: Price | None = find_price(settings.price_table(), spec.provider, spec.model)
        self.stats = BackendStats()
        #: While a call waits to be retried: what failed and when the retry comes (one
        #: line, no secrets); ``None`` otherwise. A UI polls it to show progress.
        self.retry_note: str | None = None
        #: Awaited before every HTTP request (each retry too): a shared rate limiter
        #: (``whenpro bench --max-calls-per-s``) waits here for its slot; ``None``: no wait.
        self.before_request: Callable[[], Awaitable[None]] | None = None
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
        self._unsupported: set[str] = set()
        #: Params fields the model rejected (HTTP 400 naming them): left out of later calls.
        self._dropped: set[str] = set()
        self._secrets = [api_key] + [
            s.get_secret_value()
            for s in (settings.openai_api_key, settings.anthropic_api_key, settings.compatible_api_key)
            if s is not None
        ]
        if self.price is None:
            log.log(
                logging.INFO if spec.provider in ("openai-compatible", "local") else logging.WARNING,
                'no price for %s: its cost is reported as 0 (add [prices."%s"] to config.toml)',
                spec.name,
                spec.model,
            )

    # ------------------------------------------------------------------ public

    @property
    def name(self) -> str:
        """``provider:model``."""
        return self.spec.name

    @property
    def context_window(self) -> int:
        """Tokens of the model's context window: what the server reported
        (:mod:`whenpro_core.llm.capabilities`), else the table of
        :func:`whenpro_core.llm.models.context_window`."""
        if self.server is not None and self.server.context_window:
            return self.server.context_window
        return context_window(self.spec.name)

    @property
    def window_reported(self) -> bool:
        """Whether the server reported its context window (so requests must fit it)."""
        return self.server is not None and self.server.context_window is not None

    def answer_tokens(self, requested: int | None = None) -> int:
        """Most output tokens a call asks for: ``requested`` (a preset's published value)
        or ``settings.max_tokens``, never more than ``settings.max_tokens`` (the user's cap)
        nor a quarter of a reported context window (the prompt needs the rest)."""
        tokens = min(requested, self.settings.max_tokens) if requested else self.settings.max_tokens
        if self.window_reported:
            tokens = min(tokens, max(16, self.context_window // 4))
        return tokens

    @property
    def public_base_url(self) -> str | None:
        """The base URL without credentials, query or fragment."""
        return public_url(self.base_url)

    async def complete(
        self, request: LLMRequest, *, cache: bool | None = None, accept: Callable[[LLMResponse], bool] | None = None
    ) -> LLMResponse:
        """Run one request and return the answer with its usage and cost.

        Args:
            request: the prompt and parameters (``None`` parameters take the settings' values).
            cache: ``False`` bypasses the response cache for this call (no read, no write);
                ``None``/``True`` use it when the settings enable it.
            accept: whether an answer is worth keeping (e.g. its verdict could be read);
                an answer it rejects is never stored, and a stored one it rejects is a miss.

        Returns:
            :class:`LLMResponse`; a cache hit has ``from_cache=True``, ``cache_hits=1`` and
            zero tokens, calls and cost.

        Raises:
            BackendError: HTTP 4xx other than 408/409/429 (at once), a malformed response
                body (at once), or 429/5xx/timeout/connection failures after
                ``settings.max_retries`` retries. One line, no API key.
        """
        started = time.perf_counter()
        params = Params(
            temperature=request.temperature if request.temperature is not None else self.settings.temperature,
            max_tokens=self.answer_tokens(request.max_tokens),
            reasoning_effort=request.reasoning_effort or self.settings.reasoning_effort,
        )
        fit_note = None
        if self.window_reported:
            request, fit_note = fit_request(request, self._prompt_limit(request, params))
        key = None
        if self._cache is not None and cache is not False:
            key = request_key(self.spec, self.base_url, request, params)
            hit = self._cache.get(key)
            if hit is not None:
                response = response_from_entry(hit, request, self.spec.name, time.perf_counter() - started)
                if response is not None and (accept is None or accept(response)):
                    self.stats.cache_hits += 1
                    return response
        state = self._state()
        try:
            async with state.semaphore:
                raw, mode, retries, warnings = await self._call_dropping(state.client, request, params)
        except BackendError:
            self.stats.failures += 1
            raise
        elapsed = time.perf_counter() - started
        usage = Usage(
            calls=1,
            input_tokens=raw.input_tokens,
            output_tokens=raw.output_tokens,
            cached_tokens=raw.cached_tokens,
            cost_usd=cost_usd(
                self.price,
                input_tokens=raw.input_tokens,
                output_tokens=raw.output_tokens,
                cached_tokens=raw.cached_tokens,
                cache_write_tokens=raw.cache_write_tokens,
            ),
            seconds=elapsed,
        )
        if raw.finish_reason == "length":
            warnings.append(f"answer cut off at max_tokens={params.max_tokens}")
        if fit_note:
            warnings.insert(0, fit_note)
        response = LLMResponse(
            text=raw.text,
            parsed=raw.parsed,
            structured=mode,
            parse_error=raw.parse_error,
            usage=usage,
            original_usage=usage.model_copy(update={"seconds": 0.0}),
            cache_write_tokens=raw.cache_write_tokens,
            model=self.spec.name,
            served_model=raw.served_model,
            finish_reason=raw.finish_reason,
            retries=retries,
            warnings=warnings + raw.warnings,
        )
        self.stats.calls += 1
        self.stats.retries += retries
        self.stats.usage = self.stats.usage.add(usage)
        if key is not None and self._cache is not None and (accept is None or accept(response)):
            self._cache.set(key, response_to_entry(response))
        return response

    async def aclose(self) -> None:
        """Close the SDK client of the running loop (others are dropped) and the cache handle."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - called outside a loop
            loop = None
        state = self._loops.pop(loop, None) if loop is not None else None
        if state is not None:
            await state.client.close()
        self._loops.clear()
        if self._cache is not None:
            self._cache.close()

    async def __aenter__(self) -> Backend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"Backend({self.spec.name!r}, base_url={self.public_base_url!r})"

    # ------------------------------------------------------------------ internals

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            if self.threaded:
                client = openai_backend.ThreadedClient(
                    self._api_key, self.base_url, self.settings.timeout_s, self.settings.concurrency
                )
            else:
                factory = anthropic_backend.make_client if self.spec.api == "messages" else openai_backend.make_client
                client = factory(self._api_key, self.base_url, self.settings.timeout_s)
            state = _LoopState(client, asyncio.Semaphore(self.settings.concurrency))
            self._loops[loop] = state
        return state

    def _adapter(self) -> Adapter:
        if self.spec.api == "messages":
            return anthropic_backend.call_messages
        if self.spec.api == "responses":
            return openai_backend.call_responses
        return openai_backend.call_chat

    def _ladder(self, request: LLMRequest) -> list[StructuredMode]:
        if request.output_model is None:
            return ["none"]
        if self.spec.api == "messages":
            full: list[StructuredMode] = ["schema", "tool", "text"]
        elif self.spec.api == "chat":
            full = ["schema", "json", "text"]
        else:
            full = ["schema", "text"]
        refused = set(self._unsupported)
        if self.server is not None:
            refused |= {mode for mode, form in _FORMS.items() if form in self.server.rejected}
        return [m for m in full if m not in refused] or ["text"]

    @staticmethod
    def _without(params: Params, fields: set[str]) -> Params:
        """``params`` with the named fields (``temperature``, ``reasoning_effort``) left out."""
        return Params(
            temperature=None if "temperature" in fields else params.temperature,
            max_tokens=params.max_tokens,
            reasoning_effort=None if "reasoning_effort" in fields else params.reasoning_effort,
        )

    async def _call_dropping(
        self, client: Any, request: LLMRequest, params: Params
    ) -> tuple[RawResult, StructuredMode, int, list[str]]:
        """:meth:`_call`, leaving out the parameters the model rejected: one it rejects now
        (an HTTP 400 naming it, :func:`~whenpro_core.llm.failures.rejected_parameter`) is
        dropped and the call sent once more; each dropped parameter is a warning."""
        dropped = {f for f in self._dropped if getattr(params, f) is not None}
        notes = [f"{f} not sent: {self.spec.name} rejected it earlier in this run" for f in sorted(dropped)]
        try:
            raw, mode, retries, warnings = await self._call(client, request, self._without(params, dropped))
            return raw, mode, retries, notes + warnings
        except _Rejected as rejected:
            field = DROPPABLE[rejected.param]
            self._dropped.add(field)
            notes.append(f"{self.spec.name} rejected the parameter {rejected.param} (HTTP 400): sent again without it")
            log.warning("%s: %s", self.spec.name, notes[-1])
        try:
            raw, mode, retries, warnings = await self._call(client, request, self._without(params, self._dropped))
        except _Rejected as again:
            raise self._backend_error(again.failed.exc, again.failed.attempts) from None
        return raw, mode, retries + 1, notes + warnings

    async def _call(
        self, client: Any, request: LLMRequest, params: Params
    ) -> tuple[RawResult, StructuredMode, int, list[str]]:
        warnings: list[str] = []
        rejected: list[StructuredMode] = []
        ladder = self._ladder(request)
        for i, mode in enumerate(ladder):
            try:
                raw, attempts = await self._with_retries(client, request, params, mode)
                # remembered only once a simpler mode worked: a 400 for another reason
                # (e.g. a prompt too long) must not switch structured output off for good
                self._remember_refused(rejected)
                return raw, mode, attempts - 1, warnings
            except _Failed as failed:
                status = status_of(failed.exc)
                param = rejected_parameter(failed.exc)
                if param is not None and getattr(params, DROPPABLE[param]) is not None:
                    raise _Rejected(param, failed) from None  # not a structured-output refusal
                window = window_in_error(failed.exc) if self.server is not None and not self.window_reported else None
                if window is not None:
                    return await self._refit(client, request, params, window, warnings)
                if _refuses_structure(mode, failed.exc) and i + 1 < len(ladder):
                    nxt = ladder[i + 1]
                    rejected.append(mode)
                    note = f"server rejected structured output by {mode} (HTTP {status}); using {nxt} instead"
                    warnings.append(note)
                    log.info("%s: %s", self.spec.name, note)
                    continue
                raise self._backend_error(failed.exc, failed.attempts) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def schema_tokens(self, output_model: type[BaseModel] | None) -> int:
        """Prompt tokens this backend may add to a request answered as ``output_model``: the
        schema instruction the ``json`` mode puts in a chat request's last user turn (0 for
        other APIs or a free-text answer). A caller fitting a request leaves them free."""
        if output_model is None or self.spec.api != "chat":
            return 0
        return estimate_tokens(len(openai_backend.schema_instruction(output_model)), messages=1)

    def _prompt_limit(self, request: LLMRequest, params: Params) -> int:
        """Prompt tokens a request may hold in the known window: less the answer, and less
        the schema instruction the ``json`` mode adds to chat requests."""
        limit = prompt_limit(self.context_window, params.max_tokens) - self.schema_tokens(request.output_model)
        return max(1, limit)

    async def _refit(
        self, client: Any, request: LLMRequest, params: Params, window: int, warnings: list[str]
    ) -> tuple[RawResult, StructuredMode, int, list[str]]:
        """The server refused a prompt longer than its ``window``, which it had not reported:
        remember the window for the run (every later request is fitted to it) and ask again,
        fitted, once."""
        assert self.server is not None
        self.server.context_window, self.server.context_source = window, "the server's overflow error"
        params = replace(params, max_tokens=self.answer_tokens(params.max_tokens))
        request, note = fit_request(request, self._prompt_limit(request, params))
        warnings.append(f"the server's context window is {window:,} tokens (said when a prompt overflowed it)")
        if note:
            warnings.append(note)
        raw, mode, retries, more = await self._call(client, request, params)
        return raw, mode, retries, warnings + more

    def _remember_refused(self, modes: list[StructuredMode]) -> None:
        """Remember structured-output modes the server refused (per backend, and per base
        URL for an OpenAI-compatible server, so every backend of the run skips them)."""
        self._unsupported.update(modes)
        if self.server is not None:
            for mode in modes:
                if mode in _FORMS:
                    self.server.reject(_FORMS[mode])

    async def _with_retries(
        self, client: Any, request: LLMRequest, params: Params, mode: StructuredMode
    ) -> tuple[RawResult, int]:
        # lazy: loaded with the first LLM call, not at import
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

        s = self.settings
        adapter = self._adapter()
        attempts = 0
        retrying = AsyncRetrying(
            # tenacity annotates `|` for stop_base only, though stop_any calls any
            # Callable[[RetryCallState], bool] (its own StopBaseT)
            stop=stop_after_attempt(s.max_retries + 1) | stop_when_refused_twice,  # type: ignore[operator]
            wait=make_wait(s.backoff_base_s, s.backoff_max_s, s.retry_after_max_s),
            retry=retry_if_exception(lambda exc: is_retryable(exc) and not _refuses_structure(mode, exc)),
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    if self.before_request is not None:
                        await self.before_request()
                    async with asyncio.timeout(self._call_timeout()):
                        raw = await adapter(client, self.spec, request, params, mode)
                    self.retry_note = None
                    return raw, attempts
        except Exception as exc:  # noqa: BLE001 - every failure is reported as BackendError by _call
            self.retry_note = None
            raise _Failed(exc, attempts) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _call_timeout(self) -> float:
        """Seconds an attempt may take. A threaded call is bounded by the SDK's own timeout
        inside its thread (an outer timeout would leave the request running at the
        server, answered and uncounted); the outer bound then only catches a server that
        trickles bytes forever."""
        return self.settings.timeout_s * 2 + 1 if self.threaded else self.settings.timeout_s

    def _backend_error(self, exc: BaseException, attempts: int) -> BackendError:
        return backend_error(
            self.spec.name,
            self.public_base_url,
            exc,
            attempts,
            timeout_s=self.settings.timeout_s,
            secrets=self._secrets,
        )

    def _log_retry(self, retry_state: Any) -> None:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        wait = retry_state.next_action.sleep if retry_state.next_action else 0.0
        what = describe_failure(exc, timeout_s=self.settings.timeout_s, secrets=self._secrets)[0] if exc else "?"
        self.retry_note = f"{what}; retry {retry_state.attempt_number}/{self.settings.max_retries} in {wait:.0f} s"
        log.warning(
            "%s: %s; retry %d/%d in %.2f s",
            self.spec.name,
            what,
            retry_state.attempt_number,
            self.settings.max_retries,
            wait,
        )


#: The structured-output form (:mod:`whenpro_core.llm.capabilities`) of each chat mode.
_FORMS: dict[str, str] = {"schema": "json_schema", "json": "json_object"}


def _refuses_structure(mode: StructuredMode, exc: BaseException) -> bool:
    """Whether a failed call in ``mode`` is the server refusing structured output (then
    the next mode is tried, never a retry of the same request)."""
    if mode not in ("schema", "json", "tool") or window_in_error(exc) is not None:
        return False  # a prompt longer than the window is not about the format
    return names_structured_output(status_of(exc), error_text(exc))


def open_backend(
    model: str | None = None,
    settings: Settings | None = None,
    *,
    cache: ResponseCache | None = None,
    threaded: bool = False,
) -> Backend:
    """Open a backend for ``model`` (default: ``settings.model``).

    Args:
        model: ``provider:model`` (see :mod:`whenpro_core.llm.models`).
        settings: defaults to :func:`~whenpro_core.config.load_settings` ``()``.
        cache: a response cache to share; default: a :class:`ResponseCache` in the user
            cache dir when ``settings.cache`` is on, none when off.
        threaded: run chat-completions calls on the blocking SDK client in worker threads
            (``whenpro bench``: many calls in flight on a busy machine); other APIs ignore it.

    Raises:
        ConfigError: bad model name, ``heuristic`` (not an LLM backend), no API key, no
            base URL for ``openai-compatible:``, a malformed base URL.
    """
    settings = settings or load_settings()
    name = model or settings.model
    spec = parse_model(name, api=settings.api)
    if spec is None:
        raise ConfigError(
            "'heuristic' is not an LLM backend",
            expected="a provider:model name (the heuristic protocol needs no backend)",
        )
    base_url, api_key, server = served_at(spec, settings)
    if cache is None and settings.cache:
        cache = ResponseCache()
    return Backend(
        spec,
        settings,
        base_url=base_url,
        api_key=api_key,
        cache=cache if settings.cache else None,
        threaded=threaded,
        server=server,
    )


def served_at(spec: ModelSpec, settings: Settings) -> tuple[str, str, ServerInfo | None]:
    """``(base_url, api_key, server)``: a ``local:`` model's server is started (or reused)
    here; an OpenAI-compatible server is probed once per run."""
    if spec.provider == "local" and not settings.base_url:
        from whenpro_core.llm.local_server import ensure_server  # lazy: only for local models

        local = ensure_server(spec.model, settings.context_window)
        info = server_info(local.base_url, None, local.alias)
        info.context_window = info.context_window or local.context_window
        info.context_source = info.context_source or "the local server's n_ctx"
        info.server = info.server or "llama.cpp (llama-cpp-python)"
        info.reject("json_schema")  # llama-cpp-python's server takes text and json_object only
        return local.base_url, "EMPTY", info
    base_url, api_key = require_endpoint(spec, settings)
    if spec.provider not in ("openai-compatible", "local"):
        return base_url, api_key, None
    info = server_info(base_url, api_key, spec.model)
    if info.context_window is None and settings.context_window:
        info.context_window, info.context_source = settings.context_window, "context_window setting"
    return base_url, api_key, info
