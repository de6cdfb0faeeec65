"""What ``whenpro info``, ``whenpro ls`` and ``whenpro convert`` compute: the listing rows of
a target, a dataset's counts, and trace conversion (native, ATIF, OTLP/JSON) with media
copied alongside. Printing is :mod:`whenpro_core.cli.traces`'s."""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from whenpro_core.errors import TraceFormatError, WhenproError
from whenpro_core.formats import load_trace, load_traces, walk
from whenpro_core.formats.native import dumps_trace, write_trace
from whenpro_core.formats.registry import names_a_file, split_ref
from whenpro_core.safety.textsafe import inert_json
from whenpro_core.storage.fsutil import atomic_write_bytes, check_output_file, safe_name
from whenpro_core.trace.model import Trace, TraceSummary


def is_single_file(target: str) -> bool:
    """True when ``target`` names one file (optionally with ``#key``), not a folder or glob."""
    path, key = split_ref(target)
    return names_a_file(path)


def rows(target: str) -> Iterable[TraceSummary]:
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


def info_target(target: str) -> Trace | list[TraceSummary]:
    """What ``whenpro info`` shows for ``target``: its trace when it names one (a file of one
    trace, ``path#key``, a JSONL file of one row), else the listing rows of its traces."""
    path, key = split_ref(target)
    if names_a_file(path) and (key is not None or path.suffix.lower() != ".jsonl"):
        traces = [load_trace(target)] if key is not None else load_traces(path)
        if len(traces) == 1:
            return traces[0]
    found = list(rows(target))
    if names_a_file(path) and len(found) == 1 and not found[0].error:  # a JSONL file of one trace
        return load_trace(found[0].ref())
    return found


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


@dataclass
class Converted:
    """What :func:`convert` did: the ``written`` files (none for stdout), and in the order
    they arose the ``notes`` on traces ``skipped`` (could not be read) and media ``warnings``
    (``(kind, line)`` pairs, kind ``"skipped"`` or ``"warning"``). ``folder`` is the output
    folder when ``src`` held several traces (``None`` for one trace or stdout)."""

    written: list[Path] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    folder: Path | None = None

    @property
    def skipped(self) -> int:
        """How many traces could not be converted."""
        return sum(kind == "skipped" for kind, _ in self.notes)


def convert(src: str, out: Path | str, *, force: bool = False, to: str = "native") -> Converted:
    """Convert ``src`` to the native format (``to="atif"``: Harbor's ATIF,
    :mod:`whenpro_core.formats.atif_write`; ``to="otlp-json"``: OpenTelemetry GenAI spans
    as OTLP/JSON, :mod:`whenpro_core.formats.otlp_write`). One trace -> ``out`` is a file; several
    (a JSONL release, a folder, a glob) -> ``out`` is a folder of ``<id>.json`` files;
    ``out`` ``-`` writes one trace to stdout, and an ``out`` ending in ``/`` is a folder
    (made if missing); an output file in a missing folder is refused ("no such folder").
    Refuses to overwrite existing files unless ``force`` (WhenproError).
    Folders it made are removed again when it fails or writes nothing into them."""
    made = [] if str(out) == "-" else _missing_folders(Path(out))
    try:
        done = _convert(src, out, force=force, to=to)
    except BaseException:
        _remove_empty(made)
        raise
    if not done.written:
        _remove_empty(made)
    return done


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


def _convert(src: str, out: Path | str, *, force: bool, to: str) -> Converted:
    as_folder = isinstance(out, str) and out.endswith(("/", os.sep)) and out.strip("/" + os.sep) != ""
    out = Path(out)
    if as_folder:
        _make_folder(out)
    path, key = split_ref(src)
    single = names_a_file(path) and (key is not None or len(load_traces(path)) == 1)
    if str(out) == "-":
        if not single:
            raise WhenproError(
                "OUT - (stdout) takes one trace", path=src, expected="a single trace, or a folder as OUT"
            )
        _write_converted(load_trace(src), None, to=to)
        return Converted()
    if single:
        trace = load_trace(src)
        target = out / f"{file_stem(trace.id)}.json" if out.is_dir() else out
        check_output_file(target)
        _refuse_overwrite(target, force)
        done = Converted(written=[target])
        done.notes += [("warning", line) for line in _write_converted(trace, target, to=to)]
        return done
    return _convert_many(src, out, force=force, to=to)


def _make_folder(out: Path) -> None:
    """Make the folder ``out`` (an OUT ending in ``/``); WhenproError when it cannot be one."""
    if out.exists() and not out.is_dir():
        raise WhenproError("output ends in / but is a file", path=out, expected="a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WhenproError(f"cannot make the folder: {exc.strerror or exc}", path=out) from None


def _convert_many(src: str, out: Path, *, force: bool, to: str) -> Converted:
    """Convert every trace of ``src`` (several) into the folder ``out``, one ``<id>.json`` each."""
    if out.exists() and not out.is_dir():
        raise WhenproError("output exists and is a file", path=out, expected="a folder for several traces")
    rows = list(walk(src))
    if not out.exists() and out.suffix.lower() == ".json":  # would become a folder named *.json
        raise WhenproError(
            f"OUT ends in .json but {src} holds {len(rows)} traces: give a folder",
            path=out,
            expected="a folder for several traces",
        )
    plan = plan_targets([r for r in rows if not r.error], out)
    if not force:
        for target in plan.values():
            _refuse_overwrite(target, force)
    done = Converted(folder=out)
    for ref, target in plan.items():
        try:
            trace = load_trace(ref)
        except WhenproError as exc:
            done.notes.append(("skipped", exc.one_line()))
            continue
        done.notes += [("warning", line) for line in _write_converted(trace, target, to=to)]
        done.written.append(target)
    done.notes += [("skipped", row.error or "") for row in rows if row.error]
    return done


def file_stem(trace_id: str) -> str:
    """The output file name of a trace, less ``.json``: :func:`safe_name` of its id, without
    the ``.json`` an id taken from a file name keeps (``run.json`` -> ``run``, not
    ``run.json.json``)."""
    name = safe_name(trace_id)
    stem = name[:-5] if name.lower().endswith(".json") else name
    return safe_name(stem)


def plan_targets(rows: list[TraceSummary], out: Path) -> dict[str, Path]:
    """One output file per trace reference: ``<id>.json``, with ``-2``, ``-3`` ... added
    when two traces share an id, so no trace overwrites another."""
    plan: dict[str, Path] = {}
    taken: set[str] = set()
    for row in rows:
        base = file_stem(row.id)
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        plan[row.ref()] = out / f"{name}.json"
    return plan


def _write_converted(trace: Trace, target: Path | None, *, to: str = "native") -> list[str]:
    """Write ``trace`` to ``target`` (``None``: stdout), noting where it came from, with
    its media files copied beside it (:func:`copy_media`). Returns the media problems,
    one line each."""
    if trace.source.format != "native":
        trace.extras.setdefault("converted_from", {"format": trace.source.format, "ref": trace.source.ref()})
    if target is None:
        sys.stdout.buffer.write(inert_json(_serialise(trace, to)) + b"\n")  # a terminal, maybe
        sys.stdout.flush()
        return []
    problems = copy_media(trace, target.parent)
    if to == "native":
        write_trace(trace, target)
    else:
        atomic_write_bytes(target, _serialise(trace, to) + b"\n")
    return problems


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
