"""What the header of a trace shows: task, gold and final answers, outcome, the agents
with their step counts and stable colour slots, and the ground truth in words.

UI-free: the TUI picks the colours for the slots. Every string has passed
:func:`whenpro_core.safety.textsafe.clean`.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from whenpro_core.safety.textsafe import clean, one_line
from whenpro_core.trace.model import Step, Trace
from whenpro_core.trace.taxonomy import Taxonomy, taxonomy_for
from whenpro_core.trace.usage import StepUsage, sum_usage
from whenpro_core.views.search import gt_step_index

#: Characters of the task kept for the header (the TUI folds it further).
TASK_CAP = 20_000

#: A ``__``-separated id segment that is a failure-mode code (``P.1``, ``PL.2``) …
_MODE_SEGMENT = re.compile(r"[A-Z]{1,3}\.\d{1,2}")
#: … and one right after it that is a step coordinate (``3``, ``1.2``, ``t3``).
_STEP_SEGMENT = re.compile(r"t?\d+(?:\.\d+)*")


def unlabelled_id(trace_id: str) -> str:
    """``trace_id`` with the labels it carries masked, for showing while labels are
    hidden (so a person judges the trace unbiased).

    Who&When Pro ids carry the injected failure mode as a ``__`` segment
    (``eva__lvbench__P.1__task_2393__20260423``), and whenpro's counterfactual ids
    (:func:`whenpro_core.injection.inject.counterfactual_id`: ``{id}__{mode}__{step}``)
    also the decisive step. A mode segment becomes ``‹mode›`` and a step-like segment
    right after it ``‹step›``; any other id is returned unchanged."""
    parts = trace_id.split("__")
    for i, part in enumerate(parts):
        if _MODE_SEGMENT.fullmatch(part):
            parts[i] = "‹mode›"
            if i + 1 < len(parts) and _STEP_SEGMENT.fullmatch(parts[i + 1]):
                parts[i + 1] = "‹step›"
    return "__".join(parts)


#: The extensions at the end of a file name (``.json``, ``.jsonl.gz``); ``.1`` is no extension.
_EXTENSIONS = re.compile(r"(?:\.[A-Za-z][A-Za-z0-9]*)*$")


def unlabelled_ref(ref: str) -> str:
    """A file name, path or ``path#key`` as shown while labels are hidden: each part of the
    path (its extensions kept) and the key masked by :func:`unlabelled_id`, so
    ``data/arith_team-s0__PL.1__1.json`` shows as ``data/arith_team-s0__‹mode›__‹step›.json``."""
    path, sep, key = ref.partition("#")
    parts = []
    for part in path.split("/"):
        found = _EXTENSIONS.search(part)
        cut = found.start() if found else len(part)
        parts.append(unlabelled_id(part[:cut]) + part[cut:])
    return "/".join(parts) + (sep + unlabelled_id(key) if sep else "")


def shown_id(trace_id: str, labels: bool) -> str:
    """``trace_id`` whole with ``labels``, else masked (:func:`unlabelled_id`)."""
    return trace_id if labels else unlabelled_id(trace_id)


def shown_ref(ref: str, labels: bool) -> str:
    """``ref`` (a path or ``path#key``) whole with ``labels``, else masked (:func:`unlabelled_ref`)."""
    return ref if labels else unlabelled_ref(ref)


def agent_slots(agent_ids: list[str], n_slots: int) -> dict[str, int]:
    """A colour slot ``0..n_slots-1`` per agent, stable across traces: each agent
    prefers the slot given by a CRC32 of its id, and takes the next free one on a
    collision (so the agents of one trace get distinct slots while there are enough).

    ``agent_slots(["Orchestrator", "WebSurfer"], 12)`` gives the same slots in every
    Magentic-One trace.
    """
    taken: set[int] = set()
    out: dict[str, int] = {}
    for agent in agent_ids:
        slot = zlib.crc32(agent.encode("utf-8")) % n_slots
        if len(taken) < n_slots:
            while slot in taken:
                slot = (slot + 1) % n_slots
        taken.add(slot)
        out[agent] = slot
    return out


@dataclass(frozen=True)
class GroundTruthView:
    """The ground truth in words: ``agent`` (or the accepted agents joined),
    ``step`` coordinate, ``step_index``, ``mode`` as ``"R.3 Numerical/calculation
    error"`` (or ``"—"``), ``reason``."""

    agent: str
    step: str
    step_index: int | None
    mode: str
    reason: str

    def line(self) -> str:
        """``"GT: agent WebSurfer · step 12 · mode —"``."""
        return f"GT: agent {self.agent} · step {self.step} · mode {self.mode}"


@dataclass(frozen=True)
class TraceHeader:
    """The header of the trace screen.

    Attributes:
        id, framework, benchmark, modality: identity of the trace.
        task: the task query (cleaned, capped at :data:`TASK_CAP` characters).
        gold: the gold answer, or ``None``.
        final: the system's final answer, or ``None``.
        outcome: ``success``, ``failure`` or ``unknown``.
        agents: ``(agent, step count)`` in first-appearance order, for agents with at
            least one step (declared agents that never spoke are left out).
        steps: number of steps.
        gt: the ground truth, or ``None`` when the trace carries none.
        media: number of task images.
        scores: one line per scorer the log records (:func:`score_lines`).
        usage: total tokens, cost and latency over the steps where the format records
            them (:func:`whenpro_core.trace.usage.total_usage`), ``""`` when none does.
    """

    id: str
    framework: str
    benchmark: str
    modality: str
    task: str
    gold: str | None
    final: str | None
    outcome: str
    agents: list[tuple[str, int]] = field(default_factory=list)
    steps: int = 0
    gt: GroundTruthView | None = None
    media: int = 0
    scores: list[str] = field(default_factory=list)
    usage: str = ""


def score_lines(trace: Trace, limit: int = 300) -> list[str]:
    """The scores a log records (Inspect's ``extras["scores"]``: ``{scorer: {value,
    answer, explanation}}``) as safe one-liners ``"<scorer>: <value> — <explanation>"``
    of at most ``limit`` characters; ``[]`` when there are none."""
    scores = trace.extras.get("scores")
    out = []
    for name, score in scores.items() if isinstance(scores, dict) else []:
        if not isinstance(score, dict):
            continue
        line = f"{name}: {score.get('value')}"
        if score.get("explanation"):
            line += f" — {score['explanation']}"
        out.append(one_line(line, limit))
    return out


@dataclass(frozen=True)
class StepTally:
    """What the trace screen's header and step list need from every step, gathered in
    one pass over the steps (:func:`tally_steps`): a 100,000-step trace is walked once
    before its first paint, not once per figure (each walk costs tens of ms there).

    Attributes:
        agents: steps per speaking agent, in first-appearance order.
        coord_width: characters of the longest step coordinate (0 without any).
        errors: some step records an error.
        media_kinds: the kinds of the steps' media (``image``, ``frame``, ``video``).
        hidden: some step holds label-leaking fields (``Step.hidden``).
        usage: :func:`whenpro_core.trace.usage.total_usage` of the steps.
    """

    agents: dict[str, int]
    coord_width: int
    errors: bool
    media_kinds: frozenset[str]
    hidden: bool
    usage: StepUsage


def tally_steps(steps: Iterable[Step]) -> StepTally:
    """The :class:`StepTally` of ``steps``, in one pass."""
    agents: dict[str, int] = {}
    coord_width = 0
    errors = hidden = False
    kinds: set[str] = set()
    metas: list[Mapping[str, Any]] = []
    for step in steps:
        agents[step.agent] = agents.get(step.agent, 0) + 1
        if step.coord and len(step.coord) > coord_width:
            coord_width = len(step.coord)
        if step.error:
            errors = True
        if step.media:
            kinds.update(m.kind for m in step.media)
        if step.hidden:
            hidden = True
        if step.meta:
            metas.append(step.meta)
    return StepTally(agents, coord_width, errors, frozenset(kinds), hidden, sum_usage(metas))


def trace_header(trace: Trace, taxonomy: Taxonomy | None = None, tally: StepTally | None = None) -> TraceHeader:
    """Build the header of ``trace``; ``taxonomy`` names GT modes (default: the one at
    the trace's dataset root, else the built-in table, docs/architecture.md, 'Failure-mode taxonomy');
    ``tally``: the steps' :func:`tally_steps`, when the caller has it already."""
    tax = taxonomy or taxonomy_for(trace.source.root)
    tally = tally or tally_steps(trace.steps)
    counts = tally.agents
    gt = trace.ground_truth
    gt_view = None
    if gt is not None:
        who = gt.agent or ", ".join(gt.agents) or "—"
        gt_view = GroundTruthView(
            agent=clean(who),
            step=clean(gt.step) if gt.step is not None else "—",
            step_index=gt_step_index(trace),
            mode=clean(tax.name(gt.mode)) if gt.mode else "—",
            reason=clean(gt.reason or ""),
        )
    return TraceHeader(
        id=clean(trace.id),
        framework=clean(trace.framework),
        benchmark=clean(trace.benchmark),
        modality=trace.modality.value,
        task=clean(trace.task.query[:TASK_CAP]),
        gold=clean(trace.task.answer) if trace.task.answer is not None else None,
        final=clean(trace.final_answer) if trace.final_answer is not None else None,
        outcome=trace.outcome.value,
        # agents that took steps, declared ones first (Trace.agent_ids's order)
        agents=[
            (clean(a), counts[a]) for a in {**dict.fromkeys(a.id for a in trace.agents), **counts} if counts.get(a)
        ],
        steps=len(trace.steps),
        gt=gt_view,
        media=len(trace.task.images),
        scores=score_lines(trace),
        usage=tally.usage.text(),
    )
