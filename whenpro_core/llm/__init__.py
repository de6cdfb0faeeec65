"""LLM backends (docs/architecture.md, 'Module map' ``llm/``): OpenAI chat completions and Responses, Anthropic
messages, OpenAI-compatible servers; retries, a concurrency limit, a persistent response
cache, usage and cost.

Public API (importing this package does not import the ``openai``/``anthropic`` SDKs)::

    from whenpro_core.llm import (
        open_backend, Backend, BackendStats,            # backend.py
        LLMRequest, LLMResponse, Message, TextPart, ImagePart,   # types.py
        ModelSpec, parse_model, is_llm,                  # models.py
        ResponseCache, Price, find_price, cost_usd,
    )

    async with open_backend("anthropic:claude-sonnet-4-6") as llm:
        r = await llm.complete(LLMRequest.simple("...", output_model=MyVerdict))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy exports below resolve to, for type checkers
    from whenpro_core.llm.backend import Backend, BackendStats, open_backend
    from whenpro_core.llm.cache import ResponseCache
    from whenpro_core.llm.models import ACCEPTED_FORMS, HEURISTIC, PROVIDERS, ModelSpec, is_llm, parse_model
    from whenpro_core.llm.pricing import DEFAULT_PRICES, Price, cost_usd, find_price
    from whenpro_core.llm.types import ImagePart, LLMRequest, LLMResponse, Message, TextPart

_EXPORTS = {
    "Backend": "backend",
    "BackendStats": "backend",
    "open_backend": "backend",
    "ResponseCache": "cache",
    "ACCEPTED_FORMS": "models",
    "HEURISTIC": "models",
    "PROVIDERS": "models",
    "ModelSpec": "models",
    "is_llm": "models",
    "parse_model": "models",
    "DEFAULT_PRICES": "pricing",
    "Price": "pricing",
    "cost_usd": "pricing",
    "find_price": "pricing",
    "ImagePart": "types",
    "LLMRequest": "types",
    "LLMResponse": "types",
    "Message": "types",
    "TextPart": "types",
}


def __getattr__(name: str) -> Any:
    """Load exports on first use (PEP 562), so ``whenpro_core.config`` can import
    ``whenpro_core.llm.pricing`` without pulling in the backend."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'whenpro_core.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"whenpro_core.llm.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = [
    "ACCEPTED_FORMS",
    "Backend",
    "BackendStats",
    "DEFAULT_PRICES",
    "HEURISTIC",
    "ImagePart",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "ModelSpec",
    "PROVIDERS",
    "Price",
    "ResponseCache",
    "TextPart",
    "cost_usd",
    "find_price",
    "is_llm",
    "open_backend",
    "parse_model",
]
