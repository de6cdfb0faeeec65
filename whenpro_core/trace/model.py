"""The trace model every importer produces and every consumer reads (docs/architecture.md, 'The trace model').

A :class:`Trace` is one run of an agent system on one task: its agents, the task (query,
gold answer, options, images), the trajectory as an ordered list of :class:`Step` s, the
final answer and outcome, and optionally a :class:`GroundTruth` naming the decisive error
(who, when, what). Attribution protocols produce :class:`Attribution` s in the same terms.

Fields that would leak labels to a judge (``is_injected``, ``is_replayed``, ``injected``,
``phase``, ``step_legacy``, ...) are kept in :attr:`Step.hidden` so a native export
round-trips, but they are never part of :attr:`Step.content` and never rendered to a judge.
"""

from __future__ import annotations

from enum import Enum
from operator import attrgetter
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from whenpro_core.trace.coords import normalize_coord
from whenpro_core.trace.extras import ENV_KEY, INJECTION_KEY, EnvRun, Injection
from whenpro_core.trace.frameworks import SINGLE_AGENT_FRAMEWORKS

#: Version of the native JSON format written by :mod:`whenpro_core.formats.native`.
NATIVE_FORMAT: Final = "whenpro.trace/1"

#: Trajectory entry fields that reveal how a benchmark trace was built (the injection
#: markers of Who&When Pro, SOURCE.md of who-when-pro-samples). Importers move them to
#: ``Step.hidden``.
LABEL_LEAKING_FIELDS = ("is_injected", "is_replayed", "injected", "phase", "step_legacy")

#: Key of ``Trace.extras`` holding trace-level label-leaking fields (MAD's ``note`` and
#: ``other_data``). Renderers and judges must not read it; it is kept for round trips and
#: shown only when the user asks for labels.
TRACE_HIDDEN_KEY = "hidden"


#: Speakers of a trace that are not agents of the system: people and the environment.
NON_AGENT_SPEAKERS = frozenset({"user", "human", "system", "environment"})


_agent_of = attrgetter("agent")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


#: What a :class:`MediaRef` points at.
MediaKind = Literal["image", "video", "frame"]


class Modality(str, Enum):
    """Input modality of a task: ``text``, ``image`` or ``video`` (Who&When Pro splits)."""

    text = "text"
    image = "image"
    video = "video"


class Outcome(str, Enum):
    """Whether the run reached the gold answer: ``success``, ``failure`` or ``unknown``."""

    success = "success"
    failure = "failure"
    unknown = "unknown"


class MediaRef(_Model):
    """An image, video or video frame attached to a task or a step.

    Exactly one of ``path`` (relative to the trace's folder or dataset root, or absolute)
    and ``data`` (base64, no ``data:`` prefix) is normally set. Paths are untrusted: they
    are resolved and confined by :mod:`whenpro_core.media`, never opened directly.

    Attributes:
        kind: ``image``, ``video`` (a whole video file) or ``frame`` (one sampled frame).
        time_s: timestamp of a frame in the source video, seconds.
        index: frame index within its step (or in the source video when known).
        mime: MIME type when known (``image/png``, ``image/jpeg``, ``video/mp4``).
        label: a short caption (``query_0``, ``observation #2``).
    """

    kind: MediaKind = "image"
    path: str | None = None
    data: str | None = None
    mime: str | None = None
    time_s: float | None = None
    index: int | None = None
    label: str | None = None


class ToolCall(_Model):
    """A tool invocation made by a step. ``arguments`` is the parsed object when the
    source held JSON, else the raw string."""

    id: str | None = None
    name: str
    arguments: Any = None


class Agent(_Model):
    """One agent of the system: a stable ``id`` (as used in labels) and a display ``role``."""

    id: str
    role: str | None = None


class Task(_Model):
    """The task given to the system.

    Attributes:
        query: the question or instruction, as the first agent saw it.
        answer: the gold answer, absent for real runs without one. Hidden from judges in
            the no-gold setting.
        options: multiple-choice options when the benchmark has them.
        images: task images (the question's picture or screenshot).
    """

    query: str = ""
    answer: str | None = None
    options: Any = None
    images: list[MediaRef] = Field(default_factory=list)


class Step(_Model):
    """One entry of a trajectory: a message, action, plan, tool result or final answer.

    Attributes:
        index: 0-based position in ``Trace.steps``.
        coord: the step coordinate users and judges see and scoring compares (``"3"``,
            ``"1.1"``); ``None`` for framing entries that carry no coordinate (the user's
            task in smolagents, a system prompt). Rules per framework: docs/architecture.md,
            'Formats and step coordinates' and
            :mod:`whenpro_core.trace.coords`. Coordinates need not be unique (eva pairs an
            assistant turn and its tool result under one coordinate).
        agent: the speaking agent's id (``"agent"`` for single-agent frameworks).
        kind: ``user``, ``system``, ``plan``, ``action``, ``assistant``, ``tool``,
            ``observation``, ``final_answer`` or a framework's own kind.
        content: what the agent said or wrote (reasoning, message, code).
        tool_calls: tool invocations made in this step.
        observation: the environment's answer to this step (tool output, execution log).
        media: images, videos or frames attached to this step.
        error: an error recorded for this step (``"AgentExecutionError: ..."``).
        hidden: label-leaking fields moved out of the content (see
            :data:`LABEL_LEAKING_FIELDS`); shown only when the user asks for labels.
        meta: display-only metadata (timestamps, span ids, parent span, usage, round).
        raw: the source entry as stored, minus bulky inline media, for the raw view.
    """

    index: int
    coord: str | None = None
    agent: str = "agent"
    kind: str = "assistant"
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    observation: str | None = None
    media: list[MediaRef] = Field(default_factory=list)
    error: str | None = None
    hidden: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)
    raw: Any = None


class Accepted(_Model):
    """Alternative predictions that also score, per axis (Who&When Pro
    ``accepted_predictions``)."""

    agent: list[str] = Field(default_factory=list)
    step: list[str] = Field(default_factory=list)
    mode: list[str] = Field(default_factory=list)


class GroundTruth(_Model):
    """The labelled decisive error of a failed trace: who, when, what.

    Attributes:
        agent: the responsible agent's id (``"agent"`` for single-agent frameworks,
            ``None`` when unlabelled).
        agents: several acceptable agents (debate/dylan label a round, not a speaker).
        step: the coordinate of the decisive step (``Step.coord``), ``None`` when only
            trace-level labels exist.
        step_index: 0-based index into ``Trace.steps`` of that step, when resolved.
        mode: failure-mode code of the taxonomy (``"R.3"``), or ``None``.
        reason: the labeller's explanation.
        accepted: alternatives that also score.
        round_only: score the step on its round (``R`` of ``R.P``) only (debate, dylan).
        native: the label exactly as stored in the source, for reference.
    """

    agent: str | None = None
    agents: list[str] = Field(default_factory=list)
    step: str | None = None
    step_index: int | None = None
    mode: str | None = None
    reason: str | None = None
    accepted: Accepted = Field(default_factory=Accepted)
    round_only: bool = False
    native: Any = None


class Annotation(_Model):
    """A further human label that is not the single decisive error: one of several
    failures (AgentRx), or a trace-level failure mode with no step (MAST).

    ``decisive`` marks the root cause when a source names one.
    """

    label: str
    agent: str | None = None
    step: str | None = None
    reason: str | None = None
    source: str | None = None
    decisive: bool = False


class Source(_Model):
    """Where a trace was read from: importer ``format`` name, file ``path``, ``key`` of
    the trace inside a file that holds several (a JSONL row number, 1-based, or a sample
    id), and the dataset ``root`` used to resolve relative media paths."""

    format: str = "native"
    path: str | None = None
    key: str | None = None
    root: str | None = None

    def ref(self) -> str | None:
        """The reference a user can pass back to whenpro: ``path`` or ``path#key``."""
        if self.path is None:
            return None
        return f"{self.path}#{self.key}" if self.key is not None else self.path


class Usage(_Model):
    """Cost of producing an attribution: LLM ``calls``, tokens (``input_tokens``,
    ``output_tokens``, ``cached_tokens``: prompt tokens served from a provider's prefix
    cache), ``cost_usd`` and wall-clock ``seconds``."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0

    def add(self, other: Usage) -> Usage:
        """Return the sum of two usages (``seconds`` are added too)."""
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


class Attribution(_Model):
    """A protocol's verdict on a failed trace (docs/architecture.md, 'Attribution protocols').

    Attributes:
        agent, step, mode, reason: the prediction (who, the step coordinate, the failure
            mode code, why). Any may be ``None`` when the judge's answer lacked it.
        step_text: the step exactly as the judge wrote it (``"Step 03"``), when it named
            one in free text; the official rules' strict coordinate match reads it.
        confidence: 0..1 when the protocol reports one.
        parser: which reader turned the judge's answer into the verdict: ``whenpro`` (the
            lenient parser, or structured output), or a preset's re-implementation of its
            harness's parser (:mod:`whenpro_core.attribution.harness_parse`); ``None``
            for verdicts no judge answered (the heuristic, replay).
        protocol: ``all-at-once``, ``step-by-step``, ``binary-search``, ``hybrid`` or
            ``heuristic``.
        model: ``provider:model`` or ``heuristic``.
        with_gold: whether the judge was shown the gold answer.
        usage: calls, tokens and cost of the LLM calls behind this verdict (a call served
            from whenpro's response cache counts with its original usage), and seconds.
        spent: what producing it cost this time: new calls, tokens and cost (zero for
            answers served from the response cache), and seconds.
        raw_outputs: the judge's raw answers, in call order.
        warnings: parse failures, tie-breaks, truncation notices.
        evidence: protocol-specific records backing the verdict (``counterfactual``: one
            plain dict per step tested — coordinate, replay outcome, final answer, calls, cost).
    """

    agent: str | None = None
    step: str | None = None
    mode: str | None = None
    reason: str | None = None
    confidence: float | None = None
    step_text: str | None = None
    parser: str | None = None
    protocol: str = "heuristic"
    model: str = "heuristic"
    with_gold: bool = True
    usage: Usage = Field(default_factory=Usage)
    spent: Usage = Field(default_factory=Usage)
    raw_outputs: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    evidence: list[dict[str, Any]] = Field(default_factory=list)


class Trace(_Model):
    """One agent run on one task (docs/architecture.md, 'The trace model').

    Attributes:
        id: stable identifier (from the source, or derived from the file name).
        framework: the agent framework (``smolagents``, ``magentic-one``, ``ag2``, ...).
        benchmark: the benchmark or task suite (``gaia``, ``dabench``, ...), or ``""``.
        modality: ``text``, ``image`` or ``video``.
        agents: the system's agents; single-agent frameworks have one agent ``agent``.
        task: query, gold answer, options, task images.
        steps: the trajectory, in order; ``steps[i].index == i``.
        ground_truth: the labelled decisive error, if any.
        annotations: further labels (several failures, trace-level modes).
        final_answer: the system's final answer, when known.
        outcome: ``success``, ``failure`` or ``unknown``.
        source: where it was read from.
        extras: every other top-level field of the source, kept for round trips.
            ``extras["hidden"]`` (:data:`TRACE_HIDDEN_KEY`) holds trace-level fields that
            leak labels (MAD's ``note`` and ``other_data``, raw annotator votes); like
            :attr:`Step.hidden`, renderers and judges must never read it.
    """

    format: Literal["whenpro.trace/1"] = NATIVE_FORMAT
    id: str
    framework: str = "unknown"
    benchmark: str = ""
    modality: Modality = Modality.text
    agents: list[Agent] = Field(default_factory=list)
    task: Task = Field(default_factory=Task)
    steps: list[Step] = Field(default_factory=list)
    ground_truth: GroundTruth | None = None
    annotations: list[Annotation] = Field(default_factory=list)
    final_answer: str | None = None
    outcome: Outcome = Outcome.unknown
    source: Source = Field(default_factory=Source)
    extras: dict[str, Any] = Field(default_factory=dict)

    @property
    def injection(self) -> Injection | None:
        """The injection provenance (``extras["injection"]``, :mod:`~whenpro_core.trace.extras`)
        of a counterfactual, or ``None`` for a trace whenpro's injection did not make. A copy:
        write changes back with :meth:`set_injection`."""
        return Injection.read(self.extras.get(INJECTION_KEY))

    def set_injection(self, record: Injection | None) -> None:
        """Store ``record`` as ``extras["injection"]`` (only its set keys, in field order);
        ``None`` removes it."""
        if record is None:
            self.extras.pop(INJECTION_KEY, None)
        else:
            self.extras[INJECTION_KEY] = record.as_json()

    @property
    def env_run(self) -> EnvRun | None:
        """The built-in environment run this trace records (``extras["env"]``,
        :class:`~whenpro_core.trace.extras.EnvRun`), or ``None``. A copy: write changes
        back with :meth:`set_env_run`."""
        return EnvRun.read(self.extras.get(ENV_KEY))

    def set_env_run(self, record: EnvRun) -> None:
        """Store ``record`` as ``extras["env"]`` (only its set keys, in field order)."""
        self.extras[ENV_KEY] = record.as_json()

    def step_by_coord(self, coord: str) -> Step | None:
        """The first step whose coordinate equals ``coord`` (after stripping a leading
        ``step``/``round``/``turn`` word and whitespace), or ``None``."""
        want = normalize_coord(coord)
        for step in self.steps:
            if step.coord is not None and step.coord == want:
                return step
        return None

    def agent_ids(self) -> list[str]:
        """Agent ids in first-appearance order: declared agents, then step speakers."""
        seen: dict[str, None] = {a.id: None for a in self.agents}
        seen.update(dict.fromkeys(map(_agent_of, self.steps)))  # known ids keep their place
        return list(seen)

    def acting_agents(self) -> list[str]:
        """Agents that took at least one step, other than people and the environment
        (:data:`NON_AGENT_SPEAKERS`), in first-appearance order."""
        return [a for a in dict.fromkeys(s.agent for s in self.steps) if a.lower() not in NON_AGENT_SPEAKERS]

    @property
    def is_single_agent(self) -> bool:
        """True for single-agent frameworks, which the agent metric leaves out (docs/architecture.md,
        'Formats and step coordinates')."""
        return self.framework in SINGLE_AGENT_FRAMEWORKS


#: Characters of the task, final answer and gold kept in a listing row.
SUMMARY_TEXT = 160


class TraceSummary(_Model):
    """A cheap listing row for a trace in a dataset, built without decoding its
    trajectory when the format allows (docs/architecture.md, 'Formats and step coordinates', JSONL release).

    ``key`` selects the trace inside a multi-trace file (a JSONL row, 1-based, or a
    sample id). ``error`` is set, and the other fields may be empty, when the file failed
    to import; the walk carries on. ``step_count`` is ``None`` when counting would need a
    full decode. ``warnings`` are the trace's recoverable import problems
    (``Trace.extras["whenpro_warnings"]``, e.g. skipped bad lines). ``outcome`` (success,
    failure, unknown), ``task`` (the query's first :data:`SUMMARY_TEXT` characters, one
    line), ``final_answer`` and ``gold`` (cut the same way) and ``agent_count`` are
    ``None`` when the listing could not tell them cheaply.
    """

    id: str
    path: str
    key: str | None = None
    format: str = ""
    framework: str = ""
    benchmark: str = ""
    modality: str = ""
    step_count: int | None = None
    gt_mode: str | None = None
    gt_step: str | None = None
    error: str | None = None
    warnings: list[str] = Field(default_factory=list)
    outcome: str | None = None
    task: str | None = None
    final_answer: str | None = None
    gold: str | None = None
    agent_count: int | None = None
    #: Normalised paths of the sub-agent files merged into this trace (its steps'
    #: ``meta["subagent_path"]``): a folder walk does not list them again. Never dumped.
    merged: list[str] = Field(default_factory=list, exclude=True)

    def ref(self) -> str:
        """``path`` or ``path#key``: what :func:`whenpro_core.formats.load_trace` accepts."""
        return f"{self.path}#{self.key}" if self.key is not None else self.path
