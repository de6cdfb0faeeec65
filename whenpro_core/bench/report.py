"""Benchmark reports: the rows of every table, ``report.json``, ``report.md`` and a plot of
step accuracy against transcript length (``step_by_length.png`` with matplotlib, the
optional ``plot`` extra; a text plot otherwise), all from a
:class:`~whenpro_core.bench.aggregate.Report`; :func:`prepare_report` reads saved results
for ``whenpro report``. The terminal tables are :mod:`whenpro_core.cli.report`'s. Files are
written atomically.

whenpro overwrites only report files it wrote itself (:mod:`.report_files`); a user's
file of the same name makes :func:`write_report` refuse with a ConfigError before
writing anything.
"""

from __future__ import annotations

import io
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from whenpro_core.bench.aggregate import DIMENSIONS, LENGTH_BUCKETS, GroupReport, Metrics, Report, aggregate
from whenpro_core.bench.records import Record, SkippedLine, latest, read_scored
from whenpro_core.bench.report_files import (
    JSON_NAME,
    MD_LEGACY_HEADING,
    MD_MARKER,
    MD_NAME,
    PLOT_NAME,
    PNG_SOFTWARE,
    REPORT_HINT,
    ReportNames,
    check_report_dir,
    is_whenpro_report_file,
    report_names,
)
from whenpro_core.bench.reviewed import apply_reviews, check_labels
from whenpro_core.bench.scope import Scope
from whenpro_core.errors import TraceFormatError
from whenpro_core.safety.textsafe import plural, strip_controls
from whenpro_core.scale.shards import results_paths
from whenpro_core.storage import jsonio
from whenpro_core.storage.fsutil import atomic_write_bytes, atomic_write_text
from whenpro_core.trace.model import Usage

FENCE = "`" * 3
AXES = ("agent", "step", "error", "joint")
DIM_TITLES = {
    "modality": "modality",
    "framework": "framework",
    "benchmark": "benchmark",
    "mode": "gold mode",
    "length": "tokens",
}

DIM_TITLE_LONG = {**DIM_TITLES, "mode": "gold failure mode", "length": "transcript length (estimated tokens)"}


LEGEND = (
    "Agent: mean over multi-agent frameworks of agent accuracy; Step, Joint: mean over "
    "frameworks; Error: macro-F1 over gold failure modes; agt/stp: plain accuracy over "
    "all traces (missing prediction = wrong); stp±k: within k steps. Percentages. Usage: the "
    "calls behind the records (answers replayed from the response cache at their original "
    "cost); spent: what the runs paid (cache hits cost 0)."
)


def pct(value: float | None) -> str:
    """``0.4567`` -> ``"45.7"``; ``None`` -> ``"—"``."""
    return "—" if value is None else f"{value * 100:.1f}"


def _gold(g: GroupReport) -> str:
    return "gold" if g.with_gold else "no-gold"


def metric_cells(m: Metrics, tolerance: int) -> list[str]:
    """The metric columns of a table row, in :func:`metric_headers` order."""
    return [
        str(m.n),
        pct(m.agent),
        pct(m.step),
        pct(m.error),
        pct(m.joint),
        pct(m.agent_acc),
        pct(m.step_acc),
        pct(m.step_acc_tol),
    ]


def metric_headers(tolerance: int) -> list[str]:
    """Column titles matching :func:`metric_cells`."""
    return ["n", "Agent", "Step", "Error", "Joint", "agt", "stp", f"stp±{tolerance}"]


LEADERBOARD_HEADERS = ["setting", "modality"]


def leaderboard_rows(report: Report) -> list[list[str]]:
    """Rows ``[group label, modality, *metrics]``: each group's modality cells, then its
    composite when it has more than one modality."""
    rows = []
    for g in report.groups:
        for mod, cell in g.cells.items():
            rows.append([g.label, mod, *metric_cells(cell, report.tolerance)])
        if len(g.cells) > 1:
            c = g.composite
            rows.append(
                [
                    g.label,
                    "composite",
                    str(g.overall.n),
                    pct(c.agent),
                    pct(c.step),
                    pct(c.error),
                    pct(c.joint),
                    pct(g.overall.agent_acc),
                    pct(g.overall.step_acc),
                    pct(g.overall.step_acc_tol),
                ]
            )
        if not g.cells:
            rows.append([g.label, "—", "0", *["—"] * 7])
    return rows


def breakdown_rows(report: Report, dimension: str) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of one breakdown (a group column only when there are several)."""
    many = len(report.groups) > 1
    headers = (["setting"] if many else []) + [DIM_TITLES[dimension]] + metric_headers(report.tolerance)
    rows = []
    for g in report.groups:
        for row in g.breakdowns.get(dimension, []):
            rows.append(([g.label] if many else []) + [row.value] + metric_cells(row.metrics, report.tolerance))
    return headers, rows


def usage_rows(report: Report) -> list[list[str]]:
    """``[group, records, errors, calls, input, output, cached, cost, spent calls, spent
    cost, seconds]``: the usage behind the records, then what the runs spent."""
    return [
        [
            g.label,
            str(g.records),
            str(g.errors),
            str(g.usage.calls),
            f"{g.usage.input_tokens:,}",
            f"{g.usage.output_tokens:,}",
            f"{g.usage.cached_tokens:,}",
            f"{g.usage.cost_usd:.4f}",
            str(g.spent.calls),
            f"{g.spent.cost_usd:.4f}",
            f"{g.seconds:.1f}",
        ]
        for g in report.groups
    ]


def whenpro_rules_header(records: Sequence[Record], unreadable: int = 0) -> str:
    """The line naming whenpro's default rules and what they dropped: a failed row is
    scored wrong where it has a ground truth; a row without one (unlabelled, or a trace
    that could not be read) is left out, and so are the ``unreadable`` lines of the
    results files (:class:`~.records.SkippedLine`)."""
    recs = latest(records)
    failed = sum(1 for r in recs if r.error and r.score is not None)
    unscored = sum(1 for r in recs if r.score is None) + unreadable
    return (
        f"rules: whenpro (default): failed rows scored wrong on every axis: {failed}; unlabelled or "
        f"unreadable rows left out: {unscored}; image_gui counted as image; an accepted alternative "
        "mode counts as the gold class in Error-F1"
    )


def spending_line(usage: Usage, spent: Usage) -> str:
    """One line for the end of a run: the usage behind its records and what it spent,
    e.g. ``usage 12 calls, 40,100 in / 900 out tokens, $0.0930; spent 3 calls, $0.0210
    (9 answers replayed from the response cache)``."""
    line = (
        f"usage {plural(usage.calls, 'call')}, {usage.input_tokens:,} in / {usage.output_tokens:,} out "
        f"tokens ({usage.cached_tokens:,} cached), ${usage.cost_usd:.4f}; "
        f"spent {plural(spent.calls, 'call')}, {spent.input_tokens:,} in / {spent.output_tokens:,} out "
        f"tokens, ${spent.cost_usd:.4f}"
    )
    replayed = usage.calls - spent.calls
    return line + (f" ({plural(replayed, 'answer')} replayed from the response cache)" if replayed > 0 else "")


USAGE_HEADERS = [
    "setting",
    "records",
    "failed",
    "calls",
    "in tok",
    "out tok",
    "cached",
    "cost $",
    "spent calls",
    "spent $",
    "sec",
]


def confusion_rows(g: GroupReport) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of a group's confusion matrix (gold rows, predicted columns),
    with per-class support, precision, recall and F1."""
    headers = ["gold \\ pred", *g.confusion.predicted, "support", "P", "R", "F1"]
    rows = []
    for gold, counts, cls in zip(g.confusion.gold, g.confusion.counts, g.classes, strict=False):
        rows.append(
            [
                gold,
                *[str(c) if c else "·" for c in counts],
                str(cls.support),
                pct(cls.precision),
                pct(cls.recall),
                pct(cls.f1),
            ]
        )
    return headers, rows


def step_by_length(report: Report) -> dict[str, list[tuple[str, float | None, int]]]:
    """Per group label: ``(bucket, step accuracy, n)`` for every length bucket."""
    out = {}
    for g in report.groups:
        rows = {r.value: r.metrics for r in g.breakdowns.get("length", [])}
        out[g.label] = [
            (b, rows[b].step_acc if b in rows else None, rows[b].n if b in rows else 0) for b, _ in LENGTH_BUCKETS
        ]
    return out


def text_plot(report: Report, width: int = 30) -> str:
    """Step accuracy per length bucket as text bars (always available)."""
    lines = []
    for label, points in step_by_length(report).items():
        lines.append(label)
        for bucket, acc, n in points:
            bar = "" if acc is None else "█" * round(acc * width)
            lines.append(f"  {bucket:>6} │{bar:<{width}}│ {pct(acc):>5}  n={n}")
    return "\n".join(lines)


def plot_step_by_length(report: Report, path: str | Path) -> Path | None:
    """Write a PNG line plot of step accuracy against transcript-length bucket, one line
    per group. Returns the path, or ``None`` when matplotlib is not installed
    (``pip install 'whenpro[plot]'``)."""
    try:
        import matplotlib  # lazy: optional [plot] extra, slow to import

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # lazy: optional [plot] extra, slow to import
    except ImportError:
        return None

    buckets = [b for b, _ in LENGTH_BUCKETS]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for label, points in step_by_length(report).items():
        known = [(i, acc) for i, (_, acc, _) in enumerate(points) if acc is not None]
        xs = [i for i, _ in known]
        ys = [acc * 100 for _, acc in known]
        ax.plot(xs, ys, marker="o", label=label)
        for x, y in zip(xs, ys, strict=False):
            ax.annotate(f"n={points[x][2]}", (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
    ax.set_xticks(range(len(buckets)), buckets)
    ax.set_xlabel("transcript length (estimated tokens)")
    ax.set_ylabel("step accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Step accuracy by trace length")
    ax.grid(alpha=0.3)
    if report.groups:
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": PNG_SOFTWARE})
    plt.close(fig)
    return atomic_write_bytes(path, buf.getvalue())


# --------------------------------------------------------------------------- terminal


def safe(text: str) -> str:
    """Untrusted text (framework names, model answers, error messages) made safe for a
    terminal or a Markdown file: escape sequences (CSI, OSC) and control characters
    removed whole."""
    return strip_controls(str(text))


# --------------------------------------------------------------------------- markdown


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    def esc(cell: str) -> str:
        return safe(cell).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def report_markdown(report: Report, plot: str | None = None) -> str:
    """The report as Markdown (``report.md``); ``plot`` is the PNG's file name if any."""
    k = report.tolerance
    parts = [
        "# whenpro benchmark report",
        "",
        f"Results: {safe(', '.join(report.sources)) or '(in memory)'}  ",
        f"Created: {report.created}; step tolerance ±{k}.  ",
        *([f"Scope: the items of the bench run's plan; {safe(report.scope)}.  "] if report.scope else []),
        *([f"{safe(report.labels)}."] if report.labels else []),
        "",
        LEGEND,
        "",
        "## Leaderboard",
        "",
        _md_table([*LEADERBOARD_HEADERS, *metric_headers(k)], leaderboard_rows(report)),
    ]
    for dim in DIMENSIONS[1:]:  # by modality = the leaderboard's cells
        headers, rows = breakdown_rows(report, dim)
        if rows:
            parts += ["", f"## By {DIM_TITLE_LONG[dim]}", "", _md_table(headers, rows)]
    for g in report.groups:
        if g.confusion.gold:
            headers, rows = confusion_rows(g)
            parts += ["", f"## Failure modes: {safe(g.label)}", "", _md_table(headers, rows)]
    parts += [
        "",
        "## Usage",
        "",
        _md_table(USAGE_HEADERS, usage_rows(report)),
        "",
        "## Step accuracy by transcript length",
        "",
    ]
    if plot:
        parts += [f"![step accuracy by transcript length]({plot})", ""]
    parts += [FENCE, safe(text_plot(report)).replace(FENCE, "'" * 3), FENCE]
    errors = [(g.label, e) for g in report.groups for e in g.error_examples]
    if errors:
        parts += ["", "## Errors (first few per group)", ""]
        parts += [f"- {safe(label)}: `{safe(e).replace('`', chr(39))}`" for label, e in errors]
    if report.problems:
        parts += ["", "## Unreadable lines", ""] + [f"- {safe(p)}" for p in report.problems[:50]]
    return "\n".join(parts) + "\n"


def write_report(
    report: Report, out_dir: str | Path, *, hint: str = REPORT_HINT, names: ReportNames | None = None
) -> dict[str, Path | None]:
    """Write ``report.json``, ``report.md`` and (with matplotlib) ``step_by_length.png``
    (or the ``names`` of :func:`report_names`) into ``out_dir`` atomically. Returns
    ``{"json", "md", "plot"}`` paths (plot ``None`` when matplotlib is missing). Raises
    ConfigError, before writing anything, when one of them exists and was not written by
    whenpro (:func:`check_report_dir`)."""
    out = Path(out_dir)
    names = names or ReportNames()
    check_report_dir(out, hint, names)
    plot = plot_step_by_length(report, out / names.plot)
    md = MD_MARKER + "\n" + report_markdown(report, names.plot if plot else None)
    if plot is None:
        md += f"\n(matplotlib is not installed: `pip install 'whenpro[plot]'` for {names.plot}.)\n"
    json_path = atomic_write_bytes(out / names.json, jsonio.dumps(report.model_dump(mode="json"), indent=True) + b"\n")
    md_path = atomic_write_text(out / names.md, md)
    return {"json": json_path, "md": md_path, "plot": plot}


@dataclass
class LoadedResults:
    """Results files read for a report: the ``records`` of all of them in order, each
    scored from its prediction and labels (:func:`~.records.read_scored`), the lines
    ``skipped`` as unreadable, and per file (as named) the lines whose stored scores
    ``disagreed`` with that."""

    records: list[Record]
    skipped: list[SkippedLine]
    disagreed: dict[str, list[int]]

    @property
    def problems(self) -> list[str]:
        """A note per skipped line (:meth:`~.records.SkippedLine.note`), as a report keeps them."""
        return [s.note() for s in self.skipped]


def load_report_records(paths: Sequence[str | Path]) -> LoadedResults:
    """The records of one or more results files (in order) scored from their predictions
    and labels, the lines skipped and the stored scores that disagreed. TraceFormatError
    when a file is missing or unreadable."""
    loaded = LoadedResults([], [], {})
    for p in paths:
        read = read_scored(p)
        loaded.records += read.records
        loaded.skipped += read.skipped
        if read.disagreed:
            loaded.disagreed[str(p)] = read.disagreed
    return loaded


def _lines(numbers: Sequence[int], shown: int) -> str:
    """``line 4`` or ``lines 3, 9, …`` (at most ``shown`` numbers listed)."""
    listed = ", ".join(map(str, numbers[:shown])) + (", …" if len(numbers) > shown else "")
    return f"line {listed}" if len(numbers) == 1 else f"lines {listed}"


def skipped_warnings(skipped: Sequence[SkippedLine], shown: int = 5) -> list[str]:
    """One warning line per results file for its skipped lines, naming why the first was
    skipped: ``PATH: skipped 1 line that is not a whenpro bench record (line 2 at
    $.trace.gt_step: expected a string)``, ``PATH: skipped 2 lines that are not whenpro
    bench records (lines 1, 4; line 1: not valid JSON)``; at most ``shown`` line numbers."""
    by_file: dict[str, list[SkippedLine]] = {}
    for s in skipped:
        by_file.setdefault(s.path, []).append(s)
    out = []
    for where, lines in by_file.items():
        first = lines[0]
        reason = f"line {first.line}" + ("" if first.why.startswith("at ") else ":") + f" {first.why}"
        if len(lines) == 1:
            out.append(f"{where}: skipped 1 line that is not a whenpro bench record ({reason})")
        else:
            listed = _lines([s.line for s in lines], shown)
            out.append(f"{where}: skipped {len(lines)} lines that are not whenpro bench records ({listed}; {reason})")
    return out


def disagreement_warnings(disagreed: dict[str, list[int]], shown: int = 5) -> list[str]:
    """One warning line per results file whose records' stored scores disagree with their
    predictions and labels: ``PATH: 1 record's stored score disagrees with its prediction
    and labels (line 2); scored from the prediction``; at most ``shown`` line numbers."""
    out = []
    for where, lines in disagreed.items():
        if len(lines) == 1:
            what = "1 record's stored score disagrees with its prediction and labels"
            how = "scored from the prediction"
        else:
            what = f"{len(lines)} records' stored scores disagree with their predictions and labels"
            how = "scored from the predictions"
        out.append(f"{where}: {what} ({_lines(lines, shown)}); {how}")
    return out


@dataclass
class PreparedReport:
    """A report ready to show and write: the ``report`` (whenpro's rules), the ``records``
    it aggregates (latest per item, review decisions applied), the ``target`` folder of
    its files and, for a bench run's report, the line saying which records of the results
    were ``left_out`` of it (``None`` when none was: :meth:`.scope.Scope.left_out_line`);
    ``unreadable``: how many lines of the results were left out as unreadable."""

    report: Report
    records: list[Record]
    target: Path
    names: ReportNames
    left_out: str | None = None
    unreadable: int = 0


def prepare_report(
    paths: Sequence[str | Path],
    out_dir: str | Path | None = None,
    *,
    tolerance: int | None = None,
    hint: str = REPORT_HINT,
    labels: str = "reviewed",
    warn: Callable[[str], None] | None = None,
    scope: Scope | None = None,
) -> PreparedReport:
    """Read results and aggregate them for ``whenpro report``; the files go next to the
    (first) results file or into ``out_dir``. Each record is scored from its prediction
    and labels, not from the score stored with it (:func:`~.records.score_from_labels`).
    Skipped lines of the results and stored scores that disagree are said through
    ``warn``, one line per file each, before anything can fail. With ``labels="reviewed"`` (the
    default) traces of built datasets are scored with their latest review decision
    (:mod:`.reviewed`); ``"built"`` keeps the built labels. One results file names its
    report's files (:func:`report_names`). ``scope`` (a bench run's plan, :mod:`.scope`)
    keeps only the records of its items. TraceFormatError when a file is missing or holds
    no records; ConfigError (suggesting ``hint``) when a report file there was not written
    by whenpro, for an unknown ``labels``, or when ``scope`` is given and none of its
    records is scored."""
    check_labels(labels)
    if not paths:
        raise TraceFormatError("no results file given", expected="RESULTS.jsonl")
    given, paths = paths, results_paths(paths)  # a folder or a glob of part files: its results files
    loaded = load_report_records(paths)
    records, problems = loaded.records, loaded.problems
    if not records:  # one line: the skipped lines are the whole file, a warning would repeat it
        raise TraceFormatError(
            "no benchmark records found",
            path=paths[0],
            expected="a results .jsonl written by whenpro bench; for a trace or dataset, whenpro bench it first",
        )
    if warn is not None:
        for line in [*skipped_warnings(loaded.skipped), *disagreement_warnings(loaded.disagreed)]:
            warn(line)
    target = Path(out_dir if out_dir is not None else Path(paths[0]).parent)
    one_file = len(given) == 1 and Path(given[0]).is_file()  # several, a folder or a glob: plain names
    names = report_names(given[0] if one_file else None)
    check_report_dir(target, hint, names)
    records, left_out = _in_scope(records, scope, paths)
    note = "labels: as built (--labels built)"
    if labels == "reviewed":
        records, reviews = apply_reviews(latest(records))
        problems = [*problems, *reviews.problems]
        note = reviews.note()
    if scope is not None:
        scope.require_scored(latest(records))
    report = aggregate(records, tolerance=tolerance, sources=[str(p) for p in paths], problems=problems)
    report.labels, report.scope = note, left_out or ""
    return PreparedReport(report, list(records), target, names, left_out, unreadable=len(loaded.skipped))


def _in_scope(records: list[Record], scope: Scope | None, paths: Sequence[Path]) -> tuple[list[Record], str | None]:
    """The records of ``scope``'s plan (latest per item; all of them without a scope) and
    the line saying which others were left out (``None`` when none was)."""
    if scope is None:
        return records, None
    kept, left = scope.split(latest(records))
    where = " ".join(shlex.quote(str(p)) for p in paths)  # as the hint's command line takes them
    return kept, scope.left_out_line(left, where)


__all__ = [
    "JSON_NAME",
    "MD_LEGACY_HEADING",
    "MD_MARKER",
    "MD_NAME",
    "PLOT_NAME",
    "PNG_SOFTWARE",
    "REPORT_HINT",
    "check_report_dir",
    "is_whenpro_report_file",
    "PreparedReport",
    "prepare_report",
    "report_markdown",
    "disagreement_warnings",
    "skipped_warnings",
    "text_plot",
    "write_report",
]
