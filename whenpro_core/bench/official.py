"""The official Who&When Pro leaderboard rules (``whowhen_eval/leaderboard.py``), applied
to whenpro results records: ``whenpro report --rules official``.

How they differ from whenpro's default rules (:mod:`whenpro_core.bench.aggregate`):

* **The agent axis is the official scorer's** (``whowhen_eval/score.py``): the agent the
  judge named, stripped and lower-cased, must be one the framework accepts. smolagents,
  alfagent and eva accept only ``agent``, openai_cua only ``computer_use_agent``,
  agentoccam and gemini only ``web_agent`` (the label their renderers give every step);
  every other framework (mathchat and pixelcraft too: no ``agent`` for them) the labelled
  agent(s); all of them the accepted alternatives. Nothing else is normalised: a
  decorated ``Orchestrator (thought)`` is not ``orchestrator``.
* **Who&When records are not in the leaderboard**: a trace of the original Who&When files
  is scored by the original script's rules (:mod:`whenpro_core.bench.substring_metric`).

* **Failed rows are left out** (the default scores them wrong on every axis).
  Unlabelled rows are left out under both rules.
* **Cells are the release's splits**: ``text``, ``image``, ``image_gui`` and ``video``;
  ``image_gui`` is its own cell (the default folds it into ``image``) and the composite
  is the mean of each axis over the cells present (four when all are).
* **Error-F1 compares the predicted code with the gold code as strings**: an accepted
  alternative mode counts as its own class (a false positive of that class and a miss of
  the gold class), although the row's mode axis, and so its joint, count it correct.
  Classes are those with gold support in the cell; a missing mode is the class ``""``.
* **Strict coordinates**: the step the judge wrote (``Attribution.step_text``) must equal
  an accepted coordinate after only stripping, lower-casing and removing a ``step ``/
  ``round ``/``turn `` prefix (``"Step 03"`` is not ``"3"``); rounds only for debate and
  dylan. Records written before whenpro kept ``strict_step`` fall back to the default
  step verdict.

Per cell: **Who** = mean over multi-agent frameworks of agent accuracy (frameworks in
:data:`OFFICIAL_SINGLE_AGENT`, the GUI agents but coact among them, are left out;
``None`` when none is left), **When** = mean
over frameworks of step accuracy, **What** = macro-F1 as above, **All** = mean over
frameworks of joint accuracy (agent, step and mode all correct).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean

from whenpro_core.bench.aggregate import group_label
from whenpro_core.bench.records import Record, latest

#: The newest official leaderboard's single-agent frameworks (left out of Who): the
#: single-agent text and video frameworks and the GUI agents but coact.
OFFICIAL_SINGLE_AGENT = frozenset(
    {"smolagents", "alfagent", "mathchat", "pixelcraft", "eva", "openai_cua", "agentoccam", "gemini"}
)
#: Frameworks whose official scorer accepts only the agent label their renderer gives
#: every step (and the accepted alternatives), not the labelled agent.
FIXED_AGENT_LABEL = {
    "smolagents": "agent",
    "alfagent": "agent",
    "eva": "agent",
    "openai_cua": "computer_use_agent",
    "agentoccam": "web_agent",
    "gemini": "web_agent",
}
#: Cells in leaderboard order.
OFFICIAL_CELLS = ("text", "image", "image_gui", "video")
AXES = ("Who", "When", "What", "All")


@dataclass(frozen=True)
class Row:
    """One scored record as the official leaderboard sees it."""

    framework: str
    cell: str
    agent: bool
    step: bool
    mode: bool
    gold_mode: str
    said_mode: str


@dataclass
class OfficialGroup:
    """One model × protocol × gold setting under the official rules: ``cells`` maps a
    split to its axes (``None`` for Who without multi-agent rows), ``cell_rows`` each
    split's scored rows, ``composite`` the mean per axis over the cells present; ``rows``
    scored rows; ``dropped_failed`` and
    ``dropped_unlabelled`` rows left out; ``strict_changed`` rows whose step verdict the
    strict coordinate rule changed."""

    label: str
    cells: dict[str, dict[str, float | None]] = field(default_factory=dict)
    cell_rows: dict[str, int] = field(default_factory=dict)
    composite: dict[str, float | None] = field(default_factory=dict)
    rows: int = 0
    dropped_failed: int = 0
    dropped_unlabelled: int = 0
    strict_changed: int = 0


def cell_of(rec: Record) -> str:
    """The record's leaderboard cell: its split (``image_gui``) or its modality."""
    return rec.trace.split or rec.trace.modality or "text"


def _official_name(name: object) -> str:
    return str(name).strip().lower() if name else ""


def official_agent_ok(rec: Record) -> bool:
    """The agent axis under the official scorer's rules (module doc)."""
    said = _official_name(rec.prediction.agent if rec.prediction else None)
    meta = rec.trace
    fixed = FIXED_AGENT_LABEL.get(meta.framework)
    names = {fixed} if fixed else {meta.gt_agent, *meta.gt_agents}
    names.update(meta.gt_accepted.agent if meta.gt_accepted else [])
    return bool(said) and said in {_official_name(n) for n in names if n}


def row_of(rec: Record) -> Row | None:
    """The record as an official row, ``None`` when it is left out (failed, unscored)."""
    if rec.error or rec.score is None:
        return None
    step = rec.score.step if rec.strict_step is None else rec.strict_step
    said = (rec.prediction.mode or "") if rec.prediction else ""
    return Row(
        rec.trace.framework,
        cell_of(rec),
        official_agent_ok(rec),
        step,
        bool(rec.score.mode),
        (rec.trace.gt_mode or "").strip().upper(),
        said.strip().upper(),
    )


def macro_f1(said: Sequence[str], gold: Sequence[str]) -> float:
    """Mean F1 over the classes with gold support; predictions of other classes (an
    alternative mode, no mode) are false positives only. 0.0 when there is no gold."""
    scores = []
    for label in sorted(set(gold)):
        tp = sum(1 for p, g in zip(said, gold, strict=True) if p == label == g)
        fp = sum(1 for p, g in zip(said, gold, strict=True) if p == label != g)
        fn = sum(1 for p, g in zip(said, gold, strict=True) if g == label != p)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        scores.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return fmean(scores) if scores else 0.0


def _per_framework(rows: Sequence[Row], ok: str) -> dict[str, float]:
    by_fw: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_fw[r.framework].append(r)
    if ok == "joint":
        return {fw: sum(r.agent and r.step and r.mode for r in rs) / len(rs) for fw, rs in by_fw.items()}
    return {fw: sum(getattr(r, ok) for r in rs) / len(rs) for fw, rs in by_fw.items()}


def cell_metrics(rows: Sequence[Row]) -> dict[str, float | None]:
    """Who, When, What, All of one cell's rows (see the module doc)."""
    multi = [r for r in rows if r.framework not in OFFICIAL_SINGLE_AGENT]
    return {
        "Who": fmean(_per_framework(multi, "agent").values()) if multi else None,
        "When": fmean(_per_framework(rows, "step").values()),
        "What": macro_f1([r.said_mode for r in rows], [r.gold_mode for r in rows]),
        "All": fmean(_per_framework(rows, "joint").values()),
    }


def official_group(label: str, records: Sequence[Record]) -> OfficialGroup:
    """The official numbers of one group's records."""
    group = OfficialGroup(label)
    rows = []
    for rec in records:
        row = row_of(rec)
        if row is None:
            group.dropped_failed += bool(rec.error)
            group.dropped_unlabelled += not rec.error
            continue
        rows.append(row)
        group.strict_changed += (
            rec.strict_step is not None and rec.score is not None and rec.strict_step != rec.score.step
        )
    group.rows = len(rows)
    cells = [c for c in OFFICIAL_CELLS if any(r.cell == c for r in rows)]
    cells += sorted({r.cell for r in rows} - set(cells))
    for cell in cells:
        in_cell = [r for r in rows if r.cell == cell]
        group.cells[cell] = cell_metrics(in_cell)
        group.cell_rows[cell] = len(in_cell)
    for axis in AXES:
        values = [m[axis] for m in group.cells.values() if m[axis] is not None]
        group.composite[axis] = fmean(v for v in values if v is not None) if values else None
    return group


def official_report(records: Sequence[Record]) -> list[OfficialGroup]:
    """One :class:`OfficialGroup` per model × protocol × gold setting (latest record per
    key; records of the original Who&When files left out), best composite All first."""
    by_group: dict[tuple[str, str, bool], list[Record]] = defaultdict(list)
    for rec in latest(records):
        if not rec.trace.subset:  # Who&When records: the original script's rules
            by_group[rec.group].append(rec)
    groups = [official_group(group_label(*key), recs) for key, recs in by_group.items()]
    return sorted(groups, key=lambda g: -(g.composite.get("All") or 0.0))


def all_left_out(records: Sequence[Record]) -> str | None:
    """One line saying why the official leaderboard has no row when every record is left
    out (each reason with its count: a record of the original Who&When files, a failed
    item, an unlabelled trace); ``None`` when some record is scored or there is none."""
    recs = latest(records)
    whowhen = sum(1 for r in recs if r.trace.subset)
    failed = sum(1 for r in recs if not r.trace.subset and r.error)
    unlabelled = sum(1 for r in recs if not r.trace.subset and not r.error and r.score is None)
    if not recs or whowhen + failed + unlabelled < len(recs):
        return None
    reasons = (
        (whowhen, "of the original Who&When files (scored by its own script's rules instead)"),
        (failed, "failed (no verdict to score)"),
        (unlabelled, "of unlabelled traces (no ground truth to score against)"),
    )
    said = "; ".join(f"{n} {what}" for n, what in reasons if n)
    every = "the one record" if len(recs) == 1 else f"all {len(recs)} records"
    return f"official leaderboard: {every} left out: {said}"


def rules_header(groups: Sequence[OfficialGroup]) -> str:
    """The line that says which rules were used and what each rule dropped or changed."""
    failed = sum(g.dropped_failed for g in groups)
    unlabelled = sum(g.dropped_unlabelled for g in groups)
    changed = sum(g.strict_changed for g in groups)
    return (
        f"rules: official (Who&When Pro leaderboard and scorer): failed rows left out: {failed}; unlabelled "
        f"rows left out: {unlabelled}; image_gui its own cell, composite over the cells present (composite†: "
        f"fewer than the four); "
        f"alternative modes their own class in Error-F1; strict coordinates changed {changed} step "
        f"verdict{'s' if changed != 1 else ''}; agents as the official scorer accepts them; GUI agents but "
        "coact out of Who"
    )


def official_rows(groups: Sequence[OfficialGroup]) -> list[list[str]]:
    """Table rows ``[setting, cell, rows, Who, When, What, All]`` as the official
    leaderboard lays them out: every official cell (``text``, ``image``, ``image_gui``,
    ``video``) with its scored rows, ``0`` and ``—`` for a cell the setting has no rows in,
    then a ``composite`` row (all scored rows; labelled ``composite†`` when it averages
    fewer than the four official cells). Percentages with one decimal; ``—`` for no value."""

    def pct(v: float | None) -> str:
        return "—" if v is None else f"{v * 100:.1f}"

    out = []
    for g in groups:
        for cell in [*OFFICIAL_CELLS, *(c for c in g.cells if c not in OFFICIAL_CELLS)]:
            m = g.cells.get(cell)
            values = ["—"] * len(AXES) if m is None else [pct(m[a]) for a in AXES]
            out.append([g.label, cell, str(g.cell_rows.get(cell, 0)), *values])
        subset = any(c not in g.cells for c in OFFICIAL_CELLS)
        label = "composite†" if subset else "composite"
        out.append([g.label, label, str(g.rows), *(pct(g.composite.get(a)) for a in AXES)])
    return out


OFFICIAL_HEADERS = ["setting", "cell", "rows", *AXES]
