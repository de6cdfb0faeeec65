"""What the audit baselines may learn from other traces: the line templates of every
run in the corpus (the dataset itself and any ``--against`` runs), runs of the same
task, and the labels of the *other* labelled traces (issue 14).

Everything a baseline looks up for a trace leaves out that trace's own group (itself,
or every trace built from the same seed run in the build filter), so a label never
predicts itself: leave-one-group-out.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from whenpro_core.audit.form import line_templates, template, trace_tokens
from whenpro_core.audit.view import AuditStep, AuditTrace, Label

#: Relative positions of labelled steps are counted in this many bins.
POSITION_BINS = 10


_K = TypeVar("_K")


def position_bin(rank: int, n: int) -> int:
    """The bin (0..POSITION_BINS-1) of a step at ``rank`` among ``n`` candidate steps."""
    return 0 if n <= 1 else min(POSITION_BINS - 1, rank * POSITION_BINS // n)


@dataclass
class _Tally(Generic[_K]):
    """Counts of keys (line templates, modes, agents, position bins, form tokens) that can
    be taken out again for one group."""

    total: Counter[_K] = field(default_factory=Counter)
    by_group: dict[str, Counter[_K]] = field(default_factory=dict)

    def add(self, group: str, keys: Iterable[_K]) -> None:
        counts = Counter(keys)
        self.total.update(counts)
        self.by_group.setdefault(group, Counter()).update(counts)

    def without(self, group: str) -> Counter[_K]:
        return self.total - self.by_group.get(group, Counter())

    def count(self, key: _K, group: str) -> int:
        return self.total[key] - self.by_group.get(group, Counter())[key]


class Corpus:
    """Runs and labels the baselines learn from (module docstring).

    ``traces`` are the audited dataset's traces (with ``labels`` by trace id for the
    labelled ones); ``against`` are further runs (successful seed runs, unlabelled).
    Line templates are counted over the ``against`` runs when there are any (what the
    system writes when nothing is injected), else over the dataset itself."""

    def __init__(
        self, traces: Iterable[AuditTrace], labels: dict[str, Label], against: Iterable[AuditTrace] = ()
    ) -> None:
        self.labels = labels
        self.lines: _Tally[str] = _Tally()
        self.positions: _Tally[int] = _Tally()
        self.modes: _Tally[str] = _Tally()
        self.agents: _Tally[str] = _Tally()
        self.mode_by_line: dict[str, _Tally[str]] = {}
        self.by_query: dict[str, list[AuditTrace]] = {}
        self.runs = 0
        self.count_lines_of = "against" if against else "dataset"
        #: form tokens of labelled steps, and of the other candidate steps (key ``#`` counts steps)
        self.tokens_labelled: _Tally[str] = _Tally()
        self.tokens_other: _Tally[str] = _Tally()
        for t in traces:
            self.add(t, labels.get(t.id), lines=self.count_lines_of == "dataset")
        for t in against:
            self.add(t, None, lines=True)

    def add(self, t: AuditTrace, label: Label | None, *, lines: bool = True) -> None:
        """Count one more run (its line templates when ``lines``, its label if it has one)."""
        if lines:
            self.runs += 1
            self.lines.add(t.group, {tpl for s in t.steps for tpl in line_templates(s.text)})
        if t.query:
            self.by_query.setdefault(t.query, []).append(t)
        picked = set(label.ranks) if label is not None else set()
        for step, tokens in zip(t.steps, trace_tokens(t), strict=True):
            side = self.tokens_labelled if step.rank in picked else self.tokens_other
            side.add(t.group, [*tokens, "#"])
        if label is None:
            return
        self.labels[t.id] = label
        if label.mode:
            self.modes.add(t.group, [label.mode])
        for rank in label.ranks[:1]:
            step = t.steps[rank]
            self.positions.add(t.group, [position_bin(rank, len(t.steps))])
            self.agents.add(t.group, [step.agent])
            if label.mode:
                for tpl in line_templates(step.text) | {template(step.text)}:
                    self.mode_by_line.setdefault(tpl, _Tally()).add(t.group, [label.mode])

    # ----------------------------------------------------------------- lookups

    def line_runs(self, tpl: str, t: AuditTrace) -> int:
        """How many counted runs (``runs``) outside ``t``'s group hold a line with template ``tpl``."""
        return self.lines.count(tpl, t.group)

    def position_prior(self, t: AuditTrace) -> Counter[int]:
        """Position bin -> labelled steps there, in other groups."""
        return self.positions.without(t.group)

    def majority_mode(self, t: AuditTrace) -> str | None:
        """The most common mode among other groups' labels (ties: the smaller code)."""
        counts = self.modes.without(t.group)
        return min(counts, key=lambda m: (-counts[m], m)) if counts else None

    def majority_agent(self, t: AuditTrace) -> str | None:
        """The agent most often labelled in other groups."""
        counts = self.agents.without(t.group)
        return min(counts, key=lambda a: (-counts[a], a)) if counts else None

    def mode_for(self, step: AuditStep, t: AuditTrace) -> str | None:
        """The mode a form-only reader guesses for ``step``: the mode of other groups'
        labelled steps written the same way (the whole step's template, else a vote of
        its lines' templates), else the majority mode."""
        whole = self.mode_by_line.get(template(step.text))
        if whole is not None and (counts := whole.without(t.group)):
            return min(counts, key=lambda m: (-counts[m], m))
        votes: Counter[str] = Counter()
        for tpl in line_templates(step.text):
            tally = self.mode_by_line.get(tpl)
            if tally is not None:
                votes.update(tally.without(t.group))
        if votes:
            return min(votes, key=lambda m: (-votes[m], m))
        return self.majority_mode(t)

    def form_odds(self, tokens: Iterable[str], t: AuditTrace) -> float | None:
        """Naive-Bayes log-odds that a step with these form ``tokens`` is a labelled one,
        learned from other groups' labelled and unlabelled steps (add-one smoothing);
        ``None`` when other groups hold no labelled step."""
        n_lab = self.tokens_labelled.count("#", t.group)
        n_oth = self.tokens_other.count("#", t.group)
        if not n_lab or not n_oth:
            return None
        score = 0.0
        for tok in tokens:
            p_lab = (self.tokens_labelled.count(tok, t.group) + 1) / (n_lab + 2)
            p_oth = (self.tokens_other.count(tok, t.group) + 1) / (n_oth + 2)
            score += math.log(p_lab / p_oth)
        return score

    def twins(self, t: AuditTrace) -> list[AuditTrace]:
        """Other runs of the same task (same query text), outside ``t``'s group."""
        return [o for o in self.by_query.get(t.query, []) if o.group != t.group]


__all__ = ["Corpus", "POSITION_BINS", "position_bin"]
