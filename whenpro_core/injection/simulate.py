"""The LLM-simulated continuation (docs/architecture.md, 'Injection and warm-start replay' step 2): ``--executor
simulate`` with
``--model provider:model`` (or ``--executor simulate:provider:model``) continues a run
whenpro did not produce (a Who&When trace, an imported framework run) after the replaced
step ``t`` by asking a model to play the remaining agents, turn by turn.

* **Who speaks**: the recorded order of agents, then the recorded habits
  (:mod:`whenpro_core.injection.turns`); a code-executor agent runs the code of the
  message before it. The model never picks the speaker.
* **Each agent turn** is one call: the task (never the gold answer), the agents, the
  agent's recorded system prompt when the trace has one (``extras["system_prompt"]``),
  the run so far as the judge transcript (hidden label fields never rendered), and the
  request to write that agent's next step in its own voice (:class:`SimStep`: content,
  tool calls, a final answer when it gives one, whether the run ends).
* **Tools**: a tool call (or an executor's code) whose name and canonical arguments
  match a recorded one gets the recorded result from the replay's tool cache, without a
  model call (``meta["tool_source"] = "cache"``); otherwise the model writes the tool's
  result (:class:`SimToolResult`) and the step is marked ``meta["simulated"] = True``
  (``tool_source = "simulated"``). The replaced step's own unmatched calls are simulated
  first, the same way.
* **Stops** at a final answer (a ``final_answer`` step, ``ends_run``, a line
  ``TERMINATE`` as AG2 group chats end, or ``FINAL ANSWER:`` as Magentic-One ends), at
  the step budget (``max_steps`` steps in the whole new run; default: the original
  length + 5; termination ``max_steps``), at the call budget (``max_calls`` model calls;
  default 2 per remaining step + 1; termination ``max_calls``, which leaves the outcome
  undecided), on cancel (``stopped``), or raises ReplayError at the replay deadline.
* The final answer is the last one an agent gave (declared by the model, else the text
  after ``Final answer:``); :mod:`whenpro_core.injection.verify` checks it against the gold
  answer.

New steps continue the trace's integer coordinates (one more than the latest; a trace
numbered from 1 after an unnumbered task stays so), else take their index. Every
generated step is marked ``meta["generated_by"] = "simulate:<model>"`` and streams
through the replay callback as soon as its tool result is in. A backend failure (after
the backend's own retries) is a :class:`~whenpro_core.errors.BackendError`; an unreadable
answer too. ``Continuation.details`` records the model, calls, usage, simulated steps and
the rule that chose the speakers.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from whenpro_core.config import Settings
from whenpro_core.envs import env_for_trace
from whenpro_core.envs.base import ToolRunner, extract_final_answer
from whenpro_core.errors import ReplayError
from whenpro_core.injection.executors import Continuation, ReplayContext
from whenpro_core.injection.turns import Roster, code_of, exec_call, next_coord, record_executions
from whenpro_core.llm import LLMRequest, open_backend
from whenpro_core.llm.generation import (
    DATA_NOTE,
    Answer,
    SimStep,
    agents_text,
    clean_generated,
    prompt_budget,
    read_answer,
    resolve_model,
    run_sync,
    step_sections,
    task_text,
    transcript_text,
    usage_dict,
)
from whenpro_core.safety.textsafe import strip_controls
from whenpro_core.trace.model import Step, ToolCall, Trace, Usage

if TYPE_CHECKING:  # the LLM stack is imported when a simulation runs
    from whenpro_core.llm import Backend

#: Words of the prompts that the test server (and a reader) can key on.
STEP_ASK = "Write the next step: Step"
TOOL_ASK = "Write the result of"
TERMINATE_LINE = re.compile(r"^\s*TERMINATE\s*$", re.MULTILINE)
FINAL_LINE = re.compile(r"^\W*final answer\s*[:：]", re.IGNORECASE | re.MULTILINE)
#: Characters of an agent's recorded system prompt shown to the model.
SYSTEM_PROMPT_CHARS = 2_000


class SimToolResult(BaseModel):
    """A simulated tool output: the ``observation`` text and an ``error`` line if the
    call fails."""

    observation: str = Field(description="the tool's output text")
    error: str | None = Field(None, description="an error line if the call fails, else null")


SYSTEM = (
    "You continue a recorded run of an LLM multi-agent system by playing one of its agents for one turn. "
    "Write exactly the message that agent would write next, in its own voice and format as seen in the "
    "transcript (same style, structure and level of detail), reacting to the conversation so far as that "
    "agent would: it may or may not notice problems in earlier steps, and it knows only what the "
    "conversation shows. Play only that agent: never write other agents' turns or tool outputs (tools "
    "are run for you). When you are asked for a tool's output instead, write only what the tool would "
    "return.\n\n" + DATA_NOTE
)


def _tool_sections(sec: dict[str, str]) -> dict[str, Any]:
    err = sec.get("error", "").strip()
    return {"observation": sec["observation"], "error": None if err.lower() in ("", "null", "none") else err}


def _arguments(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value


class SimulateExecutor:
    """Continues a foreign trace with a model playing the agents (module docstring).

    Args:
        model: ``provider:model`` (empty: the configured model).
        settings: LLM settings (default: :func:`~whenpro_core.config.load_settings`).
        max_steps: steps of the whole new run (default: the original length + 5).
        max_calls: model calls for the continuation (default: 2 per remaining step + 1).
        use_cache: reuse cached model answers.

    Raises ConfigError at construction when no usable model is configured."""

    def __init__(
        self,
        model: str = "",
        *,
        settings: Settings | None = None,
        max_steps: int | None = None,
        max_calls: int | None = None,
        use_cache: bool = True,
    ) -> None:
        self.model, self.settings = resolve_model(model, None, settings, what="simulate executor")
        self.name = f"simulate:{self.model}"
        self.max_steps = max_steps
        self.max_calls = max_calls
        self.use_cache = use_cache
        #: Awaited before each model request (``build --max-calls-per-s``); ``None``: no wait.
        self.before_request: Callable[[], Awaitable[None]] | None = None

    def live_tools(self, trace: Trace) -> ToolRunner | None:
        """``None``: tools are never run here; unmatched calls are simulated in
        :meth:`continue_run`."""
        return None

    def continue_run(self, ctx: ReplayContext) -> Continuation:
        """Emit the simulated steps through ``ctx.emit`` and return how the run ended."""
        return run_sync(lambda: _Run(self, ctx).run())


class _Run:
    """One continuation: the state shared by the turns."""

    def __init__(self, ex: SimulateExecutor, ctx: ReplayContext) -> None:
        self.ex, self.ctx = ex, ctx
        trace = ctx.trace
        self.roster = Roster.from_trace(trace, ctx.prefix_len)
        self.executions = record_executions(trace, self.roster, ctx.cache)
        self.max_steps = ex.max_steps or len(trace.steps) + 5
        self.max_calls = ex.max_calls if ex.max_calls is not None else 2 * max(self.max_steps - len(ctx.steps), 0) + 1
        self.has_final_kind = any(s.kind == "final_answer" for s in trace.steps)
        self.calls = 0
        self.usage = Usage()
        self.simulated = 0
        self.from_record = 0
        self.final: str | None = None
        self.warnings: list[str] = []
        self.backend: Backend | None = None
        self.budget = 0

    # ------------------------------------------------------------ the loop

    async def run(self) -> Continuation:
        ctx = self.ctx
        async with open_backend(self.ex.model, self.ex.settings) as backend:
            backend.before_request = self.ex.before_request
            self.backend, self.budget = backend, prompt_budget(backend)
            termination = await self._loop(ctx)
        details = {
            "model": self.ex.model,
            "calls": self.calls,
            "max_calls": self.max_calls,
            "max_steps": self.max_steps,
            "usage": usage_dict(self.usage),
            "simulated_steps": self.simulated,
            "tool_results_from_record": self.from_record,
            "recorded_executions": self.executions,
            "speakers": "recorded order, then recorded successors (code executors after code)",
        }
        if self.warnings:
            details["warnings"] = self.warnings
        return Continuation(self.final, termination, details)

    async def _loop(self, ctx: ReplayContext) -> str:
        replaced = ctx.replaced
        if ctx.cancelled():
            return "stopped"
        if replaced is not None and replaced.tool_calls and replaced.observation is None and replaced.error is None:
            if not self._can_call():
                return "max_calls"
            await self._simulate_tool(replaced, replaced.tool_calls)
        if replaced is not None and self._ends(replaced):  # e.g. A.3: the replaced step ends the run early
            if replaced.kind == "final_answer" or FINAL_LINE.search(replaced.content or ""):
                self.final = extract_final_answer(replaced.content)
            return "final_answer"
        used = 0
        while True:
            last = ctx.steps[-1] if ctx.steps else None
            if last is not None and last.meta.get("generated_by") == self.ex.name and self._ends(last):
                return "final_answer"
            if len(ctx.steps) >= self.max_steps:
                return "max_steps"
            if ctx.cancelled():
                return "stopped"
            if ctx.time_left() <= 0:
                raise ReplayError(
                    "the simulated continuation did not finish before the replay timeout", expected="a larger --timeout"
                )
            agent, consumes = self.roster.next_speaker(ctx.steps, used)
            used += consumes
            if agent in self.roster.executors:
                stop = await self._executor_turn(agent)
            else:
                stop = await self._agent_turn(agent)
            if stop:
                return stop

    def _can_call(self) -> bool:
        return self.calls < self.max_calls

    def _ends(self, step: Step) -> bool:
        if step.agent in self.roster.executors:  # printed output never ends a run
            return False
        meta = step.meta.get("simulation", {})
        return (
            step.kind == "final_answer"
            or bool(meta.get("ends_run"))
            or bool(TERMINATE_LINE.search(step.content or ""))
            or bool(FINAL_LINE.search(step.content or ""))
        )

    # ------------------------------------------------------------ turns

    async def _agent_turn(self, agent: str) -> str | None:
        ctx = self.ctx
        if not self._can_call():
            return "max_calls"
        coord = next_coord(ctx.steps)
        answer = await self._ask(
            self._step_prompt(agent, coord),
            SimStep,
            ["CONTENT", "TOOL CALLS", "FINAL ANSWER", "ENDS RUN"],
            step_sections,
            stage=f"simulated turn of {agent}",
        )
        sim: SimStep = answer.value
        content = clean_generated(sim.content)
        calls = [
            ToolCall(id=f"sim_{coord}_{i}", name=clean_generated(c.name)[:200], arguments=_arguments(c.arguments_json))
            for i, c in enumerate(sim.tool_calls)
        ]
        declared = clean_generated(sim.final_answer).strip() if sim.final_answer else None
        if declared is not None and declared.lower() in ("", "null", "none", "n/a"):
            declared = None
        final = declared or (extract_final_answer(content) if FINAL_LINE.search(content) else None)
        ends = sim.ends_run or bool(TERMINATE_LINE.search(content)) or bool(FINAL_LINE.search(content))
        kind = self.roster.kind_for(
            agent,
            ctx.steps,
            with_tools=bool(calls),
            final=ends and final is not None,
            has_final_kind=self.has_final_kind,
        )
        step = Step(
            index=len(ctx.steps),
            coord=coord,
            agent=agent,
            kind=kind,
            content=content,
            tool_calls=calls,
            meta={"generated_by": self.ex.name, "simulation": {"ends_run": sim.ends_run, "final_answer": declared}},
        )
        if final is not None:
            self.final = final
        stop = None
        if calls:
            out = ctx.tools()(calls)
            if out.source == "cache":
                step.observation, step.error = out.observation, out.error
                step.meta["tool_source"] = "cache"
                self.from_record += 1
            elif self._can_call():
                await self._simulate_tool(step, calls)
            else:
                step.meta["tool_source"] = "missing"
                stop = "max_calls"
        ctx.emit(step)
        return stop

    async def _executor_turn(self, agent: str) -> str | None:
        ctx = self.ctx
        code = code_of(ctx.steps[-1]) or ""
        kind = self.roster.kind_for(agent, ctx.steps, with_tools=False, final=False, has_final_kind=False)
        step = Step(
            index=len(ctx.steps),
            coord=next_coord(ctx.steps),
            agent=agent,
            kind=kind,
            meta={"generated_by": self.ex.name},
        )
        found = ctx.cache.get(exec_call(code))
        if found is not None:
            step.content, step.error = found[0] or "", found[1]
            step.meta["tool_source"] = "cache"
            self.from_record += 1
        elif not self._can_call():
            return "max_calls"
        else:
            result = await self._ask(
                self._tool_prompt(agent, None, executor=True),
                SimToolResult,
                ["OBSERVATION", "ERROR"],
                _tool_sections,
                stage=f"simulated output of {agent}",
            )
            step.content, step.error = (
                clean_generated(result.value.observation),
                clean_generated(result.value.error) or None,
            )
            step.meta.update(tool_source="simulated", simulated=True)
            self.simulated += 1
        ctx.emit(step)
        return None

    async def _simulate_tool(self, step: Step, calls: list[ToolCall]) -> None:
        result = await self._ask(
            self._tool_prompt(step.agent, (step, calls)),
            SimToolResult,
            ["OBSERVATION", "ERROR"],
            _tool_sections,
            stage=f"simulated result of {', '.join(c.name for c in calls)}",
        )
        step.observation = clean_generated(result.value.observation)
        step.error = clean_generated(result.value.error) or None
        step.meta.update(tool_source="simulated", simulated=True)
        self.simulated += 1

    # ------------------------------------------------------------ calls

    async def _ask(
        self,
        prompt: str,
        output: type[BaseModel],
        labels: list[str],
        sections: Callable[[dict[str, str]], dict[str, Any]],
        *,
        stage: str,
    ) -> Answer:
        request = LLMRequest.simple(prompt, system=SYSTEM, output_model=output)
        assert self.backend is not None  # open while run() runs
        self.calls += 1
        left = self.ctx.time_left()
        try:
            response = await asyncio.wait_for(
                self.backend.complete(request, cache=None if self.ex.use_cache else False),
                timeout=None if left == float("inf") else max(left, 0.001),
            )
        except TimeoutError:
            raise ReplayError(
                "the simulated continuation did not finish before the replay timeout", expected="a larger --timeout"
            ) from None
        answer = read_answer(response, output, labels, sections, model=self.ex.model, stage=stage, hashes=True)
        self.usage = self.usage.add(answer.usage)
        self.warnings.extend(answer.warnings)
        return answer

    # ------------------------------------------------------------ prompts

    def _so_far(self, through: Step | None = None) -> str:
        steps = list(self.ctx.steps) + ([through] if through is not None else [])
        view = self.ctx.trace.model_copy(update={"steps": steps})
        return (
            task_text(self.ctx.trace)
            + "\n## Agents\n"
            + agents_text(self.ctx.trace)
            + "\n\n## The run so far\n"
            + transcript_text(view, self.budget)
            + "\n"
        )

    def _system_prompt_of(self, agent: str) -> str:
        prompts = self.ctx.trace.extras.get("system_prompt")
        text = prompts.get(agent) if isinstance(prompts, dict) else None
        if not isinstance(text, str) or not text.strip():
            return ""
        text = strip_controls(text).strip()
        if len(text) > SYSTEM_PROMPT_CHARS:
            text = text[:SYSTEM_PROMPT_CHARS] + " [...]"
        return f"\n## {agent}'s instructions (its recorded system prompt)\n{text}\n"

    def _tools_text(self, agent: str) -> str:
        env = env_for_trace(self.ctx.trace)
        if env is not None:  # a built-in environment knows its agents' tools
            specs = env.tool_specs(agent)
            if not specs:
                return "This agent has no tools.\n"
            return (
                "Its tools: " + "; ".join(f"{t.name}({', '.join(t.arguments)}): {t.description}" for t in specs) + "\n"
            )
        seen: dict[str, list[str]] = {}
        for s in sorted(self.ctx.trace.steps, key=lambda s: s.agent != agent):
            for c in s.tool_calls:
                keys = list(c.arguments) if isinstance(c.arguments, dict) else []
                seen.setdefault(c.name, keys)
        if not seen:
            return "No tools were called in this run.\n"
        return "Tools called in this run: " + ", ".join(f"{n}({', '.join(k)})" for n, k in seen.items()) + "\n"

    def _step_prompt(self, agent: str, coord: str) -> str:
        role = next((a.role for a in self.ctx.trace.agents if a.id == agent and a.role), None)
        return (
            self._so_far()
            + self._system_prompt_of(agent)
            + f"\n## Your turn\nYou are {agent}"
            + (f" ({role})" if role else "")
            + ". "
            + self._tools_text(agent)
            + f"\n{STEP_ASK} {coord} | Agent: {agent}. Answer with:\n"
            "content: the message text, as the agent writes it\n"
            'tool_calls: a list of {"name", "arguments_json"} if the agent calls tools in this step, else []\n'
            "final_answer: the team's final answer to the task if this message delivers it, else null\n"
            "ends_run: true if the conversation ends after this message, else false\n"
            "as JSON, or as labelled sections:\n### CONTENT\n(the message)\n### TOOL CALLS\n(a JSON list or [])\n"
            "### FINAL ANSWER\n(the answer or null)\n### ENDS RUN\n(yes or no)"
        )

    def _tool_prompt(self, agent: str, pending: tuple[Step, list[ToolCall]] | None, *, executor: bool = False) -> str:
        if executor:
            last = self.ctx.steps[-1]
            what = (
                f"{TOOL_ASK} running the code of Step {last.coord} as {agent} prints it: in the format of "
                f"{agent}'s earlier messages if there are any (exit code, output). Do not explain; "
                "print only what the execution prints."
            )
            context = self._so_far()
        else:
            assert pending is not None  # a tool step waiting for its output
            step, calls = pending
            listed = json.dumps(
                [{"name": c.name, "arguments": c.arguments} for c in calls], ensure_ascii=False, default=str
            )
            what = (
                f"Step {step.coord or len(self.ctx.steps)} | Agent: {agent} calls: {listed}\n"
                f"{TOOL_ASK} these tool call(s) exactly as the tool would return it, in the format of the "
                "recorded results of the same tool above if any. Do not solve the task; return only the "
                "tool's output."
            )
            context = self._so_far(None if any(s is step for s in self.ctx.steps) else step)
        return (
            context + "\n## Tool output\n" + what + "\nAnswer with:\nobservation: the output text\n"
            "error: an error line if the call fails, else null\n"
            "as JSON, or as labelled sections:\n### OBSERVATION\n(the output)\n### ERROR\n(the error or null)"
        )
