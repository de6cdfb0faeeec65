"""Per-step usage (tokens, cost, latency) read from what a format records in
``Step.meta``, and its total over a trace.

Sources: OpenTelemetry GenAI (``usage.input_tokens``, ``usage.output_tokens``),
OpenInference (``token_count.prompt``, ``token_count.completion``), OpenHands
(``usage = {prompt_tokens, completion_tokens}``), span timing (``duration_ms``), and any
``usage`` dict with ``input_tokens``/``output_tokens``/``cost_usd``/``cost`` keys (Inspect,
Claude Code and Codex importers that keep them). Values that are not numbers are
ignored: the meta comes from untrusted files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from whenpro_core.trace.model import Step

_INPUT_KEYS = ("usage.input_tokens", "token_count.prompt", "input_tokens", "prompt_tokens")
_OUTPUT_KEYS = ("usage.output_tokens", "token_count.completion", "output_tokens", "completion_tokens")
_COST_KEYS = ("cost_usd", "cost", "usage.cost")
_MS_KEYS = ("duration_ms", "latency_ms")
#: Every key :func:`step_usage` reads at the top of ``Step.meta``: a meta holding none of
#: them records nothing (most steps of most formats), told without reading further.
_USAGE_KEYS = frozenset((*_INPUT_KEYS, *_OUTPUT_KEYS, *_COST_KEYS, *_MS_KEYS, "usage"))
_step_meta = attrgetter("meta")


@dataclass(frozen=True)
class StepUsage:
    """Tokens in and out, cost in US dollars and latency in milliseconds; ``None`` for
    what the trace does not record."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None

    @property
    def empty(self) -> bool:
        """True when nothing is recorded."""
        return all(v is None for v in (self.input_tokens, self.output_tokens, self.cost_usd, self.latency_ms))

    def text(self) -> str:
        """``"1,234 in · 56 out tokens · $0.0042 · 812 ms"`` (only the parts recorded)."""
        parts = []
        if self.input_tokens is not None or self.output_tokens is not None:
            parts.append(f"{self.input_tokens or 0:,} in · {self.output_tokens or 0:,} out tokens")
        if self.cost_usd is not None:
            parts.append(f"${self.cost_usd:.4f}")
        if self.latency_ms is not None:
            parts.append(f"{self.latency_ms / 1000:.2f} s" if self.latency_ms >= 1000 else f"{self.latency_ms:.0f} ms")
        return " · ".join(parts)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value == value and abs(value) < 1e15 else None  # NaN, absurd values


def _first(sources: Iterable[Mapping[str, Any]], keys: tuple[str, ...]) -> float | None:
    for source in sources:
        for key in keys:
            found = _number(source.get(key))
            if found is not None:
                return found
    return None


def step_usage(step: Step) -> StepUsage:
    """What ``step.meta`` records of tokens, cost and latency (see module docstring)."""
    return _meta_usage(step.meta or {})


def _meta_usage(meta: Mapping[str, Any]) -> StepUsage:
    if meta.keys().isdisjoint(_USAGE_KEYS):
        return StepUsage()
    nested = meta.get("usage")
    sources = [meta] + ([nested] if isinstance(nested, Mapping) else [])
    tin, tout = _first(sources, _INPUT_KEYS), _first(sources, _OUTPUT_KEYS)
    return StepUsage(
        None if tin is None else int(tin),
        None if tout is None else int(tout),
        _first(sources, _COST_KEYS),
        _first(sources, _MS_KEYS),
    )


def total_usage(steps: Iterable[Step]) -> StepUsage:
    """The sum over ``steps`` of each recorded part (``None`` where no step records it).
    Latency is the sum of step latencies (spans may overlap: an upper bound)."""
    return sum_usage(map(_step_meta, steps))


def sum_usage(metas: Iterable[Mapping[str, Any]]) -> StepUsage:
    """:func:`total_usage` of the steps whose ``meta`` are ``metas``. Empty metas are
    skipped without a Python call each (``filter``): a 100,000-step trace's header sums
    them before the trace screen's first paint."""
    sums: dict[str, float | None] = {"input_tokens": None, "output_tokens": None, "cost_usd": None, "latency_ms": None}
    for meta in filter(None, metas):
        usage = _meta_usage(meta)
        for key in sums:
            value = getattr(usage, key)
            if value is not None:
                sums[key] = (sums[key] or 0) + value
    tin, tout = sums["input_tokens"], sums["output_tokens"]
    return StepUsage(
        None if tin is None else int(tin), None if tout is None else int(tout), sums["cost_usd"], sums["latency_ms"]
    )
