"""Exploring benchmark results (UI-free; the TUI's results screen calls these): which
file is a results file, the leaderboard and breakdown tables as rows of
:class:`~whenpro_core.bench.aggregate.Metrics` with their usage, the traces behind any
cell (with the per-axis verdict the cell counts), and a prediction set against the
ground truth, axis by axis.

Every number comes from :func:`whenpro_core.bench.aggregate.aggregate`; the traces behind
a cell are chosen with the same rules (docs/architecture.md, 'Scoring'), so a
cell's value can always be recomputed from its list:

* **Agent** counts traces of multi-agent frameworks only (single-agent ones are left
  out, docs/architecture.md, 'Formats and step coordinates'), and averages per framework;
* **Step** and **Joint** count every scored trace, averaged per framework;
* **Error** (macro-F1) and **mode** accuracy count traces whose ground truth has a mode;
* the plain accuracies (``agt``, ``stp``, ``stp±k``, ``joint``) count every scored trace.

A trace is *scored* when its record has a ground truth (``Record.score``); a failed
attribution of a labelled trace is scored as wrong on every axis.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from whenpro_core.bench.aggregate import DIMENSIONS, Metrics, Report, Scored, _dimension, aggregate
from whenpro_core.bench.records import Record, latest
from whenpro_core.bench.report import load_report_records
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.registry import split_ref
from whenpro_core.library.listing import natural_key, walk_rows
from whenpro_core.safety.textsafe import compact, plural
from whenpro_core.trace.model import Usage
from whenpro_core.trace.taxonomy import Taxonomy

#: The row value that pools every modality of a group (the leaderboard's composite).
ALL = "all"
#: Breakdown titles, in :data:`~whenpro_core.bench.aggregate.DIMENSIONS` order.
DIMENSION_TITLES = {
    "modality": "leaderboard",
    "framework": "framework",
    "benchmark": "benchmark",
    "mode": "gold mode",
    "length": "length",
}

GroupKey = tuple[str, str, bool]


# --------------------------------------------------------------------------- columns


@dataclass(frozen=True)
class Column:
    """One metric column of the results tables.

    Attributes:
        key: the :class:`~whenpro_core.bench.aggregate.Metrics` field (``agent``,
            ``step``...) or ``n``, ``calls``, ``tokens``, ``cost``.
        title: the column title.
        axis: the per-trace verdict a drill-down shows (``agent``, ``step``,
            ``step_tol``, ``mode``, ``joint``), ``None`` for count and usage columns.
        counts: which traces the number counts: ``all`` scored traces,
            ``multi_agent`` (the Agent metric), ``with_mode`` (Error and mode accuracy) or
            ``failed`` (the items whose attribution failed: ``Record.error``).
        percent: shown as a percentage.
    """

    key: str
    title: str
    axis: str | None = None
    counts: str = "all"
    percent: bool = True


def columns(tolerance: int) -> list[Column]:
    """The columns of the leaderboard and breakdown tables, in display order."""
    return [
        Column("n", "n", percent=False),
        Column("agent", "Agent", "agent", "multi_agent"),
        Column("step", "Step", "step"),
        Column("error", "Error F1", "mode", "with_mode"),
        Column("joint", "Joint", "joint"),
        Column("agent_acc", "agt", "agent"),
        Column("step_acc", "stp", "step"),
        Column("step_acc_tol", f"stp±{tolerance}", "step_tol"),
        Column("mode_acc", "mode", "mode", "with_mode"),
        Column("calls", "calls", percent=False),
        Column("tokens", "tokens", percent=False),
        Column("cost", "cost $", percent=False),
        Column("failed", "failed", counts="failed", percent=False),
    ]


def pct(value: float | None) -> str:
    """``0.4567`` -> ``"45.7"``; ``None`` -> ``"—"``."""
    return "—" if value is None else f"{value * 100:.1f}"


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class TableRow:
    """One row of a results table: a group (model × protocol × gold) and a value of a
    dimension (``value`` is :data:`ALL` for the composite row), its metrics as
    :func:`aggregate` computed them, and the usage of the records behind it."""

    group: GroupKey
    label: str
    dimension: str
    value: str
    metrics: Metrics
    usage: Usage
    composite: bool = False

    def cell(self, column: Column) -> str:
        """The text of ``column`` in this row."""
        if column.key == "n":
            return f"{self.metrics.n:,}"
        if column.key == "failed":
            return f"{self.metrics.failed:,}"
        if column.key == "calls":
            return f"{self.usage.calls:,}"
        if column.key == "tokens":
            return compact(self.usage.input_tokens + self.usage.output_tokens)
        if column.key == "cost":
            return f"{self.usage.cost_usd:.2f}"
        return pct(getattr(self.metrics, column.key))


@dataclass
class Results:
    """Loaded results: the latest record per key, the :class:`Report` of
    :func:`aggregate` over them, the files read and the lines skipped."""

    records: list[Record]
    report: Report
    sources: list[str]
    problems: list[str]

    @property
    def tolerance(self) -> int:
        """The k of the ±k step accuracy."""
        return self.report.tolerance

    def group_records(self, group: GroupKey) -> list[Record]:
        """Every record of one group, in file order."""
        return [r for r in self.records if r.group == group]


def load_results(paths: Sequence[str | Path], *, tolerance: int | None = None) -> Results:
    """Read results files (several are merged, the last record per key wins) and
    aggregate them. Raises TraceFormatError for a missing file or one without records."""
    if not paths:
        raise TraceFormatError("no results file given", expected="RESULTS.jsonl")
    loaded = load_report_records(paths)  # scored from the predictions, as whenpro report does
    records, problems = loaded.records, loaded.problems
    if not records:
        raise TraceFormatError(
            "no benchmark records found", path=Path(paths[0]), expected="a results .jsonl written by whenpro bench"
        )
    recs = latest(records)
    report = aggregate(recs, tolerance=tolerance, sources=[str(p) for p in paths], problems=problems)
    return Results(recs, report, [str(p) for p in paths], problems)


def _usage(records: Iterable[Record]) -> Usage:
    total = Usage()
    for r in records:
        total = total.add(r.usage)
    return total


def table_rows(results: Results, dimension: str) -> list[TableRow]:
    """The rows of one table: per group (best composite Joint first) a row per value of
    ``dimension``; the leaderboard (``modality``) adds the group's composite row when
    it has several modalities, or when it has none (failed records only)."""
    if dimension not in DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r}")
    k = results.tolerance
    rows: list[TableRow] = []
    for g in results.report.groups:
        key: GroupKey = (g.model, g.protocol, g.with_gold)
        recs = results.group_records(key)
        by_value: dict[str, list[Record]] = {}
        for r in recs:
            if r.score is not None:
                by_value.setdefault(_dimension(Scored.of(r, k), dimension), []).append(r)
        if dimension == "modality":
            for mod, cell in g.cells.items():
                rows.append(TableRow(key, g.label, dimension, mod, cell, _usage(by_value.get(mod, []))))
            if len(g.cells) != 1:
                c = g.composite
                comp = g.overall.model_copy(
                    update={"agent": c.agent, "step": c.step, "error": c.error, "joint": c.joint}
                )
                rows.append(TableRow(key, g.label, dimension, ALL, comp, g.usage, composite=True))
        else:
            for b in g.breakdowns.get(dimension, []):
                rows.append(TableRow(key, g.label, dimension, b.value, b.metrics, _usage(by_value.get(b.value, []))))
    return rows


# --------------------------------------------------------------------------- drill-down


@dataclass(frozen=True)
class Outcome:
    """One trace behind a cell: its ``record`` and, for every axis, whether the
    prediction was right (``mode`` is ``None`` when the ground truth has no mode).
    ``counted`` is False for a trace the cell's number leaves out (shown dimmed when
    listing every trace of a row); ``correct`` is the verdict on the cell's axis
    (``None`` for count and usage columns)."""

    record: Record
    agent: bool
    step: bool
    step_tol: bool
    mode: bool | None
    joint: bool
    counted: bool = True
    correct: bool | None = None

    @property
    def trace_id(self) -> str:
        return self.record.trace.id or self.record.ref

    def verdict(self, axis: str) -> bool | None:
        """The verdict on ``axis`` (``agent``, ``step``, ``step_tol``, ``mode``, ``joint``)."""
        value: bool | None = getattr(self, axis)
        return value


def _counts(column: Column | None, rec: Record) -> bool:
    if column is None or column.counts == "all":
        return True
    if column.counts == "multi_agent":
        return not rec.trace.single_agent
    if column.counts == "failed":
        return bool(rec.error)
    return bool((rec.trace.gt_mode or "").strip())


def cell_outcomes(results: Results, row: TableRow, column: Column | None = None) -> list[Outcome]:
    """The traces behind ``row`` × ``column``: the scored records of the row's group
    whose ``dimension`` value is the row's (every one for the composite row) and which
    the column counts (:class:`Column.counts`), by trace id in natural order (``t2``
    before ``t10``; a concurrent bench writes records in completion order, which differs
    run to run), with their verdicts. ``column`` ``None`` lists the whole row."""
    k = results.tolerance
    out = []
    for r in results.group_records(row.group):
        if r.score is None:
            continue
        s = Scored.of(r, k)
        if row.value != ALL and _dimension(s, row.dimension) != row.value:
            continue
        if not _counts(column, r):
            continue
        verdicts = {"agent": s.agent, "step": s.step, "step_tol": s.step_tol, "mode": s.mode, "joint": s.joint}
        correct = None
        if column is not None and column.axis is not None:
            correct = bool(verdicts[column.axis])
        out.append(
            Outcome(r, agent=s.agent, step=s.step, step_tol=s.step_tol, mode=s.mode, joint=s.joint, correct=correct)
        )
    return sorted(out, key=lambda o: natural_key(o.trace_id))


def cell_summary(outcomes: Sequence[Outcome], row: TableRow, column: Column | None) -> str:
    """One line saying what a drill-down list is: ``"Step 31.8 · magentic-one · 13 of
    41 correct (mean over 1 framework)"``."""
    n = len(outcomes)
    where = "all modalities" if row.value == ALL else f"{row.dimension} {row.value}"
    if column is None or column.axis is None:
        return f"{row.label} · {where} · {plural(n, 'trace')}"
    right = sum(1 for o in outcomes if o.correct)
    value = row.cell(column)
    how = ""
    if column.key in ("agent", "step", "joint"):
        fws = len({o.record.trace.framework for o in outcomes})
        how = f" (mean over {plural(fws, 'framework')})"
    elif column.key == "error":
        how = " (macro-F1 over gold modes)"
    if row.composite and column.key in ("agent", "step", "error", "joint"):
        mods = len({o.record.trace.modality for o in outcomes})
        how = f" (mean over {mods} modalit{'ies' if mods != 1 else 'y'}{how.replace(' (', ' of the ', 1)}"
    return f"{column.title} {value}{how} · {row.label} · {where} · {right:,} of {n:,} correct"


# --------------------------------------------------------------------------- one record


@dataclass(frozen=True)
class AxisLine:
    """A prediction against the ground truth on one axis (``agent``, ``step``,
    ``mode``): the ``predicted`` and ``gold`` values as text, the ``verdict`` (``None``
    when the axis is not scored, e.g. no gold mode), and a ``note``."""

    axis: str
    predicted: str
    gold: str
    verdict: bool | None
    note: str = ""


def compare(record: Record, taxonomy: Taxonomy | None = None) -> list[AxisLine]:
    """The record's prediction set against its ground truth, axis by axis (agent, step,
    mode). Values are raw trace text: escape or clean them before display."""
    pred = record.prediction
    meta = record.trace
    score = record.score
    gold_agent = meta.gt_agent or ", ".join(meta.gt_agents) or ("agent" if meta.single_agent else "—")
    gold_step = meta.gt_step or "—"
    if meta.round_only and meta.gt_step:
        gold_step = f"round {meta.gt_step}"
    p_agent = (pred.agent if pred else None) or "—"
    p_step = (pred.step if pred else None) or "—"
    p_mode = (pred.mode if pred else None) or "—"
    step_note = ""
    if score is not None and not score.step and record.step_distance is not None:
        step_note = f"{plural(record.step_distance, 'step')} away"
        if record.step_within(record.tolerance) and record.tolerance:
            step_note += f" (within ±{record.tolerance})"
    mode_note = ""
    if taxonomy is not None and pred and pred.mode:
        found = taxonomy.get(pred.mode)
        mode_note = found.name if found else ""
    return [
        AxisLine(
            "agent",
            p_agent,
            gold_agent,
            score.agent if score else None,
            "single-agent framework" if meta.single_agent else "",
        ),
        AxisLine("step", p_step, gold_step, score.step if score else None, step_note),
        AxisLine("mode", p_mode, meta.gt_mode or "—", score.mode if score else None, mode_note),
    ]


def resolve_ref(record: Record, by_id: dict[str, str] | None = None) -> str:
    """The reference to open a record's trace with: its own ``ref`` while that file
    exists, else the reference of the trace with the same id in ``by_id`` (a dataset
    given with ``--results``), else the record's ref (opening it then reports the
    missing file)."""
    path, _key = split_ref(record.ref)
    if path.exists() or not by_id:
        return record.ref
    return by_id.get(record.trace.id, record.ref)


def dataset_index(dataset: str | Path) -> dict[str, str]:
    """Trace id -> reference for every readable trace of a dataset (a walk; files that
    fail to import are left out). Raises TraceFormatError when ``dataset`` names
    nothing."""
    return {row.id: row.ref() for row in walk_rows(dataset) if row.error is None}


__all__ = [
    "ALL",
    "AxisLine",
    "Column",
    "DIMENSION_TITLES",
    "Outcome",
    "Results",
    "TableRow",
    "cell_outcomes",
    "cell_summary",
    "columns",
    "compact",
    "compare",
    "dataset_index",
    "load_results",
    "pct",
    "resolve_ref",
    "table_rows",
]
