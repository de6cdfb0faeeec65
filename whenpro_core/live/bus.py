"""A small publish/subscribe bus that crosses threads: the OTLP receiver publishes from
its HTTP and flusher threads; a TUI or the CLI reads in an asyncio loop (or a thread).

Each subscriber has its own bounded queue: a slow subscriber never blocks a publisher
or the other subscribers; when its queue is full the oldest events are dropped and
:attr:`Subscription.dropped` counts them (a viewer can then re-read the store).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import Any

#: Events a subscriber may fall behind by before the oldest are dropped.
DEFAULT_QUEUE = 10_000


class Subscription:
    """One subscriber's queue. Read with ``async for event in sub`` (in any asyncio
    loop), or ``sub.get(timeout)`` from a thread. ``close()`` ends the iteration."""

    def __init__(self, bus: EventBus, maxlen: int) -> None:
        self._bus = bus
        self._items: deque[Any] = deque()
        self._maxlen = maxlen
        self._cond = threading.Condition()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self.closed = False
        #: Events dropped because this subscriber fell more than ``maxlen`` behind.
        self.dropped = 0

    def _put(self, event: Any) -> None:
        with self._cond:
            if self.closed:
                return
            if len(self._items) >= self._maxlen:
                self._items.popleft()
                self.dropped += 1
            self._items.append(event)
            self._cond.notify()
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            _wake(loop, fut)

    def get(self, timeout: float | None = None) -> Any | None:
        """The next event, waiting up to ``timeout`` seconds (forever with ``None``);
        ``None`` on timeout or once closed and drained."""
        with self._cond:
            if not self._items and not self.closed:
                self._cond.wait(timeout)
            return self._items.popleft() if self._items else None

    def get_nowait(self) -> Any | None:
        """The next event if one is queued, else ``None``."""
        with self._cond:
            return self._items.popleft() if self._items else None

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Any:
        while True:
            loop = asyncio.get_running_loop()
            with self._cond:
                if self._items:
                    return self._items.popleft()
                if self.closed:
                    raise StopAsyncIteration
                fut = loop.create_future()
                self._waiters.append((loop, fut))
            await fut

    async def next(self, timeout: float | None = None) -> Any | None:
        """The next event within ``timeout`` seconds (``None`` on timeout or when
        closed): for loops that also watch a clock."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except (TimeoutError, StopAsyncIteration):
            return None

    def close(self) -> None:
        """Stop receiving; a pending ``async for`` ends once the queue is drained."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()
            waiters, self._waiters = self._waiters, []
        self._bus._remove(self)
        for loop, fut in waiters:
            _wake(loop, fut)


def _wake(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[None]) -> None:
    def done() -> None:
        if not fut.done():
            fut.set_result(None)

    with contextlib.suppress(RuntimeError):  # the subscriber's loop is closed
        loop.call_soon_threadsafe(done)


class EventBus:
    """Thread-safe fan-out of events to every current :class:`Subscription`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: list[Subscription] = []

    def subscribe(self, maxlen: int = DEFAULT_QUEUE) -> Subscription:
        """A new subscription receiving every event published from now on."""
        sub = Subscription(self, maxlen)
        with self._lock:
            self._subs.append(sub)
        return sub

    def publish(self, event: Any) -> None:
        """Send ``event`` to every subscriber (never blocks on a slow one)."""
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            sub._put(event)

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)


__all__ = ["EventBus", "Subscription"]
