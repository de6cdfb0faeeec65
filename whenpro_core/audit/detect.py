"""The detectability filter of ``whenpro build`` (issue 14): an injected trace that a
form-only baseline pins to its step gives itself away, and is dropped.

:class:`DetectabilityCheck` holds a corpus (:class:`~whenpro_core.audit.corpus.Corpus`)
of the successful seed runs and of the items accepted so far. :meth:`~DetectabilityCheck.check`
runs every ``form`` baseline of the panel (:data:`~whenpro_core.audit.baselines.BASELINES`)
on a new item: it *pins* the item when the labelled step is its only top step and its
score is above both the baseline's ``pin`` threshold and every score the baseline gives
a step of the same agent in the other seed runs (where nothing was injected: a step
that stands out no more than honest steps do is not given away). The item's own seed
run, and every item
built from that seed, are left out of what it is compared with (their group is the seed
id): the filter asks whether *other* runs give the step away, as a re-run of the same
system would. Position priors never pin (a label somewhere is always somewhere).

:func:`filter_items` checks items in a fixed order (so a build gives the same result
whatever order its attempts finished in), adding each accepted one to the corpus.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from whenpro_core.audit.baselines import BASELINES, Baseline
from whenpro_core.audit.corpus import Corpus
from whenpro_core.audit.run import top_steps
from whenpro_core.audit.view import audit_view, label_of
from whenpro_core.trace.model import Trace

#: The baselines that can pin an item (form family with a threshold).
PINNING: tuple[Baseline, ...] = tuple(b for b in BASELINES if b.family == "form" and b.pin is not None)


@dataclass(frozen=True)
class Pin:
    """A baseline that pins an item: its ``name`` and top ``score``."""

    name: str
    score: float

    def describe(self) -> str:
        """``"format outlier (2.0)"``."""
        return f"{self.name} ({self.score:.2f})"


class DetectabilityCheck:
    """Checks items against the seed runs and the items accepted so far (module
    docstring). ``seeds`` are ``(seed id, trace)`` pairs."""

    def __init__(self, seeds: Iterable[tuple[str, Trace]], panel: Sequence[Baseline] = PINNING) -> None:
        self.runs = [audit_view(trace, group=seed_id) for seed_id, trace in seeds]
        self.corpus = Corpus([], {}, self.runs)
        self.panel = panel
        #: (baseline, agent) -> [(score, seed id)] of the seed runs' own steps, highest first
        self.honest: dict[tuple[str, str], list[tuple[float, str]]] = {}
        for view in self.runs:
            for b in (b for b in panel if not b.learns):
                for step, score in zip(view.steps, b.score(view, self.corpus) or (), strict=False):
                    self.honest.setdefault((b.name, step.agent), []).append((float(score), view.group))
        for scores in self.honest.values():
            scores.sort(reverse=True)

    def pins(self, b: Baseline, agent: str, seed_id: str, score: float) -> bool:
        """True when ``score`` pins a step of ``agent`` for ``b``: at least its ``pin``
        and above the highest score it gives that agent's steps in seed runs other than
        ``seed_id`` (scored now for a baseline that learns from the items accepted so far)."""
        if b.pin is None or score < b.pin:
            return False
        if b.learns:
            scored = [
                max(
                    (x for st, x in zip(v.steps, b.score(v, self.corpus) or (), strict=False) if st.agent == agent),
                    default=None,
                )
                for v in self.runs
                if v.group != seed_id
            ]
            honest = max((x for x in scored if x is not None), default=None)
        else:
            honest = next((s for s, group in self.honest.get((b.name, agent), []) if group != seed_id), None)
        return honest is None or score > honest

    def check(self, trace: Trace, seed_id: str) -> list[Pin]:
        """The baselines that pin ``trace`` (built from seed ``seed_id``) to its labelled
        step; empty when none does or the trace has no labelled candidate step."""
        view = audit_view(trace, group=seed_id)
        label = label_of(trace, view)
        if label is None or not label.ranks:
            return []
        pins = []
        for b in self.panel:
            scores = b.score(view, self.corpus)
            top = top_steps(scores)
            if scores is None or len(top) != 1 or top[0] not in label.ranks:
                continue
            if self.pins(b, view.steps[top[0]].agent, seed_id, float(scores[top[0]])):
                pins.append(Pin(b.name, float(scores[top[0]])))
        return pins

    def accept(self, trace: Trace, seed_id: str) -> None:
        """Add an accepted item (and its label) to the corpus."""
        view = audit_view(trace, group=seed_id)
        self.corpus.add(view, label_of(trace, view), lines=False)


def filter_items(check: DetectabilityCheck, items: Iterable[tuple[str, str, Trace]]) -> dict[str, list[Pin]]:
    """Check ``(key, seed id, trace)`` items in the order given; returns key -> pins for
    the items pinned (the others are accepted into the corpus as they pass)."""
    pinned: dict[str, list[Pin]] = {}
    for key, seed_id, trace in items:
        pins = check.check(trace, seed_id)
        if pins:
            pinned[key] = pins
        else:
            check.accept(trace, seed_id)
    return pinned


__all__ = ["DetectabilityCheck", "PINNING", "Pin", "filter_items"]
