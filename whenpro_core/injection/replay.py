"""Warm-start replay (docs/architecture.md, 'Injection and warm-start replay' step 2): reproduce a trajectory
exactly up to step ``t``,
put a replacement in place of step ``t``, and let an executor continue the run.

* Steps ``0 .. t-1`` are deep copies of the record: serialised without their ``hidden``
  labels they are byte-identical to the original (:func:`prefix_matches`); their
  ``hidden`` gets ``is_replayed=True, is_injected=False`` (the Who&When Pro markers).
* The replacement gets the original's index, coordinate and agent and
  ``hidden = {is_injected: True, is_replayed: False}``. Its tool calls are served from
  the recorded results when they match (:mod:`whenpro_core.injection.toolcache`), run live
  by the executor's tools otherwise, or left pending for the executor.
* The executor (:mod:`whenpro_core.injection.executors`) emits the remaining steps, each
  streamed to ``on_step`` as it arrives (or use :func:`replay_stream`, an async iterator,
  from a Textual worker).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from whenpro_core.errors import ReplayError
from whenpro_core.injection.executors import Continuation, Executor, ReplayContext
from whenpro_core.injection.toolcache import ToolCache
from whenpro_core.injection.verify import check_trace
from whenpro_core.storage import jsonio
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Outcome, Source, Step, Trace


@dataclass
class ReplayResult:
    """A continued run.

    Attributes:
        steps: the whole new trajectory (prefix, replaced step, continuation).
        prefix_len: ``t``.
        replaced: the replaced step as it ended up (observation filled), or ``None``.
        final_answer, termination: from the executor's :class:`Continuation`.
        executor: the executor's name.
        cache_hits, cache_misses: tool-result cache counters over the whole replay.
        seconds: wall-clock duration.
        details: the executor's ``Continuation.details`` (plain data).
    """

    steps: list[Step]
    prefix_len: int
    replaced: Step | None
    final_answer: str | None
    termination: str
    executor: str
    cache_hits: int
    cache_misses: int
    seconds: float
    details: JSONObject = field(default_factory=dict)

    @property
    def new_steps(self) -> list[Step]:
        """Steps after the replaced one."""
        return self.steps[self.prefix_len + (1 if self.replaced is not None else 0) :]


def _public_bytes(step: Step) -> bytes:
    return jsonio.dumps(step.model_dump(mode="json", exclude={"hidden"}), sort_keys=True)


def prefix_matches(original: Trace, steps: list[Step], prefix_len: int) -> bool:
    """True when ``steps[:prefix_len]`` serialise (without ``hidden``) to exactly the bytes
    of ``original.steps[:prefix_len]``."""
    if len(steps) < prefix_len or len(original.steps) < prefix_len:
        return False
    return all(
        _public_bytes(a) == _public_bytes(b)
        for a, b in zip(original.steps[:prefix_len], steps[:prefix_len], strict=False)
    )


def warm_start(
    trace: Trace,
    index: int,
    replacement: Step | None,
    executor: Executor,
    *,
    on_step: Callable[[Step], None] | None = None,
    timeout: float = 600.0,
    cancel: threading.Event | None = None,
) -> ReplayResult:
    """Replay ``trace`` exactly up to step ``index``, replace step ``index`` with
    ``replacement`` (``None``: no replacement, just continue after ``index - 1``), and
    continue with ``executor``.

    Args:
        trace: the recorded run (not modified).
        index: ``t``, 0-based into ``trace.steps``; ``1 <= t < len(steps)`` with a
            replacement, ``1 <= t <= len(steps)`` without.
        replacement: the new step ``t`` (index, coord and agent are forced to the
            original's).
        executor: what continues the run.
        on_step: called with the replaced step and then each new step, as they come.
        timeout: seconds for the whole continuation.
        cancel: set it to stop the executor early.

    Raises ReplayError on a bad index or when the executor fails.
    """
    n = len(trace.steps)
    upper = n - 1 if replacement is not None else n
    if not 1 <= index <= upper:
        raise ReplayError(f"cannot replay from step index {index}", expected=f"an index in 1..{upper}")
    start = time.monotonic()
    steps = [s.model_copy(deep=True) for s in trace.steps[:index]]
    for s in steps:
        s.hidden = {**s.hidden, "is_injected": False, "is_replayed": True}
    cache = ToolCache.from_steps(trace.steps)
    replaced = None
    if replacement is not None:
        original = trace.steps[index]
        replaced = replacement.model_copy(deep=True)
        replaced.index, replaced.coord, replaced.agent = index, original.coord, original.agent
        replaced.hidden = {"is_injected": True, "is_replayed": False}
        if replaced.tool_calls and replaced.observation is None and replaced.error is None:
            out = cache.runner(executor.live_tools(trace))(replaced.tool_calls)
            replaced.observation, replaced.error = out.observation, out.error
            replaced.meta["tool_source"] = out.source
        steps.append(replaced)

    def notify(step: Step) -> None:
        if step is not replaced:
            step.hidden = {**step.hidden, "is_injected": False, "is_replayed": False}
        if on_step is not None:
            on_step(step)

    if replaced is not None and on_step is not None:
        on_step(replaced)
    ctx = ReplayContext(
        trace=trace,
        prefix_len=index,
        steps=steps,
        replaced=replaced,
        cache=cache,
        on_step=notify,
        deadline=start + timeout,
        cancel=cancel,
    )
    cont: Continuation = executor.continue_run(ctx)
    for i, s in enumerate(ctx.steps):
        if s.index != i:
            raise ReplayError(f"executor {executor.name!r} produced step index {s.index} at position {i}")
    return ReplayResult(
        steps=ctx.steps,
        prefix_len=index,
        replaced=replaced,
        final_answer=cont.final_answer,
        termination=cont.termination,
        executor=executor.name,
        cache_hits=cache.hits,
        cache_misses=cache.misses,
        seconds=time.monotonic() - start,
        details=dict(cont.details),
    )


def continued_trace(trace: Trace, result: ReplayResult, *, trace_id: str | None = None) -> Trace:
    """A native trace of a continued run (no injection labels): ``trace``'s task, agents and
    extras with ``result``'s steps (``hidden`` replay markers removed), final answer and
    checked outcome. Use it to record a fresh run made through an executor (replay from
    index 1 with no replacement)."""
    steps = [s.model_copy(deep=True) for s in result.steps]
    for s in steps:
        s.hidden = {k: v for k, v in s.hidden.items() if k not in ("is_injected", "is_replayed")}
    new = trace.model_copy(
        deep=True,
        update={
            "id": trace_id or trace.id,
            "steps": steps,
            "final_answer": result.final_answer,
            "ground_truth": None,
            "source": Source(format="native"),
        },
    )
    verdict = check_trace(new, result.final_answer)
    new.outcome = {True: Outcome.success, False: Outcome.failure, None: Outcome.unknown}[verdict.success]
    return new


@dataclass
class ReplayEvent:
    """One item of :func:`replay_stream`: a ``step`` as it arrives, then a final event
    with ``result`` set (``step`` is ``None``)."""

    step: Step | None = None
    result: ReplayResult | None = None


async def replay_stream(
    trace: Trace,
    index: int,
    replacement: Step | None,
    executor: Executor,
    *,
    timeout: float = 600.0,
    cancel: threading.Event | None = None,
) -> AsyncIterator[ReplayEvent]:
    """:func:`warm_start` in a worker thread, as an async iterator of events (each step
    as it is produced, then the result). Exceptions of the replay are raised from the
    iterator. Breaking out of the loop sets ``cancel`` (created if not given)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[ReplayEvent | None] = asyncio.Queue()  # None: the replay ended
    cancel = cancel or threading.Event()

    def on_step(step: Step) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, ReplayEvent(step=step.model_copy(deep=True)))

    task = asyncio.ensure_future(
        asyncio.to_thread(
            warm_start, trace, index, replacement, executor, on_step=on_step, timeout=timeout, cancel=cancel
        )
    )
    task.add_done_callback(lambda _t: loop.call_soon_threadsafe(queue.put_nowait, None))
    try:
        while True:
            item = await queue.get()
            if item is None:
                break
            yield item
        yield ReplayEvent(result=task.result())
    finally:
        if not task.done():
            cancel.set()
            await asyncio.wait([task])
