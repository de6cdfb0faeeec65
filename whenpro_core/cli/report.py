"""``whenpro report`` (and the report at the end of ``whenpro bench``): the leaderboard,
breakdowns, confusion matrices, usage and text plot as tables on stdout, then the report
files (:func:`whenpro_core.bench.report.write_report`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from whenpro_core.bench.aggregate import DIMENSIONS, Report
from whenpro_core.bench.official import OFFICIAL_HEADERS, official_report, official_rows, rules_header
from whenpro_core.bench.official import all_left_out as official_left_out
from whenpro_core.bench.records import Record
from whenpro_core.bench.report import (
    DIM_TITLE_LONG,
    LEADERBOARD_HEADERS,
    LEGEND,
    REPORT_HINT,
    USAGE_HEADERS,
    breakdown_rows,
    confusion_rows,
    leaderboard_rows,
    metric_headers,
    pct,
    prepare_report,
    safe,
    text_plot,
    usage_rows,
    whenpro_rules_header,
    write_report,
)
from whenpro_core.bench.scope import Scope
from whenpro_core.bench.substring_metric import HEADERS as SUBSTRING_HEADERS
from whenpro_core.bench.substring_metric import NOTE as SUBSTRING_NOTE
from whenpro_core.bench.substring_metric import substring_rows
from whenpro_core.bench.trail_rules import HEADERS as TRAIL_HEADERS
from whenpro_core.bench.trail_rules import NOTE as TRAIL_NOTE
from whenpro_core.bench.trail_rules import all_left_out as trail_left_out
from whenpro_core.bench.trail_rules import trail_rows
from whenpro_core.cli import output


@dataclass(frozen=True)
class ReportOptions:
    """The options of one ``whenpro report``, as typed (built once by the command, then
    passed whole; ``whenpro bench`` builds one for its report). ``tolerance``: k of the ±k
    step accuracy (``None``: as run); ``labels``: ``reviewed`` (the latest review decision)
    or ``built``; ``rules``: ``whenpro``, ``official``, ``whowhen`` or ``trail`` (which
    numbers are printed beside whenpro's); ``metric``: ``whowhen-substring`` or ``None``."""

    tolerance: int | None = None
    labels: str = "reviewed"
    rules: str = "whenpro"
    metric: str | None = None


def report_command(
    paths: Sequence[str | Path],
    out_dir: str | Path | None = None,
    options: ReportOptions = ReportOptions(),
    *,
    console: Console | None = None,
    quiet: bool = False,
    hint: str = REPORT_HINT,
    scope: Scope | None = None,
) -> Report:
    """``whenpro report``: read results, aggregate (:func:`whenpro_core.bench.report.prepare_report`),
    print the tables to ``console`` (stdout; nothing with ``quiet``), write the report files
    next to the (first) results file or into ``out_dir``, as ``options`` say. ``rules="official"`` first prints
    the official Who&When Pro leaderboard (:mod:`whenpro_core.bench.official`) and, for
    records of the original Who&When files, that benchmark's own script's numbers;
    ``rules="whowhen"`` (or ``metric="whowhen-substring"``) the original Who&When script's
    numbers for every labelled record (:mod:`whenpro_core.bench.substring_metric`, a known
    bug kept for comparison); the files always hold whenpro's rules. ``scope``
    (``whenpro bench``: the run's plan) keeps only its items' records and says on stderr
    which others were left out. Errors as :func:`~whenpro_core.bench.report.prepare_report`."""
    err = output.stderr_console(highlight=False)
    warn = None if quiet else lambda line: err.print(f"whenpro: warning: {safe(line)}", markup=False, style="yellow")
    prepared = prepare_report(
        paths, out_dir, tolerance=options.tolerance, hint=hint, labels=options.labels, warn=warn, scope=scope
    )
    if prepared.left_out and not quiet:
        err.print(safe(prepared.left_out), markup=False, soft_wrap=True)
    console = console or output.stdout_console()
    written = write_report(
        prepared.report, prepared.target, hint=hint, names=prepared.names
    )  # before printing: | head keeps them
    if not quiet:
        _print_extra_rules(prepared.records, console, rules=options.rules, metric=options.metric)
        console.print(whenpro_rules_header(prepared.records, prepared.unreadable), markup=False, highlight=False)
        print_report(prepared.report, console)
        names = ", ".join(str(p) for p in written.values() if p is not None)
        console.print(f"wrote {names}", markup=False, highlight=False)
    return prepared.report


def _print_extra_rules(records: list[Record], console: Console, *, rules: str, metric: str | None) -> None:
    """The official numbers (``rules="official"``: the Who&When Pro leaderboard, and the
    original Who&When script's rules for records of its files), the original Who&When
    script's rules alone (``rules="whowhen"``, ``metric="whowhen-substring"``) or TRAIL's
    metrics (``rules="trail"``, :mod:`whenpro_core.bench.trail_rules`), printed before
    whenpro's own tables."""
    if rules == "official":
        groups = official_report(records)
        console.print(rules_header(groups), markup=False, highlight=False)
        none_scored = official_left_out(records)
        if none_scored:
            console.print(none_scored, markup=False, highlight=False)
        else:
            console.print(_table("Official leaderboard", OFFICIAL_HEADERS, official_rows(groups), left=2))
    if rules == "trail":
        _print_trail(records, console)
    whowhen_only = rules == "official" and metric != "whowhen-substring"
    if rules in ("official", "whowhen") or metric == "whowhen-substring":
        rows = substring_rows(records, whowhen_only=whowhen_only)
        if rows or not whowhen_only:
            console.print(SUBSTRING_NOTE, markup=False, highlight=False)
            shown = [[r.label, r.subset or "—", str(r.records), pct(r.agent), pct(r.step)] for r in rows]
            console.print(_table("Who&When (original evaluate.py)", SUBSTRING_HEADERS, shown, left=2))


def _print_trail(records: list[Record], console: Console) -> None:
    """TRAIL's category F1, location and joint accuracy per setting (:mod:`whenpro_core.bench.trail_rules`)."""
    console.print(TRAIL_NOTE, markup=False, highlight=False)
    none_scored = trail_left_out(records)
    if none_scored:
        console.print(none_scored, markup=False, highlight=False)
        return
    rows = [[r.label, str(r.records), pct(r.category_f1), pct(r.location), pct(r.joint)] for r in trail_rows(records)]
    console.print(_table("TRAIL metrics", TRAIL_HEADERS, rows))


def _table(title: str, headers: list[str], rows: list[list[str]], left: int = 1) -> Table:
    """A simple-head table of ``rows`` (cells made inert); the first ``left`` columns are
    left-aligned labels, a repeated first label is shown once per group."""
    rows = [[safe(c) for c in row] for row in rows]
    headers = [safe(h) for h in headers]
    table = Table(
        title=Text(safe(title), no_wrap=True, overflow="ignore"),  # a heading is never folded to the table width
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )
    for i, h in enumerate(headers):
        widest = max([len(h), *(len(r[i]) for r in rows)]) if i < left else None
        table.add_column(
            Text(h),
            justify="left" if i < left else "right",
            overflow="fold",
            no_wrap=i >= left,
            min_width=min(widest, 12) if widest else None,
        )
    previous = None
    for row in rows:
        shown = row if left < 2 or row[0] != previous else ["", *row[1:]]
        previous = row[0]
        table.add_row(*(Text(c) for c in shown))
    return table


def _usage_table(report: Report, console: Console) -> Table:
    """The usage table, one row per setting; turned to one row per figure when that is
    wider than ``console`` (eleven columns do not fit in 80: headers were cut and the
    setting column squeezed out)."""
    rows = usage_rows(report)
    table = _table("Usage", USAGE_HEADERS, rows)
    if console.measure(table, options=console.options.update_width(10_000)).maximum <= console.width:
        return table
    turned = [[h, *(r[i] for r in rows)] for i, h in enumerate(USAGE_HEADERS) if i]
    return _table("Usage", ["", *(r[0] for r in rows)], turned)


def print_report(report: Report, console: Console | None = None) -> None:
    """Print the leaderboard, breakdowns, confusion matrices, usage and the text plot."""
    console = console or output.stdout_console()
    k = report.tolerance
    if report.labels:
        console.print(safe(report.labels), markup=False, highlight=False, soft_wrap=True)
    console.print(_table("Leaderboard", [*LEADERBOARD_HEADERS, *metric_headers(k)], leaderboard_rows(report), left=2))
    for dim in DIMENSIONS[1:]:  # by modality = the leaderboard's cells
        headers, rows = breakdown_rows(report, dim)
        if rows:
            console.print(_table(f"By {DIM_TITLE_LONG[dim]}", headers, rows, left=2 if len(report.groups) > 1 else 1))
    for g in report.groups:
        if g.confusion.gold:
            headers, rows = confusion_rows(g)
            console.print(_table(f"Failure modes: {g.label}", headers, rows))
    console.print(_usage_table(report, console))
    console.print(LEGEND, style="dim", markup=False, highlight=False)
    console.print("Step accuracy by transcript length", style="bold")
    console.print(safe(text_plot(report)), markup=False, highlight=False)
    for g in report.groups:
        for example in g.error_examples:
            console.print(f"[yellow]error[/] {escape(safe(g.label))}: ", end="")
            console.print(safe(example), markup=False, highlight=False)
    for problem in report.problems[:10]:
        console.print(safe(problem), markup=False, highlight=False, style="yellow")
