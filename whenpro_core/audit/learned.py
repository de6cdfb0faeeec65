"""The learned attacker of the label-leak audit (issue 28): a model trained on the
dataset's own labels to pick each trace's labelled step from what a judge sees.

Contract (also used by ``whenpro build``'s adversarial filter):

:func:`learned_attacks` (or :func:`attack_traces`, from loaded traces) takes labelled
judge views ``samples`` — ``(AuditTrace, Label)`` pairs from :func:`~whenpro_core.audit.view.audit_view` and
:func:`~whenpro_core.audit.view.label_of`; a view's ``group`` is its seed run when the
caller knows it — and optional honest runs ``against`` (unlabelled views of successful
runs of the same system). For each feature set asked for (``"form"``: everything of
:mod:`.features`; ``"structural"``: position, agent and kind only, the *structural
prior*) it returns a :class:`LearnedAttack`: per trace id, the **out-of-fold** score of
every candidate step and the pick (the top-scoring ranks; a tie is an even chance), the
step accuracy of those picks, and the features' weights. Out of fold means: traces are
split into :data:`FOLDS` folds **grouped** by ``group`` and by task text (twins of one
seed run never sit on both sides), a model is trained on the other folds' traces and
scores this fold's; no trace is ever scored by a model that saw its label.

The learner is scikit-learn's ``HistGradientBoostingClassifier`` (per-step binary
"is this the labelled step", categorical agent/kind/tool), with fixed seeds: the same
input gives the same picks. The form set also gets a **word-odds** feature: naive-Bayes
log-odds of the step's words (numbers masked) and shape tokens, learned from the
training folds only (nested: a training trace's own value comes from the other training
folds), so a planted word or phrase is found. Feature weights are permutation weights:
how many points of out-of-fold step accuracy are lost when that feature's column is
shuffled among the scored steps (seeded), highest first.

scikit-learn is the ``audit`` extra (``pip install whenpro[audit]``): :func:`available`
says whether it is installed; :func:`learned_attacks` raises ``ImportError`` without it.
Returns ``{}`` when there are too few traces to learn from (fewer than
:data:`MIN_TRACES` with a labelled candidate step, or fewer than 2 groups).
"""

from __future__ import annotations

import importlib.util
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from whenpro_core.audit.features import CATEGORICAL, FEATURE_SETS, Reference, Vocab, cached_template, trace_features
from whenpro_core.audit.form import trace_tokens
from whenpro_core.audit.view import AuditTrace, Label, audit_view, label_of
from whenpro_core.trace.model import Trace

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

#: Folds of the grouped cross-validation.
FOLDS = 5
#: Fewest labelled traces (with a candidate step labelled) the attacker learns from.
MIN_TRACES = 10
#: The word-odds feature's name (form set only).
WORD_ODDS = "word_odds"
#: Seed of the learner and of the permutation weights.
SEED = 0
#: How many of the highest feature weights an attack keeps.
TOP_WEIGHTS = 8


def available() -> bool:
    """True when scikit-learn (the ``audit`` extra) is installed."""
    return importlib.util.find_spec("sklearn") is not None


@dataclass(frozen=True)
class TracePick:
    """One trace's out-of-fold result: ``scores`` (one per candidate step, higher: more
    likely the labelled step), ``picks`` (the top-scoring ranks) and ``fold``."""

    scores: tuple[float, ...]
    picks: tuple[int, ...]
    fold: int


@dataclass
class LearnedAttack:
    """One feature set's attack: ``feature_set`` (``form`` or ``structural``), ``picks``
    by trace id, ``step`` (mean out-of-fold step accuracy over the traces, ties counted
    as their fraction), ``weights`` (feature -> points of step accuracy lost when it is
    shuffled, the :data:`TOP_WEIGHTS` highest, as fractions) and ``folds``."""

    feature_set: str
    picks: dict[str, TracePick]
    step: float
    weights: list[tuple[str, float]] = field(default_factory=list)
    folds: int = FOLDS


def _tie_score(scores: Sequence[float], ranks: Iterable[int]) -> float:
    best = max(scores)
    top = [i for i, s in enumerate(scores) if s >= best - 1e-12]
    return sum(r in top for r in set(ranks)) / len(top)


def _task_groups(views: Sequence[AuditTrace]) -> list[int]:
    """One group number per view: views sharing a ``group`` or a task text are one group."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for v in views:
        a, b = find(f"g:{v.group}"), find(f"q:{v.query}" if v.query else f"g:{v.group}")
        parent[a] = b
    roots: dict[str, int] = {}
    return [roots.setdefault(find(f"g:{v.group}"), len(roots)) for v in views]


def _fold_of(groups: list[int], folds: int) -> list[int]:
    """Deterministic grouped folds: groups in order of first sight, dealt round-robin by
    descending size (sizes stay even)."""
    sizes = Counter(groups)
    order = sorted(sizes, key=lambda g: (-sizes[g], g))
    of_group = {g: i % folds for i, g in enumerate(order)}
    return [of_group[g] for g in groups]


@dataclass
class _Table:
    """Rows of every step of the labelled traces: features, target, trace number, tokens."""

    names: list[str]
    rows: list[list[float]]
    target: list[int]
    trace: list[int]
    tokens: list[set[str]]


def _table(samples: Sequence[tuple[AuditTrace, Label]], against: Sequence[AuditTrace]) -> _Table:
    views = [v for v, _ in samples]
    vocab = Vocab()
    dataset = Reference.of(views)
    honest = Reference.of(against) if against else None
    names = list(FEATURE_SETS["form"])
    table = _Table(names, [], [], [], [])
    for i, (view, label) in enumerate(samples):
        feats = trace_features(view, vocab, dataset, honest)
        shape = trace_tokens(view)
        for step, row in zip(view.steps, feats, strict=True):
            table.rows.append([row[n] for n in names])
            table.target.append(int(step.rank in label.ranks))
            table.trace.append(i)
            table.tokens.append(set(cached_template(step.text).split()) | shape[step.rank] | {f"agent={step.agent}"})
    return table


class _WordOdds:
    """Naive-Bayes token counts per fold, for log-odds learned from any set of folds."""

    def __init__(self, table: _Table, fold_of_row: list[int], folds: int) -> None:
        self.lab = [Counter[str]() for _ in range(folds)]
        self.oth = [Counter[str]() for _ in range(folds)]
        self.n_lab = [0] * folds
        self.n_oth = [0] * folds
        for tokens, y, f in zip(table.tokens, table.target, fold_of_row, strict=True):
            (self.lab if y else self.oth)[f].update(tokens)
            if y:
                self.n_lab[f] += 1
            else:
                self.n_oth[f] += 1
        self.total_lab: Counter[str] = sum(self.lab, Counter())
        self.total_oth: Counter[str] = sum(self.oth, Counter())

        self._tables: dict[frozenset[int], tuple[dict[str, float], float]] = {}

    def _table(self, leave_out: frozenset[int]) -> tuple[dict[str, float], float]:
        """Token -> log-odds learned without the folds ``leave_out``, and the log-odds of a
        token never seen there (add-one smoothing); computed once per set of folds."""
        if leave_out not in self._tables:
            n_lab = sum(n for f, n in enumerate(self.n_lab) if f not in leave_out)
            n_oth = sum(n for f, n in enumerate(self.n_oth) if f not in leave_out)
            unseen = math.log(1 / (n_lab + 2)) - math.log(1 / (n_oth + 2))
            odds = {}
            for tok in self.total_lab.keys() | self.total_oth.keys():
                lab = self.total_lab[tok] - sum(self.lab[f][tok] for f in leave_out)
                oth = self.total_oth[tok] - sum(self.oth[f][tok] for f in leave_out)
                odds[tok] = math.log((lab + 1) / (n_lab + 2)) - math.log((oth + 1) / (n_oth + 2))
            self._tables[leave_out] = (odds, unseen) if n_lab and n_oth else ({}, 0.0)
        return self._tables[leave_out]

    def score(self, tokens: set[str], leave_out: set[int]) -> float:
        """Summed log-odds of ``tokens`` learned from every fold but ``leave_out``."""
        odds, unseen = self._table(frozenset(leave_out))
        # sorted: a float sum in set order differs with the process's hash seed, and the
        # picks with it (two runs of one build released different items)
        return sum(odds.get(tok, unseen) for tok in sorted(tokens)) if odds else 0.0


class _Classifier(Protocol):
    """What the attacker needs of a scikit-learn classifier."""

    def fit(self, x: NDArray[np.float64], y: NDArray[np.int64]) -> object: ...

    def predict_proba(self, x: NDArray[np.float64]) -> NDArray[np.float64]: ...


def _model(categorical: list[bool]) -> _Classifier:
    """The per-step classifier: gradient-boosted trees, fixed seed, no early stopping
    (which would split off a random validation set)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    model: _Classifier = HistGradientBoostingClassifier(
        max_iter=120,
        learning_rate=0.08,
        max_leaf_nodes=15,
        min_samples_leaf=8,
        l2_regularization=1.0,
        categorical_features=categorical if any(categorical) else None,
        early_stopping=False,
        random_state=SEED,
    )
    return model


@dataclass
class _Fitted:
    """One fold's fitted model and the rows it scores."""

    model: _Classifier
    rows: list[int]
    x: NDArray[np.float64]


def _fit_folds(
    table: _Table, columns: list[int], fold_of_row: list[int], folds: int, odds: _WordOdds | None
) -> list[_Fitted]:
    import numpy as np

    base = np.asarray(table.rows, dtype=np.float64)[:, columns]
    y = np.asarray(table.target)
    categorical = [table.names[c] in CATEGORICAL for c in columns] + ([False] if odds else [])
    fitted = []
    for k in range(folds):
        test = [i for i, f in enumerate(fold_of_row) if f == k]
        train = [i for i, f in enumerate(fold_of_row) if f != k]
        if not test or not train or y[train].sum() == 0:
            continue
        x = base
        if odds is not None:
            extra = [odds.score(table.tokens[i], {k, fold_of_row[i]}) for i in range(len(y))]
            x = np.column_stack([base, np.asarray(extra)])
        model = _model(categorical)
        model.fit(x[train], y[train])
        fitted.append(_Fitted(model, test, x[test]))
    return fitted


def _scores(fitted: list[_Fitted], n_rows: int, shuffle: int | None = None) -> list[float]:
    """Out-of-fold scores of every row (``shuffle``: that column permuted within each fold, seeded)."""
    import numpy as np

    out = [0.0] * n_rows
    rng = np.random.default_rng(SEED)
    for fit in fitted:
        x = fit.x
        if shuffle is not None:
            x = x.copy()
            x[:, shuffle] = rng.permutation(x[:, shuffle])
        proba = fit.model.predict_proba(x)[:, 1]
        for row, p in zip(fit.rows, proba, strict=True):
            out[row] = float(p)
    return out


def _by_trace(
    scores: list[float], table: _Table, fold_of_row: list[int], samples: Sequence[tuple[AuditTrace, Label]]
) -> tuple[dict[str, TracePick], float]:
    per: dict[int, list[float]] = {}
    fold: dict[int, int] = {}
    for row, score in enumerate(scores):
        per.setdefault(table.trace[row], []).append(score)
        fold[table.trace[row]] = fold_of_row[row]
    picks: dict[str, TracePick] = {}
    total = 0.0
    for i, (view, label) in enumerate(samples):
        if i not in per:
            continue
        mine = per[i]
        best = max(mine)
        top = tuple(r for r, x in enumerate(mine) if x >= best - 1e-12)
        picks[view.id] = TracePick(tuple(mine), top, fold[i])
        total += _tie_score(mine, label.ranks)
    return picks, total / max(1, len(picks))


def _attack(
    name: str, table: _Table, fold_of_row: list[int], folds: int, samples: Sequence[tuple[AuditTrace, Label]]
) -> LearnedAttack:
    columns = [table.names.index(n) for n in FEATURE_SETS[name]]
    odds = _WordOdds(table, fold_of_row, folds) if name == "form" else None
    fitted = _fit_folds(table, columns, fold_of_row, folds, odds)
    picks, step = _by_trace(_scores(fitted, len(table.rows)), table, fold_of_row, samples)
    names = [table.names[c] for c in columns] + ([WORD_ODDS] if odds else [])
    weights = []
    for j, feature in enumerate(names):
        _, shuffled = _by_trace(_scores(fitted, len(table.rows), shuffle=j), table, fold_of_row, samples)
        weights.append((feature, step - shuffled))
    weights.sort(key=lambda kv: (-kv[1], kv[0]))
    return LearnedAttack(name, picks, step, weights[:TOP_WEIGHTS], folds)


def attack_traces(
    traces: Iterable[Trace],
    groups: Mapping[str, str] | None = None,
    against: Iterable[Trace] = (),
    feature_sets: Sequence[str] = ("form", "structural"),
) -> dict[str, LearnedAttack]:
    """:func:`learned_attacks` on loaded traces: their judge views and labels (traces
    without a label are left out), ``groups`` mapping a trace id to its seed run (e.g.
    :func:`~whenpro_core.formats.build_meta.provenance_seeds`, or a build's own attempt
    records), ``against`` honest runs."""
    samples = []
    for trace in traces:
        view = audit_view(trace, group=(groups or {}).get(trace.id))
        label = label_of(trace, view)
        if label is not None:
            samples.append((view, label))
    honest = [audit_view(t, group=f"against:{t.id}") for t in against]
    return learned_attacks(samples, honest, feature_sets)


def learned_attacks(
    samples: Sequence[tuple[AuditTrace, Label]],
    against: Sequence[AuditTrace] = (),
    feature_sets: Sequence[str] = ("form", "structural"),
    folds: int = FOLDS,
) -> dict[str, LearnedAttack]:
    """Train and score the learned attacker once per feature set (module docstring);
    ``samples`` whose label names no candidate step are left out. Returns feature set ->
    :class:`LearnedAttack`, or ``{}`` when there are too few traces."""
    usable = [(v, lab) for v, lab in samples if lab.ranks and v.steps]
    groups = _task_groups([v for v, _ in usable])
    if len(usable) < MIN_TRACES or len(set(groups)) < 2:
        return {}
    folds = min(folds, len(set(groups)))
    fold_of_trace = _fold_of(groups, folds)
    table = _table(usable, against)
    fold_of_row = [fold_of_trace[t] for t in table.trace]
    import sklearn.ensemble  # noqa: F401  (loads the OpenMP runtime that the limit below reaches)
    from threadpoolctl import threadpool_limits  # a scikit-learn dependency

    # One thread: OpenMP's threads spinning on a shared, loaded machine made an audit 15 times slower.
    with threadpool_limits(limits=1):
        return {name: _attack(name, table, fold_of_row, folds, usable) for name in feature_sets}


__all__ = [
    "FOLDS",
    "LearnedAttack",
    "MIN_TRACES",
    "SEED",
    "TOP_WEIGHTS",
    "TracePick",
    "WORD_ODDS",
    "attack_traces",
    "available",
    "learned_attacks",
]
