"""Chance levels and intervals for the label-leak audit (issue 14).

The random baseline is exact, not sampled: for a trace, the chance that a uniformly
random candidate step is the labelled step (step), has an accepted agent (agent), and
``1 / len(taxonomy)`` for the mode. Intervals are Wilson score intervals (95%) on a
mean of per-trace scores in 0..1 (a tie among k steps scores 1/k, so successes may be
fractional; the formula takes them as they are). The verdict tests a baseline against
chance exactly (:func:`beats_chance`, :func:`binomial_p`), which a few traces need; the
learned form attacker is tested against the structural prior on the same traces by a
paired sign-flip test (:func:`paired_p`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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


def beats_chance(successes: float, n: int, chance: float, alpha: float = 0.025) -> bool:
    """Whether ``successes`` (a sum of per-trace scores; ties count their fraction, rounded
    down here) of ``n`` traces are more than a random pick with the mean ``chance`` gives:
    the exact one-sided binomial test, ``P(X >= successes | n, chance) < alpha``, which is
    the lower end of the exact (Clopper-Pearson) 95% interval lying above ``chance``. Per-trace
    chances vary, and the binomial of their mean is the wider law, so the test errs
    towards no leak. Wilson's interval is near-exact for many traces but not for a few:
    one trace a baseline gets right has a Wilson interval from 21%, which called a dataset
    of one trace leaky at a 10% chance; its exact tail there is 10%."""
    k = math.floor(successes + 1e-9)
    if n <= 0 or k <= 0:
        return False
    if chance <= 0.0:
        return True
    if chance >= 1.0:
        return False
    return _binomial_tail(k, n, chance) < alpha


def binomial_p(successes: float, n: int, chance: float) -> float:
    """One-sided p-value of ``successes`` (rounded down) of ``n`` traces against a random
    pick with the mean ``chance``: ``P(X >= successes | Binomial(n, chance))`` (1.0 for no
    success or no trace)."""
    k = math.floor(successes + 1e-9)
    if n <= 0 or k <= 0 or chance >= 1.0:
        return 1.0
    if chance <= 0.0:
        return 0.0
    return _binomial_tail(k, n, chance)


#: Random sign flips of the paired test when exact enumeration is too long (seeded).
PAIRED_DRAWS = 20000


def paired_p(a: Sequence[float], b: Sequence[float], seed: int = 0) -> float:
    """One-sided p-value that per-trace scores ``a`` are higher than ``b`` on the same
    traces: a sign-flip permutation test of the mean difference (exact for up to 16
    traces that differ, else :data:`PAIRED_DRAWS` seeded draws; ``(1 + hits) / (1 + draws)``).
    1.0 when no trace differs."""
    import numpy as np

    d = np.asarray([x - y for x, y in zip(a, b, strict=True) if x != y], dtype=np.float64)
    if d.size == 0:
        return 1.0
    observed = d.sum() - 1e-12
    if d.size <= 16:
        signs = np.array([[1 - 2 * ((i >> j) & 1) for j in range(d.size)] for i in range(2**d.size)])
        return float(np.mean(signs @ d >= observed))
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(PAIRED_DRAWS, d.size))
    return float((1 + np.sum(signs @ d >= observed)) / (1 + PAIRED_DRAWS))


def _binomial_tail(k: int, n: int, p: float) -> float:
    """``P(X >= k)`` for ``X ~ Binomial(n, p)``, summed in log space (any ``n``)."""
    log_p, log_q = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    terms = [base - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q for i in range(k, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * math.fsum(math.exp(t - top) for t in terms))


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


__all__ = ["PAIRED_DRAWS", "Z95", "beats_chance", "binomial_p", "paired_p", "random_chance", "wilson"]
