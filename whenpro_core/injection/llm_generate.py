"""The LLM two-stage error generator (docs/architecture.md, 'Injection and warm-start replay' step 1):
``--generator llm`` with
``--model provider:model`` (or ``--generator llm:provider:model``).

Stage 1 (*plan*) shows the model the task, the agents, the trajectory up to and including
step ``t`` (the judge transcript of :mod:`whenpro_core.views.transcript`: hidden label
fields, extras, the ground truth and the gold answer are never shown) and the target
failure mode with its taxonomy meaning, and asks for a concrete flaw of that mode at step
``t`` and the wrong result it leads to (:class:`FlawPlan`).

Stage 2 (*rewrite*) asks it to rewrite step ``t`` with that flaw in the agent's own voice
and format, without mentioning that anything was changed (:class:`RewrittenStep`). It is
told to match the agent's format: a "How AGENT writes" section quotes up to
:data:`FORMAT_EXAMPLES` of that agent's own earlier steps verbatim (clipped to
:data:`EXAMPLE_CHARS` characters) as format examples, with the length range of the
agent's steps and the recorded step's line count, markup and code fences, and asks for
the same layout (labels, fences, line structure, casing, length). The
step keeps its shape: its index, coordinate, agent and kind; its tool calls keep their
names and order (the model changes arguments where the flaw needs it, or drops all calls
with ``[]``; ``null`` keeps them as recorded). When the rewrite uses words that give the
construction away (:func:`whenpro_core.injection.verify.revealing_phrases`) stage 2 is
asked once more; the verification filter still runs on whatever is kept.

Both stages ask for structured output; a backend without it (HTTP 400 on a schema) falls
back to text, read as JSON or as labelled sections (``Flaw:`` / ``Wrong result:``,
``### CONTENT`` / ``### TOOL CALLS``). An answer that cannot be read, or a rewrite that
changes nothing, is a :class:`~whenpro_core.errors.BackendError`. Provenance goes to the
counterfactual's ``extras["injection"]``: ``generator`` = ``llm:<model>``,
``generation`` = both stages' outputs, how each was read, warnings; ``usage`` = summed
calls, tokens and cost.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, field_validator

from whenpro_core.config import Settings
from whenpro_core.errors import BackendError
from whenpro_core.injection.generate import GeneratedStep, InjectionRequest
from whenpro_core.injection.mutators import check_injectable
from whenpro_core.injection.textedit import fresh_step
from whenpro_core.injection.verify import revealing_phrases
from whenpro_core.llm import LLMRequest, Message, open_backend
from whenpro_core.llm.generation import (
    DATA_NOTE,
    Answer,
    GenCall,
    agents_text,
    clean_generated,
    prompt_budget,
    read_answer,
    resolve_model,
    run_sync,
    task_text,
    transcript_text,
    usage_dict,
)
from whenpro_core.trace.model import Step, ToolCall, Trace, Usage
from whenpro_core.trace.taxonomy import Taxonomy

if TYPE_CHECKING:  # the LLM stack is imported when a generator runs
    from whenpro_core.llm import Message
    from whenpro_core.llm.backend import Backend
    from whenpro_core.llm.types import LLMResponse

#: Words of the stage prompts that the test server (and a reader) can key on.
STAGE1_ASK = "Describe one specific flaw"
STAGE2_ASK = "Rewrite Step"


class FlawPlan(BaseModel):
    """Stage 1 answer: the concrete ``flaw`` at step ``t`` and the ``wrong_result`` it
    leads to."""

    flaw: str = Field(description="what exactly the step gets wrong: which value, argument, claim or decision")
    wrong_result: str = Field(description="the wrong value or conclusion the run reaches because of it")

    @field_validator("flaw", "wrong_result")
    @classmethod
    def _non_empty(cls, v: str) -> str:
        if not v or not v.strip():
            raise ValueError("empty")
        return v.strip()


class RewrittenStep(BaseModel):
    """Stage 2 answer: the step's new ``content`` and its ``tool_calls`` (``None``: keep
    the recorded calls unchanged; ``[]``: the flawed step makes no call)."""

    content: str = Field(description="the full new text of the step, as the agent writes it")
    tool_calls: list[GenCall] | None = Field(
        None,
        description="the step's tool calls with their (possibly changed) arguments, same names and order; "
        "[] if the flawed step makes no call; null to keep them as recorded",
    )


STAGE1_SYSTEM = (
    "You write realistic mistakes into recorded runs of LLM agent systems, to build a benchmark for "
    "failure attribution. Given a run up to one step and a failure mode, you propose one specific, "
    "plausible error of that mode that the agent could have made at that step, using only what it knew "
    "then, and the wrong result it leads to. The error must be concrete (a value, an argument, a claim, "
    "a decision) and must make the task's final answer wrong.\n\n" + DATA_NOTE
)

STAGE2_SYSTEM = (
    "You rewrite one step of a recorded run of an LLM agent system so that it contains a given mistake. "
    "Write the step exactly as that agent would have written it had it made the mistake as a genuine slip: "
    "its own voice, format, length and level of detail. Never mention or hint that anything was changed, "
    "introduced or planted, that the step is wrong, or that you were asked to do this; add no notes about "
    "the rewrite.\n\n" + DATA_NOTE
)


#: Most of the agent's own earlier steps quoted as format examples in stage 2.
FORMAT_EXAMPLES = 3
#: Characters of each quoted example at most.
EXAMPLE_CHARS = 1200
#: Heading of the stage-2 format section (the test server and a reader key on it).
FORMAT_HEADING = "## How {agent} writes"


def _shape(text: str) -> str:
    """A short description of a step's layout: lines, fences, labelled lines."""
    lines = text.splitlines() or [""]
    fences = text.count("```") // 2
    labels = sum(1 for line in lines if line.rstrip().endswith(":") or line.lstrip().startswith(("#", "- ", "* ")))
    return f"{len(lines)} line(s), {len(text)} characters, {fences} code block(s), {labels} heading/label/list line(s)"


def format_examples(trace: Trace, index: int) -> str:
    """The stage-2 format section for step ``index``: up to :data:`FORMAT_EXAMPLES` of
    the same agent's earlier steps quoted verbatim (the nearest first; each clipped to
    :data:`EXAMPLE_CHARS` characters), the length range of those steps in characters,
    and the recorded step's own shape. Never quotes a step after ``index``."""
    step = trace.steps[index]
    own = [s for s in trace.steps[:index] if s.agent == step.agent and (s.content or "").strip()]
    head = FORMAT_HEADING.format(agent=step.agent) + "\n"
    recorded = f"The recorded Step {step.coord}: {_shape(step.content or '')}.\n"
    if not own:
        return head + f"{step.agent} has no earlier step in this run: keep the recorded step's own format.\n" + recorded
    sizes = [len(s.content or "") for s in [*own, step]]
    quoted = []
    for s in reversed(own[-FORMAT_EXAMPLES:]):
        text = s.content or ""
        clip = text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS] + " [...]"
        quoted.append(f"<<< Step {s.coord} ({_shape(text)})\n{clip}\n>>>")
    return (
        head + f"{step.agent}'s own earlier steps, as format examples (its steps, this one included, "
        f"are {min(sizes)}-{max(sizes)} characters long):\n"
        + "\n".join(quoted)
        + "\n"
        + recorded
        + "Write the new step in exactly this format: the same labels, code fences, line structure, "
        "casing, punctuation and a length in the same range; change only what the flaw needs.\n"
    )


def _calls_json(calls: list[ToolCall]) -> str:
    return json.dumps(
        [
            {
                "name": c.name,
                "arguments_json": c.arguments
                if isinstance(c.arguments, str)
                else json.dumps(c.arguments, ensure_ascii=False, default=str),
            }
            for c in calls
        ],
        ensure_ascii=False,
    )


def _context(trace: Trace, index: int, budget: int) -> str:
    upto = trace.model_copy(update={"steps": trace.steps[: index + 1]})
    return (
        task_text(trace)
        + "\n## Agents\n"
        + agents_text(trace)
        + "\n\n## The run so far\n"
        + transcript_text(upto, budget)
        + "\n"
    )


def _mode_text(mode: str, taxonomy: Taxonomy) -> str:
    fm = taxonomy.get(mode)
    return f"{fm.code} {fm.name} ({fm.family}): {fm.meaning}" if fm else mode


def _role(trace: Trace, agent: str) -> str:
    role = next((a.role for a in trace.agents if a.id == agent and a.role), None)
    return f", role: {role}" if role else ""


def stage1_prompt(trace: Trace, index: int, mode: str, taxonomy: Taxonomy, budget: int, seed: int = 0) -> str:
    """The stage-1 user prompt (see the module docstring)."""
    step = trace.steps[index]
    variant = (
        (
            f"\nPropose variant number {seed + 1} among the plausible flaws of this mode here, not the "
            "most obvious one.\n"
        )
        if seed
        else ""
    )
    return (
        _context(trace, index, budget)
        + f"\n## The step to change\nStep {step.coord} | Agent: {step.agent} (the last step above; kind: "
        f"{step.kind}{_role(trace, step.agent)}).\n\n## Failure mode\n{_mode_text(mode, taxonomy)}\n"
        + variant
        + f"\n{STAGE1_ASK} of this failure mode that {step.agent} makes in Step {step.coord}, and the wrong "
        "result it leads to. Answer with two fields:\n"
        "flaw: what exactly the step gets wrong (one or two concrete sentences)\n"
        "wrong_result: the wrong value or conclusion the run reaches because of it\n"
        'as JSON {"flaw": "...", "wrong_result": "..."} or as two labelled lines:\n'
        "Flaw: ...\nWrong result: ..."
    )


def stage2_prompt(trace: Trace, index: int, mode: str, taxonomy: Taxonomy, plan: FlawPlan, budget: int) -> str:
    """The stage-2 user prompt (see the module docstring)."""
    step = trace.steps[index]
    if step.tool_calls:
        calls = (
            f"Its tool calls as recorded: {_calls_json(step.tool_calls)}\n"
            "Keep the tool names and their order; change arguments only where the flaw needs it; "
            "give [] if the flawed step makes no call at all, null to keep the calls as recorded.\n"
        )
    else:
        calls = "It makes no tool call; leave tool_calls null.\n"
    return (
        _context(trace, index, budget)
        + f"\n## The step to rewrite\nStep {step.coord} | Agent: {step.agent} (the last step above; kind: "
        f"{step.kind}{_role(trace, step.agent)}).\n"
        + calls
        + "\n"
        + format_examples(trace, index)
        + f"\n## The mistake to write into it\nFailure mode: {_mode_text(mode, taxonomy)}\n"
        f"Flaw: {plan.flaw}\nWrong result it leads to: {plan.wrong_result}\n\n"
        f"{STAGE2_ASK} {step.coord} as {step.agent} would have written it with this flaw. Answer with:\n"
        "content: the full new text of the step\n"
        'tool_calls: a list of {"name", "arguments_json"}, [] or null (see above)\n'
        "as JSON, or as labelled sections:\n### CONTENT\n(the step text)\n### TOOL CALLS\n"
        "(a JSON list, [] or null)"
    )


def _plan_sections(sec: dict[str, str]) -> dict[str, Any]:
    return {"flaw": sec["flaw"], "wrong_result": sec["wrong result"]}


def _rewrite_sections(sec: dict[str, str]) -> dict[str, Any]:
    raw = sec.get("tool calls", "").strip().strip("`").strip()
    if raw.lower().startswith("json"):
        raw = raw[4:].strip()
    if not raw or raw.lower() in ("null", "none", "unchanged", "n/a"):
        calls = None
    else:
        calls = json.loads(raw)  # ValueError -> the answer is unusable
    return {"content": sec["content"], "tool_calls": calls}


def _arguments(text: str, recorded: Any) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        if isinstance(recorded, str) or recorded is None:
            return text
        raise
    if isinstance(recorded, str) and not isinstance(value, str):
        return text  # the source kept raw argument text: keep the model's text
    return value


def build_step(original: Step, rewrite: RewrittenStep, *, model: str) -> tuple[Step, list[str]]:
    """The replacement step from a stage-2 answer, shaped like ``original`` (index,
    coordinate, agent, kind; tool-call names and ids by position) with observation and
    error cleared. Returns the step and notes on shape repairs.

    Raises BackendError when the arguments are not JSON or nothing changed."""
    notes: list[str] = []
    content = clean_generated(rewrite.content)
    if rewrite.tool_calls is None:
        calls = [c.model_copy(deep=True) for c in original.tool_calls]
    elif not rewrite.tool_calls:
        calls = []
        if original.tool_calls:
            notes.append("the flawed step makes no tool call")
    else:
        calls = []
        for i, rec in enumerate(original.tool_calls):
            if i >= len(rewrite.tool_calls):
                calls.append(rec.model_copy(deep=True))
                continue
            gen = rewrite.tool_calls[i]
            if gen.name != rec.name:
                notes.append(f"tool name {clean_generated(gen.name)[:40]!r} replaced by the recorded {rec.name!r}")
            try:
                args = _arguments(gen.arguments_json, rec.arguments)
            except ValueError:
                raise BackendError(
                    f"{model} wrote tool-call arguments that are not JSON for {rec.name!r}",
                    expected="arguments_json holding a JSON object",
                ) from None
            calls.append(ToolCall(id=rec.id, name=rec.name, arguments=args))
        if len(rewrite.tool_calls) > len(original.tool_calls):
            notes.append(f"{len(rewrite.tool_calls) - len(original.tool_calls)} extra tool call(s) ignored")
    if not content.strip() and not calls:
        raise BackendError(f"{model} rewrote the step as empty text", expected="the step's new content")
    same_calls = [(c.name, c.arguments) for c in calls] == [(c.name, c.arguments) for c in original.tool_calls]
    if content.strip() == (original.content or "").strip() and same_calls:
        raise BackendError(f"{model} returned step {original.coord} unchanged", expected="a rewrite with the flaw")
    return fresh_step(original, content=content, tool_calls=calls), notes


class LLMGenerator:
    """The two-stage LLM generator (module docstring).

    Args:
        model: ``provider:model``.
        settings: LLM settings (default: :func:`~whenpro_core.config.load_settings`).
        use_cache: reuse cached model answers (the persistent response cache).
        taxonomy: where mode meanings come from (default: the built-in table).

    ``generate`` raises ConfigError for a framing step, BackendError when a call fails
    after its retries or an answer is unusable."""

    def __init__(
        self, model: str, *, settings: Settings | None = None, use_cache: bool = True, taxonomy: Taxonomy | None = None
    ) -> None:
        self.model, self.settings = resolve_model(model, None, settings, what="llm generator")
        self.name = f"llm:{self.model}"
        self.use_cache = use_cache
        self.taxonomy = taxonomy or Taxonomy.builtin()
        #: Awaited before each model request (``build --max-calls-per-s``); ``None``: no wait.
        self.before_request: Callable[[], Awaitable[None]] | None = None

    def generate(self, request: InjectionRequest) -> GeneratedStep:
        """Run both stages for ``request`` (see the module docstring)."""
        check_injectable(request.trace, request.index)
        return run_sync(lambda: self._generate(request))

    async def agenerate(self, request: InjectionRequest) -> GeneratedStep:
        """:meth:`generate` for a running event loop (a TUI's async worker: cancelling
        the awaiting task stops the model calls). Import the provider's SDK first
        (:func:`~whenpro_core.llm.generation.preload_sdk`, in a thread) so the loop is
        not blocked by the import."""
        check_injectable(request.trace, request.index)
        return await self._generate(request)

    async def _ask(
        self, backend: Backend, messages: list[Message], system: str, output: type[BaseModel]
    ) -> LLMResponse:
        request = LLMRequest(messages=messages, system=system, output_model=output)
        return await backend.complete(request, cache=None if self.use_cache else False)

    async def _generate(self, request: InjectionRequest) -> GeneratedStep:
        trace, index, mode = request.trace, request.index, request.mode
        original = trace.steps[index]
        async with open_backend(self.model, self.settings) as backend:
            backend.before_request = self.before_request
            budget = prompt_budget(backend)
            p1 = stage1_prompt(trace, index, mode, self.taxonomy, budget, request.seed)
            r1 = await self._ask(backend, [Message(role="user", content=p1)], STAGE1_SYSTEM, FlawPlan)
            a1 = read_answer(
                r1,
                FlawPlan,
                ["Flaw", "Wrong result"],
                _plan_sections,
                model=self.model,
                stage="stage-1 question (the flaw)",
            )
            plan: FlawPlan = a1.value
            p2 = stage2_prompt(trace, index, mode, self.taxonomy, plan, budget)
            messages = [Message(role="user", content=p2)]
            answers: list[Answer] = []
            while True:
                r2 = await self._ask(backend, messages, STAGE2_SYSTEM, RewrittenStep)
                a2 = read_answer(
                    r2,
                    RewrittenStep,
                    ["CONTENT", "TOOL CALLS"],
                    _rewrite_sections,
                    model=self.model,
                    stage="stage-2 question (the rewritten step)",
                )
                answers.append(a2)
                step, notes = build_step(original, a2.value, model=self.model)
                revealing = revealing_phrases(step, original)
                if not revealing or len(answers) > 1:
                    break
                messages += [
                    Message(role="assistant", content=a2.text or a2.value.model_dump_json()),
                    Message(
                        role="user",
                        content=(
                            f"{STAGE2_ASK} {original.coord} again: the text must read as the agent's own "
                            "work and must not give away how it was made (it said "
                            + ", ".join(repr(p) for p in revealing)
                            + "). Same answer format."
                        ),
                    ),
                ]
        usage = Usage()
        for a in [a1, *answers]:
            usage = usage.add(a.usage)
        rewrite: RewrittenStep = answers[-1].value
        details = {
            "model": self.model,
            "flaw": plan.flaw,
            "wrong_result": plan.wrong_result,
            "rewrite": {
                "content": step.content,
                "tool_calls": None if rewrite.tool_calls is None else [c.model_dump() for c in rewrite.tool_calls],
            },
            "read_as": [a1.read_as] + [a.read_as for a in answers],
            "stage2_attempts": len(answers),
            "warnings": a1.warnings + [w for a in answers for w in a.warnings] + notes,
        }
        flaw = plan.flaw if plan.flaw[-1:] in ".!?" else plan.flaw + "."
        return GeneratedStep(
            step=step,
            description=f"{flaw} Leads to: {plan.wrong_result}",
            generator=self.name,
            usage=usage_dict(usage),
            details=details,
        )
