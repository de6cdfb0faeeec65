"""Live sessions: a source of steps wired to live judges (docs/architecture.md, 'Data flow' and
'Attribution protocols'; ``live/``).

* :func:`attribute_live`: a :class:`~whenpro_core.live.follow.FileFollower` and one
  :class:`~whenpro_core.live.judge_live.LiveJudge`;
* :func:`attribute_store`: the OTLP receiver's :class:`~whenpro_core.live.store.LiveStore`
  and one LiveJudge per trace.

Both are async iterators of every source event and judge event, in order. The source is
read in one task and the judge works in another, so steps keep flowing while an LLM call
is under way; the judge always takes the trace as it is when it is ready for more.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from whenpro_core.live.events import (
    ExportRejected,
    HeaderUpdated,
    Idle,
    StepAdded,
    TraceEvicted,
    TraceReset,
    TraceStarted,
    TraceUpdated,
)
from whenpro_core.live.follow import outcome_final
from whenpro_core.live.judge_live import LiveJudge, run_end_reason
from whenpro_core.storage.jsonio import JSONObject


@dataclass(frozen=True)
class _End:
    reason: str


async def attribute_live(follower: Any, judge: LiveJudge, *, idle_timeout: float | None = None) -> AsyncIterator[Any]:
    """Follow a file and judge it live: yields the follower's events and the judge's,
    in order. Ends when the run ends (:func:`run_end_reason`) or after ``idle_timeout``
    seconds without new data (``None``: never), once the remaining steps are judged and
    :meth:`LiveJudge.finish` has run. Errors of the follower (a folder, an unreadable
    file) propagate as TraceFormatError."""
    out: asyncio.Queue[Any] = asyncio.Queue()  # follower and judge events, and _End
    changed = asyncio.Event()
    state = {"last": time.monotonic(), "finishing": False}

    async def reader() -> None:
        async for ev in follower:
            if isinstance(ev, (StepAdded, TraceReset, HeaderUpdated)):
                state["last"] = time.monotonic()
                changed.set()
            elif isinstance(ev, Idle):  # an outcome stated up front ends the run now
                changed.set()
            await out.put(ev)

    async def judging() -> None:
        while True:
            await changed.wait()
            changed.clear()
            trace = follower.trace()
            async for ev in judge.update(trace):
                await out.put(ev)
            reason = run_end_reason(trace, outcome_final=outcome_final(follower))
            if reason:
                await out.put(_End(reason))
                return
            if state["finishing"] and not changed.is_set():
                return

    rtask = asyncio.create_task(reader())
    jtask = asyncio.create_task(judging())
    reason: str | None = None
    try:
        while reason is None:
            if rtask.done() and (failed := rtask.exception()) is not None:
                raise failed
            if jtask.done() and (failed := jtask.exception()) is not None:
                raise failed
            wait = 0.25
            if idle_timeout is not None:
                wait = min(wait, max(0.0, state["last"] + idle_timeout - time.monotonic()))
            try:
                ev = await asyncio.wait_for(out.get(), wait)
            except TimeoutError:
                if idle_timeout is not None and time.monotonic() - state["last"] >= idle_timeout:
                    reason = "idle"
                continue
            if isinstance(ev, _End):
                reason = ev.reason
            else:
                yield ev
        follower.close()
        rtask.cancel()
        state["finishing"] = True
        changed.set()
        while not jtask.done() or not out.empty():
            try:
                ev = await asyncio.wait_for(out.get(), 0.25)
            except TimeoutError:
                continue
            if not isinstance(ev, _End):
                yield ev
        if (failed := jtask.exception()) is not None:
            raise failed
        async for ev in judge.finish(follower.trace(), reason):
            yield ev
    finally:
        follower.close()
        for task in (rtask, jtask):
            task.cancel()
        await asyncio.gather(rtask, jtask, return_exceptions=True)


async def attribute_store(
    store: Any, make_judge: Callable[[str], LiveJudge], *, idle_timeout: float | None = None
) -> AsyncIterator[Any]:
    """Judge every trace the OTLP receiver's ``store`` gets, live: yields the store's
    events (TraceStarted, TraceUpdated, TraceEvicted, ExportRejected) and each trace's
    judge events. ``make_judge(trace_id)`` gives the LiveJudge of a new trace. A trace
    ends at its root span (:func:`run_end_reason`) or after ``idle_timeout`` seconds
    without spans; the iteration ends after ``idle_timeout`` seconds without any export
    once every trace has ended (``None``: never; cancel the task to stop)."""
    sub = store.subscribe()
    out: asyncio.Queue[Any] = asyncio.Queue()  # store and judge events
    judges: dict[str, JSONObject] = {}
    last_any = time.monotonic()

    async def run(tid: str, entry: JSONObject) -> None:
        lj: LiveJudge = entry["judge"]
        while not lj.ended:
            await entry["changed"].wait()
            entry["changed"].clear()
            trace = store.trace(tid)
            if trace is None:
                continue
            async for ev in lj.update(trace):
                await out.put(ev)
            reason = entry.pop("end", None) or run_end_reason(trace)
            if reason:
                async for ev in lj.finish(trace, reason):
                    await out.put(ev)

    try:
        while True:
            ev = await sub.next(0.2)
            now = time.monotonic()
            if ev is not None:
                if not isinstance(ev, (ExportRejected, TraceEvicted)):
                    last_any = now
                yield ev
                if isinstance(ev, (TraceStarted, TraceUpdated)):
                    entry = judges.get(ev.trace_id)
                    if entry is None:
                        entry = {"judge": make_judge(ev.trace_id), "changed": asyncio.Event(), "last": now}
                        entry["task"] = asyncio.create_task(run(ev.trace_id, entry))
                        judges[ev.trace_id] = entry
                    entry["last"] = now
                    entry["changed"].set()
            while not out.empty():
                yield out.get_nowait()
            for _tid, entry in judges.items():
                task = entry["task"]
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise task.exception()
                if (
                    idle_timeout is not None
                    and not entry["judge"].ended
                    and "end" not in entry
                    and now - entry["last"] >= idle_timeout
                ):
                    entry["end"] = "idle"
                    entry["changed"].set()
            if (
                idle_timeout is not None
                and now - last_any >= idle_timeout
                and all(e["task"].done() for e in judges.values())
            ):
                while not out.empty():
                    yield out.get_nowait()
                return
    finally:
        sub.close()
        for entry in judges.values():
            entry["task"].cancel()
        await asyncio.gather(*(e["task"] for e in judges.values()), return_exceptions=True)


__all__ = ["attribute_live", "attribute_store"]
