"""The panel of form-only baselines of the label-leak audit (issue 14).

Each baseline reads a trace's judge view (:class:`~whenpro_core.audit.view.AuditTrace`)
and the corpus (:class:`~whenpro_core.audit.corpus.Corpus`), never an error's meaning,
and gives one suspicion score per candidate step (higher: more likely the labelled
step), or ``None`` when it has nothing to say about the trace. The audit picks the top
score (a tie is an even chance among the tied steps; abstaining is the random
baseline). The agent predicted is the picked step's agent, the mode
:meth:`Corpus.mode_for` of that step.

``family`` is ``form`` for baselines that find a step by how it is written, by what
differs from other runs or by where it disagrees with itself (:mod:`.checks`), ``prior``
for those that only know where labels usually are
(position priors, the majority mode). The build's detectability filter
(:mod:`whenpro_core.audit.detect`) uses the ``form`` family: ``pin`` is the lowest top
score that, when it is the only top step, counts as pinning that step.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from whenpro_core.audit.checks import call_mismatch, filled_mismatch, unchecked_verdict
from whenpro_core.audit.corpus import Corpus, position_bin
from whenpro_core.audit.form import (
    MARKUP,
    departures,
    digit_share,
    line_templates,
    log_length,
    trace_shapes,
    trace_tokens,
)
from whenpro_core.audit.view import AuditTrace

#: A baseline's scorer: (trace view, corpus) -> one score per candidate step, or None.
Scorer = Callable[[AuditTrace, Corpus], "Sequence[float] | None"]


@dataclass(frozen=True)
class Baseline:
    """One baseline of the panel: ``name`` (as the audit table shows it), ``family``
    (``form`` or ``prior``), the ``score`` function, the ``pin`` threshold (module
    docstring; ``None``: never pins) and whether it ``learns`` from the labels in the
    corpus (its scores change as labelled traces are added)."""

    name: str
    family: str
    score: Scorer
    pin: float | None = None
    learns: bool = False


def format_outlier(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """How far a step's shape (fences, tags, line labels, bullets, headings, emphasis,
    line count, casing, end mark) departs from the habits of its peers (the same
    agent's other steps): for each feature where the step breaks a habit most peers
    keep, the share of peers keeping it, doubled for markup (fences, tags, labels,
    headings), which is how a step is formatted rather than what it says."""
    if len(t.steps) < 3:
        return None
    shapes = trace_shapes(t)
    return [
        sum(
            share * (2.0 if key in MARKUP else 0.5)
            for key, share in departures(shapes[s.rank], [shapes[p.rank] for p in t.peers(s)]).items()
        )
        for s in t.steps
    ]


def form_classifier(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """The form of the labelled steps elsewhere in the dataset: naive-Bayes log-odds
    (:meth:`Corpus.form_odds`) of a step's shape tokens (its markup, style, kind and
    where it breaks its peers' habits), learned from the other traces' labels. A
    generator that writes its steps its own way is found here even when several steps
    of a run look alike."""
    out = []
    for tokens in trace_tokens(t):
        odds = corpus.form_odds(tokens, t)
        if odds is None:
            return None
        out.append(odds)
    return out


def _robust_outlier(values: Sequence[float], t: AuditTrace, floor: float) -> list[float] | None:
    """|value - median of peers| / max(1.4826 * MAD of peers, ``floor``), per step."""
    if len(t.steps) < 3:
        return None
    out = []
    for step in t.steps:
        peers = [values[p.rank] for p in t.peers(step)]
        mid = statistics.median(peers)
        mad = statistics.median(abs(v - mid) for v in peers)
        out.append(abs(values[step.rank] - mid) / max(1.4826 * mad, floor))
    return out


def length_outlier(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """How unusual a step's length is among its peers (log scale, robust z-score)."""
    return _robust_outlier([log_length(s.text) for s in t.steps], t, floor=0.25)


def digit_outlier(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """How unusual a step's share of digits is among its peers (robust z-score)."""
    return _robust_outlier([digit_share(s.text) for s in t.steps], t, floor=0.02)


def rarest_template(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """The share of a step's lines (numbers and quoted strings masked) that no other
    run of the corpus writes, tie-broken by how rare its other lines are."""
    if corpus.runs <= 1:
        return None
    out = []
    for step in t.steps:
        tpls = line_templates(step.text)
        if not tpls:
            out.append(0.0)
            continue
        runs = [corpus.line_runs(tpl, t) for tpl in tpls]
        novel = sum(r == 0 for r in runs) / len(runs)
        out.append(novel + 1.0 / (2.0 + statistics.mean(runs)) * 0.5)
    return out


def kind_change(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """1 for a step whose kind its agent uses nowhere else in the run (while the agent
    acts at least twice), else 0; ``None`` when no step is like that."""
    out = []
    for step in t.steps:
        mine = t.agent_steps(step.agent)
        others = {s.kind for s in mine if s.rank != step.rank}
        out.append(1.0 if len(mine) >= 2 and step.kind not in others else 0.0)
    return out if any(out) else None


def first_difference(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """Twin difference: the step where this run first departs from another run of the same task in the
    corpus (the latest such step over all twins: a twin injected earlier departs
    earlier); ``None`` without a twin."""
    best = -1
    for twin in corpus.twins(t):
        for a, b in zip(t.steps, twin.steps, strict=False):
            if (a.agent, a.kind, a.text) != (b.agent, b.kind, b.text):
                best = max(best, a.rank)
                break
    if best < 0:
        return None
    return [1.0 if s.rank == best else 0.0 for s in t.steps]


def _check(values: list[float]) -> list[float] | None:
    return values if any(values) else None


def call_text_mismatch(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """The step whose tool call disagrees most with its text (:func:`.checks.call_mismatch`)."""
    return _check(call_mismatch(t))


def expression_mismatch(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """The step whose filled-in expression disagrees most with the values the run computed
    for its symbols (:func:`.checks.filled_mismatch`)."""
    return _check(filled_mismatch(t))


def verdict_without_check(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """A verdict with no check by its agent before it (:func:`.checks.unchecked_verdict`)."""
    return _check(unchecked_verdict(t))


def first_step(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """The first candidate step."""
    return [-float(s.rank) for s in t.steps] if t.steps else None


def last_step(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """The last candidate step."""
    return [float(s.rank) for s in t.steps] if t.steps else None


def common_position(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """Steps in the relative position (tenths of the run) where other traces' labels
    most often are."""
    prior = corpus.position_prior(t)
    if not prior or not t.steps:
        return None
    return [float(prior[position_bin(s.rank, len(t.steps))]) for s in t.steps]


def majority_mode(t: AuditTrace, corpus: Corpus) -> list[float] | None:
    """Names no step (its step and agent are the random baseline); its mode, like every
    baseline's, is the corpus's guess, here with no step to read: the majority mode."""
    return None


#: The panel, in table order.
BASELINES: tuple[Baseline, ...] = (
    Baseline("format outlier", "form", format_outlier, pin=1.5),
    Baseline("form classifier", "form", form_classifier, pin=2.0, learns=True),
    Baseline("length outlier", "form", length_outlier, pin=4.0),
    Baseline("digit outlier", "form", digit_outlier, pin=4.0),
    Baseline("rarest template", "form", rarest_template, pin=0.75),
    Baseline("kind change", "form", kind_change, pin=1.0),
    Baseline("twin difference", "form", first_difference, pin=1.0),
    Baseline("call vs text", "form", call_text_mismatch),
    Baseline("filled vs symbolic", "form", expression_mismatch),
    Baseline("verdict unchecked", "form", verdict_without_check),
    Baseline("first step", "prior", first_step),
    Baseline("last step", "prior", last_step),
    Baseline("common position", "prior", common_position),
    Baseline("majority mode", "prior", majority_mode),
)


def baseline(name: str) -> Baseline:
    """The baseline called ``name``; KeyError when there is none."""
    for b in BASELINES:
        if b.name == name:
            return b
    raise KeyError(name)


__all__ = [
    "BASELINES",
    "Baseline",
    "Scorer",
    "baseline",
    "call_text_mismatch",
    "common_position",
    "digit_outlier",
    "expression_mismatch",
    "first_difference",
    "first_step",
    "form_classifier",
    "format_outlier",
    "kind_change",
    "last_step",
    "length_outlier",
    "majority_mode",
    "rarest_template",
    "verdict_without_check",
]
