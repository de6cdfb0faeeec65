"""What ``whenpro info``, ``whenpro ls`` and ``whenpro convert`` do (CLI-free logic
plus Rich rendering to the terminal)."""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from whenpro_core.errors import TraceFormatError, WhenproError
from whenpro_core.formats import load_trace, load_traces, walk
from whenpro_core.formats.native import dumps_trace, write_trace
from whenpro_core.formats.registry import names_a_file, split_ref
from whenpro_core.safety.textsafe import clean, one_line, plural
from whenpro_core.storage import jsonio
from whenpro_core.storage.fsutil import atomic_write_bytes
from whenpro_core.trace.model import Trace, TraceSummary
from whenpro_core.trace.taxonomy import taxonomy_for
from whenpro_core.views.traceview import score_lines


def is_single_file(target: str) -> bool:
    """True when ``target`` names one file (optionally with ``#key``), not a folder or glob."""
    path, key = split_ref(target)
    return names_a_file(path)


def _rows(target: str) -> Iterable[TraceSummary]:
    """The listing rows of ``target``. A single file named by itself whose every row
    failed to import raises its (first) error instead: one line, status 2 in the CLI (a
    dataset walk lists bad files and carries on). A folder holding no trace file at all
    (an empty folder named ``trace.json``) raises too, rather than reporting 0 traces."""
    if not is_single_file(target):
        return _not_empty(walk(target), target) if Path(target).is_dir() else walk(target)
    rows = list(walk(target))
    if rows and all(r.error for r in rows):
        more = f" (and {len(rows) - 1} more bad rows)" if len(rows) > 1 else ""
        raise TraceFormatError(f"{rows[0].error}{more}")
    return rows


def _not_empty(rows: Iterable[TraceSummary], folder: str) -> Iterator[TraceSummary]:
    """``rows`` as they come; raises TraceFormatError at the end when there were none."""
    seen = False
    for row in rows:
        seen = True
        yield row
    if not seen:
        raise TraceFormatError(
            "folder holds no trace files", path=folder, expected="a trace file, or a folder of trace files"
        )


def dataset_counts(rows: Iterable[TraceSummary]) -> dict[str, Counter[str]]:
    """Counts of listing rows by modality, framework, benchmark and GT mode, plus errors."""
    counts: dict[str, Counter[str]] = {k: Counter() for k in ("modality", "framework", "benchmark", "mode", "errors")}
    for row in rows:
        if row.error:
            counts["errors"][row.path] += 1
            continue
        counts["modality"][row.modality or "?"] += 1
        counts["framework"][row.framework or "?"] += 1
        counts["benchmark"][row.benchmark or "?"] += 1
        counts["mode"][row.gt_mode or "(none)"] += 1
    return counts


def print_info(target: str, console: Console | None = None, *, labels: bool = False) -> None:
    """Print a summary of one trace, or of every trace under a folder/glob/JSONL.
    ``labels`` (``whenpro info --labels``): also the ground truth of a trace (agent, step,
    mode, reason) and a dataset's counts by mode. Hidden by default, as in the TUI, so
    that an annotator or reviewer is not shown the label."""
    console = console or Console()
    path, key = split_ref(target)
    if names_a_file(path) and (key is not None or path.suffix.lower() != ".jsonl"):
        traces = [load_trace(target)] if key is not None else load_traces(path)
        if len(traces) == 1:
            _print_trace_info(traces[0], console, labels)
            return
    rows = list(_rows(target))
    if names_a_file(path) and len(rows) == 1 and not rows[0].error:  # a JSONL file of one trace
        _print_trace_info(load_trace(rows[0].ref()), console, labels)
        return
    _print_dataset_info(target, rows, console, labels)


def _print_trace_info(trace: Trace, console: Console, labels: bool) -> None:
    tax = taxonomy_for(trace.source.root)
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(overflow="fold")
    add = table.add_row
    add("trace", Text(clean(trace.id)))
    add("source", Text(clean(f"{trace.source.format}  {trace.source.ref() or ''}")))
    single = trace.is_single_agent or len(trace.acting_agents()) <= 1  # people and the environment are no agents
    add("framework", Text(clean(trace.framework) + f"  ({'single-agent' if single else 'multi-agent'})"))
    add("benchmark", Text(clean(trace.benchmark) or "—"))
    add("modality", trace.modality.value)
    add("task", Text(_clip(trace.task.query, 300)))
    add("gold answer", Text(_clip(trace.task.answer or "—", 200)))
    add("final answer", Text(_clip(trace.final_answer or "—", 200)))
    add("outcome", trace.outcome.value)
    for line in score_lines(trace):
        add("score", Text(line))
    per_agent = Counter(s.agent for s in trace.steps)
    add("steps", f"{len(trace.steps)}")
    add("agents", Text(clean(", ".join(f"{a} ({per_agent.get(a, 0)})" for a in trace.agent_ids()))))
    media = sum(len(s.media) for s in trace.steps) + len(trace.task.images)
    if media:
        add("media", f"{media} images/frames/videos")
    gt = trace.ground_truth if labels else None
    if gt:
        who = gt.agent or ", ".join(gt.agents) or "—"
        add("ground truth", Text(clean(f"agent {who}, step {gt.step or '—'}, mode {tax.name(gt.mode)}")))
        if gt.reason:
            add("", Text(_clip(gt.reason, 300), style="dim"))
    if trace.annotations:
        add("annotations", f"{len(trace.annotations)} further labels")
    console.print(table)


def _print_dataset_info(target: str, rows: list[TraceSummary], console: Console, labels: bool) -> None:
    counts = dataset_counts(rows)
    ok = sum(1 for r in rows if not r.error)
    console.print(
        Text(f"{target}: {plural(ok, 'trace')}", style="bold"),
        Text(f"  ({plural(len(rows) - ok, 'file')} failed to import)" if len(rows) > ok else ""),
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
    bad = [r for r in rows if r.error]
    errors = Console(stderr=True, highlight=False, soft_wrap=True)  # as ls reports them
    for r in bad[:20]:
        errors.print(Text(f"whenpro: error: {clean(r.error)}", style="red"))
    if len(bad) > 20:
        errors.print(Text(f"whenpro: ... and {len(bad) - 20} more errors", style="red"))


def print_listing(target: str, *, as_json: bool = False, console: Console | None = None, labels: bool = False) -> None:
    """Print one line per trace: reference, id, framework, benchmark, modality, step
    count, and with ``labels`` the GT step and mode (or the error of a file that failed
    to import). Without ``labels`` the JSON rows carry no ``gt_step``/``gt_mode``."""
    console = console or Console(highlight=False, soft_wrap=True)
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    for row in _rows(target):
        if as_json:
            doc = row.model_dump(mode="json", exclude=None if labels else {"gt_step", "gt_mode"})
            console.out(jsonio.dumps(doc).decode(), highlight=False)
            continue
        if row.error:
            errors.print(Text(f"whenpro: error: {clean(row.error)}", style="red"))
            continue
        steps = "? steps" if row.step_count is None else plural(row.step_count, "step")
        gt = f"gt={row.gt_step or '-'}/{row.gt_mode or '-'}" if (row.gt_step or row.gt_mode) else "gt=-"
        line = f"{row.ref()}\t{row.id}\t{row.framework}\t{row.benchmark or '-'}\t{row.modality}\t{steps}"
        line += f"\t{gt}" if labels else ""
        console.print(Text(clean(line)))


def safe_name(text: str) -> str:
    """A file-name-safe version of a trace id."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "trace"
    return name[:150]


#: Output formats of :func:`convert`: name -> (serialiser, writer).
CONVERT_FORMATS = ("native", "atif", "otlp-json")


def _serialise(trace: Trace, to: str) -> bytes:
    if to == "atif":
        from whenpro_core.formats.atif_write import dumps_atif

        return dumps_atif(trace)
    if to == "otlp-json":
        from whenpro_core.formats.otlp_write import dumps_otlp

        return dumps_otlp(trace)
    return dumps_trace(trace)


def convert(
    src: str, out: Path | str, *, force: bool = False, console: Console | None = None, to: str = "native"
) -> list[Path]:
    """Convert ``src`` to the native format (``to="atif"``: Harbor's ATIF,
    :mod:`whenpro_core.formats.atif_write`; ``to="otlp-json"``: OpenTelemetry GenAI spans
    as OTLP/JSON, :mod:`whenpro_core.formats.otlp_write`). One trace -> ``out`` is a file; several
    (a JSONL release, a folder, a glob) -> ``out`` is a folder of ``<id>.json`` files;
    ``out`` ``-`` writes one trace to stdout, and an ``out`` ending in ``/`` is a folder
    (made if missing). Refuses to overwrite existing files unless ``force``. Returns the
    written paths (none for stdout). Folders it made are removed again when it fails or
    writes nothing into them."""
    made = [] if str(out) == "-" else _missing_folders(Path(out))
    try:
        written = _convert(src, out, force=force, console=console, to=to)
    except BaseException:
        _remove_empty(made)
        raise
    if not written:
        _remove_empty(made)
    return written


def _missing_folders(path: Path) -> list[Path]:
    """``path`` and its ancestors that do not exist yet, deepest first."""
    missing = []
    while not path.exists() and path.parent != path:
        missing.append(path)
        path = path.parent
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove each of ``folders`` (deepest first) that is now an empty folder."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty, not a folder, or gone: leave it
            return


def _convert(src: str, out: Path | str, *, force: bool, console: Console | None, to: str) -> list[Path]:
    console = console or Console(stderr=True, soft_wrap=True)
    as_folder = isinstance(out, str) and out.endswith(("/", os.sep)) and out.strip("/" + os.sep) != ""
    out = Path(out)
    if as_folder:
        if out.exists() and not out.is_dir():
            raise WhenproError("output ends in / but is a file", path=out, expected="a folder")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WhenproError(f"cannot make the folder: {exc.strerror or exc}", path=out) from None
    path, key = split_ref(src)
    single = names_a_file(path) and (key is not None or len(load_traces(path)) == 1)
    if str(out) == "-":
        if not single:
            raise WhenproError(
                "OUT - (stdout) takes one trace", path=src, expected="a single trace, or a folder as OUT"
            )
        _write_converted(load_trace(src), None, to=to)
        return []
    if single:
        trace = load_trace(src)
        target = out / f"{safe_name(trace.id)}.json" if out.is_dir() else out
        _refuse_overwrite(target, force)
        _write_converted(trace, target, console, to=to)
        console.print(f"wrote {target}")
        return [target]
    if out.exists() and not out.is_dir():
        raise WhenproError("output exists and is a file", path=out, expected="a folder for several traces")
    rows = [r for r in walk(src)]
    if not out.exists() and out.suffix.lower() == ".json":  # would become a folder named *.json
        raise WhenproError(
            f"OUT ends in .json but {src} holds {len(rows)} traces: give a folder",
            path=out,
            expected="a folder for several traces",
        )
    bad: list[TraceSummary | WhenproError] = [r for r in rows if r.error]  # rows, then load failures
    plan = plan_targets([r for r in rows if not r.error], out)
    if not force:
        for target in plan.values():
            _refuse_overwrite(target, force)
    written: list[Path] = []
    for ref, target in plan.items():
        try:
            trace = load_trace(ref)
        except WhenproError as exc:
            bad.append(exc)
            console.print(Text(f"skipped: {clean(exc.one_line())}", style="yellow"))
            continue
        _write_converted(trace, target, console, to=to)
        written.append(target)
    for row in bad:
        if not isinstance(row, WhenproError):
            console.print(Text(f"skipped: {clean(row.error or '')}", style="yellow"))
    console.print(f"wrote {plural(len(written), 'trace')} to {out}" + (f" ({len(bad)} skipped)" if bad else ""))
    return written


def plan_targets(rows: list[TraceSummary], out: Path) -> dict[str, Path]:
    """One output file per trace reference: ``<id>.json``, with ``-2``, ``-3`` ... added
    when two traces share an id, so no trace overwrites another."""
    plan: dict[str, Path] = {}
    taken: set[str] = set()
    for row in rows:
        base = safe_name(row.id)
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        plan[row.ref()] = out / f"{name}.json"
    return plan


def _write_converted(trace: Trace, target: Path | None, console: Console | None = None, *, to: str = "native") -> None:
    """Write ``trace`` to ``target`` (``None``: stdout), noting where it came from, with
    its media files copied beside it (:func:`copy_media`)."""
    if trace.source.format != "native":
        trace.extras.setdefault("converted_from", {"format": trace.source.format, "ref": trace.source.ref()})
    if target is None:
        sys.stdout.buffer.write(_serialise(trace, to) + b"\n")
        sys.stdout.flush()
        return
    problems = copy_media(trace, target.parent)
    if to == "native":
        write_trace(trace, target)
    else:
        atomic_write_bytes(target, _serialise(trace, to) + b"\n")
    for line in problems:
        (console or Console(stderr=True, soft_wrap=True)).print(
            Text(f"whenpro: warning: {clean(line)}", style="yellow")
        )


def copy_media(trace: Trace, folder: Path) -> list[str]:
    """Copy every local media file of ``trace`` (task images, step images, frames,
    videos) into ``folder`` at its relative path, so a converted trace written there
    still shows them (relative paths resolve against the trace's folder). Paths are
    resolved and confined as the viewer does (:func:`whenpro_core.media.paths.resolve_path`:
    nothing outside the dataset root or trace folder is read); absolute paths, inline
    data and files already in place are left as they are. Returns one line per media
    file that could not be copied."""
    import filecmp
    from pathlib import PurePosixPath

    from whenpro_core.media.paths import media_bases, resolve_path
    from whenpro_core.storage.fsutil import atomic_copy

    bases = media_bases(trace.source.path, trace.source.root)
    refs = [*trace.task.images, *(m for step in trace.steps for m in step.media)]
    problems: list[str] = []
    done: set[str] = set()
    for ref in refs:
        rel = (ref.path or "").replace("\\", "/")
        pure = PurePosixPath(rel)
        if not rel or rel in done or pure.is_absolute() or ".." in pure.parts or ":" in rel:
            continue
        done.add(rel)
        dest = folder / rel
        try:
            src = resolve_path(ref.path or "", bases)
            if dest.exists() and dest.resolve() == src:
                continue  # converted in place: the file is already there
            if dest.is_file() and filecmp.cmp(dest, src, shallow=False):
                continue
            if dest.exists():
                problems.append(f"{dest}: exists with other content; not replaced (media {rel})")
                continue
            atomic_copy(src, dest)
        except WhenproError as exc:  # MediaError too
            problems.append(f"media {rel} not copied: {exc.one_line()}")
        except OSError as exc:
            problems.append(f"media {rel} not copied: {exc.strerror or exc}")
    return problems


def _refuse_overwrite(target: Path, force: bool) -> None:
    if target.exists() and not force:
        raise WhenproError("output file exists", path=target, expected="a new path, or --force to overwrite")


def _clip(text: str, n: int) -> str:
    return one_line(text, n)
