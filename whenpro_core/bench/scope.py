"""What the report of a ``whenpro bench`` run covers: the items of this run's plan, that is
the traces the dataset holds now with the settings asked for (docs/architecture.md, 'Files
whenpro writes': results files are append-only, so a changed release or other settings leave
older records in the file).

The other records stay in the results file (whenpro never deletes them) and are left out
of the run's report, with one line saying how many and why (:meth:`Scope.left_out_line`).
``whenpro report RESULTS`` has no scope: it reports every record of its files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from whenpro_core.bench.aggregate import group_label
from whenpro_core.bench.records import Record
from whenpro_core.errors import ConfigError
from whenpro_core.safety.textsafe import plural

#: Why a record is left out, by :meth:`Scope.reason`.
GONE = "traces no longer in the dataset"
NOT_CHOSEN = "traces not chosen in this run (--where, --limit, --sample, no ground truth)"
OTHER_SETTINGS = "settings not in this run"


@dataclass(frozen=True)
class Scope:
    """A bench run's plan as its report sees it.

    Attributes:
        dataset: the dataset as the user named it (for messages).
        keys: the resume keys of the plan's items (:func:`~whenpro_core.bench.records.record_key`).
        chosen: the refs (absolute ``path`` or ``path#key``) of the traces the run chose.
        present: the refs of every trace the dataset holds now, chosen or not.
        rejected: the refs of chosen traces rejected in review: their records stay in scope
            so that the review step leaves them out and counts them (:mod:`.reviewed`).
    """

    dataset: str
    keys: frozenset[str]
    chosen: frozenset[str]
    present: frozenset[str]
    rejected: frozenset[str] = frozenset()

    def split(self, records: Iterable[Record]) -> tuple[list[Record], list[Record]]:
        """``(kept, left)``: the records of the plan's items, and the others (file order)."""
        kept: list[Record] = []
        left: list[Record] = []
        for rec in records:
            (kept if rec.key in self.keys or rec.ref in self.rejected else left).append(rec)
        return kept, left

    def reason(self, record: Record) -> str:
        """Why ``record`` (not of the plan) is left out: :data:`GONE`, :data:`NOT_CHOSEN`
        or :data:`OTHER_SETTINGS`."""
        if record.ref not in self.present:
            return GONE
        return OTHER_SETTINGS if record.ref in self.chosen else NOT_CHOSEN

    def left_out_line(self, left: Sequence[Record], where: str) -> str | None:
        """One line: how many records are left out of the report and why, e.g. ``5 results
        of traces no longer in the dataset left out of the report (kept in r.jsonl; whenpro
        report r.jsonl reports them all)``; ``None`` when none is. ``where`` names the
        results file(s) as ``whenpro report`` takes them."""
        if not left:
            return None
        counts = Counter(self.reason(r) for r in left)
        settings = sorted({group_label(*r.group) for r in left if self.reason(r) == OTHER_SETTINGS})
        named = {k: f"{k} ({', '.join(settings)})" if k == OTHER_SETTINGS else k for k in counts}
        kept = f"(kept in {where}; whenpro report {where} reports them all)"
        if len(counts) == 1:
            why, n = next(iter(counts.items()))
            return f"{plural(n, 'result')} of {named[why]} left out of the report {kept}"
        parts = ", ".join(f"{n} of {named[why]}" for why, n in counts.most_common())
        return f"{plural(len(left), 'result')} left out of the report {kept}: {parts}"

    def require_scored(self, records: Sequence[Record]) -> None:
        """ConfigError when no record of the plan is scored (every trace failed to load, or
        none has a ground truth): a report of n 0 everywhere would say nothing."""
        if any(r.score is not None for r in records):
            return
        failed = [r for r in records if r.error]
        detail = (
            f"{plural(len(failed), 'item')} failed (first: {failed[0].error})"
            if failed
            else "no record of this run has a ground truth"
        )
        raise ConfigError(
            f"no labelled trace to score in {self.dataset}: {detail}; no report written",
            expected=f"labelled traces whenpro can read; whenpro ls {self.dataset} says why a file fails",
        )


__all__ = ["GONE", "NOT_CHOSEN", "OTHER_SETTINGS", "Scope"]
