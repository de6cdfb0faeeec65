"""The original Who&When scoring (``Automated_FA/evaluate.py``): ``report --rules whowhen``,
the Who&When part of ``report --rules official``, and ``report --metric whowhen-substring``.

Per setting (model × protocol × gold) and Who&When subset (Hand-Crafted,
Algorithm-Generated; ``""`` for records of other traces):

* the prediction is read as the original reads the log it prints (``Agent Name: <agent>``
  / ``Step Number: <step>``, :func:`~whenpro_core.attribution.harness_parse.whowhen_printed`):
  the agent's leading word characters (a Hand-Crafted ``Orchestrator (thought)`` is
  ``Orchestrator``) and the step's leading digits, both or no prediction;
* **known bug, kept on purpose:** a prediction is right when the ground-truth value is a
  *substring* of it (``actual_step in predicted_step``), so a labelled step 1 is "found"
  in a predicted 12, and agent ``Web`` in ``WebSurfer``;
* accuracy is over **all** labelled records (a failed or unread prediction counts as
  wrong: the original divides by every file of the folder).

whenpro's own metrics compare whole values; this exists so numbers can be set next to
papers that used the original script.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from whenpro_core.attribution.harness_parse import whowhen_printed
from whenpro_core.bench.aggregate import group_label
from whenpro_core.bench.records import Record, latest

NOTE = (
    "rules: whowhen (the original Who&When evaluate.py): the printed 'Agent Name:' word and 'Step Number:' "
    "digits, both or no prediction; a known bug kept: the ground truth counts as found when it is a "
    "substring of the prediction (step 1 inside 12); over every labelled record"
)
HEADERS = ["setting", "subset", "records", "agent", "step"]


@dataclass(frozen=True)
class SubstringRow:
    """One setting's and subset's ``records`` (labelled), and its ``agent`` and ``step``
    accuracy (0..1) under the original rules."""

    label: str
    subset: str
    records: int
    agent: float
    step: float


def _found(gold: str | None, said: str | None) -> bool:
    return bool(gold) and bool(said) and str(gold) in str(said)


def original_verdict(rec: Record) -> tuple[bool, bool]:
    """(agent found, step found) of one record under the original rules (module doc)."""
    pred = rec.prediction
    if pred is None or not pred.agent:
        return False, False
    reading = whowhen_printed(pred.agent, str(pred.step_text or pred.step or ""))
    if reading.agent is None:
        return False, False
    return _found(rec.trace.gt_agent, reading.agent), _found(rec.trace.gt_step, reading.step)


def substring_rows(records: Sequence[Record], *, whowhen_only: bool = False) -> list[SubstringRow]:
    """The original metric per setting and subset (labelled records only; with
    ``whowhen_only``, records of the original Who&When files only)."""
    groups: dict[tuple[tuple[str, str, bool], str], list[Record]] = defaultdict(list)
    for rec in latest(records):
        if rec.trace.labelled and (rec.trace.subset or not whowhen_only):
            groups[(rec.group, rec.trace.subset)].append(rec)
    out = []
    for (key, subset), recs in groups.items():
        verdicts = [original_verdict(r) for r in recs]
        agent = sum(a for a, _ in verdicts) / len(recs)
        step = sum(s for _, s in verdicts) / len(recs)
        out.append(SubstringRow(group_label(*key), subset, len(recs), agent, step))
    return sorted(out, key=lambda r: (r.label, r.subset))
