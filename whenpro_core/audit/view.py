"""What a label-leak audit may read of a trace: the judge's view, kept apart from the
ground truth (issue 14, docs/architecture.md, 'Attribution protocols').

An :class:`AuditTrace` holds, per step, only what a judge is shown or can read in a
released trajectory: the coordinate, the speaking agent, the step kind and the text of
the step (content, tool calls, observation, error), plus the task's query (to match runs
of the same task) and the framework. It never holds ``Step.hidden`` (injection markers
such as ``is_injected``), ``Step.raw``, ``Step.meta``, ``Trace.extras``, the gold answer
or the ground truth: a baseline that read those would be a leak of its own. The ground
truth stays on the side (:class:`Label`), for scoring only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from whenpro_core.trace.coords import normalize_coord, round_of
from whenpro_core.trace.evidence import is_candidate
from whenpro_core.trace.model import Trace
from whenpro_core.trace.score import accepted_agents, accepted_steps
from whenpro_core.views.transcript import step_fields


@dataclass(frozen=True)
class AuditStep:
    """One candidate step as a judge sees it.

    Attributes:
        rank: 0-based position among the trace's candidate steps.
        coord: the step coordinate (``"3"``, ``"1.1"``).
        agent: the speaking agent's id (``"agent"`` for single-agent frameworks).
        kind: the step kind (``action``, ``assistant``, ``final_answer``, ...).
        content: what the agent wrote (reasoning, message, code).
        calls: the step's tool calls as ``name(arguments)`` lines.
        observation: the environment's answer and any error, as shown to a judge.
    """

    rank: int
    coord: str
    agent: str
    kind: str
    content: str
    calls: str = ""
    observation: str = ""

    @property
    def text(self) -> str:
        """What the agent produced: content and tool calls (not the environment's answer)."""
        return f"{self.content}\n{self.calls}" if self.calls else self.content


@dataclass(frozen=True)
class AuditTrace:
    """A trace as a form-only baseline may read it: ``id``, ``framework``, the task
    ``query``, its candidate ``steps`` (agents acting: not framing, not the environment)
    and ``group`` (the seed run it came from when known, else the id; the build filter
    uses it to leave a trace's own seed run out of its corpus)."""

    id: str
    framework: str
    query: str
    steps: tuple[AuditStep, ...]
    group: str = ""

    def agent_steps(self, agent: str) -> list[AuditStep]:
        """The candidate steps of ``agent``, in order."""
        return [s for s in self.steps if s.agent == agent]

    def peers(self, step: AuditStep) -> list[AuditStep]:
        """The steps ``step`` is compared with: the same agent's other steps, or every
        other step when the agent has fewer than two others."""
        same = [s for s in self.agent_steps(step.agent) if s.rank != step.rank]
        return same if len(same) >= 2 else [s for s in self.steps if s.rank != step.rank]


@dataclass(frozen=True)
class Label:
    """The ground truth of a trace, for scoring: accepted agents (lower case), accepted
    step coordinates (normalised; rounds when ``round_only``), the mode (``None`` for
    Who&When), whether the framework is single-agent, and the 0-based candidate ranks
    of the labelled step(s) (empty when the coordinate names no candidate step)."""

    agents: frozenset[str]
    steps: frozenset[str]
    mode: str | None
    round_only: bool = False
    single_agent: bool = False
    ranks: tuple[int, ...] = field(default_factory=tuple)

    def step_ok(self, coord: str | None) -> bool:
        """True when ``coord`` is an accepted step."""
        if not coord:
            return False
        return (round_of(coord) if self.round_only else normalize_coord(coord)) in self.steps

    def agent_ok(self, agent: str | None) -> bool:
        """True when ``agent`` is an accepted agent (single-agent frameworks: ``agent``)."""
        return agent is not None and agent.strip().lower() in self.agents


def audit_view(trace: Trace, group: str | None = None) -> AuditTrace:
    """The judge's view of ``trace`` (module docstring). Candidate steps are those that
    can hold the decisive error (:func:`~whenpro_core.trace.evidence.is_candidate`);
    steps that share a coordinate are one step, as a judge sees them."""
    steps: list[AuditStep] = []
    by_coord: dict[str, int] = {}
    for step in trace.steps:
        if not is_candidate(step) or step.coord is None:
            continue
        fields = step_fields(step)
        content = "\n".join(t for label, t in fields if label == "" and t != "(empty step)")
        calls = "\n".join(t for label, t in fields if label == "tool call")
        seen = "\n".join(t for label, t in fields if label in ("observation", "error"))
        agent = "agent" if trace.is_single_agent else step.agent
        if step.coord in by_coord:  # one coordinate, one step for the judge
            old = steps[by_coord[step.coord]]
            steps[by_coord[step.coord]] = AuditStep(
                old.rank,
                old.coord,
                old.agent,
                old.kind,
                "\n".join(x for x in (old.content, content) if x),
                "\n".join(x for x in (old.calls, calls) if x),
                "\n".join(x for x in (old.observation, seen) if x),
            )
            continue
        by_coord[step.coord] = len(steps)
        steps.append(AuditStep(len(steps), step.coord, agent, step.kind, content, calls, seen))
    return AuditTrace(
        id=trace.id,
        framework=trace.framework,
        query=" ".join(trace.task.query.split()),
        steps=tuple(steps),
        group=group or trace.id,
    )


def label_of(trace: Trace, view: AuditTrace) -> Label | None:
    """The ground truth of ``trace`` for scoring against ``view``, or ``None`` when it
    has no step or mode label."""
    gt = trace.ground_truth
    if gt is None or (gt.step is None and gt.mode is None):
        return None
    label = Label(
        agents=frozenset(accepted_agents(trace, gt)),
        steps=frozenset(accepted_steps(gt)),
        mode=(gt.mode or "").strip().upper() or None,
        round_only=gt.round_only,
        single_agent=trace.is_single_agent,
    )
    ranks = tuple(s.rank for s in view.steps if label.step_ok(s.coord))
    return Label(label.agents, label.steps, label.mode, label.round_only, label.single_agent, ranks)


__all__ = ["AuditStep", "AuditTrace", "Label", "audit_view", "label_of"]
