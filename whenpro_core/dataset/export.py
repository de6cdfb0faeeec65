"""``whenpro build --out DATASET --export-validated OUT``: a release of the traces a
review accepted (issue 14).

The release has the dataset's layout (``files``: the accepted traces' files at the same
relative paths; ``jsonl``: ``data/<modality>.jsonl`` with only the accepted rows, in
the same order), its ``taxonomy.yaml``, the review decisions of the exported traces
(``validation.jsonl``) and a fresh ``manifest.json``: the source manifest's options,
the exported traces only, their counts by mode and framework, and an ``export`` section
(how many traces were left out, by review status). Traces whose latest decision is not
*accept* (pending, rejected, relabelled) are left out. Nothing is overwritten: OUT must
be new or empty. Files are written atomically.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from whenpro_core.dataset.build_store import read_manifest
from whenpro_core.dataset.validate import VALIDATION_FILE, read_validations, review_items, validation_counts
from whenpro_core.errors import WhenproError
from whenpro_core.formats.build_meta import MANIFEST
from whenpro_core.formats.registry import split_ref
from whenpro_core.storage import jsonio, jsonl_log
from whenpro_core.storage.fsutil import atomic_copy, atomic_write_bytes


def check_out_dir(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise WhenproError(
            "the export folder exists and is not empty",
            path=out,
            expected="a new or empty folder for --export-validated",
        )


def _copy_jsonl(root: Path, out: Path, rel: str, ids: set[str]) -> None:
    """Copy the rows of ``root/rel`` whose ``id`` is in ``ids``, in order, atomically."""
    lines = []
    with open(root / rel, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                row = jsonio.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and row.get("id") in ids:
                lines.append(line if line.endswith(b"\n") else line + b"\n")
    atomic_write_bytes(out / rel, b"".join(lines))


def export_validated(root: str | Path, out: str | Path, *, now: str | None = None) -> dict[str, Any]:
    """Write the release of the accepted traces of the built dataset at ``root`` into
    ``out`` (module docstring) and return its manifest. Raises WhenproError when ``root``
    is not a built dataset or ``out`` is not new or empty."""
    root, out = Path(root), Path(out)
    manifest = read_manifest(root)
    if manifest is None:
        raise WhenproError(
            "no manifest.json here: not a dataset built by whenpro build",
            path=root,
            expected="the --out folder of a whenpro build",
        )
    check_out_dir(out)
    items = review_items(root)
    accepted = {i.id for i in items if i.status == "accepted"}
    traces = [t for t in manifest.get("traces", []) if t.get("id") in accepted]
    out.mkdir(parents=True, exist_ok=True)
    jsonl_files: dict[str, set[str]] = {}
    for t in traces:
        rel = split_ref(t.get("ref") or "")[0].as_posix()
        if "#" in (t.get("ref") or "") and rel.endswith(".jsonl"):
            jsonl_files.setdefault(rel, set()).add(t["id"])
        else:
            atomic_copy(root / rel, out / rel)
    for rel, ids in jsonl_files.items():
        _copy_jsonl(root, out, rel, ids)
    if (root / "taxonomy.yaml").is_file():
        atomic_copy(root / "taxonomy.yaml", out / "taxonomy.yaml")
    for entry in read_validations(root):
        if entry.trace_id in accepted:
            jsonl_log.append(out / VALIDATION_FILE, entry.model_dump(mode="json"))
    stamp = now or datetime.now(UTC).isoformat(timespec="seconds")
    left = Counter(i.status for i in items if i.id not in accepted)
    fresh = {
        "format": manifest["format"],
        "created": stamp,
        "updated": stamp,
        "options": manifest.get("options", {}),
        "export": {
            "from_traces": len(items),
            "exported": len(traces),
            "left_out": dict(sorted(left.items())),
            "rule": "latest review decision is accept",
        },
        "counts": {"kept": len(traces)},
        "kept_by_mode": dict(sorted(Counter(t.get("mode") for t in traces).items())),
        "kept_by_framework": dict(sorted(Counter(t.get("framework") or "?" for t in traces).items())),
        "traces": traces,
    }
    fresh["validation"] = validation_counts(out, fresh)
    atomic_write_bytes(out / MANIFEST, jsonio.dumps(fresh, indent=True) + b"\n")
    return fresh


__all__ = ["export_validated"]
