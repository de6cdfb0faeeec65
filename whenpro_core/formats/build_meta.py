"""Files ``whenpro build`` keeps next to a dataset's traces: ``manifest.json``
(``format: whenpro.build.manifest/1``), the provenance sidecar ``provenance.json``
(``whenpro.build.provenance/1``: how each trace was made; never shown as a trace, never
read by a judge) and ``validation.jsonl``
(``whenpro.validation/1`` lines). They hold no traces; these importers recognise them
(strictly: the whole shape, not just a tag, so a damaged file is still reported) so that
a dataset walk (``whenpro ls``, ``whenpro bench``) lists nothing for them instead of an
"unknown format" error row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import DocumentImporter, FileImporter, LoadContext
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import Trace, TraceSummary

MANIFEST_FORMAT = "whenpro.build.manifest/1"
#: The manifest's file name in a built dataset's folder.
MANIFEST = "manifest.json"
PROVENANCE_FORMAT = "whenpro.build.provenance/1"
VALIDATION_FORMAT = "whenpro.validation/1"


def load_manifest(root: str | Path) -> dict[str, Any] | None:
    """The manifest of the dataset at ``root`` as written (``None`` when there is none;
    :func:`whenpro_core.bench.build_store.read_manifest` adds fresh validation counts).
    Raises TraceFormatError for an unreadable manifest or one without the
    ``whenpro.build.manifest/1`` tag."""
    path = Path(root) / MANIFEST
    try:
        data = jsonio.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise TraceFormatError(
            f"cannot read the build manifest: {exc}", path=path, expected="manifest.json written by whenpro build"
        ) from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise TraceFormatError(
            "not a whenpro build manifest", path=path, json_path="$.format", expected=f'"{MANIFEST_FORMAT}"'
        )
    return data


class BuildManifestImporter(DocumentImporter):
    """A build's ``manifest.json``: no traces."""

    name = "whenpro-build-manifest"
    priority = 200

    def matches(self, doc: Any) -> bool:
        return (
            isinstance(doc, dict)
            and doc.get("format") == MANIFEST_FORMAT
            and isinstance(doc.get("counts"), dict)
            and isinstance(doc.get("traces"), list)
            and isinstance(doc.get("options"), dict)
        )

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        return []

    def summaries(self, doc: Any, ctx: LoadContext) -> list[TraceSummary]:
        return []


class BuildProvenanceImporter(DocumentImporter):
    """A build's ``provenance.json`` sidecar: no traces."""

    name = "whenpro-build-provenance"
    priority = 200

    def matches(self, doc: Any) -> bool:
        return isinstance(doc, dict) and doc.get("format") == PROVENANCE_FORMAT and isinstance(doc.get("traces"), dict)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        return []

    def summaries(self, doc: Any, ctx: LoadContext) -> list[TraceSummary]:
        return []


#: Folder levels searched above a built trace's file for its dataset's ``provenance.json``
#: (``<root>/data_release/<modality>/<benchmark>/<framework>/<id>.json`` is five deep).
PROVENANCE_DEPTH = 6


def provenance_env(trace: Trace) -> dict[str, Any] | None:
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
        env = record.get("env") if isinstance(record, dict) else None
        return env if isinstance(env, dict) and isinstance(env.get("name"), str) else None
    return None


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
