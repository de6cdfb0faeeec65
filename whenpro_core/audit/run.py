"""Scoring the panel of form-only baselines against a dataset's ground truth: the
label-leak audit (issue 14).

:func:`audit_traces` takes loaded traces (and optional corpus runs), builds the judge
views (:mod:`.view`) and the corpus (:mod:`.corpus`), runs every baseline of
:data:`~whenpro_core.audit.baselines.BASELINES` and returns an :class:`AuditResult`:
per baseline the mean step, agent, mode and joint accuracy (fractions 0..1) with a 95%
Wilson interval on step accuracy, the exact random baseline, the same per failure mode
and per framework, and the verdict. :func:`audit_dataset` reads a dataset path first.

Axes: **step** over every labelled trace; **agent** over multi-agent traces (all traces
when there is none, where every pick is trivially right); **mode** over traces whose
label has a mode (``None`` when none has one: Who&When); **joint** agent, step and mode
(when labelled) all right. A baseline that abstains on a trace scores the random
chance there (its mode guess is still made: the majority mode).

The learned attacks (:mod:`.learned`, when scikit-learn is installed and there are
enough traces) join the panel as ``learned form`` and ``structural prior``: their
out-of-fold picks are scored like any baseline's.

Verdict: *leaky* when (a) some panel baseline's step accuracy beats random by more than
:data:`LEAK_MARGIN` and an exact binomial test says chance does not explain it (the lower
end of the exact 95% interval above random, :func:`~.stats.beats_chance`); or (b) the
structural prior beats random by more than :data:`PRIOR_MARGIN` with the one-sided exact
binomial p-value below :data:`ALPHA`; or (c) the learned form attacker beats the
structural prior by more than :data:`FORM_MARGIN` with the one-sided paired sign-flip
p-value (:func:`~.stats.paired_p`, same traces) below :data:`ALPHA`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from whenpro_core.audit.baselines import BASELINES, Baseline
from whenpro_core.audit.corpus import Corpus
from whenpro_core.audit.learned import MIN_TRACES, LearnedAttack, available, learned_attacks
from whenpro_core.audit.stats import beats_chance, binomial_p, paired_p, random_chance, wilson
from whenpro_core.audit.view import AuditTrace, Label, audit_view, label_of
from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.formats import load_trace, walk
from whenpro_core.formats.build_meta import provenance_seeds
from whenpro_core.safety.textsafe import plural
from whenpro_core.trace.model import Trace
from whenpro_core.trace.taxonomy import taxonomy_for

#: How far above random (step accuracy, fraction) a baseline must be to call a dataset leaky.
LEAK_MARGIN = 0.10
#: How far above random the structural prior must be (and at p < ALPHA) to call a dataset leaky.
PRIOR_MARGIN = 0.10
#: How far above the structural prior the learned form attacker must be (at p < ALPHA).
FORM_MARGIN = 0.05
#: Significance level of the learned attacker's one-sided tests.
ALPHA = 0.05
#: Names of the learned attacks in the table (:mod:`.learned`).
LEARNED_FORM = "learned form"
STRUCTURAL_PRIOR = "structural prior"
LEARNED_NAMES = {"form": LEARNED_FORM, "structural": STRUCTURAL_PRIOR}
AXES = ("step", "agent", "mode", "joint")


@dataclass
class Tally:
    """Sums of per-trace scores: ``n`` traces, ``n_agent`` counted on the agent axis,
    ``n_mode`` on the mode axis, and the sums per axis."""

    n: int = 0
    n_agent: int = 0
    n_mode: int = 0
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(AXES, 0.0))
    #: per-trace step scores by trace id (for the paired test of the learned attacker)
    steps: dict[str, float] = field(default_factory=dict)

    def add(self, scores: dict[str, float], *, agent_counts: bool, has_mode: bool, trace: str = "") -> None:
        self.n += 1
        self.steps[trace or str(self.n)] = scores["step"]
        self.sums["step"] += scores["step"]
        self.sums["joint"] += scores["joint"]
        if agent_counts:
            self.n_agent += 1
            self.sums["agent"] += scores["agent"]
        if has_mode:
            self.n_mode += 1
            self.sums["mode"] += scores["mode"]

    def rates(self) -> dict[str, float | None]:
        """Mean per axis (``None`` for an axis no trace counts on)."""
        denom = {"step": self.n, "agent": self.n_agent, "mode": self.n_mode, "joint": self.n}
        return {a: (self.sums[a] / denom[a] if denom[a] else None) for a in AXES}

    def interval(self) -> tuple[float, float]:
        """95% Wilson interval of step accuracy."""
        return wilson(self.sums["step"], self.n)

    def p_random(self, chance: float) -> float:
        """One-sided exact p-value of step accuracy against the mean random ``chance``."""
        return binomial_p(self.sums["step"], self.n, chance)


@dataclass
class GroupResult:
    """The audit of one slice of the dataset (all traces, one mode, one framework):
    ``random`` and each baseline's :class:`Tally`, by baseline name."""

    traces: int = 0
    random: Tally = field(default_factory=Tally)
    baselines: dict[str, Tally] = field(default_factory=dict)

    def leaks(self) -> list[str]:
        """Names of the baselines that make the slice leaky by the verdict rule (module
        docstring): a panel baseline or the structural prior above random, the learned
        form attacker above the structural prior."""
        base = self.random.rates()["step"] or 0.0
        out = []
        for name, tally in self.baselines.items():
            step = tally.rates()["step"] or 0.0
            if name == LEARNED_FORM:
                if self.form_over_prior():
                    out.append(name)
            elif name == STRUCTURAL_PRIOR:
                if step - base > PRIOR_MARGIN and tally.p_random(base) < ALPHA:
                    out.append(name)
            elif step - base > LEAK_MARGIN and beats_chance(tally.sums["step"], tally.n, base):
                out.append(name)
        return out

    def p_form_over_prior(self) -> float | None:
        """One-sided paired p-value that the learned form attacker beats the structural
        prior on the same traces (:func:`~.stats.paired_p`); ``None`` without both."""
        form, prior = self.baselines.get(LEARNED_FORM), self.baselines.get(STRUCTURAL_PRIOR)
        if form is None or prior is None:
            return None
        ids = sorted(form.steps)
        return paired_p([form.steps[i] for i in ids], [prior.steps.get(i, 0.0) for i in ids])

    def form_over_prior(self) -> bool:
        """The learned form attacker beats the structural prior by more than
        :data:`FORM_MARGIN` at p < :data:`ALPHA`."""
        form, prior = self.baselines.get(LEARNED_FORM), self.baselines.get(STRUCTURAL_PRIOR)
        if form is None or prior is None:
            return False
        gap = (form.rates()["step"] or 0.0) - (prior.rates()["step"] or 0.0)
        p = self.p_form_over_prior()
        return gap > FORM_MARGIN and p is not None and p < ALPHA


@dataclass
class AuditResult:
    """The whole audit: ``overall``, ``by_mode`` and ``by_framework`` slices, traces
    ``skipped`` (unlabelled, or files that failed to import), the one-line errors of
    those that failed to import (``unreadable``; ``against_unreadable`` for the corpus),
    corpus ``runs`` and the ``leaky``
    verdict with the ``leaking`` baselines."""

    overall: GroupResult
    by_mode: dict[str, GroupResult]
    by_framework: dict[str, GroupResult]
    skipped: int = 0
    against: int = 0
    unreadable: list[str] = field(default_factory=list)
    against_unreadable: list[str] = field(default_factory=list)
    #: the learned attacks by feature set (``form``, ``structural``); empty when not run
    learned: dict[str, LearnedAttack] = field(default_factory=dict)
    #: why the learned attacker did not run (one line), or ``None``
    learned_note: str | None = None

    @property
    def leaking(self) -> list[str]:
        """Baselines that make the dataset leaky."""
        return self.overall.leaks()

    @property
    def leaky(self) -> bool:
        """The verdict (module docstring)."""
        return bool(self.leaking)


# --------------------------------------------------------------------------- one trace


def top_steps(scores: Sequence[float] | None) -> list[int]:
    """The ranks with the highest score; empty when the baseline abstains (``None``, or
    every step scored alike)."""
    if not scores or max(scores) == min(scores):
        return []
    best = max(scores)
    return [i for i, s in enumerate(scores) if s == best]


def score_pick(
    view: AuditTrace, label: Label, picks: list[int], corpus: Corpus, chance: dict[str, float]
) -> dict[str, float]:
    """Expected scores of picking evenly among ``picks`` (the random ``chance`` on step
    and agent when empty, with the majority mode)."""
    if not picks:
        mode_ok = float(label.mode is None or corpus.majority_mode(view) == label.mode)
        joint = chance["joint"] / (chance["mode"] or 1.0) * mode_ok
        return {"step": chance["step"], "agent": chance["agent"], "mode": mode_ok, "joint": joint}
    sums = dict.fromkeys(AXES, 0.0)
    for rank in picks:
        step = view.steps[rank]
        step_ok = rank in label.ranks
        agent_ok = label.agent_ok(step.agent)
        mode_ok = label.mode is None or corpus.mode_for(step, view) == label.mode
        sums["step"] += step_ok
        sums["agent"] += agent_ok
        sums["mode"] += mode_ok
        sums["joint"] += step_ok and agent_ok and mode_ok
    return {a: v / len(picks) for a, v in sums.items()}


def trace_scores(
    view: AuditTrace, label: Label, corpus: Corpus, modes: int, panel: Sequence[Baseline] = BASELINES
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The random chance and each baseline's expected scores on one labelled trace."""
    chance = random_chance(view, label, modes)
    out = {b.name: score_pick(view, label, top_steps(b.score(view, corpus)), corpus, chance) for b in panel}
    return chance, out


# --------------------------------------------------------------------------- the audit


def audit_traces(
    traces: Iterable[Trace],
    against: Iterable[Trace] = (),
    *,
    modes: int = 17,
    skipped: int = 0,
    panel: Sequence[Baseline] = BASELINES,
    groups: Mapping[str, str] | None = None,
    learn: bool = True,
) -> AuditResult:
    """Audit labelled ``traces`` (unlabelled ones only join the corpus) with ``against``
    runs as further corpus; ``modes`` is the taxonomy's size (the random mode chance).
    ``groups`` maps a trace id to its seed run (from a build's provenance; traces of one
    seed run are one group of the learned attacker's cross-validation); ``learn``: run
    the learned attacker and the structural prior (:mod:`.learned`) when scikit-learn is
    installed."""
    views: list[tuple[AuditTrace, Label]] = []
    extra: list[AuditTrace] = []
    labels: dict[str, Label] = {}
    for trace in traces:
        view = audit_view(trace, group=(groups or {}).get(trace.id))
        label = label_of(trace, view)
        if label is None:
            extra.append(view)
            skipped += 1
            continue
        views.append((view, label))
        labels[view.id] = label
    runs = [audit_view(t, group=f"against:{t.id}") for t in against]
    corpus = Corpus([v for v, _ in views] + extra, labels, runs)
    attacks, note = _learned(views, runs) if learn else ({}, None)
    overall = GroupResult()
    by_mode: dict[str, GroupResult] = {}
    by_framework: dict[str, GroupResult] = {}
    for view, label in views:
        chance, panel_scores = trace_scores(view, label, corpus, modes, panel)
        scores = {}
        for feature_set, attack in attacks.items():
            pick = attack.picks.get(view.id)
            scores[LEARNED_NAMES[feature_set]] = score_pick(
                view, label, list(pick.picks) if pick else [], corpus, chance
            )
        scores.update(panel_scores)
        slices = [
            overall,
            by_mode.setdefault(label.mode or "—", GroupResult()),
            by_framework.setdefault(view.framework or "—", GroupResult()),
        ]
        for group in slices:
            _add(group, chance, scores, label, view.id)
    _agent_fallback([overall, *by_mode.values(), *by_framework.values()])
    return AuditResult(
        overall,
        dict(sorted(by_mode.items())),
        dict(sorted(by_framework.items())),
        skipped=skipped,
        against=len(runs),
        learned=attacks,
        learned_note=note,
    )


def _learned(
    views: list[tuple[AuditTrace, Label]], runs: list[AuditTrace]
) -> tuple[dict[str, LearnedAttack], str | None]:
    """The learned attacks, or none and the one line that says why."""
    if not available():
        return {}, "the learned attacker and the structural prior need scikit-learn: pip install whenpro[audit]"
    attacks = learned_attacks(views, runs)
    if not attacks:
        return {}, (
            f"the learned attacker needs at least {MIN_TRACES} labelled traces with a labelled candidate step "
            "in 2 or more seed runs or tasks; it did not run"
        )
    return attacks, None


def _add(
    group: GroupResult, chance: dict[str, float], scores: dict[str, dict[str, float]], label: Label, trace: str
) -> None:
    group.traces += 1
    kw = dict(agent_counts=not label.single_agent, has_mode=label.mode is not None)
    group.random.add(chance, **kw, trace=trace)
    for name, s in scores.items():
        group.baselines.setdefault(name, Tally()).add(s, **kw, trace=trace)


def _agent_fallback(groups: list[GroupResult]) -> None:
    """A slice with no multi-agent trace reports agent accuracy over all its traces
    (every pick names the only agent: 1.0 for the panel and random alike)."""
    for group in groups:
        for tally in [group.random, *group.baselines.values()]:
            if tally.n_agent == 0 and tally.n:
                tally.n_agent = tally.n
                tally.sums["agent"] = float(tally.n)


def audit_dataset(dataset: str | Path, against: str | Path | None = None) -> AuditResult:
    """Audit the dataset at ``dataset`` (anything whenpro reads: a built dataset, a Who&When
    Pro release in either layout, Who&When), with the runs at ``against`` as further
    corpus. Traces are read one at a time and only their judge views are kept. Files
    that fail to import are skipped and counted. Raises TraceFormatError when a path does
    not exist, ConfigError when the dataset holds no labelled trace."""
    bad: list[str] = []
    root = Path(dataset) if Path(dataset).is_dir() else None
    corpus_bad: list[str] = []
    corpus_runs = list(load_all(against, bad=corpus_bad)) if against is not None else []
    if against is not None and not corpus_runs:
        raise ConfigError(
            f"--against: no run could be read in {against} ({plural(len(corpus_bad), 'file')} failed to import)",
            expected="successful runs of the same system, e.g. the seed runs of a build",
        )
    groups = provenance_seeds(root) if root is not None else {}
    result = audit_traces(load_all(dataset, bad), corpus_runs, modes=len(taxonomy_for(root)) or 17, groups=groups)
    result.skipped += len(bad)
    result.unreadable = bad
    result.against_unreadable = corpus_bad
    if result.overall.traces == 0:
        unread = f": {plural(len(bad), 'trace')} could not be read (first: {bad[0]})" if bad else ""
        raise ConfigError(
            f"no labelled trace in {dataset}{unread}",
            expected=f"a dataset with ground-truth labels{'; whenpro ls says why each file fails' if bad else ''}",
        )
    return result


def load_all(path: str | Path, bad: list[str]) -> Iterator[Trace]:
    """Every trace under ``path``, one at a time; ``bad`` gets the one-line error of each
    file or row that failed to import."""
    for row in walk(path):
        if row.error:
            bad.append(row.error)
            continue
        try:
            yield load_trace(row.ref())
        except WhenproError as exc:
            bad.append(str(exc))


__all__ = [
    "AXES",
    "AuditResult",
    "GroupResult",
    "LEAK_MARGIN",
    "Tally",
    "audit_dataset",
    "audit_traces",
    "load_all",
    "score_pick",
    "top_steps",
    "trace_scores",
]
