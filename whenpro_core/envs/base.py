"""What a built-in runnable multi-agent system is, and the loop that runs it (docs/architecture.md, 'Module map'
``envs/``, §8 warm-start replay).

An :class:`Env` is a small multi-agent system with tools and a checkable task. Its run is
a native :class:`~whenpro_core.trace.model.Trace`: step 0 is the user's task, every later step
is one agent's turn, produced by a :class:`Policy` from an :class:`EnvState`. Everything a
policy knows comes from the state: the task text and the steps so far (their content,
tool calls and observations). Hidden task data (the gold answer, a lookup table, hidden
tests) is reachable only through the environment's tools or its checker, never through
the state. That is what makes warm-start replay honest: an injected step changes what the
later agents read, and the run continues from there (:func:`run_loop` is the same loop for
a fresh run and for a resumed one).

Seams for later work:

* :class:`Policy` — ``act(state) -> Step``. The offline reference policies live in each env
  module; an LLM policy (rendering the state as a conversation for a model through the
  attribution backends) plugs in here without touching the envs.
* :data:`ToolRunner` — how a step's tool calls get results. A fresh run uses the env's
  live tools; warm-start replay wraps them in a cache of recorded results
  (:mod:`whenpro_core.injection.toolcache`).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from whenpro_core.errors import TraceFormatError
from whenpro_core.trace.extras import EnvRun
from whenpro_core.trace.model import Agent, Modality, Outcome, Source, Step, Task, ToolCall, Trace

#: Framing kinds that carry no agent decision (never injected, never produced by policies).
FRAMING_KINDS = frozenset({"user", "system"})


@dataclass(frozen=True)
class ToolSpec:
    """A tool an agent may call: ``name``, one-line ``description`` and the argument
    names it takes (shown to the LLM policy, :mod:`whenpro_core.envs.llm_policy`)."""

    name: str
    description: str
    arguments: tuple[str, ...] = ()


@dataclass
class ToolOutput:
    """The result of running a step's tool calls: the ``observation`` text the agents read,
    an ``error`` line when a call failed (``"ToolError: ..."``), and ``source``: ``live``
    (ran now), ``cache`` (served from a recorded run) or ``missing`` (nobody could run it)."""

    observation: str | None
    error: str | None = None
    source: str = "live"


#: Runs the tool calls of one step and returns their joint result.
ToolRunner = Callable[[list[ToolCall]], ToolOutput]


@dataclass
class EnvTask:
    """One task instance of an environment.

    Attributes:
        seed: the seed it was generated from.
        query: the text the user gives the system (the only part policies see directly).
        answer: the gold answer (hidden from policies).
        params: everything needed to rebuild the task's tools and checker (tables,
            template ids, parameters); stored in ``Trace.extras["env"]["task"]`` so a
            trace is self-contained for replay and verification. JSON-serialisable.
    """

    seed: int
    query: str
    answer: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvState:
    """What an agent sees when it acts: the ``agent`` whose turn it is, the task ``query``,
    the ``steps`` so far (the conversation, including step 0, the user's task), the
    ``tools`` it may call and the run's wording ``style`` (:mod:`whenpro_core.envs.style`;
    ``None`` for a run recorded before styles). Policies must derive everything from
    these fields."""

    env: str
    agent: str
    query: str
    steps: tuple[Step, ...]
    tools: tuple[ToolSpec, ...] = ()
    style: int | None = None


@runtime_checkable
class Policy(Protocol):
    """Decides one agent turn.

    ``act(state)`` returns a :class:`Step` with ``agent``, ``kind``, ``content`` and
    optionally ``tool_calls`` (its ``index``/``coord`` are set by the loop, and the loop
    runs the tool calls and fills ``observation``/``error``). A step of kind
    ``final_answer`` ends the run. Policies must be deterministic functions of the state
    for the offline reference; an LLM policy may call a model instead.
    """

    name: str

    def act(self, state: EnvState) -> Step: ...


@dataclass
class CheckResult:
    """Whether a final answer is right: ``success`` (``None`` when it cannot be decided,
    e.g. no gold answer), a short human ``detail`` and, for a match, the ``rule`` that
    matched (:func:`whenpro_core.injection.verify.check_answer`; ``None`` otherwise)."""

    success: bool | None
    detail: str = ""
    rule: str | None = None


class Env(ABC):
    """A built-in runnable multi-agent system.

    Subclasses set ``name`` (registry key, also ``Trace.framework``), ``benchmark``,
    ``version`` and ``agents``, and implement task generation, tools, the turn order, the
    reference policy, answer extraction and checking. The turn order
    (:meth:`next_agent`) must be a function of the steps only, so a run can resume from
    any prefix.
    """

    name: str = ""
    benchmark: str = ""
    version: int = 1
    agents: tuple[Agent, ...] = ()
    #: Hard cap on the number of steps of one run (a looping run stops there and fails).
    max_steps: int = 40

    # --- tasks -----------------------------------------------------------------------
    @abstractmethod
    def make_task(self, seed: int) -> EnvTask:
        """The task for ``seed`` (deterministic)."""

    @abstractmethod
    def task_from_params(self, seed: int, query: str, answer: str, params: dict[str, Any]) -> EnvTask:
        """Rebuild a task from what a trace stores (raises TraceFormatError when the
        stored parameters are unusable)."""

    def task_from_trace(self, trace: Trace) -> EnvTask:
        """The task a trace of this env was run on, from ``Trace.env_run`` (``extras["env"]``).

        Raises TraceFormatError when the trace was not made by this env."""
        run = trace.env_run
        if run is None or run.name != self.name:
            raise TraceFormatError(
                f"not a run of the built-in environment {self.name!r}",
                json_path="$.extras.env.name",
                expected=repr(self.name),
            )
        params = run.task
        if params is None:
            raise TraceFormatError(
                "missing task parameters", json_path="$.extras.env.task", expected="the object written by `whenpro run`"
            )
        return self.task_from_params(run.seed or 0, trace.task.query, trace.task.answer or "", params)

    def llm_guidance(self, agent: str) -> str:
        """How ``agent`` writes its messages so the others (and the turn order) can read
        them: shown to the LLM policy. Empty when the environment needs no convention."""
        return ""

    # --- tools -----------------------------------------------------------------------
    @abstractmethod
    def tool_specs(self, agent: str) -> tuple[ToolSpec, ...]:
        """The tools ``agent`` may call."""

    @abstractmethod
    def live_tools(self, task: EnvTask) -> ToolRunner:
        """A runner that executes tool calls for real against ``task``'s hidden data."""

    # --- turns -----------------------------------------------------------------------
    @abstractmethod
    def next_agent(self, query: str, steps: list[Step]) -> str | None:
        """Whose turn it is after ``steps`` (``None``: the run is over). A step of kind
        ``final_answer`` always ends the run (the loop checks that first)."""

    @abstractmethod
    def reference_policy(self) -> Policy:
        """The deterministic offline policy for every agent."""

    # --- answers ---------------------------------------------------------------------
    def extract_answer(self, step: Step) -> str:
        """The final answer carried by a ``final_answer`` step: the text after
        ``Final answer:`` when present, else the whole content, stripped."""
        return extract_final_answer(step.content)

    @abstractmethod
    def check(self, task: EnvTask, final_answer: str | None) -> CheckResult:
        """Whether ``final_answer`` solves ``task`` (gold answer, hidden tests)."""


_FINAL_RE = re.compile(r"final answer\s*[:：]\s*(.+)", re.IGNORECASE | re.DOTALL)


def extract_final_answer(text: str) -> str:
    """The text after the last ``Final answer:`` (case-insensitive), else ``text``,
    stripped."""
    matches = list(_FINAL_RE.finditer(text or ""))
    return (matches[-1].group(1) if matches else (text or "")).strip()


def framing_step(query: str) -> Step:
    """Step 0 of every built-in run: the user's task."""
    return Step(index=0, coord="0", agent="user", kind="user", content=query)


def place(step: Step, index: int) -> Step:
    """``step`` with its position set (``index`` and coordinate ``str(index)``)."""
    step.index = index
    step.coord = str(index)
    return step


def run_loop(
    env: Env,
    task: EnvTask,
    policy: Policy,
    steps: list[Step],
    tools: ToolRunner,
    *,
    on_step: Callable[[Step], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    mark_tool_source: bool = False,
) -> tuple[list[Step], str]:
    """Continue a run from ``steps`` (at least step 0) until a final answer, the end of
    the turn order, or ``env.max_steps``.

    Each new step gets its index and coordinate, its tool calls are run through ``tools``
    (``observation``/``error`` filled in), then ``on_step`` sees it. With
    ``mark_tool_source`` the step's ``meta["tool_source"]`` records where its tool result
    came from (replay). ``should_stop`` is polled before each turn (cancellation).

    Returns the full step list (the input list, extended in place) and the termination
    reason: ``final_answer``, ``done`` (no one's turn), ``max_steps`` or ``stopped``.
    """
    while True:
        if steps and steps[-1].kind == "final_answer":
            return steps, "final_answer"
        if len(steps) >= env.max_steps:
            return steps, "max_steps"
        if should_stop is not None and should_stop():
            return steps, "stopped"
        agent = env.next_agent(task.query, steps)
        if agent is None:
            return steps, "done"
        style = task.params.get("style")
        state = EnvState(
            env=env.name,
            agent=agent,
            query=task.query,
            steps=tuple(steps),
            tools=env.tool_specs(agent),
            style=style if isinstance(style, int) else None,
        )
        step = policy.act(state)
        step.agent = agent
        place(step, len(steps))
        if step.tool_calls:
            out = tools(step.tool_calls)
            step.observation, step.error = out.observation, out.error
            if mark_tool_source:
                step.meta["tool_source"] = out.source
                if out.source == "missing":
                    step.meta["simulated"] = True
        steps.append(step)
        if on_step is not None:
            on_step(step)


def build_trace(
    env: Env,
    task: EnvTask,
    steps: list[Step],
    termination: str,
    *,
    policy_name: str = "reference",
    trace_id: str | None = None,
) -> Trace:
    """Assemble the native trace of a run: agents, task (with gold answer), steps, final
    answer (from a ``final_answer`` step) and outcome (:meth:`Env.check`)."""
    final = env.extract_answer(steps[-1]) if steps and steps[-1].kind == "final_answer" else None
    verdict = env.check(task, final)
    outcome = {True: Outcome.success, False: Outcome.failure, None: Outcome.unknown}[verdict.success]
    trace = Trace(
        id=trace_id or f"{env.name}-s{task.seed}",
        framework=env.name,
        benchmark=env.benchmark,
        modality=Modality.text,
        agents=[Agent(id="user", role="User"), *env.agents],
        task=Task(query=task.query, answer=task.answer),
        steps=steps,
        final_answer=final,
        outcome=outcome,
        source=Source(format="native"),
    )
    trace.set_env_run(
        EnvRun(
            name=env.name,
            version=env.version,
            seed=task.seed,
            policy=policy_name,
            task=task.params,
            termination=termination,
            check=verdict.detail,
        )
    )
    return trace
