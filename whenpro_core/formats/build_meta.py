"""Files ``whenpro build`` keeps next to a dataset's traces: ``manifest.json``
(``format: whenpro.build.manifest/1``), the provenance sidecar ``provenance.json``
(``whenpro.build.provenance/1``: how each trace was made; never shown as a trace, never
read by a judge) and ``validation.jsonl``
(``whenpro.validation/1`` lines). They hold no traces; these importers recognise them
(strictly: the whole shape, not just a tag, so a damaged file is still reported) so that
a dataset walk (``whenpro ls``, ``whenpro bench``) lists nothing for them instead of an
"unknown format" error row."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import DocumentImporter, FileImporter, LoadContext, parse_json
from whenpro_core.trace.extras import EnvRun
from whenpro_core.trace.model import Trace, TraceSummary

MANIFEST_FORMAT = "whenpro.build.manifest/1"
#: The manifest's file name in a built dataset's folder.
MANIFEST = "manifest.json"
#: The hidden folder of a dataset ``whenpro build`` writes (journal, staged rows, lock):
#: what makes a folder a build's ``--out``.
BUILD_DIR = ".whenpro-build"
PROVENANCE_FORMAT = "whenpro.build.provenance/1"
VALIDATION_FORMAT = "whenpro.validation/1"


#: What a manifest's ``traces[i]`` holds, past its ``id`` (strings or ``null``).
TRACE_TEXT_FIELDS = ("ref", "seed", "step", "agent", "mode", "framework", "modality")
#: A manifest's shape problem: (JSON path, what is wrong, what was expected).
Problem = tuple[str, str, str]
_MISSING = object()
#: What a readable manifest is, and how a build's own is written again.
WRITTEN = "manifest.json as whenpro build writes it"
REWRITE = WRITTEN + "; the same whenpro build SEEDS --out command writes it again from the journal"
#: JSON type names for "wrong type (got ...)" (``bool`` before ``int``, its base class).
_JSON_TYPES = (
    (bool, "true/false"),
    (int, "a number"),
    (float, "a number"),
    (str, "a string"),
    (list, "a list"),
    (dict, "an object"),
)


class ForeignManifestError(TraceFormatError):
    """A ``manifest.json`` that is no build manifest at all (unreadable, not JSON, or
    without the ``whenpro.build.manifest/1`` tag) in a folder that is not a build's
    ``--out`` (:func:`is_build_root`): another tool's file, not a damaged dataset. A
    manifest with the tag but the wrong shape, or any damaged manifest of a build's
    ``--out``, raises a plain TraceFormatError."""


def is_build_root(folder: str | Path) -> bool:
    """True when ``folder`` holds a :data:`BUILD_DIR` folder: a dataset ``whenpro build``
    writes, whose ``manifest.json`` is its own, however damaged."""
    return (Path(folder) / BUILD_DIR).is_dir()


def load_manifest(root: str | Path) -> dict[str, Any] | None:
    """The manifest of the dataset at ``root`` as written (``None`` when there is none;
    :func:`whenpro_core.dataset.build_store.read_manifest` adds fresh validation counts).
    Every reader of a manifest comes here, so its shape is checked here once
    (:func:`manifest_problem`). Raises TraceFormatError naming the file (and the JSON
    path) for a manifest that cannot be read back: :class:`ForeignManifestError` when it
    is unreadable, not JSON or untagged outside a build's ``--out``."""
    path = Path(root) / MANIFEST
    try:
        doc = parse_json(path.read_bytes(), path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _manifest_error(root, f"cannot read the build manifest: {exc.strerror}", None, REWRITE) from None
    except TraceFormatError as exc:
        raise _manifest_error(root, exc.what, None, REWRITE) from None
    problem = manifest_problem(doc)
    if problem is None:
        return dict(doc)
    json_path, what, expected = problem
    raise _manifest_error(root, what, json_path, expected)


def unfinished_build_note(target: str | Path) -> str | None:
    """One line for a dataset folder whose build stopped before it finished (its
    manifest's ``run.complete`` is false: interrupted, or attempts left to run), else
    ``None``: its release is partial and the detectability filter has not run on it.
    Never raises (a damaged manifest is reported where it is read)."""
    root = Path(target)
    try:
        doc = load_manifest(root) if root.is_dir() else None
    except TraceFormatError:
        return None
    run = (doc or {}).get("run")
    if not isinstance(run, dict) or run.get("complete") is not False:
        return None
    return (
        f"{root}: this build stopped before it finished; its release is partial and the detectability "
        "filter has not run on it (run the same whenpro build command again to finish it)"
    )


def _manifest_error(root: str | Path, what: str, json_path: str | None, expected: str) -> TraceFormatError:
    """The error for ``root``'s unreadable manifest: foreign (:class:`ForeignManifestError`)
    when it has no tag (``json_path`` ``None`` or ``$.format``) outside a build's ``--out``."""
    foreign = json_path in (None, "$.format") and not is_build_root(root)
    cls = ForeignManifestError if foreign else TraceFormatError
    return cls(what, path=Path(root) / MANIFEST, json_path=json_path, expected=WRITTEN if foreign else expected)


def manifest_problem(doc: Any) -> Problem | None:
    """Why the parsed ``doc`` is not a build manifest whenpro can read back, or ``None``:
    the ``format`` tag; ``traces``, a list of objects with a string ``id`` and the
    :data:`TRACE_TEXT_FIELDS` strings or ``null`` (``ref`` a path inside the dataset);
    ``counts``, an object of whole numbers; ``options``, and ``seeds`` and ``run`` when
    present, objects. Never raises."""
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        return "$.format", "not a whenpro build manifest", f'"{MANIFEST_FORMAT}"'
    return _traces_problem(doc.get("traces", _MISSING)) or _sections_problem(doc)


def _traces_problem(traces: Any) -> Problem | None:
    if not isinstance(traces, list):
        return "$.traces", _wrong(traces), 'a list of the kept traces, each {"id": ..., "ref": ..., ...}'
    for i, trace in enumerate(traces):
        problem = _trace_problem(trace, f"$.traces[{i}]")
        if problem is not None:
            return problem
    return None


def _trace_problem(trace: Any, where: str) -> Problem | None:
    if not isinstance(trace, dict):
        return where, _wrong(trace), 'a kept trace, {"id": ..., "ref": ..., "mode": ..., ...}'
    if not isinstance(trace.get("id"), str) or not trace["id"]:
        return f"{where}.id", _wrong(trace.get("id", _MISSING)), "the trace id, a string"
    for key in TRACE_TEXT_FIELDS:
        value = trace.get(key)
        if value is not None and not isinstance(value, str):
            return f"{where}.{key}", _wrong(value), "a string or null"
    if not _inside(trace.get("ref") or ""):
        return f"{where}.ref", "a path outside the dataset", "a path relative to the dataset root"
    return None


def _inside(ref: str) -> bool:
    """True when the file part of ``ref`` (before ``#``) is a relative path that stays
    in its folder (no ``..``, no drive)."""
    parts = re.split(r"[\\/]", ref.partition("#")[0])
    return not ref.startswith(("/", "\\")) and ".." not in parts and ":" not in parts[0]


#: A manifest's sections that are objects: name -> (required, what it holds).
_SECTIONS = {
    "counts": (True, 'an object of counts per stage, {"kept": 12, ...}'),
    "options": (True, "an object of the build's options"),
    "seeds": (False, "an object of seed counts"),
    "run": (False, "an object of this run's settings"),
}


def _sections_problem(doc: dict[str, Any]) -> Problem | None:
    for key, (required, expected) in _SECTIONS.items():
        value = doc.get(key, _MISSING if required else {})
        if not isinstance(value, dict):
            return f"$.{key}", _wrong(value), expected
    for key, value in doc["counts"].items():
        if isinstance(value, bool) or not isinstance(value, int):
            return f"$.counts.{key}", _wrong(value), "a whole number"
    return None


def _wrong(value: Any) -> str:
    """``missing`` or ``wrong type (got a number)``: the JSON type found."""
    if value is _MISSING:
        return "missing"
    found = next((name for t, name in _JSON_TYPES if isinstance(value, t)), "null")
    return f"wrong type (got {found})"


class BuildManifestImporter(DocumentImporter):
    """A build's ``manifest.json``: no traces."""

    name = "whenpro-build-manifest"
    priority = 200

    def matches(self, doc: Any) -> bool:
        return manifest_problem(doc) is None

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        return []

    def summaries(self, doc: Any, ctx: LoadContext) -> list[TraceSummary]:
        return []


class BuildRootManifestImporter(FileImporter):
    """The ``manifest.json`` of a build's ``--out`` (a folder with :data:`BUILD_DIR`),
    whatever it holds: the dataset's own metadata, never a trace. A damaged one gives no
    listing row (the readers of the manifest say what is wrong with it); opened by
    itself it gives :func:`load_manifest`'s error, or says it holds no traces."""

    name = "whenpro-build-root-manifest"
    priority = 200
    not_a_trace = True

    def match_head(self, head: bytes, path: Path) -> bool:
        return path.name == MANIFEST and is_build_root(path.parent)

    def summaries(self, path: Path, root: Path | None) -> Iterator[TraceSummary]:
        return iter(())

    def load(self, path: Path, key: str | None, root: Path | None) -> Trace:
        load_manifest(path.parent)
        raise TraceFormatError("a build manifest holds no traces", path=path, expected="a trace file of the dataset")


class BuildProvenanceImporter(DocumentImporter):
    """A build's ``provenance.json`` sidecar: no traces."""

    name = "whenpro-build-provenance"
    priority = 200

    def matches(self, doc: Any) -> bool:
        return isinstance(doc, dict) and doc.get("format") == PROVENANCE_FORMAT and isinstance(doc.get("traces"), dict)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        raise TraceFormatError(
            "a build's provenance sidecar holds no traces", path=ctx.path, expected="a trace file of the dataset"
        )

    def summaries(self, doc: Any, ctx: LoadContext) -> list[TraceSummary]:
        return []


#: Folder levels searched above a built trace's file for its dataset's ``provenance.json``
#: (``<root>/data_release/<modality>/<benchmark>/<framework>/<id>.json`` is five deep).
PROVENANCE_DEPTH = 6


def provenance_env(trace: Trace) -> EnvRun | None:
    """The ``env`` block (built-in system, task parameters, the run's seed and style) that
    ``whenpro build`` kept for ``trace`` in its dataset's ``provenance.json``, found next
    to the trace's file or in a folder above it (its dataset root first), or ``None``.

    Only that block is read: never the injection record nor the step markers, which are
    the label. The block is not a label but it can re-create the seed run, so a build
    keeps it out of the trace file (issue 14); counterfactual attribution reads it here to
    replay the run. A damaged or foreign ``provenance.json`` gives ``None``."""
    src = trace.source
    if src is None or not src.path:
        return None
    start = Path(src.path).resolve().parent
    folders = ([Path(src.root).resolve()] if src.root else []) + [start, *start.parents][:PROVENANCE_DEPTH]
    for folder in folders:
        path = folder / "provenance.json"
        if not path.is_file():
            continue
        try:
            doc = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        if not (
            isinstance(doc, dict) and doc.get("format") == PROVENANCE_FORMAT and isinstance(doc.get("traces"), dict)
        ):
            return None
        record = doc["traces"].get(trace.id)
        return EnvRun.read(record.get("env")) if isinstance(record, dict) else None
    return None


def provenance_seeds(root: str | Path) -> dict[str, str]:
    """Trace id -> the id of the seed run it was built from, as ``whenpro build`` recorded
    it in ``root/provenance.json``; ``{}`` when there is no such file or it is damaged or
    foreign. Only the ``seed`` field is read (never the injection record nor the step
    markers, which are the label): the audit groups the traces of one seed run."""
    path = Path(root) / "provenance.json"
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    traces = doc.get("traces") if isinstance(doc, dict) and doc.get("format") == PROVENANCE_FORMAT else None
    if not isinstance(traces, dict):
        return {}
    return {
        str(tid): rec["seed"]
        for tid, rec in traces.items()
        if isinstance(rec, dict) and isinstance(rec.get("seed"), str)
    }


class ValidationLogImporter(FileImporter):
    """A dataset's ``validation.jsonl`` review log: no traces. Recognised when its first
    line is a complete review decision."""

    name = "whenpro-validation-log"
    priority = 200
    not_a_trace = True

    def match_head(self, head: bytes, path: Path) -> bool:
        first, nl, _ = head.removeprefix(b"\xef\xbb\xbf").partition(b"\n")
        if not nl or not first.startswith(b'{"format":"' + VALIDATION_FORMAT.encode()):
            return False
        try:
            rec = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        return (
            isinstance(rec, dict)
            and isinstance(rec.get("trace_id"), str)
            and rec.get("verdict") in ("accept", "reject", "relabel")
        )

    def summaries(self, path: Path, root: Path | None) -> Iterator[TraceSummary]:
        return iter(())

    def load(self, path: Path, key: str | None, root: Path | None) -> Trace:
        raise TraceFormatError("a validation log holds no traces", path=path, expected="a trace file of the dataset")
