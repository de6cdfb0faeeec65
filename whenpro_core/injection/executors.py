"""Executors: what continues a run after the replaced step in warm-start replay
(DESIGN §8 step 2).

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
from importlib import metadata
from typing import Any, Protocol, runtime_checkable

from whenpro_core.envs.base import Env, ToolRunner, run_loop
from whenpro_core.errors import ConfigError, ReplayError, WhenproError
from whenpro_core.injection.toolcache import ToolCache
from whenpro_core.trace.model import Step, Trace

#: Entry-point group for executor plugins.
ENTRY_POINT_GROUP = "whenpro.executors"


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
        from whenpro_core.envs import env_for_trace

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
        policy = env.policy(self.model)
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


def plugin_names() -> list[str]:
    """Names of executor plugins installed in this environment."""
    return sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)})


def _load_plugin(name: str, arg: str | None) -> Executor | None:
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name != name:
            continue
        try:
            factory: Any = ep.load()
            executor: Executor = factory(arg)  # checked below: it has continue_run
        except WhenproError:
            raise
        except Exception as exc:  # a broken plugin must not crash whenpro
            raise ConfigError(
                f"executor plugin {name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}"
            ) from None
        if not callable(getattr(executor, "continue_run", None)):
            raise ConfigError(
                f"executor plugin {name!r} ({ep.value}) returned {type(executor).__name__}",
                expected="an object with continue_run(ctx) and live_tools(trace)",
            )
        return executor
    return None


def get_executor(
    spec: str,
    *,
    message_timeout: float = 60.0,
    model: str | None = None,
    settings: Any = None,
    max_steps: int | None = None,
    max_calls: int | None = None,
    use_cache: bool = True,
) -> Executor:
    """The executor for an ``--executor`` value: ``builtin``, ``cmd:COMMAND``,
    ``simulate`` (with ``model``, else the configured model) or
    ``simulate:PROVIDER:MODEL``, or an installed plugin ``NAME[:ARG]``. ``settings``,
    ``max_steps``, ``max_calls`` and ``use_cache`` apply to ``simulate``.

    Raises ConfigError for an unknown name (listing what is available) or a
    ``simulate`` executor without a usable model (no model, key or base URL)."""
    spec = (spec or "builtin").strip()
    if spec == "builtin":
        return BuiltinExecutor()
    if spec.startswith("cmd:"):
        from whenpro_core.injection.cmd_executor import CommandExecutor

        return CommandExecutor.from_spec(spec[4:], message_timeout=message_timeout)
    if spec == "simulate" or spec.startswith("simulate:"):
        from whenpro_core.injection.simulate import SimulateExecutor

        return SimulateExecutor(
            spec[9:] or model or "", settings=settings, max_steps=max_steps, max_calls=max_calls, use_cache=use_cache
        )
    name, _, arg = spec.partition(":")
    executor = _load_plugin(name, arg or None)
    if executor is not None:
        return executor
    plugins = plugin_names()
    raise ConfigError(
        f"unknown executor {spec!r}",
        expected="builtin, cmd:COMMAND, simulate"
        + (", " + ", ".join(plugins) if plugins else " or an installed whenpro.executors plugin"),
    )
