"""Live attribution: judge a run's steps as they arrive (docs/architecture.md, 'Attribution protocols' protocols, live).

:class:`LiveJudge` judges one growing trace:

* ``heuristic`` re-runs the offline heuristic on the trace so far after each change and
  sends a :class:`~whenpro_core.live.events.Suspect` whenever its verdict (agent, step,
  mode) changes. The first verdict whose step carries a signal of strength
  ``decisive_strength`` or more is the :class:`~whenpro_core.live.events.DecisiveError`;
  while the run goes on, signals that depend on its end (:data:`END_SIGNALS`) do not
  count, nor does a step whose agent may still change (an OpenTelemetry span whose agent
  span has not arrived yet, :func:`agent_settled`: else the verdict would name the
  service, however fast the spans came), and a run that ended with outcome ``success``
  gets none.
* ``step-by-step`` asks the judge about each new agent step, one call each, with the
  same prompts as the offline protocol (:func:`~whenpro_core.attribution.prompts.step_by_step_opening`,
  :func:`~whenpro_core.attribution.prompts.step_turn`): the conversation only grows, so
  every call's prompt starts with the previous call's and the provider's prefix cache
  serves it. Each answer is a :class:`~whenpro_core.live.events.StepJudged`; the first
  "yes" is a Suspect and the DecisiveError, and judging stops (the protocol stops at the
  first yes). When late OpenTelemetry spans reorder the trace, the conversation is
  rebuilt once from the new order and steps already judged are not asked again.

Judging keeps to a :class:`Budget` (calls, tokens, US dollars; and the model's context
window): once reached, a :class:`~whenpro_core.live.events.BudgetExhausted` is sent and
judging stops. A backend failure is a :class:`~whenpro_core.live.events.JudgeFailed`.
When the run ends (:func:`run_end_reason`, or an idle timeout), :meth:`LiveJudge.finish`
sends :class:`~whenpro_core.live.events.RunEnded` and, with ``final_pass``, the
:class:`~whenpro_core.live.events.FinalVerdict` of a full pass (all-at-once with a
model, else the heuristic) over the whole run.

:mod:`whenpro_core.live.session` ties a file follower or the OTLP receiver's store to
LiveJudges.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from whenpro_core.attribution.asking import ask
from whenpro_core.attribution.heuristic import attribute_heuristic
from whenpro_core.attribution.judge import Tally
from whenpro_core.attribution.judge_images import image_loader_for
from whenpro_core.attribution.prompts import Message, StepJudgement, step_by_step_opening, step_turn
from whenpro_core.attribution.protocols import protocol_name
from whenpro_core.attribution.run import attribute
from whenpro_core.attribution.signals import Signal
from whenpro_core.errors import BackendError, ConfigError
from whenpro_core.formats.base import outcome_from_gold
from whenpro_core.formats.otel import agent_spans
from whenpro_core.live.builders import common_prefix
from whenpro_core.live.events import (
    BudgetExhausted,
    DecisiveError,
    FinalVerdict,
    JudgeFailed,
    RunEnded,
    StepJudged,
    Suspect,
)
from whenpro_core.live.replay_pass import COUNTERFACTUAL, counterfactual_pass
from whenpro_core.trace.evidence import is_candidate
from whenpro_core.trace.model import Attribution, Outcome, Step, Trace, Usage
from whenpro_core.trace.taxonomy import taxonomy_for
from whenpro_core.views.transcript import Transcript, context_text, render_transcript

if TYPE_CHECKING:  # the attribution modules are imported where used (they load the LLM stack)
    from whenpro_core.attribution.judge import Tally
    from whenpro_core.attribution.prompts import Message
    from whenpro_core.attribution.signals import Signal
    from whenpro_core.views.transcript import StepBlock

#: A heuristic verdict is decisive when its step has a signal at least this strong
#: (signal strengths: :mod:`whenpro_core.attribution.signals`; a wrong calculation is
#: 0.95, an unrecovered tool error 0.5).
DECISIVE_STRENGTH = 0.6
#: Heuristic signals that depend on how the run ends: they make a verdict decisive only
#: once it has ended.
END_SIGNALS = frozenset({"final-value-origin", "gold-lost", "gave-up"})
#: Prompt tokens a new step may take in the live conversation (longer fields are cut).
STEP_TOKENS = 2_000


@dataclass(frozen=True)
class Budget:
    """Limits on what live judging may spend: LLM ``max_calls``, ``max_tokens`` (input
    plus output) and ``max_usd`` (estimated cost). ``None`` is no limit. Checked before
    each call: a call starts only while every limit is still below its cap."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_usd: float | None = None

    def exhausted(self, usage: Usage) -> str | None:
        """``calls``, ``tokens`` or ``usd`` when that limit is reached, else ``None``."""
        if self.max_calls is not None and usage.calls >= self.max_calls:
            return "calls"
        if self.max_tokens is not None and usage.input_tokens + usage.output_tokens >= self.max_tokens:
            return "tokens"
        if self.max_usd is not None and usage.cost_usd >= self.max_usd:
            return "usd"
        return None


def run_end_reason(trace: Trace, *, outcome_final: bool = True) -> str | None:
    """Why the run looks finished, or ``None``: ``final_answer`` (a final-answer step),
    ``outcome`` (the trace records an outcome, and ``outcome_final``: a followed file's
    :attr:`~whenpro_core.live.follow.FileFollower.outcome_final`), ``root_span_ended``
    (an OpenTelemetry root span of an agent or chain arrived: spans are exported when
    they end)."""
    for step in reversed(trace.steps):
        if step.kind == "final_answer":
            return "final_answer"
    if trace.outcome != Outcome.unknown and outcome_final:
        return "outcome"
    for step in trace.steps:
        meta = step.meta
        if (
            meta.get("span_id")
            and meta.get("parent_span_id") is None
            and (step.kind in ("agent", "chain") or meta.get("operation") in ("invoke_agent", "invoke_workflow"))
        ):
            return "root_span_ended"
    if any(f.span_id and f.parent_span_id is None for f in agent_spans(trace)):
        return "root_span_ended"  # a root agent span framing steps (formats.otel)
    return None


def end_outcome(trace: Trace) -> Outcome:
    """The outcome of a run that has ended: the one the trace states, else its final
    answer judged against its gold answer (:func:`~whenpro_core.formats.base.outcome_from_gold`;
    a followed file leaves that to the end, :class:`~whenpro_core.formats.native_lines.NativeLinesBuilder`),
    else ``unknown``."""
    if trace.outcome != Outcome.unknown:
        return trace.outcome
    return outcome_from_gold(trace.final_answer, trace.task.answer, False)


def agent_settled(trace: Trace, step: Step) -> bool:
    """Whether ``step``'s agent can no longer change: True unless it is an OpenTelemetry
    span whose chain of parents breaks (a parent span not arrived yet) before it meets
    an agent span framing it or a root. Parents end, and are exported, after their
    children, so until the agent span comes the step is the service's and may become
    an agent's."""
    parent = step.meta.get("parent_span_id") if isinstance(step.meta, dict) else None
    framing, parents = _span_links(trace) if parent else (set(), {})
    seen: set[str] = set()
    while parent and parent not in seen:
        if parent in framing:
            return True
        if parent not in parents:
            return False
        seen.add(parent)
        parent = parents[parent]
    return True


def _span_links(trace: Trace) -> tuple[set[str], dict[str, str | None]]:
    """The span ids of the agent spans framing steps, and each step span's parent id."""
    framing = {f.span_id for f in agent_spans(trace) if f.span_id}
    parents: dict[str, str | None] = {}
    for s in trace.steps:
        if s.meta.get("span_id"):
            parent = s.meta.get("parent_span_id")
            parents[str(s.meta["span_id"])] = str(parent) if parent else None
    return framing, parents


def _ident(step: Step) -> str:
    span = step.meta.get("span_id") if isinstance(step.meta, dict) else None
    return f"span:{span}" if span else f"#{step.index}"


def _heuristic_eval(trace: Trace, with_gold: bool) -> tuple[Attribution, list[Signal]]:
    """The heuristic's verdict and every signal it saw (for the decisive test)."""
    signals: list[Signal] = []
    verdict = attribute_heuristic(trace, with_gold=with_gold, signals_out=signals)
    return verdict, signals


class LiveJudge:
    """Judges one growing trace (see the module doc).

    Args:
        protocol: ``heuristic`` or ``step-by-step``.
        judge: a :class:`~whenpro_core.attribution.judge.Judge` (required for
            step-by-step; with heuristic, used only by the final pass).
        budget: spending limits.
        with_gold: show the judge the gold answer when the trace has one.
        taxonomy: failure modes (default: the trace's dataset taxonomy or the built-in).
        final_pass: run a full pass when the run ends.
        final_protocol: the final pass's protocol with a judge (``all-at-once``, or a
            ``--preset``'s version of it); a trace it cannot render gives one
            :class:`JudgeFailed` line saying why. ``counterfactual`` searches the
            ended run by correcting and replaying its steps
            (:func:`~whenpro_core.live.replay_pass.counterfactual_pass`), with or without
            a judge.
        replay_model: with ``counterfactual``, the ``provider:model`` that fixes steps
            and plays the rest (``None``: offline, a built-in system's run only).
        decisive_strength: the heuristic's threshold for a decisive verdict (the
            strength of a signal at the verdict's step).

    Attributes:
        usage: LLM usage spent so far (new calls, tokens, cost; answers served from the
            response cache cost nothing), final pass included: what the budget limits.
        decisive: the DecisiveError sent, if any.
        stopped: why judging stopped (``decisive``, ``budget``, ``judge_failed``) or ``None``.
    """

    def __init__(
        self,
        protocol: str = "heuristic",
        *,
        judge: Any = None,
        budget: Budget | None = None,
        with_gold: bool = True,
        taxonomy: Any = None,
        final_pass: bool = False,
        decisive_strength: float = DECISIVE_STRENGTH,
        final_protocol: str = "all-at-once",
        replay_model: str | None = None,
    ) -> None:
        self.protocol = protocol_name(protocol)
        if self.protocol not in ("heuristic", "step-by-step"):
            raise ConfigError(
                f"protocol {self.protocol} cannot judge live",
                expected="heuristic or step-by-step (use --final-pass for all-at-once)",
            )
        if self.protocol == "step-by-step" and judge is None:
            raise ConfigError("step-by-step needs a model", expected="--model provider:model")
        self.judge = judge
        self.budget = budget or Budget()
        self.with_gold = with_gold
        self.taxonomy = taxonomy
        self.final_pass = final_pass
        self.final_protocol = final_protocol
        self.replay_model = replay_model
        self.decisive_strength = decisive_strength
        self.usage = Usage()
        self.decisive: DecisiveError | None = None
        self.stopped: str | None = None
        self.suspect: Suspect | None = None
        self.ended = False
        # step-by-step state
        self._tally: Tally | None = None
        self._messages: list[Message] | None = None
        self._pending: list[StepBlock] = []
        self._context: list[tuple[str, str]] = []
        self._late_context: list[tuple[str, str]] = []
        self._seen: list[Step] = []
        self._judged: set[str] = set()

    # ------------------------------------------------------------------ public

    async def update(self, trace: Trace) -> AsyncIterator[Any]:
        """Judge what is new in ``trace`` (the whole trace so far); yields judge events
        as they happen. Safe to cancel: a cancelled call is asked again next time."""
        if self.stopped or self.ended:
            return
        if self.protocol == "heuristic":
            async for ev in self._heuristic(trace):
                yield ev
        else:
            async for ev in self._step_by_step(trace):
                yield ev

    async def finish(self, trace: Trace, reason: str) -> AsyncIterator[Any]:
        """The run ended: :class:`RunEnded`, then the final pass's :class:`FinalVerdict`
        when ``final_pass`` is set and the budget allows."""
        if self.ended:
            return
        if self.protocol == "heuristic" and not self.stopped:
            async for ev in self._heuristic(trace, ended=True):
                yield ev
        self.ended = True
        yield RunEnded(trace.id, reason, len(trace.steps), end_outcome(trace).value)
        if not self.final_pass or not trace.steps:
            return
        if self.final_protocol == COUNTERFACTUAL:
            first = self.decisive.index if self.decisive is not None else None
            flagged = self.decisive is not None
            async for ev in counterfactual_pass(trace, self.replay_model, first=first, flagged=flagged):
                if isinstance(ev, DecisiveError):
                    self.decisive = ev
                yield ev
            return
        if self.judge is not None:
            limit = self.budget.exhausted(self.usage)
            if limit:
                yield BudgetExhausted(trace.id, limit, self.usage)
                return
            try:
                verdict = await attribute(
                    trace,
                    self.final_protocol,
                    judge=self.judge,
                    with_gold=self.with_gold,
                    taxonomy=self._taxonomy(trace),
                )
            except BackendError as exc:
                yield JudgeFailed(trace.id, exc.one_line())
                return
            except ConfigError as exc:  # a --preset that cannot render this trace: say why, send nothing
                yield JudgeFailed(trace.id, f"the final pass cannot apply: {exc.one_line()}")
                return
            self.usage = self.usage.add(verdict.spent.model_copy(update={"seconds": 0.0}))
        else:
            verdict = await attribute(trace, "heuristic", with_gold=self.with_gold)
        yield FinalVerdict(trace.id, verdict)

    # ------------------------------------------------------------------ heuristic

    async def _heuristic(self, trace: Trace, *, ended: bool = False) -> AsyncIterator[Any]:
        if not trace.steps:
            return
        verdict, signals = await asyncio.to_thread(_heuristic_eval, trace, self.with_gold)
        if verdict.step is None:
            return
        step = trace.step_by_coord(verdict.step)
        index = step.index if step is not None else -1
        agent = verdict.agent or (step.agent if step else "")
        key = (agent, verdict.step, verdict.mode)
        if self.suspect is None or (self.suspect.agent, self.suspect.step, self.suspect.mode) != key:
            self.suspect = Suspect(
                trace.id, index, verdict.step, agent, verdict.mode, verdict.reason, "heuristic", verdict.confidence
            )
            yield self.suspect
        if self.decisive is not None or (ended and end_outcome(trace) == Outcome.success):
            return
        if self._decisive_evidence(trace, step, signals, ended):
            self.decisive = DecisiveError(
                trace.id, index, verdict.step, agent, verdict.mode, verdict.reason, "heuristic", verdict
            )
            yield self.decisive

    def _decisive_evidence(self, trace: Trace, step: Step | None, signals: list[Signal], ended: bool) -> list[Signal]:
        """The heuristic's signals that make ``step`` decisive. While the run goes on only
        evidence at the step itself counts; signals that depend on how the run ends (its
        final answer, a gold answer it lost, giving up) count once it has ended. Nor is
        a step decisive while its agent may still change (:func:`agent_settled`)."""
        if step is None or (not ended and not agent_settled(trace, step)):
            return []
        return [
            sig
            for sig in signals
            if sig.index == step.index
            and sig.strength >= self.decisive_strength
            and (ended or sig.name not in END_SIGNALS)
        ]

    # ------------------------------------------------------------------ step-by-step

    def _taxonomy(self, trace: Trace) -> Any:
        if self.taxonomy is None:
            self.taxonomy = taxonomy_for(trace.source.root)
        return self.taxonomy

    def _render(self, trace: Trace, steps: list[Step]) -> Any:
        sub = trace.model_copy(update={"steps": steps, "task": trace.task.model_copy(update={"images": []})})
        return render_transcript(
            sub, image_loader=image_loader_for(self.judge), budget_tokens=STEP_TOKENS * max(1, len(steps))
        )

    def _opening(self, trace: Trace, context: list[tuple[str, str]]) -> list[Message]:
        images = render_transcript(
            trace.model_copy(update={"steps": []}), image_loader=image_loader_for(self.judge)
        ).task_images
        transcript = Transcript(context=list(context), blocks=[], task_images=images)
        return step_by_step_opening(trace, transcript, self._taxonomy(trace), self.with_gold)

    def _restart_conversation(self) -> None:
        """Late spans reordered steps already shown: start the conversation again (the
        steps judged stay judged)."""
        self._messages, self._pending, self._seen = None, [], []
        self._context, self._late_context = [], []

    def _context_chars(self, messages: list[Message]) -> int:
        return sum(len(m.plain()) for m in messages)

    async def _step_by_step(self, trace: Trace) -> AsyncIterator[Any]:
        if self._tally is None:
            self._tally = Tally("step-by-step", self.judge, self.with_gold)
        if common_prefix(self._seen, trace.steps) < len(self._seen):
            self._restart_conversation()
        new = trace.steps[len(self._seen) :]
        if not new:
            return
        transcript = self._render(trace, new)
        for w in transcript.warnings:
            self._tally.warn(w)
        taxonomy = self._taxonomy(trace)
        # Work on copies and commit after each answer, so a cancelled call leaves the
        # state as it was and the step is asked again next time.
        opening_ctx = self._context + (transcript.context if self._messages is None else [])
        late_ctx = self._late_context + (transcript.context if self._messages is not None else [])
        pending = list(self._pending)
        for block in transcript.blocks:
            steps = [trace.steps[i] for i in block.indexes]
            pending.append(block)
            ids = [_ident(s) for s in steps]
            if not any(is_candidate(s) for s in steps) or all(i in self._judged for i in ids):
                continue
            limit = self.budget.exhausted(self.usage)
            messages = self._messages if self._messages is not None else self._opening(trace, opening_ctx)
            if limit is None and self._context_chars(messages) > self.judge.budget_tokens * 4:
                limit = "context"
            if limit:
                self.stopped = "budget"
                yield BudgetExhausted(trace.id, limit, self.usage)
                return
            late = context_text(Transcript(context=late_ctx, blocks=[])) if late_ctx else ""
            turn = step_turn(pending, block.coord, late)
            if len(messages) == 2 and messages[-1].role == "user":
                asked = messages[:-1] + [Message("user", messages[-1].parts + turn.parts, cache_breakpoint=True)]
            else:
                asked = messages + [turn]
            before = self._tally.result.spent
            try:
                answer, raw = await ask(self.judge, asked, StepJudgement, taxonomy, self._tally)
            except BackendError as exc:
                self.stopped = "judge_failed"
                yield JudgeFailed(trace.id, exc.one_line())
                return
            after = self._tally.result.spent
            self.usage = self.usage.add(
                Usage(
                    calls=after.calls - before.calls,
                    input_tokens=after.input_tokens - before.input_tokens,
                    output_tokens=after.output_tokens - before.output_tokens,
                    cached_tokens=after.cached_tokens - before.cached_tokens,
                    cost_usd=after.cost_usd - before.cost_usd,
                )
            )
            # commit
            self._messages = asked + [Message.text("assistant", raw or "Decisive: No")]
            self._context, self._late_context, late_ctx, pending = opening_ctx, [], [], []
            self._pending = []
            self._seen = list(trace.steps[: block.indexes[-1] + 1])
            self._judged.update(ids)
            agent = "agent" if trace.is_single_agent else block.agent
            decisive = bool(answer.decisive)
            yield StepJudged(trace.id, block.indexes[0], block.coord, agent, decisive, answer.mode, answer.reason)
            if answer.decisive is None:
                self._tally.warn(f"step {block.coord}: answer was neither yes nor no; read as no")
            if decisive:
                verdict = self._tally.result.model_copy(deep=True)
                verdict.agent, verdict.step, verdict.mode, verdict.reason = (
                    agent,
                    block.coord,
                    answer.mode,
                    answer.reason,
                )
                verdict.spent = self.usage.model_copy()
                self.suspect = Suspect(
                    trace.id, block.indexes[0], block.coord, agent, answer.mode, answer.reason, "step-by-step"
                )
                yield self.suspect
                self.decisive = DecisiveError(
                    trace.id, block.indexes[0], block.coord, agent, answer.mode, answer.reason, "step-by-step", verdict
                )
                yield self.decisive
                self.stopped = "decisive"
                return
        if self._messages is None:
            self._context = opening_ctx
        else:
            self._late_context = late_ctx
        self._pending = pending
        self._seen = list(trace.steps)


__all__ = ["Budget", "DECISIVE_STRENGTH", "END_SIGNALS", "LiveJudge", "run_end_reason"]
