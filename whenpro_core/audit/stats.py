"""Chance levels and intervals for the label-leak audit (issue 14).

The random baseline is exact, not sampled: for a trace, the chance that a uniformly
random candidate step is the labelled step (step), has an accepted agent (agent), and
``1 / len(taxonomy)`` for the mode. Intervals are Wilson score intervals (95%) on a
mean of per-trace scores in 0..1 (a tie among k steps scores 1/k, so successes may be
fractional; the formula takes them as they are).
"""

from __future__ import annotations

import math

from whenpro_core.audit.view import AuditTrace, Label

#: z for a two-sided 95% interval.
Z95 = 1.959963984540054


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval ``(low, high)`` of a proportion of ``successes`` in
    ``n`` trials, fractions 0..1; ``(0.0, 1.0)`` when ``n`` is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = min(max(successes / n, 0.0), 1.0)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def random_chance(view: AuditTrace, label: Label, modes: int) -> dict[str, float]:
    """Exact chance that a uniformly random candidate step of ``view`` is right:
    ``{"step", "agent", "mode", "joint"}``; ``mode`` is ``1/modes`` (1.0 when the label
    has no mode, as the mode axis then does not count)."""
    n = len(view.steps)
    if n == 0:
        return {"step": 0.0, "agent": 0.0, "mode": 1.0 / modes if label.mode else 1.0, "joint": 0.0}
    p_mode = 1.0 / modes if label.mode else 1.0
    step = len(label.ranks) / n
    agent = sum(label.agent_ok(s.agent) for s in view.steps) / n
    joint = sum(label.agent_ok(view.steps[r].agent) for r in label.ranks) / n * p_mode
    return {"step": step, "agent": agent, "mode": p_mode, "joint": joint}


__all__ = ["Z95", "random_chance", "wilson"]
