"""Error generation for injection (docs/architecture.md, 'Injection and warm-start replay' step 1): the
:class:`Generator` protocol and
the generators available now.

A generator rewrites one step of a trajectory so that it carries an error of a given
failure mode. Available:

* ``offline`` — :mod:`whenpro_core.injection.mutators`, deterministic per seed;
* ``text:CONTENT`` — the user types the replacement content (``text:@FILE`` reads it
  from a file); kind and tool calls stay as recorded, so a tool call is re-served from the
  cache.

* ``llm`` / ``llm:MODEL`` — :class:`~whenpro_core.injection.llm_generate.LLMGenerator`,
  the two-stage LLM generator: stage 1 asks the model, given the task, the trajectory up
  to and including step ``t``, the taxonomy entry of ``request.mode`` and the agent's
  role, for a *specific* flaw of that mode at step ``t`` and the wrong result it would
  lead to; stage 2 asks it to rewrite step ``t`` in the agent's own style with that flaw,
  keeping the step's kind and the shape of its tool calls, never naming the injection
  (the verification filter drops texts that do: :mod:`whenpro_core.injection.verify`).

Writing another generator: return a :class:`GeneratedStep` whose ``step`` keeps
``index``/``coord``/``agent`` of the original and has ``observation=None`` (replay fills it
from the tool cache or live), ``description`` = the flaw and expected wrong result (it
becomes the ground truth's ``reason``), and ``usage`` for cost accounting.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from whenpro_core.errors import ConfigError
from whenpro_core.injection.mutators import check_injectable, mutate
from whenpro_core.injection.textedit import fresh_step
from whenpro_core.trace.model import Step, ToolCall, Trace


@dataclass
class InjectionRequest:
    """What to inject: into ``trace`` at step ``index`` (0-based into ``trace.steps``), an
    error of failure mode ``mode`` (taxonomy code), with ``seed`` for reproducible
    choices."""

    trace: Trace
    index: int
    mode: str
    seed: int = 0


@dataclass
class GeneratedStep:
    """A generator's output: the replacement ``step`` for the request's index, the
    ``description`` of its flaw (the ground truth's reason), the ``generator`` spec that
    made it, optional ``usage`` (LLM calls, tokens) as a plain dict, and optional
    ``details`` (plain data: the LLM generator's stage outputs), recorded in the
    counterfactual's ``extras["injection"]["generation"]``."""

    step: Step
    description: str
    generator: str
    usage: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Generator(Protocol):
    """Rewrites one step with an error of a given mode.

    ``name`` is the spec string shown in provenance (``offline``, ``text``,
    ``llm:openai:gpt-4.1``). ``generate(request)`` returns a :class:`GeneratedStep`;
    raises ConfigError when the mode does not fit the step, BackendError when a model
    call fails. It must not modify ``request.trace``."""

    name: str

    def generate(self, request: InjectionRequest) -> GeneratedStep: ...


class OfflineGenerator:
    """The deterministic mode-specific mutators (:func:`~whenpro_core.injection.mutators.mutate`)."""

    name = "offline"

    def generate(self, request: InjectionRequest) -> GeneratedStep:
        m = mutate(request.trace, request.index, request.mode, request.seed)
        return GeneratedStep(m.step, m.description, self.name)


class TextGenerator:
    """The user's own replacement content for the step (kind and tool calls kept)."""

    name = "text"

    def __init__(self, content: str) -> None:
        self.content = content

    def generate(self, request: InjectionRequest) -> GeneratedStep:
        step = check_injectable(request.trace, request.index)
        new = fresh_step(step, content=self.content)
        return GeneratedStep(new, f"Step {step.coord} rewritten by hand ({request.mode}).", self.name)


class PreparedGenerator:
    """Hands back a step generated (and maybe edited) beforehand: the TUI shows a
    generator's output as an editable preview, then replays exactly what the user saw.
    ``generate`` raises ConfigError when asked for another step or mode."""

    def __init__(self, generated: GeneratedStep, index: int, mode: str) -> None:
        self.generated = generated
        self.index = index
        self.mode = mode
        self.name = generated.generator

    def generate(self, request: InjectionRequest) -> GeneratedStep:
        if request.index != self.index or request.mode.upper() != self.mode.upper():
            raise ConfigError(
                f"this step was prepared for step #{self.index} ({self.mode})",
                expected=f"step #{request.index} ({request.mode}): generate it again",
            )
        return self.generated


def tool_calls_text(calls: list[ToolCall]) -> str:
    """A step's tool calls as editable JSON (a list of ``{id, name, arguments}``; ``[]``
    for none); :func:`parse_tool_calls` reads it back."""
    return json.dumps(
        [c.model_dump(mode="json", exclude_none=True) for c in calls], indent=2, ensure_ascii=False, default=str
    )


def parse_tool_calls(text: str) -> list[ToolCall]:
    """Read tool calls edited as JSON (an empty text means none). Raises ConfigError
    naming the line and column of a JSON error or the first invalid call."""
    if not text.strip():
        return []
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"tool calls are not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            expected='a JSON list like [{"name": "calculator", "arguments": {...}}]',
        ) from None
    if not isinstance(doc, list):
        raise ConfigError(
            "tool calls must be a JSON list", json_path="$", expected='[{"name": ..., "arguments": ...}] or []'
        )
    calls = []
    for i, item in enumerate(doc):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not item["name"].strip()
            or set(item) - {"id", "name", "arguments"}
        ):
            raise ConfigError(
                "bad tool call",
                json_path=f"$[{i}]",
                expected="an object with a non-empty name, arguments and an optional id",
            )
        calls.append(ToolCall.model_validate(item))
    return calls


def edit_generated(generated: GeneratedStep, content: str, tool_calls: list[ToolCall] | None = None) -> GeneratedStep:
    """``generated`` with its step's ``content`` (and ``tool_calls``, when given) replaced
    by the user's edit. Unchanged input returns ``generated`` itself; an edit of another
    generator's step is recorded as ``<generator>+edited`` and its description says so
    (the ``text`` generator's step is the user's own already)."""
    calls = generated.step.tool_calls if tool_calls is None else tool_calls
    same_calls = [c.model_dump() for c in calls] == [c.model_dump() for c in generated.step.tool_calls]
    if content == generated.step.content and same_calls:
        return generated
    step = fresh_step(generated.step, content=content, tool_calls=[c.model_copy(deep=True) for c in calls])
    if generated.generator == "text" or generated.generator.endswith("+edited"):
        return replace(generated, step=step)
    return replace(
        generated,
        step=step,
        generator=generated.generator + "+edited",
        description=generated.description.rstrip() + " (The step was then edited by hand.)",
    )
