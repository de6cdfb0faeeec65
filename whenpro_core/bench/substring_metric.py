"""``report --metric whowhen-substring``: the original Who&When accuracy, for comparison
only. **Known bug, kept on purpose:** the original ``Automated_FA/evaluate.py`` counts a
prediction right when the ground-truth value is a *substring* of it (``actual_step in
predicted_step``), so a labelled step 1 is "found" in a predicted 12, and agent ``Web`` in
``WebSurfer``. whenpro's own metrics compare whole values; this one exists so numbers can
be set next to papers that used the original script.

Per setting: agent and step accuracy over **all** its records (a failed or unparsed
prediction counts as wrong, as the original divides by every labelled file), using the
step as the judge wrote it (``step_text``) when known.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from whenpro_core.bench.aggregate import group_label
from whenpro_core.bench.records import Record, latest

NOTE = (
    "metric whowhen-substring (the original Who&When evaluate.py; a known bug: the ground truth "
    "counts as found when it is a substring of the prediction, step 1 inside 12): for comparison only"
)


@dataclass(frozen=True)
class SubstringRow:
    """One setting's ``records`` (labelled), and its substring ``agent`` and ``step``
    accuracy (0..1)."""

    label: str
    records: int
    agent: float
    step: float


def _found(gold: str | None, said: str | None) -> bool:
    return bool(gold) and bool(said) and str(gold) in str(said)


def substring_rows(records: Sequence[Record]) -> list[SubstringRow]:
    """The original metric per model × protocol × gold setting (labelled records only)."""
    groups: dict[tuple[str, str, bool], list[Record]] = defaultdict(list)
    for rec in latest(records):
        if rec.trace.labelled:
            groups[rec.group].append(rec)
    out = []
    for key, recs in groups.items():
        agent = sum(_found(r.trace.gt_agent, r.prediction.agent if r.prediction else None) for r in recs)
        step = sum(
            _found(r.trace.gt_step, (r.prediction.step_text or r.prediction.step) if r.prediction else None)
            for r in recs
        )
        out.append(SubstringRow(group_label(*key), len(recs), agent / len(recs), step / len(recs)))
    return out
