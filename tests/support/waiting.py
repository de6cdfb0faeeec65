"""Waiting for an event in tests, never for a length of time (issue 13, item 10).

Tests synchronise on the condition they need (a file written, a process gone, a
screen shown, a worker done), polled until it holds. The deadline is a guard against
a hang, not a speed bound: it only fires when the event never comes, and it is long
enough (:data:`TIMEOUT_S`) that a machine under load (load average 8 on 2 cores)
never trips it. No test asserts how long something took.

* :func:`wait_until` — plain code (threads, subprocesses, servers);
* :func:`until` — inside a Pilot test: the app runs between checks (queued messages
  handled, workers advance), so the event loop is never blocked.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: Seconds before a wait gives up (a hang guard; see the module docstring).
TIMEOUT_S = 120.0
#: Seconds between two checks of the condition in :func:`wait_until`.
POLL_S = 0.02
#: A client timeout that a hung server must outlast (so the test waits this long) while
#: every ordinary answer of a local test server meets it, on a loaded machine too.
ANSWER_S = 5.0


class Deadline:
    """The point, ``timeout`` seconds from now, after which a wait fails."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.at = time.monotonic() + timeout

    @property
    def expired(self) -> bool:
        """True once the deadline has passed (for loops that assert after they end)."""
        return time.monotonic() > self.at

    def check(self, what: str, detail: Callable[[], str] | None = None) -> None:
        """Raise AssertionError ``"timed out waiting for <what>"`` (with ``detail()``)
        once the deadline has passed."""
        if self.expired:
            extra = f"\n{detail()}" if detail is not None else ""
            raise AssertionError(f"timed out waiting for {what} ({self.timeout:g} s){extra}")


def wait_until(
    condition: Callable[[], T],
    what: str,
    *,
    timeout: float = TIMEOUT_S,
    poll: float = POLL_S,
    detail: Callable[[], str] | None = None,
) -> T:
    """Check ``condition()`` every ``poll`` seconds until it is truthy and return it;
    AssertionError naming ``what`` (and ``detail()``) if it is not within ``timeout``."""
    deadline = Deadline(timeout)
    while not (value := condition()):
        deadline.check(what, detail)
        time.sleep(poll)
    return value


async def until(
    pilot: Any,
    condition: Callable[[], T],
    what: str,
    *,
    timeout: float = TIMEOUT_S,
    poll: float = POLL_S,
    detail: Callable[[], str] | None = None,
    between: Callable[[], Awaitable[Any]] | None = None,
) -> T:
    """:func:`wait_until` for Pilot tests: between checks the screen handles every
    message queued so far and the loop yields ``poll`` seconds to the app's workers
    (``pilot.pause(poll)``), or awaits ``between()`` instead (e.g. ``settle``: every
    worker done); never blocks the event loop."""
    deadline = Deadline(timeout)
    while not (value := condition()):
        deadline.check(what, detail)
        await (between() if between is not None else pilot.pause(poll))
    return value
