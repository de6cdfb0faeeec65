"""The adversarial filter of ``whenpro build`` (issue 28): before the release is selected,
the decisive items that a learned attacker finds reliably are left out.

AFLite-style (Le Bras et al. 2020): over :data:`~whenpro_core.audit.adversarial.ROUNDS`
random grouped splits of the kept pool (grouped by seed run and task, so twins never sit on
both sides), the audit's learned attacker is trained on part and scores the rest
(:func:`whenpro_core.audit.adversarial.predictability`): the form attacker (everything a
judge sees) and the structural prior (position, agent and kind only). A learner is *over
its line* when its mean accuracy is above the audit's, at p < :data:`ALPHA` (the audit's
exact one-sided binomial test): the structural prior more than :data:`STRUCTURAL_MARGIN`
above the pool's random chance, the form attacker more than :data:`FORM_MARGIN` above the
prior (or chance, if higher); a learner at chance on a small pool is not over it by luck.
For each learner over its line,
an item whose labelled step it finds in at least :data:`THRESHOLD` of the splits is
*learnable*: its form, or its place in the run, gives it away. Each pass leaves out the
learnable items, most reliably found first, at most :data:`DROP_SHARE` of each failure
mode's items and of each size's (candidate steps of the trace, in doublings) and never a
mode's last :data:`MIN_PER_MODE`, so the pool keeps its modes and its mix of short and long
runs; the next pass scores what is left, until no learner is over its line, nothing is
learnable, :data:`PASSES` passes or :data:`MOST_DROPPED` of the pool. Left-out items are dropped
with reason ``adversarial`` (and the hit rates in their detail); the manifest's
``run.adversarial`` counts them by learner and mode, with each pass's accuracy.

The release selected from what is left is checked the same way, up to
:data:`RELEASE_CHECKS` times (one pass each): a release is a subset, and one arith_team
release selected from a pool whose prior the filter had brought to 2 points above chance
was 15 points above it by the audit's structural prior. While a learner is over its line on
the release, its learnable items leave the pool and the release is selected again.

Not journalled: the filter runs on the kept pool each time a build finishes, and the same
pool and ``--seed`` give the same result, so a resumed build ends the same. Without
scikit-learn (the ``audit`` extra) it does not run and ``run.adversarial`` says why.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from whenpro_core.audit.adversarial import LEARNERS, ROUNDS, Predictability, predictability
from whenpro_core.audit.learned import available
from whenpro_core.audit.stats import binomial_p
from whenpro_core.audit.view import AuditTrace, Label


class Entry(Protocol):
    """What the filter reads of a kept item (a :class:`.journal.Entry`, which calls it)."""

    @property
    def key(self) -> str: ...

    @property
    def seed(self) -> str: ...

    @property
    def mode(self) -> str: ...


#: Share of the splits in which a learner must find an item's labelled step to drop it.
THRESHOLD = 0.5
#: Most of a failure mode's items, and of a size's, one pass leaves out (rounded to the nearest).
DROP_SHARE = 0.25
#: Items of a failure mode the filter never goes below.
MIN_PER_MODE = 3
#: Passes of scoring and dropping.
PASSES = 3
#: Most of the pool the filter leaves out in all.
MOST_DROPPED = 0.4
#: Points above the pool's random chance the structural prior may score (the audit's line
#: is 10; the release is a subset, so the filter aims lower).
STRUCTURAL_MARGIN = 0.05
#: Points above the structural prior (or chance) the form attacker may score (the audit's
#: line is 5).
FORM_MARGIN = 0.03
#: Significance of a learner over its line.
ALPHA = 0.05
#: Checks of the release itself (module docstring).
RELEASE_CHECKS = 2
#: What the manifest calls each learner.
NAMES = {"form": "the form attacker", "structural": "the structural prior"}

Views = dict[str, tuple[AuditTrace, Label | None]]
E = TypeVar("E", bound=Entry)


def filtered_release(
    pool: list[E], views: Views, seed: int, select: Callable[[list[E]], tuple[list[E], dict[str, str]]]
) -> tuple[list[E], dict[str, str], dict[str, str], dict[str, Any]]:
    """The release of ``pool`` (in a fixed order) through the filter (module docstring):
    ``select`` picks a release from entries and says why the others are left out. Returns
    the release, the keys left out with their reason (``adversarial`` for the filter's),
    the filter's details by key, and the manifest's ``run.adversarial`` section."""
    learnable, report = learnable_items(pool, views, seed)
    chosen, over = select([e for e in pool if e.key not in learnable])
    checks = []
    for check in range(RELEASE_CHECKS if report.get("filter") else 0):
        more, found = learnable_items(chosen, views, seed + 1 + check, passes=1)
        checks.append({k: found[k] for k in ("checked", "dropped", "accuracy")})
        if not more:
            break
        learnable |= more
        for part in ("by_learner", "by_mode"):
            report[part] = dict(sorted((Counter(report[part]) + Counter(found[part])).items()))
        chosen, over = select([e for e in pool if e.key not in learnable])
    if checks:
        report["release_checks"] = checks
        report["dropped"] = len(learnable)
    return chosen, over | dict.fromkeys(learnable, "adversarial"), learnable, report


def learnable_items(
    pool: Sequence[Entry], views: Views, seed: int, passes: int = PASSES
) -> tuple[dict[str, str], dict[str, Any]]:
    """The items of ``pool`` (in a fixed order; ``views``: key -> judge view and label of
    its staged trace) the filter leaves out in up to ``passes`` passes, key -> detail, and
    the manifest's ``run.adversarial`` section (module docstring)."""
    if not available():
        return {}, {"filter": False, "why": "scikit-learn is not installed (pip install 'whenpro[audit]')"}
    left = [e for e in pool if e.key in views and views[e.key][1] is not None]
    dropped: dict[str, str] = {}
    report: dict[str, Any] = {"filter": True, "checked": len(left), "threshold": THRESHOLD, "rounds": ROUNDS}
    accuracy: dict[str, list[float]] = {name: [] for name in (*LEARNERS, "random")}
    by_learner: Counter[str] = Counter()
    most = math.floor(MOST_DROPPED * len(left))
    for p in range(passes):
        samples = [(dataclasses.replace(views[e.key][0], group=e.seed), _label(views, e)) for e in left]
        scored = predictability(samples, seed=seed * PASSES + p)
        chance = sum(len(label.ranks) / len(view.steps) for view, label in samples) / max(1, len(samples))
        for name in LEARNERS:
            accuracy[name].append(round(scored.accuracy.get(name, 0.0), 4))
        accuracy["random"].append(round(chance, 4))
        over = over_line(scored.accuracy, chance, len(samples))
        now = _balanced_drops(left, views, scored, over, most - len(dropped))
        if not now:
            break
        for key, (learner, detail) in now.items():
            dropped[key] = detail
            by_learner[learner] += 1
        left = [e for e in left if e.key not in now]
    modes = Counter(e.mode for e in pool if e.key in dropped)
    report |= {
        "dropped": len(dropped),
        "by_learner": dict(sorted(by_learner.items())),
        "by_mode": dict(sorted(modes.items())),
        "accuracy": accuracy,
    }
    return dropped, report


def over_line(accuracy: dict[str, float], chance: float, n: int) -> tuple[str, ...]:
    """The learners whose mean ``accuracy`` over ``n`` traces is over their line (module
    docstring) at the random ``chance``: the structural prior above chance by
    :data:`STRUCTURAL_MARGIN`, the form attacker above the prior (or chance) by
    :data:`FORM_MARGIN`, each at p < :data:`ALPHA` against what it is measured from."""
    prior = accuracy.get("structural", 0.0)
    base = {"structural": chance, "form": max(prior, chance)}
    margin = {"structural": STRUCTURAL_MARGIN, "form": FORM_MARGIN}
    return tuple(
        name
        for name in LEARNERS
        if accuracy.get(name, 0.0) > base[name] + margin[name]
        and binomial_p(accuracy.get(name, 0.0) * n, n, base[name]) < ALPHA
    )


def _label(views: Views, entry: Entry) -> Label:
    label = views[entry.key][1]
    assert label is not None  # learnable_items keeps only labelled items
    return label


def size_of(view: AuditTrace) -> int:
    """The size class of a trace: its candidate steps in doublings (1, 2, 3-4, 5-8, ...)."""
    return math.ceil(math.log2(max(1, len(view.steps))))


def _balanced_drops(
    left: Sequence[Entry], views: Views, scored: Predictability, learners: tuple[str, ...], most: int
) -> dict[str, tuple[str, str]]:
    """Key -> (learner, detail) of the items of ``left`` learnable by ``learners`` that one
    pass leaves out (module docstring; at most ``most``), the most reliably found first."""
    found = []
    for order, e in enumerate(left):
        if not learners:
            break
        trace_id = views[e.key][0].id
        rates = {name: scored.of(trace_id, name) for name in LEARNERS}
        learner = max(learners, key=lambda n: rates[n])
        if rates[learner] >= THRESHOLD:
            found.append((-rates[learner], order, e, learner, rates))
    modes = Counter(e.mode for e in left)
    sizes = Counter(size_of(views[e.key][0]) for e in left)
    room_mode = {m: min(_share(n), n - MIN_PER_MODE) for m, n in modes.items()}
    room_size = {s: _share(n) for s, n in sizes.items()}
    out: dict[str, tuple[str, str]] = {}
    for _, _, e, learner, rates in sorted(found, key=lambda f: (f[0], f[1])):
        size = size_of(views[e.key][0])
        if len(out) < most and room_mode[e.mode] > 0 and room_size[size] > 0:
            room_mode[e.mode] -= 1
            room_size[size] -= 1
            out[e.key] = (learner, _detail(rates, scored.rounds))
    return out


def _share(n: int) -> int:
    """:data:`DROP_SHARE` of ``n`` items, rounded to the nearest."""
    return math.floor(DROP_SHARE * n + 0.5)


def _detail(rates: dict[str, float], rounds: int) -> str:
    """``"a learned attacker finds its labelled step: the form attacker in 83% of 6 random
    splits, the structural prior in 17%"``."""
    said = ", ".join(f"{NAMES[name]} in {rates[name]:.0%}" for name in LEARNERS)
    return f"a learned attacker finds its labelled step out of fold ({rounds} random grouped splits): {said}"


__all__ = [
    "ALPHA",
    "DROP_SHARE",
    "FORM_MARGIN",
    "MIN_PER_MODE",
    "MOST_DROPPED",
    "PASSES",
    "STRUCTURAL_MARGIN",
    "THRESHOLD",
    "RELEASE_CHECKS",
    "filtered_release",
    "learnable_items",
    "over_line",
    "size_of",
]
