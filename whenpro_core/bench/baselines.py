"""Exact baselines, 95% intervals and reliability of an attributor's confidence, for
measuring a protocol on labelled traces (``benchmarks/heuristic_accuracy.py``).

* The random baseline is exact, not sampled: per trace, the share of the candidate steps
  (the steps the attributor may name) that would score on an axis — exact step, step
  within ±1 / ±3, agent — scored with :func:`whenpro_core.trace.score.score_prediction`
  itself, so the baseline and the attributor obey the same rules.
* The majority-mode baseline always answers the most frequent gold mode of the subset
  (fitted on the labels it is scored on, so it is an optimistic bar).
* Intervals: Wilson score intervals for an attributor's accuracy; for the random baseline,
  the normal interval of a random picker's accuracy, ``mean ± 1.96·sqrt(Σ p(1-p))/n``.
* Reliability: confidence bins against the share of verdicts that are right, and the Brier
  score ``mean((confidence - right)²)``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from whenpro_core.trace.model import Attribution, Step, Trace
from whenpro_core.trace.score import score_prediction

#: z for a two-sided 95% interval.
Z95 = 1.959964
#: Tolerances of the step axis reported: exact, ±1, ±3.
TOLERANCES = (0, 1, 3)


@dataclass(frozen=True)
class RandomChance:
    """Per trace: chance that a uniformly random candidate scores on each axis.

    Attributes:
        agent: right agent (0..1).
        step: right step for each tolerance in :data:`TOLERANCES`, in that order (0..1).
    """

    agent: float
    step: tuple[float, ...]


def random_chance(trace: Trace, candidates: Sequence[Step]) -> RandomChance:
    """Exact chance of a random pick among ``candidates`` on ``trace`` (which must have a
    ground truth). ``candidates`` empty gives zeros."""
    if not candidates:
        return RandomChance(0.0, tuple(0.0 for _ in TOLERANCES))
    agent = 0.0
    steps = [0.0 for _ in TOLERANCES]
    for step in candidates:
        pred = Attribution(agent="agent" if trace.is_single_agent else step.agent, step=step.coord)
        for k, tol in enumerate(TOLERANCES):
            score = score_prediction(trace, pred, tolerance=tol)
            steps[k] += score.step
            if k == 0:
                agent += score.agent
    n = len(candidates)
    return RandomChance(agent / n, tuple(s / n for s in steps))


def wilson(hits: float, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a proportion ``hits / n`` (``(0, 0)`` when n is 0)."""
    if n <= 0:
        return 0.0, 0.0
    p = hits / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def chance_interval(chances: Sequence[float]) -> tuple[float, float]:
    """95% interval of a random picker's accuracy over traces with per-trace chances
    ``chances`` (a sum of independent Bernoullis; normal approximation)."""
    n = len(chances)
    if not n:
        return 0.0, 0.0
    mean = sum(chances) / n
    half = Z95 * math.sqrt(sum(p * (1 - p) for p in chances)) / n
    return max(0.0, mean - half), min(1.0, mean + half)


def most_common(values: Sequence[str]) -> tuple[str | None, int]:
    """The most frequent non-empty value (ties: alphabetical) and how many of ``values``
    it equals: the accuracy numerator of always answering it (the majority-agent and
    most-common-step priors)."""
    counts = Counter(v for v in values if v)
    if not counts:
        return None, 0
    value, hits = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return value, hits


def majority_mode(modes: Sequence[str]) -> tuple[str | None, int]:
    """The most frequent gold mode (ties: alphabetical) and how many traces it gets right."""
    return most_common([m.strip().upper() for m in modes if m])


#: Upper edges of the reliability bins (confidence in 0..1).
BIN_EDGES = (0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass(frozen=True)
class ReliabilityBin:
    """Verdicts whose confidence lies in ``(low, high]`` (the first bin includes 0)."""

    low: float
    high: float
    count: int
    right: int
    mean_confidence: float

    @property
    def accuracy(self) -> float | None:
        return self.right / self.count if self.count else None


def reliability(pairs: Sequence[tuple[float, bool]]) -> tuple[list[ReliabilityBin], float | None]:
    """Bins of (confidence, right) pairs by :data:`BIN_EDGES`, and the Brier score
    (``None`` when there is no pair)."""
    bins: list[ReliabilityBin] = []
    low = 0.0
    for high in BIN_EDGES:
        inside = [(c, r) for c, r in pairs if (low < c <= high) or (low == 0.0 and c == 0.0)]
        mean = sum(c for c, _ in inside) / len(inside) if inside else 0.0
        bins.append(ReliabilityBin(low, high, len(inside), sum(r for _, r in inside), mean))
        low = high
    brier = sum((c - r) ** 2 for c, r in pairs) / len(pairs) if pairs else None
    return bins, brier


def is_monotone(bins: Sequence[ReliabilityBin], min_count: int = 5) -> bool:
    """True when accuracy does not fall from one bin to the next, over bins holding at
    least ``min_count`` verdicts (a bin of two verdicts says nothing)."""
    accs = [b.accuracy for b in bins if b.count >= min_count and b.accuracy is not None]
    return all(a <= b for a, b in zip(accs, accs[1:], strict=False))
