"""Scoring one prediction against a ground truth (docs/architecture.md, 'Scoring'; Who&When Pro ``score.py``).

Each axis is judged on its own: **agent** (case-insensitive exact match against the GT
agent, any of ``GroundTruth.agents`` and accepted alternatives; single-agent frameworks
expect ``agent``), **step** (exact coordinate after normalisation, round only for debate
and dylan, or within ±k positions for the Who&When-style tolerant metric), **mode**
(exact taxonomy code). A missing prediction scores False on every axis. Coordinates are
compared whole — the original Who&When code matched by substring (step "1" matched
"12"); that bug is not repeated here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.coords import normalize_coord, round_of
from whenpro_core.trace.frameworks import SINGLE_AGENT_FRAMEWORKS
from whenpro_core.trace.model import Attribution, GroundTruth, Trace


@dataclass(frozen=True)
class AxisScore:
    """Per-axis verdict of one prediction: ``agent``, ``step``, ``mode`` (bools), and
    ``joint`` (all three). ``mode`` is ``None`` when the GT has no mode (Who&When)."""

    agent: bool
    step: bool
    mode: bool | None

    @property
    def joint(self) -> bool:
        """All axes correct (the mode axis counts only when the GT has a mode)."""
        return self.agent and self.step and self.mode is not False

    def as_dict(self) -> JSONObject:
        """``{"agent": .., "step": .., "mode": .., "joint": ..}``."""
        return {**asdict(self), "joint": self.joint}


def _norm_agent(name: str | None) -> str:
    return (name or "").strip().lower()


def accepted_agents(trace: Trace, gt: GroundTruth) -> set[str]:
    """Every agent name that scores, lower-cased: the GT agent, ``agents``, accepted
    alternatives, and ``agent`` for single-agent frameworks."""
    names = {_norm_agent(gt.agent), *(_norm_agent(a) for a in gt.agents), *(_norm_agent(a) for a in gt.accepted.agent)}
    if trace.framework in SINGLE_AGENT_FRAMEWORKS:
        names.add("agent")
    names.discard("")
    return names


def accepted_steps(gt: GroundTruth) -> set[str]:
    """Every step coordinate that scores (normalised; rounds only when ``round_only``)."""
    steps = {s for s in [gt.step, *gt.accepted.step] if s not in (None, "")}
    if gt.round_only:
        return {round_of(s) for s in steps}
    return {normalize_coord(s) for s in steps}


def step_distance(trace: Trace, a: str, b: str) -> int | None:
    """How many distinct coordinates apart ``a`` and ``b`` are in trajectory order
    (0 when equal), or ``None`` when either is not a coordinate of the trace."""
    order: dict[str, int] = {}
    for step in trace.steps:
        if step.coord is not None and step.coord not in order:
            order[step.coord] = len(order)
    na, nb = normalize_coord(a), normalize_coord(b)
    if na not in order or nb not in order:
        return None
    return abs(order[na] - order[nb])


def score_prediction(
    trace: Trace, pred: Attribution | None, *, tolerance: int = 0, gt: GroundTruth | None = None
) -> AxisScore:
    """Score ``pred`` against the trace's ground truth (or ``gt``).

    Args:
        trace: the labelled trace (its framework decides single-agent handling).
        pred: the prediction; ``None`` counts as wrong on every axis.
        tolerance: ±k steps for the Who&When-style tolerant step metric (k=0 is exact).
        gt: score against this ground truth instead of ``trace.ground_truth``.

    Raises:
        ValueError: when there is no ground truth to score against.
    """
    gt = gt or trace.ground_truth
    if gt is None:
        raise ValueError(f"trace {trace.id} has no ground truth to score against")
    has_mode = bool(gt.mode)
    if pred is None:
        return AxisScore(False, False, False if has_mode else None)
    agent_ok = _norm_agent(pred.agent) in accepted_agents(trace, gt)
    step_ok = False
    if pred.step not in (None, ""):
        ok_steps = accepted_steps(gt)
        if gt.round_only:
            step_ok = round_of(pred.step) in ok_steps
        else:
            step_ok = normalize_coord(pred.step) in ok_steps
            if not step_ok and tolerance > 0:
                dists = [step_distance(trace, pred.step, s) for s in ok_steps]
                step_ok = any(d is not None and d <= tolerance for d in dists)
    mode_ok: bool | None = None
    if has_mode:
        modes = {m.strip().upper() for m in [gt.mode, *gt.accepted.mode] if m}
        mode_ok = (pred.mode or "").strip().upper() in modes
    return AxisScore(agent_ok, step_ok, mode_ok)


_PREFIXES = ("step ", "round ", "turn ")


def strict_coord(value: object) -> str:
    """A step coordinate under the official leaderboard's strict normalisation: stripped,
    lower-cased, one leading ``step ``/``round ``/``turn `` removed, nothing else
    (``"Step 03"`` -> ``"03"``, which does not match ``"3"``; ``"3."`` stays ``"3."``)."""
    if value is None or value == "":
        return ""
    out = str(value).strip().lower()
    for prefix in _PREFIXES:
        if out.startswith(prefix):
            return out[len(prefix) :].strip()
    return out


def strict_step_ok(gt: GroundTruth, pred: Attribution | None) -> bool:
    """The step axis with strict coordinates: the step as the judge wrote it
    (``step_text``, else ``step``) against the accepted coordinates; rounds only for
    ``round_only`` ground truths (the official debate/dylan rule)."""
    if pred is None:
        return False
    said = strict_coord(pred.step_text if pred.step_text not in (None, "") else pred.step)
    if not said:
        return False
    accepted = [strict_coord(s) for s in [gt.step, *gt.accepted.step] if s not in (None, "")]
    if gt.round_only:
        return said.split(".", 1)[0] in {a.split(".", 1)[0] for a in accepted}
    return said in set(accepted)
