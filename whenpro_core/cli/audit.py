"""``whenpro audit``: the label-leak audit of a dataset (:mod:`whenpro_core.audit`), printed
as tables and a verdict, or as the JSON document of :func:`whenpro_core.audit.report.audit_json`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from whenpro_core.audit.report import audit_json
from whenpro_core.audit.run import AuditResult, audit_dataset
from whenpro_core.cli import output
from whenpro_core.formats.build_meta import unfinished_build_note
from whenpro_core.safety.textsafe import clean, plural
from whenpro_core.storage import jsonio


def pct(value: float | None) -> str:
    """``0.1234`` -> ``"12.3%"``; ``None`` -> ``"—"``."""
    return "—" if value is None else f"{100 * value:.1f}%"


def overall_table(result: AuditResult) -> Table:
    """Random and every baseline: step (with its 95% interval), agent, mode, joint."""
    table = Table(title=f"label-leak audit: {plural(result.overall.traces, 'labelled trace')}", title_justify="left")
    for col in ("baseline", "step", "95% CI", "agent", "mode", "joint", "leak"):
        table.add_column(col, justify="left" if col in ("baseline", "leak") else "right", no_wrap=col != "baseline")
    rnd = result.overall.random.rates()
    table.add_row("random (exact)", pct(rnd["step"]), "", pct(rnd["agent"]), pct(rnd["mode"]), pct(rnd["joint"]), "")
    leaking = set(result.leaking)
    for name, tally in result.overall.baselines.items():
        r = tally.rates()
        low, high = tally.interval()
        table.add_row(
            name,
            pct(r["step"]),
            f"{pct(low)}–{pct(high)}",
            pct(r["agent"]),
            pct(r["mode"]),
            pct(r["joint"]),
            "◀" if name in leaking else "",
        )
    return table


def groups_table(result: AuditResult) -> Table:
    """Per failure mode and per framework: traces, random step accuracy, the best
    baseline on step accuracy and its interval."""
    table = Table(title="step accuracy per mode and framework", title_justify="left")
    for col in ("slice", "traces", "random", "best baseline", "step", "95% CI", "leak"):
        table.add_column(
            col,
            justify="left" if col in ("slice", "best baseline", "leak") else "right",
            no_wrap=col not in ("slice", "best baseline"),
        )
    slices = [("mode", k, g) for k, g in result.by_mode.items()]
    slices += [("framework", k, g) for k, g in result.by_framework.items()]
    for by, value, group in slices:
        name, tally = max(group.baselines.items(), key=lambda kv: kv[1].rates()["step"] or 0.0)
        low, high = tally.interval()
        table.add_row(
            f"{by} {clean(value)}",
            str(group.traces),
            pct(group.random.rates()["step"]),
            name,
            pct(tally.rates()["step"]),
            f"{pct(low)}–{pct(high)}",
            "◀" if name in group.leaks() else "",
        )
    return table


def verdict_line(result: AuditResult) -> str:
    """``leaky: ...`` or ``no leak found: ...`` in one line."""
    base = pct(result.overall.random.rates()["step"])
    if result.leaky:
        return (
            f"leaky: {', '.join(result.leaking)} beat random ({base} step accuracy) by more than 10 points, "
            "the lower end of the exact 95% interval above random"
        )
    return (
        f"no leak found: no form-only baseline beats random ({base} step accuracy) by more than 10 points "
        "with the lower end of its exact 95% interval above random"
    )


def audit(
    dataset: str, *, against: str | None = None, as_json: bool = False, console: Console | None = None
) -> AuditResult:
    """What ``whenpro audit`` does: audit ``dataset`` (with ``against`` runs as further
    corpus) and print the JSON document or the tables and the verdict to ``console``
    (stdout); skipped traces are said on stderr. Raises WhenproError for bad input."""
    result = audit_dataset(dataset, against)
    if note := unfinished_build_note(dataset):
        output.warning(note)
    if result.against_unreadable:
        errors = output.stderr_console()
        output.skipped_file_lines(errors, result.against_unreadable)
        errors.print(
            f"--against: {plural(len(result.against_unreadable), 'file')} could not be read (left out of the corpus)",
            markup=False,
            highlight=False,
        )
    if as_json:
        output.echo(jsonio.dumps(audit_json(result)).decode())
        return result
    console = console or output.stdout_console()
    console.print(overall_table(result))
    console.print(groups_table(result))
    console.print(verdict_line(result), markup=False, highlight=False, soft_wrap=True)
    if result.skipped:
        errors = output.stderr_console()
        output.skipped_file_lines(errors, result.unreadable)
        unlabelled = result.skipped - len(result.unreadable)
        errors.print(
            f"{plural(result.skipped, 'trace')} left out: {unlabelled} without ground truth, "
            f"{len(result.unreadable)} could not be read",
            markup=False,
            highlight=False,
        )
    return result
