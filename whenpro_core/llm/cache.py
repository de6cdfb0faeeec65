"""Persistent LLM response cache: the same request never costs a second call.

Stored with :mod:`diskcache` (SQLite, transactional, safe across threads and processes)
under ``<cache dir>/llm`` (:func:`whenpro_core.storage.paths.llm_cache_dir`). Keys are SHA-256
hashes of the request's *content*: provider, model, API, the base URL without credentials,
system prompt, messages (images included), temperature, max tokens, reasoning effort and the
structured-output schema. API keys are never part of a key or a value; values are JSON
(answer text, parsed object, usage of the original call, ...), never pickles.

A cache that cannot be opened or read degrades to "no cache" with a logged warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from whenpro_core.llm.models import ModelSpec
from whenpro_core.llm.types import LLMRequest, LLMResponse
from whenpro_core.llm.wire import Params
from whenpro_core.safety.redact import public_url
from whenpro_core.storage import paths
from whenpro_core.trace.model import Usage

log = logging.getLogger("whenpro.llm")

CACHE_FORMAT = 1


def request_key(spec: ModelSpec, base_url: str | None, request: LLMRequest, params: Params) -> str:
    """The cache key (hex SHA-256) of a request as it will be sent. Cache breakpoints are
    left out (they change the price, not the answer)."""
    schema = None
    if request.output_model is not None:
        schema = {"name": request.output_model.__name__, "schema": request.output_model.model_json_schema()}
    doc = {
        "v": CACHE_FORMAT,
        "provider": spec.provider,
        "model": spec.model,
        "api": spec.api,
        "base_url": public_url(base_url),
        "system": request.system,
        "messages": [
            {"role": m.role, "content": [p.model_dump(exclude={"cache_breakpoint"}) for p in m.content]}
            for m in request.messages
        ],
        "temperature": params.temperature,
        "max_tokens": params.max_tokens,
        "reasoning_effort": params.reasoning_effort,
        "schema": schema,
    }
    blob = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


class ResponseCache:
    """A directory of cached responses (values: JSON-serialisable dicts).

    Args:
        directory: where to keep it; default ``<cache dir>/llm``.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else paths.llm_cache_dir()
        self._cache: Any = None
        self._broken = False

    def _open(self) -> Any:
        if self._cache is None and not self._broken:
            try:
                import diskcache  # lazy: loaded when a cache is opened

                self.directory.mkdir(parents=True, exist_ok=True)
                self._cache = diskcache.Cache(str(self.directory), size_limit=2**30)
            except Exception as exc:  # noqa: BLE001 - a cache must never break a run
                log.warning("LLM response cache disabled: cannot open %s (%s)", self.directory, type(exc).__name__)
                self._broken = True
        return self._cache

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value, or ``None`` (miss, unreadable entry or no cache)."""
        cache = self._open()
        if cache is None:
            return None
        try:
            blob = cache.get(key)
            if blob is None:
                return None
            value = json.loads(blob)
            return value if isinstance(value, dict) and value.get("v") == CACHE_FORMAT else None
        except Exception as exc:  # noqa: BLE001
            log.warning("LLM response cache: unreadable entry ignored (%s)", type(exc).__name__)
            return None

    def set(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` (a JSON-serialisable dict) under ``key``; failures are logged, not raised."""
        cache = self._open()
        if cache is None:
            return
        try:
            blob = json.dumps({**value, "v": CACHE_FORMAT}, ensure_ascii=False).encode("utf-8")
            cache.set(key, blob)
        except Exception as exc:  # noqa: BLE001
            log.warning("LLM response cache: could not store an entry (%s)", type(exc).__name__)

    def __len__(self) -> int:
        cache = self._open()
        return len(cache) if cache is not None else 0

    def clear(self) -> None:
        """Remove every entry."""
        cache = self._open()
        if cache is not None:
            cache.clear()

    def close(self) -> None:
        """Close the underlying SQLite connection (reopened on next use)."""
        if self._cache is not None:
            self._cache.close()
            self._cache = None


def response_to_entry(response: LLMResponse) -> dict[str, Any]:
    """What the cache keeps of a response: answer, parsed object as JSON, original usage."""
    parsed = response.parsed.model_dump(mode="json") if isinstance(response.parsed, BaseModel) else None
    return {
        "text": response.text,
        "parsed": parsed,
        "structured": response.structured,
        "parse_error": response.parse_error,
        "usage": response.usage.model_dump(),
        "cache_write_tokens": response.cache_write_tokens,
        "served_model": response.served_model,
        "finish_reason": response.finish_reason,
        "warnings": response.warnings,
    }


def response_from_entry(entry: dict[str, Any], request: LLMRequest, model: str, seconds: float) -> LLMResponse | None:
    """A cache hit as a response: ``from_cache=True``, ``cache_hits=1``, zero calls, tokens
    and cost in ``usage`` (nothing was spent); ``original_usage`` is what the stored call
    cost. ``None`` if the entry is unusable."""
    try:
        parsed = None
        if entry.get("parsed") is not None and request.output_model is not None:
            parsed = request.output_model.model_validate(entry["parsed"])
        return LLMResponse(
            text=entry["text"],
            parsed=parsed,
            structured=entry.get("structured", "none"),
            parse_error=entry.get("parse_error"),
            usage=Usage(seconds=seconds),
            original_usage=Usage.model_validate({**entry["usage"], "seconds": 0.0}) if entry.get("usage") else None,
            model=model,
            served_model=entry.get("served_model"),
            finish_reason=entry.get("finish_reason"),
            from_cache=True,
            cache_hits=1,
            warnings=list(entry.get("warnings") or []),
        )
    except Exception as exc:  # noqa: BLE001 - a bad entry is a miss
        log.warning("LLM response cache: unusable entry ignored (%s)", type(exc).__name__)
        return None
