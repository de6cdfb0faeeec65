"""Executors: what continues a run after the replaced step in warm-start replay
(docs/architecture.md, 'Injection and warm-start replay' step 2).

An executor receives a :class:`ReplayContext` — the original trace, the replayed steps
(the exact prefix and the replaced step), the tool cache — and produces the remaining steps
one by one through :meth:`ReplayContext.emit`, then returns a :class:`Continuation` (the
final answer and why the run ended). Available executors:

* ``builtin`` — :class:`BuiltinExecutor`: the built-in environments (``envs/``) resume from
  the prefix (their policies read the replayed steps) with their live tools behind the
  cache;
* ``cmd:COMMAND`` — :class:`~whenpro_core.injection.cmd_executor.CommandExecutor`: the
  user's own framework as a subprocess speaking JSON lines (``docs/replay-protocol.md``);
* plugins — any installed package can declare an entry point in the group
  ``whenpro.executors`` (``name = "package.module:factory"``); ``--executor name[:arg]``
  calls ``factory(arg_or_None)``, which returns an :class:`Executor`.

* ``simulate`` / ``simulate:MODEL`` —
  :class:`~whenpro_core.injection.simulate.SimulateExecutor`: a model plays the remaining
  agents of a foreign trace turn by turn (recorded speaker order; recorded tool results
  reused when a call matches, simulated and marked ``meta["simulated"]`` otherwise; step
  and call budgets).

Writing another executor: implement :class:`Executor`. In ``continue_run``, loop: pick
the next agent, produce its step; for its tool calls use ``ctx.tools(live)`` (recorded
results first; ``source == "missing"`` means supply the result yourself and set
``step.meta["simulated"] = True``); ``ctx.emit(step)``; stop on a ``final_answer`` step,
``ctx.cancelled()``, ``ctx.time_left() <= 0`` or a step budget.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from whenpro_core.envs import env_for_trace
from whenpro_core.envs.base import Env, ToolRunner, run_loop
from whenpro_core.envs.run import env_policy
from whenpro_core.errors import ReplayError
from whenpro_core.injection.toolcache import ToolCache
from whenpro_core.trace.model import Step, Trace


@dataclass
class Continuation:
    """How a continued run ended: its ``final_answer`` (``None`` when none was given),
    ``termination`` (``final_answer``, ``done``, ``max_steps``, ``stopped``,
    ``max_calls`` or an executor's own word) and optional ``details`` (plain data about
    the continuation, e.g. the simulate executor's model, calls and usage; recorded in
    the counterfactual's ``extras["injection"]["continuation"]``)."""

    final_answer: str | None
    termination: str = "final_answer"
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReplayContext:
    """Everything an executor needs to continue a run.

    Attributes:
        trace: the original (seed) trace, never modified.
        prefix_len: ``t``, the number of steps replayed exactly from the record.
        steps: the steps of the new run so far: the prefix, then the replaced step (when
            there is one), then whatever the executor emitted.
        replaced: the replaced step ``t`` (``None`` for a plain continuation).
        cache: recorded tool results of ``trace``.
        on_step: called with each emitted step (streaming to a TUI).
        deadline: ``time.monotonic()`` value after which the executor must stop.
        cancel: set by the caller to ask the executor to stop early.
    """

    trace: Trace
    prefix_len: int
    steps: list[Step]
    replaced: Step | None
    cache: ToolCache
    on_step: Callable[[Step], None] | None = None
    deadline: float = float("inf")
    cancel: threading.Event | None = None

    def tools(self, live: ToolRunner | None = None) -> ToolRunner:
        """A tool runner: recorded results first, then ``live`` (if given)."""
        return self.cache.runner(live)

    def emit(self, step: Step) -> Step:
        """Append a new step: sets ``index`` (and ``coord`` = ``str(index)`` when the
        executor gave none), then streams it to ``on_step``. Returns the step."""
        step.index = len(self.steps)
        if step.coord is None:
            step.coord = str(step.index)
        self.steps.append(step)
        self.notify(step)
        return step

    def notify(self, step: Step) -> None:
        """Stream an already-appended step to ``on_step``."""
        if self.on_step is not None:
            self.on_step(step)

    def time_left(self) -> float:
        """Seconds before the deadline (may be negative)."""
        return self.deadline - time.monotonic()

    def cancelled(self) -> bool:
        """True once the caller set ``cancel``."""
        return self.cancel is not None and self.cancel.is_set()


@runtime_checkable
class Executor(Protocol):
    """Continues a run from replayed steps.

    ``name`` is the spec shown in provenance (``builtin``, ``cmd:python my_agents.py``).
    ``live_tools(trace)`` returns a runner for tool calls the cache cannot serve (used for
    the replaced step's own calls), or ``None`` when the executor cannot run tools here.
    ``continue_run(ctx)`` emits the remaining steps with ``ctx.emit`` and returns a
    :class:`Continuation`; it raises ReplayError when the continuation fails (crash,
    timeout, protocol violation) and must honour ``ctx.deadline`` and ``ctx.cancel``."""

    name: str

    def live_tools(self, trace: Trace) -> ToolRunner | None: ...

    def continue_run(self, ctx: ReplayContext) -> Continuation: ...


class BuiltinExecutor:
    """Resumes a run of a built-in environment: the env's reference policy reads the
    replayed steps and continues; tool calls are served from the recorded results when
    they match and run live by the env's tools otherwise."""

    name = "builtin"

    def __init__(self, model: str | None = None) -> None:
        self.model = model

    def _env(self, trace: Trace) -> Env:
        env = env_for_trace(trace)
        if env is None:
            raise ReplayError(
                "the builtin executor only continues runs of whenpro's built-in environments",
                json_path="$.extras.env.name",
                expected="a trace written by `whenpro run`, or --executor cmd:COMMAND",
            )
        return env

    def live_tools(self, trace: Trace) -> ToolRunner | None:
        env = self._env(trace)
        return env.live_tools(env.task_from_trace(trace))

    def continue_run(self, ctx: ReplayContext) -> Continuation:
        env = self._env(ctx.trace)
        task = env.task_from_trace(ctx.trace)
        policy = env_policy(env, self.model)
        steps, reason = run_loop(
            env,
            task,
            policy,
            ctx.steps,
            ctx.tools(env.live_tools(task)),
            on_step=ctx.notify,
            should_stop=lambda: ctx.cancelled() or ctx.time_left() <= 0,
            mark_tool_source=True,
        )
        if reason == "stopped" and not ctx.cancelled():
            raise ReplayError(
                "the built-in environment did not finish before the replay timeout", expected="a larger --timeout"
            )
        final = env.extract_answer(steps[-1]) if steps and steps[-1].kind == "final_answer" else None
        return Continuation(final, reason)
