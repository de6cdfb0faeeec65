"""Following a file for a viewer (the TUI's follow view): the follower's events and a
live judge's, like :func:`whenpro_core.live.session.attribute_live`, but the stream
does not end when the run does. A viewer keeps showing the file: lines written after the
final answer (a closing header, a new run after a rotation) still arrive.

* Judging starts with ``make_judge()`` and ends when the run ends
  (:func:`~whenpro_core.live.judge_live.run_end_reason`: final answer, outcome, root
  span; an outcome a header states before any step ends it only once the file goes
  quiet, :func:`~whenpro_core.live.follow.outcome_final`) or after ``idle_timeout``
  seconds without new data (``None``: never), with
  :meth:`~whenpro_core.live.judge_live.LiveJudge.finish` (``RunEnded``, the final pass).
* A :class:`~whenpro_core.live.events.TraceReset` that keeps no step (the file was
  truncated to nothing or replaced by a new run) starts a new judge.
* An unexpected error of the judge becomes a :class:`~whenpro_core.live.events.JudgeFailed`
  event (judging stops; following goes on). Errors of the follower (a folder, an
  unreadable file) propagate as TraceFormatError.

The stream ends when ``follower.close()`` is called or the consuming task is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from whenpro_core.live.events import HeaderUpdated, Idle, JudgeFailed, StepAdded, TraceReset
from whenpro_core.live.follow import outcome_final
from whenpro_core.live.judge_live import Budget, LiveJudge, run_end_reason
from whenpro_core.live.setup import judge_factory

_DONE = object()


def live_judges(
    protocol: str | None = None,
    model: str | None = None,
    *,
    budget_calls: int | None = None,
    budget_tokens: int | None = None,
    budget_usd: float | None = None,
    final_pass: bool = False,
    with_gold: bool = True,
    no_cache: bool = False,
) -> tuple[Callable[..., LiveJudge], Any]:
    """The judge settings of ``whenpro watch`` for a viewer: ``(make, llm_judge)``
    where ``make(trace_id="")`` gives a new :class:`LiveJudge` (``heuristic`` by
    default, ``step-by-step`` with a model) and ``llm_judge`` is the LLM judge to
    ``await llm_judge.aclose()`` at the end (``None`` for the heuristic). Raises
    ConfigError for settings that cannot judge live (checked now, before anything
    runs)."""
    budget = Budget(max_calls=budget_calls, max_tokens=budget_tokens, max_usd=budget_usd)
    return judge_factory(protocol, model, budget=budget, final_pass=final_pass, with_gold=with_gold, no_cache=no_cache)


async def follow_live(
    follower: Any,
    make_judge: Callable[[], LiveJudge] | None = None,
    *,
    idle_timeout: float | None = None,
    tick: float = 0.25,
) -> AsyncIterator[Any]:
    """Yield ``follower``'s events and, with ``make_judge``, the live judge's events, in
    order (see the module doc). ``tick`` is how often (seconds) the idle timeout is
    checked."""
    out: asyncio.Queue[Any] = asyncio.Queue()  # follower and judge events
    changed = asyncio.Event()
    state: dict[str, Any] = {"last": time.monotonic(), "new_run": False}

    async def reader() -> None:
        try:
            async for ev in follower:
                if isinstance(ev, (StepAdded, TraceReset, HeaderUpdated)):
                    state["last"] = time.monotonic()
                    if isinstance(ev, TraceReset) and ev.kept == 0:
                        state["new_run"] = True
                    changed.set()
                elif isinstance(ev, Idle):  # an outcome stated up front ends the run now
                    changed.set()
                await out.put(ev)
        except Exception as exc:  # handed to the consumer, raised there
            await out.put(exc)
        await out.put(_DONE)

    async def judging() -> None:
        assert make_judge is not None
        judge = make_judge()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), tick)
            trace = follower.trace()
            if state["new_run"]:
                state["new_run"] = False
                judge = make_judge()
            if judge.ended:
                changed.clear()
                continue
            idle = idle_timeout is not None and trace.steps and time.monotonic() - state["last"] >= idle_timeout
            if not changed.is_set() and not idle:
                continue
            changed.clear()
            try:
                async for ev in judge.update(trace):
                    await out.put(ev)
                reason = run_end_reason(trace, outcome_final=outcome_final(follower)) or ("idle" if idle else None)
                if reason:
                    async for ev in judge.finish(trace, reason):
                        await out.put(ev)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a judge bug must not end the view
                judge.stopped = "judge_failed"
                judge.ended = True
                await out.put(JudgeFailed(trace.id, f"{type(exc).__name__}: {exc}"))

    tasks = [asyncio.create_task(reader())]
    if make_judge is not None:
        tasks.append(asyncio.create_task(judging()))
    try:
        while True:
            ev = await out.get()
            if ev is _DONE:
                return
            if isinstance(ev, Exception):
                raise ev
            yield ev
    finally:
        follower.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


__all__ = ["follow_live", "live_judges"]
