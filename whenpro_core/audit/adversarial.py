"""How reliably the learned attacker finds each labelled step, over repeated random
grouped splits: the score of an AFLite-style adversarial filter (issue 28; Le Bras et
al., "Adversarial Filters of Dataset Biases", 2020).

:func:`predictability` runs the learned attacker (:func:`.learned.learned_attacks`) over
``rounds`` random grouped splits of the labelled traces: each round shuffles the traces
(with a seed), which deals their groups (seed runs, and runs of one task) into other folds,
so each trace is scored out of fold by models trained on a different part of the others.
A trace's predictability under a feature set is the mean, over the rounds that scored it,
of the attacker's hit on its labelled step (1 when the labelled step is the one top pick,
the fraction of a tie). An item the form attacker finds in most splits is given away by
its form; one the structural prior (position, agent and kind only) finds in most splits
sits where labels sit. ``whenpro build`` drops such items
(:mod:`whenpro_core.dataset.build_adversarial`); the audit reads the same numbers.

Deterministic: the same samples, rounds and seed give the same result.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from whenpro_core.audit.learned import LearnedAttack, learned_attacks
from whenpro_core.audit.view import AuditTrace, Label

#: Random grouped splits per estimate.
ROUNDS = 4
#: The learners an estimate runs: the form attacker and the structural prior.
LEARNERS = ("form", "structural")


@dataclass
class Predictability:
    """Per trace id, per learner (``form``, ``structural``): the mean hit of the learner's
    out-of-fold pick on the labelled step over the ``rounds`` splits that scored it
    (0..1); ``accuracy``: each learner's mean step accuracy over the rounds."""

    rounds: int
    hits: dict[str, dict[str, float]] = field(default_factory=dict)
    accuracy: dict[str, float] = field(default_factory=dict)

    def of(self, trace_id: str, learner: str) -> float:
        """The predictability of ``trace_id`` under ``learner`` (0 when never scored)."""
        return self.hits.get(trace_id, {}).get(learner, 0.0)


def hit(scores: Sequence[float], ranks: Sequence[int]) -> float:
    """1 when the labelled step (one of ``ranks``) is the one top-scoring step, the
    fraction of the tie when several share the top score, 0 otherwise."""
    if not scores:
        return 0.0
    best = max(scores)
    top = [i for i, s in enumerate(scores) if s >= best - 1e-12]
    return sum(1 for r in set(ranks) if r in top) / len(top)


def predictability(
    samples: Sequence[tuple[AuditTrace, Label]],
    *,
    rounds: int = ROUNDS,
    seed: int = 0,
    learners: Sequence[str] = LEARNERS,
    against: Sequence[AuditTrace] = (),
) -> Predictability:
    """The predictability of each labelled trace of ``samples`` (module docstring): each
    view's ``group`` should be its seed run. Raises ImportError without scikit-learn (the
    ``audit`` extra); every trace scores 0 when there are too few to learn from."""
    sums: dict[str, dict[str, list[float]]] = {}
    accuracy: dict[str, list[float]] = {}
    for r in range(rounds):
        order = list(samples)
        random.Random(f"{seed}:{r}").shuffle(order)
        attacks: dict[str, LearnedAttack] = learned_attacks(order, against, feature_sets=tuple(learners))
        for name, attack in attacks.items():
            accuracy.setdefault(name, []).append(attack.step)
            for view, label in order:
                pick = attack.picks.get(view.id)
                if pick is not None:
                    sums.setdefault(view.id, {}).setdefault(name, []).append(hit(pick.scores, label.ranks))
    return Predictability(
        rounds,
        {i: {n: sum(v) / len(v) for n, v in by.items()} for i, by in sums.items()},
        {n: sum(v) / len(v) for n, v in accuracy.items()},
    )


__all__ = ["LEARNERS", "ROUNDS", "Predictability", "hit", "predictability"]
