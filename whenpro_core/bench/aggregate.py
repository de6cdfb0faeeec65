"""Benchmark aggregates (docs/architecture.md, 'Scoring'; Who&When Pro leaderboard rules, ``just1nlee/whowhen_pro``
``whowhen_eval/leaderboard.py``), computed from :class:`~whenpro_core.bench.records.Record` s.

Rows of the leaderboard are *groups*: model × protocol × gold setting. Each group gets a
cell per modality and a composite. In a cell (a set of scored traces):

* **Agent** = mean over multi-agent frameworks of per-framework agent accuracy.
  Single-agent frameworks (``TraceMeta.single_agent``; docs/architecture.md, 'Formats and step coordinates') are
  left out; ``None``
  when the cell has none.
* **Step** = mean over frameworks of per-framework step accuracy (exact coordinate;
  round only for debate/dylan, accepted alternatives count).
* **Error** = macro-F1 over failure-mode classes with gold support, over the whole cell
  (not per framework). A predicted class that no trace has as gold adds no class (its
  predictions still cost the true classes recall). A prediction the scorer accepts (an
  accepted alternative mode) counts as the gold class. Traces whose ground truth has no
  mode (Who&When) are left out; ``None`` when no trace has one.
* **Joint** = mean over frameworks of the share with agent, step and mode all correct.

Also plain Who&When-style accuracies over all scored traces of the cell: ``agent_acc``,
``step_acc``, ``step_acc_tol`` (±k coordinates), ``mode_acc``, ``joint_acc``. The
**composite** of a group is, per axis, the mean over the modalities that have a value.

A trace is scored when its record has a ground truth (``Record.score``). A failed
attribution of a labelled trace is scored as wrong on every axis (a missing prediction
counts as wrong); the reference leaderboard instead drops rows with an error, which
flatters a protocol that fails often. Records of traces that could not be read have no
ground truth and are only counted as errors.

Breakdowns (by modality, framework, benchmark, gold mode, transcript-length bucket) use
the same :class:`Metrics`. The confusion matrix counts gold mode × predicted mode (with
the accepted-alternative rule above; ``—`` for no prediction).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from statistics import mean

from pydantic import BaseModel, Field

from whenpro_core.bench.records import Record, latest
from whenpro_core.trace.model import Usage

REPORT_FORMAT = "whenpro.bench.report/1"

#: Transcript-length buckets in estimated tokens (upper bounds exclusive).
LENGTH_BUCKETS: tuple[tuple[str, int], ...] = (("<4K", 4000), ("4-8K", 8000), ("8-12K", 12000), (">12K", 1 << 62))
#: Modalities in display order.
MODALITIES = ("text", "image", "video")
#: Breakdown dimensions, in display order.
DIMENSIONS = ("modality", "framework", "benchmark", "mode", "length")
#: Longest predicted-mode label kept (a judge's free text is cut to this).
MAX_LABEL = 24
#: The label for "no prediction" in the confusion matrix.
NO_PREDICTION = "—"


def length_bucket(tokens: int | None) -> str:
    """The bucket label for a transcript of ``tokens`` (``"unknown"`` for ``None``)."""
    if tokens is None:
        return "unknown"
    for label, upper in LENGTH_BUCKETS:
        if tokens < upper:
            return label
    return LENGTH_BUCKETS[-1][0]


@dataclass(frozen=True)
class Scored:
    """One scored trace of a group, flattened for aggregation."""

    framework: str
    modality: str
    benchmark: str
    single_agent: bool
    gt_mode: str | None
    pred_class: str
    agent: bool
    step: bool
    step_tol: bool
    mode: bool | None
    joint: bool
    bucket: str
    error: bool

    @classmethod
    def of(cls, rec: Record, tolerance: int) -> Scored:
        """Flatten a labelled record (``rec.score`` is set)."""
        s = rec.score
        assert s is not None
        gt_mode = (rec.trace.gt_mode or "").strip().upper() or None
        if gt_mode and s.mode:
            pred = gt_mode
        else:
            pred = ((rec.prediction.mode if rec.prediction else None) or "").strip().upper()
            pred = pred[:MAX_LABEL] or NO_PREDICTION
        return cls(
            framework=rec.trace.framework or "?",
            modality=rec.trace.modality or "?",
            benchmark=rec.trace.benchmark or "?",
            single_agent=rec.trace.single_agent,
            gt_mode=gt_mode,
            pred_class=pred,
            agent=s.agent,
            step=s.step,
            step_tol=rec.step_within(tolerance),
            mode=s.mode,
            joint=s.joint,
            bucket=length_bucket(rec.trace.tokens),
            error=bool(rec.error),
        )


class Metrics(BaseModel):
    """The numbers of one cell or breakdown row (fractions in 0..1; ``None`` = not
    applicable). See the module docstring for the rules."""

    n: int = 0
    frameworks: int = 0
    agent: float | None = None
    step: float | None = None
    error: float | None = None
    joint: float | None = None
    agent_acc: float | None = None
    step_acc: float | None = None
    step_acc_tol: float | None = None
    mode_acc: float | None = None
    joint_acc: float | None = None
    failed: int = 0


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def _mean_share(groups: Iterable[Sequence[bool]]) -> float:
    """The mean over non-empty ``groups`` of the share of true flags in each."""
    return mean(sum(g) / len(g) for g in groups)


def macro_f1(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Macro-F1 of ``(gold, predicted)`` labels over the classes with gold support.

    Each gold class c scores F1 = 2·TP / (2·TP + FP + FN), with FP counted over every
    pair whose prediction is c. Classes only ever predicted are not averaged in.
    ``None`` for no pairs.
    """
    golds = sorted({g for g, _ in pairs})
    if not golds:
        return None
    f1s = []
    for c in golds:
        tp = sum(1 for g, p in pairs if g == c and p == c)
        fp = sum(1 for g, p in pairs if g != c and p == c)
        fn = sum(1 for g, p in pairs if g == c and p != c)
        f1s.append(2 * tp / (2 * tp + fp + fn))
    return mean(f1s)


def _framework_means(rows: Sequence[Scored]) -> tuple[int, dict[str, float | None]]:
    """``(frameworks, axes)``: how many frameworks the rows span, and the official
    ``agent``, ``step`` and ``joint`` numbers, each the mean over frameworks of the
    framework's share (``agent`` over multi-agent frameworks only, None without one)."""
    by_fw: dict[str, list[Scored]] = defaultdict(list)
    for r in rows:
        by_fw[r.framework].append(r)
    multi = [v for v in by_fw.values() if not v[0].single_agent]
    return len(by_fw), {
        "agent": _mean_share([r.agent for r in v] for v in multi) if multi else None,
        "step": _mean_share([r.step for r in v] for v in by_fw.values()),
        "joint": _mean_share([r.joint for r in v] for v in by_fw.values()),
    }


def metrics(rows: Sequence[Scored]) -> Metrics:
    """Official and plain metrics of a set of scored traces."""
    if not rows:
        return Metrics()
    frameworks, axes = _framework_means(rows)
    with_mode = [(r.gt_mode, r.pred_class) for r in rows if r.gt_mode]
    return Metrics(
        n=len(rows),
        frameworks=frameworks,
        agent=axes["agent"],
        step=axes["step"],
        error=macro_f1(with_mode),
        joint=axes["joint"],
        agent_acc=_share([r.agent for r in rows]),
        step_acc=_share([r.step for r in rows]),
        step_acc_tol=_share([r.step_tol for r in rows]),
        mode_acc=_share([bool(r.mode) for r in rows if r.mode is not None]),
        joint_acc=_share([r.joint for r in rows]),
        failed=sum(r.error for r in rows),
    )


class Composite(BaseModel):
    """Per-axis mean over the modalities that have a value (``modalities`` lists the
    cells present)."""

    agent: float | None = None
    step: float | None = None
    error: float | None = None
    joint: float | None = None
    modalities: list[str] = Field(default_factory=list)


class BreakdownRow(BaseModel):
    """One value of a breakdown dimension and its metrics."""

    value: str
    metrics: Metrics


class ClassScore(BaseModel):
    """Per failure-mode class: gold ``support``, times ``predicted``, precision, recall, F1."""

    code: str
    support: int
    predicted: int
    precision: float | None
    recall: float | None
    f1: float | None


class Confusion(BaseModel):
    """Gold mode (rows) × predicted mode (columns) counts."""

    gold: list[str] = Field(default_factory=list)
    predicted: list[str] = Field(default_factory=list)
    counts: list[list[int]] = Field(default_factory=list)


class GroupReport(BaseModel):
    """Everything about one model × protocol × gold setting.

    Attributes:
        label: ``model · protocol · gold|no-gold``.
        cells: per modality metrics; ``overall`` pools every scored trace.
        composite: the leaderboard numbers.
        breakdowns: dimension -> rows (:data:`DIMENSIONS`).
        records, scored, unlabelled, errors: counts of records; ``errors`` counts every
            failed record, ``error_kinds`` by kind, ``error_examples`` a few of them.
        usage: summed calls, tokens, cost and protocol seconds of the calls behind the
            records (cache hits with their original usage); ``spent``: what the runs that
            wrote them spent (cache hits: 0); ``seconds`` sums the items' wall-clock time.
    """

    model: str
    protocol: str
    with_gold: bool
    label: str
    cells: dict[str, Metrics] = Field(default_factory=dict)
    overall: Metrics = Field(default_factory=Metrics)
    composite: Composite = Field(default_factory=Composite)
    breakdowns: dict[str, list[BreakdownRow]] = Field(default_factory=dict)
    confusion: Confusion = Field(default_factory=Confusion)
    classes: list[ClassScore] = Field(default_factory=list)
    records: int = 0
    scored: int = 0
    unlabelled: int = 0
    errors: int = 0
    error_kinds: dict[str, int] = Field(default_factory=dict)
    error_examples: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    spent: Usage = Field(default_factory=Usage)
    seconds: float = 0.0


class Report(BaseModel):
    """A benchmark report: one :class:`GroupReport` per leaderboard row, best composite
    Joint first. ``tolerance`` is the k of the ±k step metric; ``sources`` the results
    files; ``problems`` unreadable lines; ``labels`` which labels were scored (the
    latest review decisions or the built labels, :mod:`.reviewed`), as the header says;
    ``scope`` which records of the sources were left out of a bench run's report and why
    (:mod:`.scope`; empty when none was)."""

    format: str = REPORT_FORMAT
    created: str = ""
    sources: list[str] = Field(default_factory=list)
    labels: str = ""
    scope: str = ""
    tolerance: int = 0
    length_buckets: list[str] = Field(default_factory=lambda: [b for b, _ in LENGTH_BUCKETS])
    groups: list[GroupReport] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)


def _ordered(values: Iterable[str], dimension: str) -> list[str]:
    vals = set(values)
    if dimension == "modality":
        first = [m for m in MODALITIES if m in vals]
    elif dimension == "length":
        first = [b for b, _ in LENGTH_BUCKETS if b in vals]
    else:
        first = []
    return first + sorted(vals - set(first))


def _dimension(row: Scored, dimension: str) -> str:
    if dimension == "mode":
        return row.gt_mode or "(none)"
    if dimension == "length":
        return row.bucket
    value: str = getattr(row, dimension)
    return value


def _class_score(code: str, pairs: Sequence[tuple[str, str]]) -> ClassScore:
    """Support, predictions, precision, recall and F1 of gold class ``code`` over ``(gold, predicted)`` pairs."""
    tp = sum(1 for g, p in pairs if g == code and p == code)
    support = sum(1 for g, _ in pairs if g == code)
    predicted = sum(1 for _, p in pairs if p == code)
    prec = tp / predicted if predicted else None
    rec = tp / support if support else None
    f1 = 2 * tp / (support + predicted) if support + predicted else None
    return ClassScore(code=code, support=support, predicted=predicted, precision=prec, recall=rec, f1=f1)


def _classes(rows: Sequence[Scored]) -> tuple[Confusion, list[ClassScore]]:
    """The confusion matrix (no-prediction column last) and per-class scores of the rows with a gold mode."""
    pairs = [(r.gt_mode, r.pred_class) for r in rows if r.gt_mode]
    gold = sorted({g for g, _ in pairs})
    pred = sorted({p for _, p in pairs} - {NO_PREDICTION}) + (
        [NO_PREDICTION] if any(p == NO_PREDICTION for _, p in pairs) else []
    )
    counts = [[sum(1 for g2, p2 in pairs if g2 == g and p2 == p) for p in pred] for g in gold]
    classes = [_class_score(c, pairs) for c in gold]
    return Confusion(gold=gold, predicted=pred, counts=counts), classes


def group_label(model: str, protocol: str, with_gold: bool) -> str:
    """``model · protocol · gold|no-gold`` (``heuristic · gold`` for the heuristic)."""
    gold = "gold" if with_gold else "no-gold"
    return f"{protocol} · {gold}" if model == protocol else f"{model} · {protocol} · {gold}"


def _count_records(report: GroupReport, records: Sequence[Record], scored: int) -> None:
    """Set the record counts of ``report``: all, scored, unlabelled and failed (by kind,
    with the first five as examples)."""
    report.records = len(records)
    report.scored = scored
    report.unlabelled = sum(1 for r in records if r.score is None and not r.error)
    failed = [r for r in records if r.error]
    report.errors = len(failed)
    for r in failed:
        report.error_kinds[r.error_kind or "?"] = report.error_kinds.get(r.error_kind or "?", 0) + 1
    report.error_examples = [f"{r.trace.id or r.ref}: {r.error}" for r in failed[:5]]


def _add_spending(report: GroupReport, records: Sequence[Record]) -> None:
    """Set the summed ``usage``, ``spent`` and wall-clock ``seconds`` of ``records`` on
    ``report``, summed in the records' key order: float costs summed in the order items
    happened to finish would differ in their last bits between equal runs."""
    usage = spent = Usage()
    for r in sorted(records, key=lambda r: r.key):
        usage = usage.add(r.usage)
        spent = spent.add(r.spent)
    report.usage, report.spent = usage, spent
    report.seconds = round(sum(r.seconds for r in records), 3)


def _composite(cells: dict[str, Metrics]) -> Composite:
    """Each axis' mean over the modality cells that have a value (None when none has)."""
    comp = Composite(modalities=list(cells))
    for axis in ("agent", "step", "error", "joint"):
        vals = [getattr(c, axis) for c in cells.values() if getattr(c, axis) is not None]
        setattr(comp, axis, mean(vals) if vals else None)
    return comp


def _breakdowns(rows: Sequence[Scored]) -> dict[str, list[BreakdownRow]]:
    """Per dimension (:data:`DIMENSIONS`), the metrics of each of its values, in display order."""
    out: dict[str, list[BreakdownRow]] = {}
    for dim in DIMENSIONS:
        values = _ordered({_dimension(r, dim) for r in rows}, dim)
        out[dim] = [
            BreakdownRow(value=v, metrics=metrics([r for r in rows if _dimension(r, dim) == v])) for v in values
        ]
    return out


def group_report(records: Sequence[Record], tolerance: int) -> GroupReport:
    """The report of one group's records (all of one model × protocol × gold setting)."""
    first = records[0]
    rows = [Scored.of(r, tolerance) for r in records if r.score is not None]
    report = GroupReport(
        model=first.model,
        protocol=first.protocol,
        with_gold=first.with_gold,
        label=group_label(first.model, first.protocol, first.with_gold),
    )
    _count_records(report, records, len(rows))
    _add_spending(report, records)
    for mod in _ordered({r.modality for r in rows}, "modality"):
        report.cells[mod] = metrics([r for r in rows if r.modality == mod])
    report.overall = metrics(rows)
    report.composite = _composite(report.cells)
    report.breakdowns = _breakdowns(rows)
    report.confusion, report.classes = _classes(rows)
    return report


def aggregate(
    records: Iterable[Record],
    *,
    tolerance: int | None = None,
    sources: Sequence[str] = (),
    problems: Sequence[str] = (),
) -> Report:
    """Score ``records`` (the last record per key counts) into a :class:`Report`.

    ``tolerance`` is the k for ``step_acc_tol``; default: the largest k the records were
    run with (they store the step distance, so any k can be applied).
    """
    recs = latest(records)
    if tolerance is None:
        tolerance = max((r.tolerance for r in recs), default=0)
    groups: dict[tuple[str, str, bool], list[Record]] = defaultdict(list)
    for r in recs:
        groups[r.group].append(r)
    reports = [group_report(g, tolerance) for g in groups.values()]
    reports.sort(key=lambda g: (-(g.composite.joint if g.composite.joint is not None else -1), g.label))
    return Report(
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        sources=list(sources),
        tolerance=tolerance,
        groups=reports,
        problems=list(problems),
    )
