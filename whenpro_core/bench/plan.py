"""Planning a benchmark run (``whenpro bench``): which traces, which protocol × model ×
gold settings, and which of those work items are still to run (docs/architecture.md, 'Scoring' and
'Files whenpro writes').

A :class:`WorkItem` is plain data: the trace reference, protocol, model name, gold
setting, tolerance and the trace's cheap listing row. It is picklable and
JSON-serialisable, so a plan can be split into shards for other processes or machines
(see :mod:`whenpro_core.bench.runner`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from whenpro_core.attribution.protocols import protocol_name
from whenpro_core.bench.records import Record, absolute_ref, record_key
from whenpro_core.errors import ConfigError
from whenpro_core.formats import walk
from whenpro_core.library.listing import RowFilter
from whenpro_core.safety.textsafe import plural
from whenpro_core.trace.model import TraceSummary

#: ``--gold`` / ``--no-gold`` / ``--both``: which settings of "the judge sees the gold
#: answer" to run.
GOLD_SETTINGS = {"gold": (True,), "no-gold": (False,), "both": (True, False)}

#: The model name recorded for the offline heuristic protocol.
HEURISTIC_MODEL = "heuristic"
#: The model name of an offline counterfactual setting (no ``--model``: the built-in
#: systems' reference policies correct the steps, as ``whenpro attribute`` does).
OFFLINE_MODEL = "offline"


class WorkItem(BaseModel):
    """One unit of work: attribute the trace at ``ref`` with ``protocol`` and ``model``,
    the gold answer shown or not, and score it with step tolerance ``tolerance``.

    ``ref`` is absolute (``path`` or ``path#key``); ``summary`` is the trace's listing
    row (cheap metadata, used for ``--where`` and when the trace fails to load).
    ``template``: the ``--template`` file wording the all-at-once request; ``protocol`` is
    then ``all-at-once@template:<sha>`` so the key, record and report label carry its hash.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str
    protocol: str
    model: str
    with_gold: bool = True
    tolerance: int = 0
    summary: TraceSummary
    template: str | None = None  # absolute path of the --template file (protocol names its hash)

    @property
    def key(self) -> str:
        """The resume key (:func:`~whenpro_core.bench.records.record_key`)."""
        return record_key(self.ref, self.protocol, self.model, self.with_gold)


# --------------------------------------------------------------------------- planning


@dataclass
class Selection:
    """The traces chosen from a dataset: listing ``rows`` in dataset order, plus how many
    ``unlabelled`` traces were left out (nothing to score), how many ``bad`` files
    are included (they become error records), the ``total`` of rows walked and the
    ``refs`` of all of them (absolute, :func:`~whenpro_core.bench.records.absolute_ref`:
    the traces the dataset holds, chosen or not)."""

    rows: list[TraceSummary]
    unlabelled: int = 0
    bad: int = 0
    total: int = 0
    refs: set[str] = field(default_factory=set)


def select(
    dataset: str | Path,
    *,
    where: RowFilter | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
) -> Selection:
    """Walk ``dataset`` and choose the traces to run: labelled ones (a ground-truth step
    or mode in the listing) that pass ``where``; then a random ``sample`` of that many
    (reproducible with ``seed``, dataset order kept); then the first ``limit``.

    Files that fail to import are kept as rows (they become error records) unless a
    ``where`` filter is given (:meth:`~whenpro_core.library.listing.RowFilter.keeps`).
    Raises TraceFormatError when the dataset path does not
    exist, ConfigError when nothing is left to run or every row left failed to import.
    """
    where = where or RowFilter()
    sel = Selection(rows=[])
    for row in walk(dataset):
        sel.total += 1
        sel.refs.add(absolute_ref(row.ref()))
        if row.error is None and row.gt_step is None and row.gt_mode is None:
            sel.unlabelled += 1
            continue
        if where.keeps(row):
            sel.rows.append(row)
            if row.error is not None:
                sel.bad += 1
    if sample is not None and sample < len(sel.rows):
        picked = sorted(random.Random(seed).sample(range(len(sel.rows)), max(sample, 0)))
        sel.rows = [sel.rows[i] for i in picked]
    if limit is not None:
        sel.rows = sel.rows[: max(limit, 0)]
    if not sel.rows:
        detail = f"{sel.total} traces found, {sel.unlabelled} without a ground truth"
        raise ConfigError(f"nothing to run in {dataset} ({detail})", expected="labelled traces matching --where")
    if all(row.error is not None for row in sel.rows):
        raise _none_readable(dataset, sel)
    return sel


def _none_readable(dataset: str | Path, sel: Selection) -> ConfigError:
    """The error for a selection whose every row failed to import: how many, the first
    reason, how many readable traces had no ground truth."""
    bad = sel.rows
    what = plural(len(bad), "file") if all(r.key is None for r in bad) else f"{len(bad):,} files or rows"
    unlabelled = f", {plural(sel.unlabelled, 'trace')} without a ground truth" if sel.unlabelled else ""
    return ConfigError(
        f"no labelled trace to score in {dataset}: {what} failed to import{unlabelled} (first: {bad[0].error})",
        expected=f"labelled traces whenpro can read; whenpro ls {dataset} says why each file fails",
    )


def settings(protocols: Sequence[str], models: Sequence[str]) -> list[tuple[str, str]]:
    """The (protocol, model) pairs to run. ``heuristic`` runs once, with model
    ``heuristic``; ``counterfactual`` without a model runs once, offline (model
    :data:`OFFLINE_MODEL`: the reference policies of the built-in systems correct the
    steps); every other protocol runs with every non-heuristic model.

    ConfigError when an LLM protocol has no model, or a model is used by no protocol.
    """
    protos = [protocol_name(p) for p in protocols] or ["heuristic"]
    llm_models = [m for m in models if m.strip().lower() != HEURISTIC_MODEL]
    pairs: list[tuple[str, str]] = []
    for proto in dict.fromkeys(protos):
        if proto == "heuristic":
            pairs.append((proto, HEURISTIC_MODEL))
            continue
        if proto == "counterfactual" and not llm_models:  # offline on built-in systems, as `attribute` runs it
            pairs.append((proto, OFFLINE_MODEL))
            continue
        if not llm_models:
            raise ConfigError(
                f"protocol {proto} needs a model", expected="--model provider:model (or --protocol heuristic offline)"
            )
        pairs.extend((proto, m) for m in llm_models)
    if llm_models and all(p == "heuristic" for p, _ in pairs):
        raise ConfigError(
            f"model {llm_models[0]} is used by no protocol", expected="an LLM protocol, e.g. --protocol all-at-once"
        )
    return pairs


def plan(
    dataset: str | Path | Sequence[TraceSummary],
    protocols: Sequence[str],
    models: Sequence[str],
    gold: str = "gold",
    *,
    where: RowFilter | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    tolerance: int = 0,
) -> list[WorkItem]:
    """Every work item of a benchmark run, trace-major (all settings of a trace
    together): traces × (protocol, model) pairs (:func:`settings`) × gold settings
    (``"gold"``, ``"no-gold"`` or ``"both"``, :data:`GOLD_SETTINGS`).

    ``dataset`` is a path (walked with :func:`select`) or listing rows already chosen.
    Raises ConfigError for bad protocols, models or gold setting.
    """
    if gold not in GOLD_SETTINGS:
        raise ConfigError(f"unknown gold setting {gold!r}", expected=", ".join(GOLD_SETTINGS))
    pairs = settings(protocols, models)
    if isinstance(dataset, (str, Path)):
        rows = select(dataset, where=where, limit=limit, sample=sample, seed=seed).rows
    else:
        rows = list(dataset)
    items = []
    for row in rows:
        ref = absolute_ref(row.ref())
        for proto, model in pairs:
            for with_gold in GOLD_SETTINGS[gold]:
                items.append(
                    WorkItem(
                        ref=ref, protocol=proto, model=model, with_gold=with_gold, tolerance=tolerance, summary=row
                    )
                )
    return items


def pending(items: Iterable[WorkItem], done: dict[str, Record], *, retry_errors: bool = False) -> list[WorkItem]:
    """The items still to run: those with no record yet, those whose record failed on
    the backend (transient), and with ``retry_errors`` every failed one."""
    out = []
    for item in items:
        rec = done.get(item.key)
        if rec is None or (rec.error and (retry_errors or rec.error_kind == "backend")):
            out.append(item)
    return out
