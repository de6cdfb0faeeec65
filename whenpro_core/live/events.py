"""The events of live following, receiving and attribution (docs/architecture.md, 'Data flow', ``live/``).

Every event is a frozen dataclass with a ``kind`` (its JSON name) and a ``trace_id``
(which trace it concerns; a followed file is one trace, the OTLP receiver serves many).
:func:`event_record` turns any of them into a JSON-able dict (``{"event": kind, ...}``),
the shape ``whenpro watch --json`` prints.

Where they come from:

* :class:`~whenpro_core.live.follow.FileFollower` (a growing file): :class:`StepAdded`,
  :class:`TraceReset`, :class:`HeaderUpdated`, :class:`LineError`, :class:`Idle`.
* :class:`~whenpro_core.live.store.LiveStore` (the OTLP receiver's traces):
  :class:`TraceStarted`, :class:`TraceUpdated`, :class:`TraceEvicted`,
  :class:`ExportRejected`.
* :class:`~whenpro_core.live.judge_live.LiveJudge`: :class:`StepJudged`,
  :class:`Suspect`, :class:`DecisiveError`, :class:`BudgetExhausted`,
  :class:`JudgeFailed`, :class:`RunEnded`, :class:`FinalVerdict`.

Step positions: ``index`` is the 0-based position in ``Trace.steps``; ``step`` is the
coordinate a user and a judge see (``Step.coord``). Content in events is untrusted trace
text: render it as plain text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from whenpro_core.trace.model import Attribution, Step, Usage

#: Characters of step content kept in a JSON record (the full step is on the event).
PREVIEW_CHARS = 200


# ------------------------------------------------------------------ following a file


@dataclass(frozen=True)
class StepAdded:
    """A new step at position ``step.index`` (steps arrive in order, with no gaps, after
    the last :class:`TraceReset`)."""

    kind: ClassVar[str] = "step_added"
    trace_id: str
    step: Step


@dataclass(frozen=True)
class TraceReset:
    """The trace changed under the steps already announced: steps ``[0, kept)`` are
    unchanged, later ones are discarded, and :class:`StepAdded` events follow for
    positions ``kept .. step_count - 1``. ``reason``: ``truncated`` (the file shrank),
    ``rotated`` (a new file under the same name), ``reordered`` (late OpenTelemetry
    spans that start before steps already shown, e.g. the root agent span, which is
    exported when it ends). A viewer keeps its cursor when it is below ``kept``."""

    kind: ClassVar[str] = "trace_reset"
    trace_id: str
    reason: str
    kept: int
    step_count: int


@dataclass(frozen=True)
class HeaderUpdated:
    """Trace-level ``fields`` (``outcome``, ``final_answer``, ``task``...) changed: a
    native header line arrived."""

    kind: ClassVar[str] = "header_updated"
    trace_id: str
    fields: tuple[str, ...]


@dataclass(frozen=True)
class LineError:
    """Line ``line`` (1-based, as an editor counts) could not be read: ``message`` says
    why, ``text`` is its start (control characters removed). The line is skipped."""

    kind: ClassVar[str] = "line_error"
    trace_id: str
    line: int
    message: str
    text: str = ""


@dataclass(frozen=True)
class Idle:
    """No new data for ``seconds`` (sent once per quiet spell, after ``idle_after``)."""

    kind: ClassVar[str] = "idle"
    trace_id: str
    seconds: float


# ------------------------------------------------------------------ the OTLP receiver


@dataclass(frozen=True)
class TraceStarted:
    """A trace id seen for the first time; ``path`` is its native file in the store."""

    kind: ClassVar[str] = "trace_started"
    trace_id: str
    path: str
    service: str | None
    step_count: int


@dataclass(frozen=True)
class TraceUpdated:
    """New spans of a known trace were stored. Steps ``[0, kept)`` are unchanged;
    ``added`` are the steps from position ``kept`` on (``kept`` below the previous
    count means late spans reordered the trace, see :class:`TraceReset`)."""

    kind: ClassVar[str] = "trace_updated"
    trace_id: str
    path: str
    step_count: int
    kept: int
    added: tuple[Step, ...] = ()


@dataclass(frozen=True)
class TraceEvicted:
    """A trace left memory (idle, or over the in-memory cap); it stays on disk at
    ``path`` and comes back if more spans arrive."""

    kind: ClassVar[str] = "trace_evicted"
    trace_id: str
    path: str


@dataclass(frozen=True)
class ExportRejected:
    """An export request was refused with HTTP ``status`` (400 malformed, 413 too
    large, 415 unsupported type or encoding...); nothing of it was stored.
    ``trace_id`` is empty."""

    kind: ClassVar[str] = "export_rejected"
    trace_id: str
    status: int
    reason: str


@dataclass(frozen=True)
class TraceSetAside:
    """Writing a trace failed (``reason``); its spans were saved to ``path`` (a spool
    file of set-aside spans; empty when that failed too) and the store went on with the
    other traces. More spans for the trace try again."""

    kind: ClassVar[str] = "trace_set_aside"
    trace_id: str
    path: str
    reason: str


@dataclass(frozen=True)
class ExportWarning:
    """An export was accepted with values changed to be storable (``message``: one
    line each, e.g. an attribute nested too deep stored as JSON text)."""

    kind: ClassVar[str] = "export_warning"
    trace_id: str
    message: str


# ------------------------------------------------------------------ live attribution


@dataclass(frozen=True)
class StepJudged:
    """The step-by-step judge answered about step ``step`` (one LLM call): whether it
    holds the decisive error, with the mode and reason it gave."""

    kind: ClassVar[str] = "step_judged"
    trace_id: str
    index: int
    step: str
    agent: str
    decisive: bool
    mode: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Suspect:
    """A step now suspected of holding the decisive error (``protocol`` says who
    thinks so). The heuristic sends one whenever its verdict changes; step-by-step
    sends one with each "yes"."""

    kind: ClassVar[str] = "suspect"
    trace_id: str
    index: int
    step: str
    agent: str
    mode: str | None
    reason: str | None
    protocol: str
    confidence: float | None = None


@dataclass(frozen=True)
class DecisiveError:
    """The first decisive verdict of a run (sent at most once per trace): step-by-step's
    first "yes", or a heuristic verdict whose confidence reaches the threshold.
    ``attribution`` is the verdict with the usage spent so far."""

    kind: ClassVar[str] = "decisive_error"
    trace_id: str
    index: int
    step: str
    agent: str
    mode: str | None
    reason: str | None
    protocol: str
    attribution: Attribution


@dataclass(frozen=True)
class BudgetExhausted:
    """Judging stopped: the ``limit`` (``calls``, ``tokens``, ``usd`` or ``context``,
    the model's context window) was reached; ``usage`` is what was spent."""

    kind: ClassVar[str] = "budget_exhausted"
    trace_id: str
    limit: str
    usage: Usage


@dataclass(frozen=True)
class JudgeFailed:
    """The judge's backend failed after its retries; judging of this trace stopped."""

    kind: ClassVar[str] = "judge_failed"
    trace_id: str
    message: str


@dataclass(frozen=True)
class RunEnded:
    """The run is over: ``reason`` is ``final_answer`` (a final-answer step), ``outcome``
    (a header set the outcome), ``root_span_ended`` (the root agent or chain span
    arrived), ``idle`` (no data for the idle timeout) or ``closed`` (the source was
    closed). ``outcome`` is the run's at its end (``success``, ``failure`` or ``unknown``:
    what the trace states, else its final answer judged against its gold answer,
    :func:`whenpro_core.live.judge_live.end_outcome`)."""

    kind: ClassVar[str] = "run_ended"
    trace_id: str
    reason: str
    step_count: int
    outcome: str = "unknown"


@dataclass(frozen=True)
class ReplayTried:
    """One step the counterfactual final pass tested (``watch --protocol counterfactual``):
    ``outcome`` is ``fixed``, ``still failing``, ``unchanged`` (no correction needed, no
    replay), ``undecided`` or ``error``; ``final_answer`` the replay's; ``detail`` one line
    (:class:`~whenpro_core.attribution.counterfactual.ReplayTry`)."""

    kind: ClassVar[str] = "replay_tried"
    trace_id: str
    step: str
    agent: str
    outcome: str
    final_answer: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class FinalVerdict:
    """The verdict of the full pass over the finished run (all-at-once with a model)."""

    kind: ClassVar[str] = "final_verdict"
    trace_id: str
    attribution: Attribution


FollowEvent = StepAdded | TraceReset | HeaderUpdated | LineError | Idle
StoreEvent = TraceStarted | TraceUpdated | TraceEvicted | ExportRejected | TraceSetAside | ExportWarning
JudgeEvent = (
    StepJudged | Suspect | DecisiveError | BudgetExhausted | JudgeFailed | RunEnded | ReplayTried | FinalVerdict
)
Event = FollowEvent | StoreEvent | JudgeEvent


# ------------------------------------------------------------------ folding events


@dataclass(frozen=True)
class StepsChange:
    """What a run of events did to the steps of a trace that showed ``shown`` steps:
    ``kept`` of them are unchanged (the rest were dropped or replaced: a truncated or
    rotated file, late spans reordering a received trace), ``grew``: steps were added
    or replaced (read the trace again), ``header``: trace fields changed."""

    kept: int
    grew: bool = False
    header: bool = False


def fold_steps(events: Iterable[Any], shown: int) -> StepsChange:
    """Fold ``events`` (in order) into one :class:`StepsChange` for a view showing
    ``shown`` steps: ``kept`` is the smallest ``kept`` of any :class:`TraceReset` or
    :class:`TraceUpdated` (else ``shown``); other events change no step."""
    kept, grew, header = shown, False, False
    for ev in events:
        if isinstance(ev, (TraceReset, TraceUpdated)):
            kept, grew = min(kept, ev.kept), True
        elif isinstance(ev, StepAdded):
            grew = True
        elif isinstance(ev, HeaderUpdated):
            header = True
    return StepsChange(kept, grew, header)


@dataclass
class LiveMarks:
    """What the live judge said so far about one trace, folded event by event
    (:meth:`apply`): the latest :class:`Suspect`, the latest :class:`DecisiveError`
    and the :class:`RunEnded`. A :class:`TraceReset` keeping the first ``kept`` steps
    drops a suspect or decisive step beyond them: that step is gone (the judge reads
    the new steps again)."""

    suspect: Suspect | None = None
    decisive: DecisiveError | None = None
    ended: RunEnded | None = None

    def apply(self, ev: Any) -> bool:
        """Fold ``ev`` in; True when the marks changed (other events change nothing)."""
        if isinstance(ev, Suspect):
            self.suspect = ev
        elif isinstance(ev, DecisiveError):
            self.decisive = ev
        elif isinstance(ev, RunEnded):
            self.ended = ev
        elif isinstance(ev, TraceReset):
            return self._forget_from(ev.kept)
        else:
            return False
        return True

    def _forget_from(self, kept: int) -> bool:
        before = (self.suspect, self.decisive)
        if self.suspect is not None and self.suspect.index >= kept:
            self.suspect = None
        if self.decisive is not None and self.decisive.index >= kept:
            self.decisive = None
        return before != (self.suspect, self.decisive)

    def events(self) -> list[Any]:
        """The marks as events (suspect, decisive, end), to hand to a view that opens
        the trace later (it folds them into its own :class:`LiveMarks`)."""
        return [e for e in (self.suspect, self.decisive, self.ended) if e is not None]


def _step_record(step: Step) -> dict[str, Any]:
    content = step.content or ""
    return {
        "index": step.index,
        "coord": step.coord,
        "agent": step.agent,
        "kind": step.kind,
        "content": content[:PREVIEW_CHARS] + ("…" if len(content) > PREVIEW_CHARS else ""),
        "tool_calls": [c.name for c in step.tool_calls],
        "error": step.error,
    }


def event_record(event: Any) -> dict[str, Any]:
    """A JSON-able dict for any live event: ``{"event": kind, <fields>}``. Steps are
    summarised (index, coord, agent, kind, the first 200 characters of content, tool
    names, error); attributions and usages are dumped whole."""
    out: dict[str, Any] = {"event": event.kind}
    for f in fields(event):
        value = getattr(event, f.name)
        if isinstance(value, Step):
            value = _step_record(value)
        elif isinstance(value, tuple) and value and isinstance(value[0], Step):
            value = [_step_record(s) for s in value]
        elif isinstance(value, (Attribution, Usage)):
            value = value.model_dump(mode="json")
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


__all__ = [
    "BudgetExhausted",
    "DecisiveError",
    "Event",
    "ExportRejected",
    "ExportWarning",
    "FinalVerdict",
    "FollowEvent",
    "HeaderUpdated",
    "Idle",
    "JudgeEvent",
    "JudgeFailed",
    "LineError",
    "LiveMarks",
    "ReplayTried",
    "RunEnded",
    "StepAdded",
    "StepJudged",
    "StepsChange",
    "StoreEvent",
    "Suspect",
    "TraceEvicted",
    "TraceReset",
    "TraceSetAside",
    "TraceStarted",
    "TraceUpdated",
    "event_record",
    "fold_steps",
]
