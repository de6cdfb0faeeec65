"""The tool-result cache of warm-start replay (docs/architecture.md, 'Injection and warm-start replay' step 2).

Recorded tool results of a trace are indexed by a hash of the step's tool calls (each
call's name plus its arguments as canonical JSON: sorted keys, no whitespace, JSON
strings that hold an object decoded first). During replay a step whose calls match a
recorded step gets the recorded observation back (``source="cache"``); an unmatched call
runs live through the executor's tools when it has some (``source="live"``), or comes back
``source="missing"`` so the executor supplies (or simulates) the result and the step is
marked ``meta["simulated"] = True``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from whenpro_core.envs.base import ToolOutput, ToolRunner
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import Step, ToolCall


def _canonical_args(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
        return parsed if isinstance(parsed, (dict, list)) else arguments
    return arguments


def call_key(calls: Iterable[ToolCall]) -> str:
    """SHA-256 (hex) of ``[[name, canonical arguments], ...]`` for a step's tool calls.
    Call ids are not part of the key (they differ between runs)."""
    payload = [[c.name, _canonical_args(c.arguments)] for c in calls]
    data = jsonio.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(data).hexdigest()


@dataclass
class ToolCache:
    """Recorded results by :func:`call_key`, with hit/miss counters.

    Build it with :meth:`from_steps`; the first recorded result of a key wins (a replay
    reproduces the earliest run of an identical call)."""

    results: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    @classmethod
    def from_steps(cls, steps: Iterable[Step]) -> ToolCache:
        """Index every step that has tool calls and a recorded observation or error."""
        cache = cls()
        for step in steps:
            if (
                step.tool_calls
                and (step.observation is not None or step.error is not None)
                and not step.meta.get("simulated")
            ):
                cache.results.setdefault(call_key(step.tool_calls), (step.observation, step.error))
        return cache

    def add(self, calls: list[ToolCall], observation: str | None, error: str | None = None) -> None:
        """Record a result for ``calls`` unless one is already recorded (first wins).
        Used for results a trace records outside ``tool_calls``, e.g. a code executor
        agent's reply to a message's code (:mod:`whenpro_core.injection.simulate`)."""
        self.results.setdefault(call_key(calls), (observation, error))

    def get(self, calls: list[ToolCall]) -> tuple[str | None, str | None] | None:
        """The recorded ``(observation, error)`` for these calls, or ``None`` (counted)."""
        found = self.results.get(call_key(calls))
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def runner(self, live: ToolRunner | None = None) -> ToolRunner:
        """A :data:`~whenpro_core.envs.base.ToolRunner`: recorded results first, then
        ``live``, else ``ToolOutput(None, source="missing")``."""

        def run(calls: list[ToolCall]) -> ToolOutput:
            found = self.get(calls)
            if found is not None:
                return ToolOutput(found[0], found[1], source="cache")
            if live is None:
                return ToolOutput(None, None, source="missing")
            out = live(calls)
            return ToolOutput(out.observation, out.error, source="live")

        return run
