"""Attribution run interactively (the TUI's ``a`` key; issue "Attribution ... in CLI
and TUI", item 6): which models and protocols to offer, where a protocol's progress sits
among the steps, and where a verdict points. The request and the run are the CLI's too
(:mod:`whenpro_core.attribution.request`).

UI-free: the TUI turns these plain values into widgets, and the same calls work from a
script. Protocols and their progress events are those of docs/architecture.md, 'Attribution protocols'
(:mod:`whenpro_core.attribution.run`, :class:`~whenpro_core.attribution.judge.Progress`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from whenpro_core.attribution.binary_search import max_calls
from whenpro_core.attribution.protocols import PROTOCOLS
from whenpro_core.attribution.request import offline_protocols
from whenpro_core.errors import ConfigError
from whenpro_core.llm.models import parse_model
from whenpro_core.safety.textsafe import plural
from whenpro_core.trace.coords import normalize_coord
from whenpro_core.trace.evidence import is_candidate
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.score import score_prediction
from whenpro_core.views.search import find_coord

if TYPE_CHECKING:
    from whenpro_core.attribution.judge import Progress
    from whenpro_core.config import Settings
    from whenpro_core.trace.score import AxisScore

#: A well-known model per provider, offered when that provider's key is configured.
SUGGESTED = {"openai": "openai:gpt-4.1", "anthropic": "anthropic:claude-sonnet-4-6"}


@dataclass(frozen=True)
class ModelChoice:
    """A model to offer: ``name`` (``provider:model``) and why it is offered."""

    name: str
    note: str


def model_choices(settings: Settings | None, previous: Iterable[Attribution] = ()) -> list[ModelChoice]:
    """Models to offer for an LLM protocol, without duplicates, in this order: the
    configured default model (``model`` setting), provider-qualified models named in the
    user's ``prices`` table, models of earlier verdicts on this trace, and a well-known
    model of each provider whose API key is set. ``heuristic`` is never offered (it is a
    protocol here, not a model)."""
    out: dict[str, str] = {}

    def add(name: str, note: str) -> None:
        try:
            spec = parse_model(name)
        except ConfigError:
            return
        if spec is not None and spec.name not in out:
            out[spec.name] = note

    if settings is not None:
        add(settings.model, "configured default")
        for key in settings.prices:
            if ":" in key:
                add(key, "from config prices")
    for verdict in previous:
        if verdict.model and verdict.model != "heuristic":
            add(verdict.model, "used on this trace")
    if settings is not None:
        if settings.openai_api_key is not None:
            add(SUGGESTED["openai"], "OPENAI_API_KEY is set")
        if settings.anthropic_api_key is not None:
            add(SUGGESTED["anthropic"], "ANTHROPIC_API_KEY is set")
    return [ModelChoice(name, note) for name, note in out.items()]


def protocol_notes(trace: Trace) -> dict[str, str]:
    """A short cost note per protocol for ``trace`` (calls counted over the agent steps
    a judge is asked about; docs/architecture.md, 'Attribution protocols')."""
    n = sum(1 for s in trace.steps if is_candidate(s))
    return {
        "heuristic": "offline, no model",
        "all-at-once": "1 call, the whole transcript",
        "step-by-step": f"up to {plural(n, 'call')}, one step at a time",
        "binary-search": f"at most {plural(max_calls(max(n, 1)), 'call')}, halving the range",
        "hybrid": "all-at-once for the agent, then its steps",
        "counterfactual": (
            "offline: replays a fix of each candidate step (a built-in system's run)"
            if "counterfactual" in offline_protocols(trace)
            else "a model fixes each candidate step and plays the rest"
        ),
    }


# --------------------------------------------------------------------------- progress


@dataclass(frozen=True)
class ProgressView:
    """Where a protocol is in the trace: ``focus`` is the step (index) being asked
    about (step-by-step, the last call of binary search), ``shaded`` the indexes of the
    range still searched (binary search; the focus step for the others), ``text`` what
    is being asked and ``call`` the 1-based call number. All-at-once reads everything,
    so it has no focus and nothing shaded."""

    focus: int | None
    shaded: frozenset[int]
    text: str
    call: int


def coord_indexes(trace: Trace) -> dict[str, list[int]]:
    """Normalised step coordinate -> the indexes of the steps that carry it."""
    out: dict[str, list[int]] = {}
    for step in trace.steps:
        if step.coord is not None:
            out.setdefault(normalize_coord(step.coord), []).append(step.index)
    return out


def progress_view(trace: Trace, progress: Progress, index: dict[str, list[int]] | None = None) -> ProgressView:
    """Map a :class:`Progress` event onto the steps of ``trace`` (``index``: a cached
    :func:`coord_indexes`)."""
    index = coord_indexes(trace) if index is None else index
    text = progress.message or f"call {progress.call}"
    if progress.protocol == "all-at-once" or not progress.asking:
        return ProgressView(None, frozenset(), text, progress.call)
    found = sorted(i for c in progress.asking for i in index.get(normalize_coord(c), ()))
    if not found:
        return ProgressView(None, frozenset(), text, progress.call)
    if len(progress.asking) == 1:
        return ProgressView(found[0], frozenset(found), text, progress.call)
    return ProgressView(None, frozenset(range(found[0], found[-1] + 1)), text, progress.call)


# --------------------------------------------------------------------------- verdicts


def verdict_step_index(trace: Trace, verdict: Attribution) -> int | None:
    """The index of the step a verdict names (``None`` when it names none, or a
    coordinate that is not in the trace)."""
    if not verdict.step:
        return None
    return find_coord(trace, verdict.step)


def verdict_score(trace: Trace, verdict: Attribution) -> AxisScore | None:
    """Per-axis comparison with the trace's ground truth (docs/architecture.md, 'Scoring'), ``None`` when the
    trace has none."""
    if trace.ground_truth is None:
        return None

    return score_prediction(trace, verdict)


__all__ = [
    "PROTOCOLS",
    "ModelChoice",
    "ProgressView",
    "coord_indexes",
    "model_choices",
    "progress_view",
    "protocol_notes",
    "verdict_score",
    "verdict_step_index",
]
