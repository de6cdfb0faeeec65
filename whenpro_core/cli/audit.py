"""``whenpro audit``: the label-leak audit of a dataset (:mod:`whenpro_core.audit`), printed
as tables and a verdict, or as the JSON document of :func:`whenpro_core.audit.report.audit_json`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from whenpro_core.audit.report import audit_json
from whenpro_core.audit.run import LEARNED_FORM, LEARNED_NAMES, STRUCTURAL_PRIOR, AuditResult, audit_dataset
from whenpro_core.cli import output
from whenpro_core.formats.build_meta import unfinished_build_note
from whenpro_core.safety.textsafe import clean, plural
from whenpro_core.storage import jsonio


def pct(value: float | None) -> str:
    """``0.1234`` -> ``"12.3%"``; ``None`` -> ``"—"``."""
    return "—" if value is None else f"{100 * value:.1f}%"


def p_value(p: float | None) -> str:
    """``0.0312`` -> ``"0.031"``; below 0.001 -> ``"<0.001"``; ``None`` -> ``"—"``."""
    return "—" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}")


def overall_table(result: AuditResult) -> Table:
    """Random, the learned attacks and every baseline: step (with its 95% interval and the
    one-sided p-value against random), agent, mode, joint."""
    table = Table(title=f"label-leak audit: {plural(result.overall.traces, 'labelled trace')}", title_justify="left")
    for col in ("baseline", "step", "95% CI", "p", "agent", "mode", "joint", "leak"):
        table.add_column(col, justify="left" if col in ("baseline", "leak") else "right", no_wrap=col != "baseline")
    rnd = result.overall.random.rates()
    table.add_row(
        "random (exact)", pct(rnd["step"]), "", "", pct(rnd["agent"]), pct(rnd["mode"]), pct(rnd["joint"]), ""
    )
    leaking = set(result.leaking)
    for name, tally in result.overall.baselines.items():
        r = tally.rates()
        low, high = tally.interval()
        table.add_row(
            name,
            pct(r["step"]),
            f"{pct(low)}–{pct(high)}",
            p_value(tally.p_random(rnd["step"] or 0.0)),
            pct(r["agent"]),
            pct(r["mode"]),
            pct(r["joint"]),
            "◀" if name in leaking else "",
        )
    return table


def learned_lines(result: AuditResult) -> list[str]:
    """The learned form attacker against the structural prior, and each attack's top features."""
    form = result.overall.baselines.get(LEARNED_FORM)
    prior = result.overall.baselines.get(STRUCTURAL_PRIOR)
    if form is None or prior is None:
        return []
    gap = (form.rates()["step"] or 0.0) - (prior.rates()["step"] or 0.0)
    lines = [
        f"learned form attacker vs structural prior: {100 * gap:+.1f} points "
        f"(paired one-sided p = {p_value(result.overall.p_form_over_prior())}; leaky above +5 at p < 0.05)"
    ]
    for feature_set, attack in result.learned.items():
        top = ", ".join(f"{n} {100 * w:+.1f}" for n, w in attack.weights[:5] if w > 0) or "none"
        lines.append(f"{LEARNED_NAMES[feature_set]}: top features (points lost when shuffled): {top}")
    return lines


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
            f"leaky: {', '.join(result.leaking)} (random: {base} step accuracy; leaky means a baseline or the "
            "structural prior more than 10 points above random, or the learned form attacker more than 5 points "
            "above the structural prior, with its one-sided test significant)"
        )
    return (
        f"no leak found: no baseline or structural prior is more than 10 points above random ({base} step "
        "accuracy) and the learned form attacker is not more than 5 points above the structural prior, "
        "with a significant one-sided test"
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
    if result.learned_note:
        output.note(result.learned_note)
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
    for line in learned_lines(result):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
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
