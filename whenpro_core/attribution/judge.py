"""The seam between attribution protocols and LLM backends.

A :class:`Judge` answers chat messages (:class:`~whenpro_core.attribution.prompts.Message`)
with text and, when the backend supports structured output and a schema is given, a
parsed pydantic object. Protocols only talk to this interface; ``llm_judge`` adapts the
backends of :mod:`whenpro_core.llm`. Progress is reported through :class:`Progress`
events so the TUI can show a marker moving through the steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel

from whenpro_core.attribution.parse import ParsedAnswer
from whenpro_core.attribution.prompts import Message
from whenpro_core.trace.model import Attribution, Trace, Usage


@dataclass(frozen=True)
class CallSettings:
    """Per-call request settings a protocol may fix (a preset's temperature 0 and 2,048
    output tokens); ``None`` leaves the configured value."""

    temperature: float | None = None
    max_tokens: int | None = None


@dataclass
class JudgeReply:
    """A judge's answer: raw ``text``, the ``parsed`` object when structured output was
    used, ``usage`` (what the call that produced the answer cost: on a response-cache hit,
    the original call's usage), ``spent`` (what this call cost now: zero on a cache hit;
    ``None`` means the same as ``usage``), and ``warnings`` from the backend."""

    text: str
    parsed: BaseModel | None = None
    usage: Usage = field(default_factory=Usage)
    warnings: list[str] = field(default_factory=list)
    spent: Usage | None = None

    @property
    def spent_now(self) -> Usage:
        """What this call spent (``usage`` when ``spent`` is not given)."""
        return self.usage if self.spent is None else self.spent


class Judge(Protocol):
    """What protocols need from a model: its name, whether it reads images, its prompt
    budget in tokens, and an async ``ask``."""

    model: str
    multimodal: bool
    budget_tokens: int

    async def ask(
        self,
        messages: list[Message],
        schema: type[BaseModel] | None = None,
        readable: Callable[[str, BaseModel | None], bool] | None = None,
        call: CallSettings | None = None,
    ) -> JudgeReply:
        """Answer ``messages``; raise :class:`~whenpro_core.errors.BackendError` when the
        backend fails after its retries. ``readable(text, parsed)``: whether a verdict can
        be read from an answer (an unreadable one must not be cached as an answer);
        ``call``: request settings fixed by the protocol."""
        ...


@dataclass(frozen=True)
class Progress:
    """A protocol's progress: which ``call`` (1-based), the coordinates being asked
    about (``asking``: one step for step-by-step, the current range for binary search),
    and a short ``message``."""

    protocol: str
    call: int
    asking: tuple[str, ...]
    message: str = ""


ProgressCallback = Callable[[Progress], None]


class Tally:
    """Collects usage, raw outputs and warnings across a protocol's calls."""

    def __init__(self, protocol: str, judge: Judge, with_gold: bool, parser: str = "whenpro") -> None:
        self.started = time.perf_counter()
        self.result = Attribution(protocol=protocol, model=judge.model, with_gold=with_gold, parser=parser)
        #: Keep the agent exactly as read (a preset: its harness scores what it read).
        self.agent_as_read = parser != "whenpro"

    def record(self, reply: JudgeReply) -> None:
        """Add one reply's usage and spending, text and warnings."""
        self.result.usage = self.result.usage.add(reply.usage.model_copy(update={"seconds": 0.0}))
        self.result.spent = self.result.spent.add(reply.spent_now.model_copy(update={"seconds": 0.0}))
        self.result.raw_outputs.append(reply.text)
        self.result.warnings.extend(reply.warnings)

    def warn(self, text: str) -> None:
        """Record a warning (parse failure, tie-break)."""
        self.result.warnings.append(text)

    def finish(
        self,
        trace: Trace,
        *,
        agent: str | None,
        step: str | None,
        mode: str | None,
        reason: str | None,
        confidence: float | None = None,
        step_text: str | None = None,
    ) -> Attribution:
        """The final Attribution with the wall-clock seconds."""
        r = self.result
        r.agent = agent
        if trace.is_single_agent and agent and not self.agent_as_read:
            # the transcript shows a single-agent run's steps as "Agent: agent"; its real id
            # is accepted too, anything else is kept as the judge said it (and scores wrong)
            names = {"agent", *(a.lower() for a in trace.agent_ids())}
            if agent.strip().lower() in names:
                r.agent = "agent"
        r.step, r.mode, r.reason, r.confidence, r.step_text = step, mode, reason, confidence, step_text
        r.usage.seconds = r.spent.seconds = time.perf_counter() - self.started
        return r


def from_parsed(parsed: ParsedAnswer, tally: Tally) -> ParsedAnswer:
    """Move a parse's warnings into the tally and return it."""
    for w in parsed.warnings:
        tally.warn(w)
    return parsed
