"""``report --rules trail``: TRAIL's metrics (Patronus AI, arXiv 2505.08638) over whenpro's
records, next to whenpro's own.

TRAIL labels every error of a trace with a category and a location (a span: in whenpro, the
step holding it; ``TraceMeta.gt_errors``). A protocol predicts one error a trace (a step and
a failure mode), so per setting, over the labelled records with errors:

* **category F1**: for each category, F1 of "the predicted mode is this category" against
  "the trace has an error of this category", weighted by how many traces have it (a failed
  or mode-less prediction predicts no category);
* **location accuracy**: the predicted step is the location of one of the trace's errors;
* **joint accuracy**: the predicted step and mode are the location and category of one and
  the same error.

Records of traces without step-located error labels are left out (the row says how many
remain); traces of other sources with such labels (AgentRx's failures, MP-Bench's flags) are
scored the same way.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from whenpro_core.bench.aggregate import group_label
from whenpro_core.bench.records import Record, latest

NOTE = (
    "rules trail (TRAIL, arXiv 2505.08638): category F1 weighted by gold support, location "
    "accuracy (the predicted step holds a labelled error), joint accuracy (step and category of "
    "one error); over records of traces with step-located error labels"
)
HEADERS = ["setting", "n", "Category F1", "Location", "Joint"]


@dataclass(frozen=True)
class TrailRow:
    """One setting: ``records`` scored, ``category_f1``, ``location`` and ``joint`` (0..1)."""

    label: str
    records: int
    category_f1: float
    location: float
    joint: float


def _category_f1(records: Sequence[Record]) -> float:
    """F1 per category of the predicted mode against each trace's error categories,
    weighted by the number of traces with that category."""
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    support: Counter[str] = Counter()
    for rec in records:
        gold = {e["category"] for e in rec.trace.gt_errors}
        support.update(gold)
        said = rec.prediction.mode if rec.prediction else None
        if said:
            (tp if said in gold else fp)[said] += 1
    total = sum(support.values())
    if not total:
        return 0.0
    score = 0.0
    for cat, n in support.items():
        precision = tp[cat] / (tp[cat] + fp[cat]) if tp[cat] + fp[cat] else 0.0
        recall = tp[cat] / n
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        score += n * f1
    return score / total


def _hits(rec: Record) -> tuple[bool, bool]:
    """(location, joint) of one record."""
    pred = rec.prediction
    if pred is None or pred.step in (None, ""):
        return False, False
    at = [e for e in rec.trace.gt_errors if e["step"] == pred.step]
    return bool(at), any(e["category"] == pred.mode for e in at)


def trail_rows(records: Sequence[Record]) -> list[TrailRow]:
    """TRAIL's metrics per model × protocol × gold setting (module doc)."""
    groups: dict[tuple[str, str, bool], list[Record]] = defaultdict(list)
    for rec in latest(records):
        if rec.trace.labelled and rec.trace.gt_errors:
            groups[rec.group].append(rec)
    rows = []
    for key, recs in groups.items():
        hits = [_hits(r) for r in recs]
        rows.append(
            TrailRow(
                group_label(*key),
                len(recs),
                _category_f1(recs),
                sum(h[0] for h in hits) / len(recs),
                sum(h[1] for h in hits) / len(recs),
            )
        )
    return rows


def all_left_out(records: Sequence[Record]) -> str | None:
    """One line saying why TRAIL's metrics have no row when every record is left out (each
    reason with its count); ``None`` when some record is scored or there is none."""
    recs = latest(records)
    if not recs or any(r.trace.labelled and r.trace.gt_errors for r in recs):
        return None
    unlabelled = sum(1 for r in recs if not r.trace.labelled)
    reasons = (
        (unlabelled, "of unlabelled traces"),
        (
            len(recs) - unlabelled,
            "of traces labelled without step-located errors (TRAIL's metrics need each error's step "
            "and category: TRAIL annotations, AgentRx failures, MP-Bench flags)",
        ),
    )
    said = "; ".join(f"{n} {what}" for n, what in reasons if n)
    every = "the one record" if len(recs) == 1 else f"all {len(recs)} records"
    return f"TRAIL metrics: {every} left out: {said}"


__all__ = ["HEADERS", "NOTE", "TrailRow", "all_left_out", "trail_rows"]
