"""Token prices and the cost of a call (USD).

A price is given in USD per 1,000,000 tokens, separately for uncached input, output,
cached input (tokens served from the provider's prefix cache) and cache writes
(Anthropic charges prompt-cache creation at a premium). The built-in table below holds a
few well-known models as listed on the vendors' pricing pages (OpenAI: platform.openai.com
/docs/pricing; Anthropic: docs.anthropic.com/en/docs/about-claude/pricing) when this was
written; prices change, so users override or extend it in ``config.toml``::

    [prices."gpt-4.1"]
    input = 2.0
    output = 8.0
    cached_input = 0.5

    [prices."openai-compatible:qwen3"]   # a provider-qualified key wins over a bare one
    input = 0
    output = 0
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field


class Price(BaseModel):
    """USD per 1M tokens. ``cached_input`` and ``cache_write`` default to ``input``."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0, description="USD per 1M uncached input tokens")
    output: float = Field(ge=0, description="USD per 1M output tokens")
    cached_input: float | None = Field(None, ge=0, description="USD per 1M cache-read input tokens")
    cache_write: float | None = Field(None, ge=0, description="USD per 1M cache-write input tokens")


def _p(inp: float, out: float, cached: float, write: float | None = None) -> Price:
    return Price(input=inp, output=out, cached_input=cached, cache_write=write)


#: Built-in prices (USD per 1M tokens), keyed by bare model name.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4.1": _p(2.00, 8.00, 0.50),
    "gpt-4.1-mini": _p(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _p(0.10, 0.40, 0.025),
    "gpt-4o": _p(2.50, 10.00, 1.25),
    "gpt-4o-mini": _p(0.15, 0.60, 0.075),
    "gpt-5": _p(1.25, 10.00, 0.125),
    "gpt-5-mini": _p(0.25, 2.00, 0.025),
    "o4-mini": _p(1.10, 4.40, 0.275),
    "claude-opus-4-1": _p(15.00, 75.00, 1.50, 18.75),
    "claude-sonnet-4-5": _p(3.00, 15.00, 0.30, 3.75),
    "claude-sonnet-4-6": _p(3.00, 15.00, 0.30, 3.75),
    "claude-haiku-4-5": _p(1.00, 5.00, 0.10, 1.25),
}

_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


def find_price(prices: dict[str, Price], provider: str, model: str) -> Price | None:
    """Look a model up in a price table.

    Tries, in order: ``"provider:model"``, ``"model"``, and both again with a trailing
    release date removed (``gpt-4.1-2025-04-14`` -> ``gpt-4.1``,
    ``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``). Returns ``None`` when the
    model is unknown (its cost is then reported as 0).
    """
    names = [model]
    stripped = _DATE_SUFFIX.sub("", model)
    if stripped != model:
        names.append(stripped)
    for name in names:
        for key in (f"{provider}:{name}", name):
            if key in prices:
                return prices[key]
    return None


def cost_usd(
    price: Price | None,
    *,
    input_tokens: int,
    output_tokens: int,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float:
    """The USD cost of one call.

    Args:
        price: the model's price, or ``None`` (unknown model: cost 0).
        input_tokens: all prompt tokens, *including* cached and cache-write tokens.
        output_tokens: completion tokens (reasoning tokens included, as billed).
        cached_tokens: prompt tokens read from the provider's prefix cache.
        cache_write_tokens: prompt tokens written to the cache (Anthropic).
    """
    if price is None:
        return 0.0
    uncached = max(0, input_tokens - cached_tokens - cache_write_tokens)
    cached_rate = price.input if price.cached_input is None else price.cached_input
    write_rate = price.input if price.cache_write is None else price.cache_write
    total = (
        uncached * price.input
        + cached_tokens * cached_rate
        + cache_write_tokens * write_rate
        + output_tokens * price.output
    )
    return total / 1_000_000
