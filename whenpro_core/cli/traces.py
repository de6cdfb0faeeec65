"""``whenpro info``, ``ls``, ``sessions``, ``convert``, ``export``, ``diff`` (as text) and
``schema``: read traces through :mod:`whenpro_core.library.summary` and friends, print them."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from whenpro_core.cli import output
from whenpro_core.errors import ConfigError, TraceFormatError
from whenpro_core.formats.build_meta import unfinished_build_note
from whenpro_core.injection.verify import check_answer
from whenpro_core.library import summary
from whenpro_core.library.listing import parse_where
from whenpro_core.safety.textsafe import clean, one_line, plural
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import Trace, TraceSummary
from whenpro_core.trace.taxonomy import taxonomy_for
from whenpro_core.views.traceview import score_lines, shown_id, shown_ref, unlabelled_id, unlabelled_ref


def info(target: str, console: Console | None = None, *, labels: bool = False) -> None:
    """Print a summary of one trace, or of every trace under a folder/glob/JSONL.
    ``labels`` (``whenpro info --labels``): also the ground truth of a trace (agent, step,
    mode, reason) and a dataset's counts by mode. Hidden by default, as in the TUI, so
    that an annotator or reviewer is not shown the label."""
    console = console or output.stdout_console()
    found = summary.info_target(target)
    if isinstance(found, Trace):
        console.print(trace_grid(found, labels))
    else:
        if note := unfinished_build_note(target):
            output.warning(note)
        _print_dataset_info(target, found, console, labels)


def trace_grid(trace: Trace, labels: bool) -> Table:
    """The ``whenpro info`` grid of one trace: source, task, answers, outcome, steps,
    agents, media; the ground truth only with ``labels``."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(overflow="fold")
    add = table.add_row
    add("trace", Text(clean(shown_id(trace.id, labels))))
    add("source", Text(clean(f"{trace.source.format}  {shown_ref(trace.source.ref() or '', labels)}")))
    single = trace.is_single_agent or len(trace.acting_agents()) <= 1  # people and the environment are no agents
    add("framework", Text(clean(trace.framework) + f"  ({'single-agent' if single else 'multi-agent'})"))
    add("benchmark", Text(clean(trace.benchmark) or "—"))
    add("modality", trace.modality.value)
    add("task", Text(one_line(trace.task.query, 300)))
    add("gold answer", Text(one_line(trace.task.answer or "—", 200)))
    add("final answer", Text(one_line(trace.final_answer or "—", 200)))
    check = check_answer(trace.final_answer, trace.task.answer)
    if check.success is not None:  # the rule that matched, or none (issue 32)
        add("answer check", f"✓ matched: {check.rule}" if check.success else "✗ no rule matched")
    add("outcome", trace.outcome.value)
    for line in score_lines(trace):
        add("score", Text(line))
    _add_agents_and_labels(table, trace, labels)
    return table


def _add_agents_and_labels(table: Table, trace: Trace, labels: bool) -> None:
    """The steps, agents, media, ground truth (with ``labels``) and annotations rows."""
    add = table.add_row
    per_agent = Counter(s.agent for s in trace.steps)
    add("steps", f"{len(trace.steps)}")
    add("agents", Text(clean(", ".join(f"{a} ({per_agent.get(a, 0)})" for a in trace.agent_ids()))))
    media = sum(len(s.media) for s in trace.steps) + len(trace.task.images)
    if media:
        add("media", f"{media} images/frames/videos")
    gt = trace.ground_truth if labels else None
    if gt:
        who = gt.agent or ", ".join(gt.agents) or "—"
        mode = taxonomy_for(trace.source.root).name(gt.mode)
        add("ground truth", Text(clean(f"agent {who}, step {gt.step or '—'}, mode {mode}")))
        if gt.reason:
            add("", Text(one_line(gt.reason, 300), style="dim"))
    if trace.annotations:
        add("annotations", f"{plural(len(trace.annotations), 'further label')}")


def _failed(rows: list[TraceSummary]) -> str:
    """``"2 files"``, ``"3 rows"`` or ``"1 file and 2 rows"``: the error rows of a listing,
    a bad line of a file holding several traces (a JSONL release) counted as a row."""
    bad_rows = sum(1 for r in rows if r.error and r.key is not None)
    bad_files = sum(1 for r in rows if r.error) - bad_rows
    parts = [plural(n, word) for n, word in ((bad_files, "file"), (bad_rows, "row")) if n]
    return " and ".join(parts)


def _check_some_read(target: str, rows: Sequence[TraceSummary]) -> None:
    """Raise TraceFormatError when ``target`` held files or rows and every one failed to
    import, as a folder with no trace file is an error (the warnings said why each failed)."""
    if rows and all(r.error for r in rows):
        raise TraceFormatError(f"no trace could be read ({_failed(list(rows))} failed to import)", path=target)


def _print_dataset_info(target: str, rows: list[TraceSummary], console: Console, labels: bool) -> None:
    errors = output.stderr_console(highlight=False)  # as ls reports them
    if rows and all(r.error for r in rows):  # the warnings and one error, no empty summary
        output.skipped_file_lines(errors, [r.error for r in rows if r.error])
        _check_some_read(target, rows)
    counts = summary.dataset_counts(rows)
    ok = sum(1 for r in rows if not r.error)
    console.print(
        Text(f"{target}: {plural(ok, 'trace')}", style="bold"),
        Text(f"  ({_failed(rows)} failed to import)" if len(rows) > ok else ""),
        soft_wrap=True,
    )  # a long path stays whole on its line
    for axis in ("modality", "framework", "benchmark", *(("mode",) if labels else ())):
        if not counts[axis]:
            continue
        table = Table(title=f"by {axis}", title_justify="left", show_edge=False, pad_edge=False)
        table.add_column(axis)
        table.add_column("traces", justify="right")
        for name, n in sorted(counts[axis].items(), key=lambda kv: (-kv[1], kv[0])):
            table.add_row(Text(clean(name)), str(n))
        console.print(table)
    output.skipped_file_lines(errors, [r.error for r in rows if r.error])


def ls(
    target: str,
    *,
    as_json: bool = False,
    console: Console | None = None,
    labels: bool = False,
    where: str | Sequence[str] | None = None,
) -> None:
    """Print one line per trace: reference, id, framework, benchmark, modality, step
    count, and with ``labels`` the GT step and mode (or the error of a file that failed
    to import). Without ``labels`` the JSON rows carry no ``gt_step``/``gt_mode``.
    ``where``: ``--where`` filters (:func:`whenpro_core.library.listing.parse_where`;
    ConfigError when malformed, or filtering by ``mode`` without ``labels``); error rows
    are listed only without a filter. TraceFormatError (after the warnings) when no file or
    row could be read."""
    console = console or output.stdout_console(highlight=False, soft_wrap=True)
    errors = output.stderr_console(highlight=False)
    row_filter = parse_where(where)
    if not labels and row_filter.facets.get("mode"):
        raise ConfigError("--where mode= reads the ground-truth labels, which ls hides", expected="--labels with it")
    failed: list[TraceSummary] = []  # the bad rows met while no good one has been
    seen = listed = 0  # good rows, rows listed
    for row in summary.rows(target):
        if row.error and not seen:
            failed.append(row)
        seen += not row.error
        if not row_filter.keeps(row):
            continue
        listed += 1
        if as_json:
            doc = _listing_record(row, labels)
            console.out(jsonio.dumps(doc).decode(), highlight=False)
        elif row.error:
            errors.print(Text(f"whenpro: warning: {clean(row.error)}", style="yellow"))
        else:
            console.print(Text(clean(_listing_line(row, labels))))
    if not seen:
        _check_some_read(target, failed)
    if where and not listed:
        wanted = " ".join([where] if isinstance(where, str) else where)
        output.note(f"whenpro: none of the {plural(seen, 'trace')} in {target} matches --where {wanted}")


def _listing_record(row: TraceSummary, labels: bool) -> dict[str, Any]:
    """One ``ls --json`` row: without ``labels`` no ``gt_step``/``gt_mode``, and the id, path
    and key masked (:func:`~whenpro_core.views.traceview.unlabelled_ref`)."""
    doc: dict[str, Any] = row.model_dump(mode="json", exclude=None if labels else {"gt_step", "gt_mode"})
    if not labels:
        doc.update(id=unlabelled_id(row.id), path=unlabelled_ref(row.path))
        if row.key is not None:
            doc["key"] = unlabelled_id(row.key)
    return doc


def _listing_line(row: TraceSummary, labels: bool) -> str:
    """One tab-separated ``ls`` line of ``row`` (the GT column only with ``labels``; the
    reference and id masked without them)."""
    steps = "? steps" if row.step_count is None else plural(row.step_count, "step")
    ref, ident = shown_ref(row.ref(), labels), shown_id(row.id, labels)
    line = f"{ref}\t{ident}\t{row.framework}\t{row.benchmark or '-'}\t{row.modality}\t{steps}"
    if not labels:
        return line
    gt = f"gt={row.gt_step or '-'}/{row.gt_mode or '-'}" if (row.gt_step or row.gt_mode) else "gt=-"
    return f"{line}\t{gt}"


def sessions(tool: str | None, *, as_json: bool = False, console: Console | None = None) -> int:
    """Print the local sessions of ``tool`` (all tools for ``None``), newest first, one
    line each: time (local), tool, steps, errors, project, first prompt, path. A file that
    failed to import prints its one-line error on stderr. Returns the number of rows; none
    prints which folders were searched (stderr)."""
    from whenpro_core.library.sessions import folders_line, list_sessions, local_zone, row_record, tool_names

    tools = tool_names(tool)
    console = console or output.stdout_console(highlight=False, soft_wrap=True)
    errors = output.stderr_console(highlight=False)
    rows = list_sessions(tools)
    for row in rows:
        if as_json:
            console.out(jsonio.dumps(row_record(row)).decode(), highlight=False)
        elif row.summary.error:
            errors.print(Text(f"whenpro: warning: {clean(row.summary.error)}", style="yellow"))
        else:
            when = f"{row.local_time} {local_zone()}"  # local time, its zone said
            line = (
                f"{when}\t{row.tool}\t{plural(row.steps, 'step')}\t{plural(row.errors, 'error')}\t"
                f"{row.project or '-'}\t{row.prompt or '-'}\t{row.path}"
            )
            console.print(Text(clean(line)))
    if not rows and not as_json:
        errors.print(Text(f"whenpro: no sessions found ({folders_line(tools)})"))
    return len(rows)


def convert(src: str, out: str | Path, *, force: bool = False, to: str = "native") -> list[Path]:
    """``whenpro convert``: convert (:func:`whenpro_core.library.summary.convert`), then say
    on stderr what was skipped, what went wrong with media, and what was written."""
    if to not in summary.CONVERT_FORMATS:
        raise ConfigError(f"unknown output format {to!r}", expected=", ".join(summary.CONVERT_FORMATS))
    done = summary.convert(src, out, force=force, to=to)
    err = output.stderr_console()
    for kind, line in done.notes:
        head = "skipped: " if kind == "skipped" else "whenpro: warning: "
        err.print(Text(f"{head}{clean(line)}", style="yellow"))
    if done.folder is not None:
        skipped = f" ({done.skipped} skipped)" if done.skipped else ""
        err.print(f"wrote {plural(len(done.written), 'trace')} to {done.folder}{skipped}")
    elif done.written:
        err.print(f"wrote {done.written[0]}")
    return done.written


def export(src: str, html_out: str | None, markdown_out: str | None, *, labels: bool, force: bool) -> None:
    """``whenpro export``: the trace and its verdicts as HTML and/or Markdown."""
    from whenpro_core.attribution.export import export_command

    export_command(src, html_out, markdown_out, labels=labels, force=force, echo=output.echo, note=output.note)


def diff(a: str, b: str, *, labels: bool = False) -> None:
    """``whenpro diff --text``: the aligned rows of runs ``a`` and ``b``, one per line, as
    wide as ``COLUMNS`` or the terminal (100 columns in a pipe); the runs' ids masked
    without ``labels``."""
    from whenpro_core.formats import load_trace
    from whenpro_core.injection.diff import diff_lines, diff_traces

    first, second = (_id_shown(load_trace(ref), labels) for ref in (a, b))
    width = shutil.get_terminal_size((100, 24)).columns  # COLUMNS, else the terminal's, else 100
    for line in diff_lines(first, second, diff_traces(first, second), width=width):
        output.echo(line)


def _id_shown(trace: Trace, labels: bool) -> Trace:
    """``trace``, or a copy whose id is masked (:func:`~whenpro_core.views.traceview.shown_id`)."""
    return trace if labels else trace.model_copy(update={"id": shown_id(trace.id, labels)})


def schema() -> None:
    """Print the JSON Schema of the native trace format."""
    output.echo(json.dumps(Trace.model_json_schema(), indent=2))
