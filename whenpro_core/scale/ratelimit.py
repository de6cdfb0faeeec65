"""The request-rate cap of ``whenpro bench --max-calls-per-s`` and ``whenpro build
--max-calls-per-s`` (issue 18).

:class:`RateLimiter` hands out request slots ``1 / rate`` seconds apart on one clock: a
caller asks for a slot (:meth:`RateLimiter.reserve`, the slot's time on that clock) and
waits until then before sending its request, so at most ``rate`` requests start in any one-second window
(``rate + 1`` counting both ends), however many callers share it. In one process it is
used directly; on Ray one instance lives in an actor that every shard's workers ask
(:mod:`whenpro_core.scale.ray_backend`), which makes the cap cluster-wide.

:func:`gate_judges` hooks a wait into the model backends of LLM judges
(:attr:`whenpro_core.llm.backend.Backend.before_request`), so the cap counts HTTP requests
(retries included, cached answers not), not work items; :func:`gate_tools` does the
same for a build's LLM generator and simulating executor.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping

from whenpro_core.attribution.judge import Judge
from whenpro_core.errors import ConfigError


class RateLimiter:
    """Slots at most ``rate`` per second (``rate`` > 0, requests per second).

    ``clock`` returns seconds (default ``time.monotonic``, which :func:`local_wait` assumes).
    Thread-safe (a build's attempts ask from worker threads, each with its own event
    loop). Slots are times on ``clock``, so a caller in another process waits until the slot on the same clock (the
    wall clock ``time.time`` across machines): the wait does not depend on how long the
    answer took to reach it.
    """

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not rate > 0:
            raise ConfigError(f"--max-calls-per-s {rate} is not a positive number", expected="a rate > 0")
        self.interval = 1.0 / rate
        self._clock = clock
        self._next = float("-inf")
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take the next free slot; returns its time on ``clock`` (now or later)."""
        with self._lock:
            slot = max(self._clock(), self._next)
            self._next = slot + self.interval
            return slot


def local_wait(limiter: RateLimiter) -> Callable[[], Awaitable[None]]:
    """An awaitable hook that waits for a slot of an in-process ``limiter``."""

    async def wait() -> None:
        await asyncio.sleep(max(0.0, limiter.reserve() - time.monotonic()))

    return wait


def gate_judges(judges: Mapping[str, Judge], wait: Callable[[], Awaitable[None]]) -> int:
    """Make every judge's model backend await ``wait`` before each request. Returns the
    number of backends gated (judges without a backend, e.g. test doubles, are left)."""
    gated = 0
    for judge in judges.values():
        backend = getattr(judge, "backend", None)
        if backend is not None and hasattr(backend, "before_request"):
            backend.before_request = wait
            gated += 1
    return gated


def gate_tools(tools: Iterable[object], wait: Callable[[], Awaitable[None]]) -> int:
    """Make the model backends of a build's LLM generator and executor (objects with a
    ``before_request`` hook they pass to each backend they open) await ``wait`` before each
    request. Returns the number gated (offline ones have no hook and are left)."""
    gated = 0
    for tool in tools:
        if hasattr(tool, "before_request"):
            tool.before_request = wait
            gated += 1
    return gated


def local_gate(judges: Mapping[str, Judge], max_calls_per_s: float | None) -> None:
    """``--max-calls-per-s`` in one process: one in-process limiter for every judge
    (``None``: no cap)."""
    if max_calls_per_s is not None:
        gate_judges(judges, local_wait(RateLimiter(max_calls_per_s)))


__all__ = ["RateLimiter", "gate_judges", "gate_tools", "local_gate", "local_wait"]
