"""Where ``whenpro build`` keeps a dataset: the dataset files in one of two layouts, the
journal of finished attempts that makes a build resumable, and ``manifest.json``
(DESIGN §4, §8, §9).

Layouts (both read back by whenpro's Who&When Pro importers, with the ground truth at the
injected step's coordinate):

* ``files`` — the per-file release layout:
  ``data_release/<modality>/<benchmark>/<framework>/<mode>__<seed id>-t<coord>__<ts>.json``,
  one Who&When Pro document per kept trace (:mod:`whenpro_core.formats.whowhen_pro_write`);
  ``<ts>`` is the build's creation time (``20260101T120000Z``), the same for every file of
  a build, so a re-run attempt rewrites the same file.
* ``jsonl`` — the JSONL release layout: ``data/<modality>.jsonl``, one row per kept trace
  (``id, framework, benchmark`` plain, ``task, trajectory, ground_truth, extras`` JSON
  strings), sorted by id. Rows are staged as one file each under ``.whenpro-build/rows/``
  and the JSONL files are rewritten atomically from the journal at the end of each run.

Both layouts get ``taxonomy.yaml`` at the root (the built-in table, unless the folder has
one already) and ``manifest.json``.

The journal (``.whenpro-build/journal.jsonl``, :mod:`.applog`) starts with a header
(creation time, the options a resumed build must share) and holds one line per finished
attempt, written only after the attempt's dataset file is in place. A rerun skips the
keys it holds. A kill between the file write and the journal line leaves a file that the
rerun writes again under the same name; files of this build that no kept journal line
names (and temp files of interrupted atomic writes) are removed when a run finishes.
One build at a time may write a dataset (an exclusive lock on ``.whenpro-build/lock``).

Manifest (``whenpro.build.manifest/1``): options, ``seeds`` (found, used, skipped by
reason with the list), ``counts`` per stage (``planned``, ``attempted``, ``generated``,
``replayed``, ``decisive``, ``kept``), ``dropped`` by reason, ``kept_by_mode``,
``kept_by_framework``, ``dropped_traces`` (seed, step, mode, stage, reason, detail),
``traces`` (the kept ones: id, ref, seed, step, agent, mode) and ``validation``
(:mod:`whenpro_core.bench.validate`). The stage counts add up::

    attempted = generated + dropped.generate_failed
    generated = replayed  + dropped.replay_failed
    replayed  = decisive  + dropped.not_decisive
    decisive  = kept + dropped.construction_leak + dropped.gold_visible_before_t
                     + dropped.not_representable + dropped.detectable

(``detectable``: the detectability filter, :mod:`whenpro_core.audit.detect`, journals a
kept item again as dropped when a form-only baseline pins it to its step.)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from whenpro_core import jsonio
from whenpro_core.bench import applog
from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.fsutil import atomic_write_bytes, atomic_write_text

BUILD_DIR = ".whenpro-build"
JOURNAL_FORMAT = "whenpro.build.journal/1"
ATTEMPT_FORMAT = "whenpro.build.attempt/1"
MANIFEST_FORMAT = "whenpro.build.manifest/1"
MANIFEST = "manifest.json"
LAYOUTS = ("files", "jsonl")
#: Why an attempt did not give a dataset trace, by the stage that dropped it.
DROP_REASONS = ("generate_failed", "replay_failed", "not_decisive", "construction_leak",
                "gold_visible_before_t", "not_representable", "detectable")


class Entry(BaseModel):
    """One journal line: a finished attempt.

    ``status`` is ``kept`` or ``dropped`` (with ``reason`` from :data:`DROP_REASONS` and
    a human ``detail``). A kept entry names its dataset ``file`` (relative to the root)
    and ``ref`` (what :func:`whenpro_core.formats.load_trace` takes, relative to the
    root: the file, or ``data/<modality>.jsonl#<id>``)."""

    model_config = ConfigDict(extra="ignore")

    format: str = ATTEMPT_FORMAT
    key: str
    seed: str
    seed_ref: str
    step: str
    step_index: int
    mode: str
    status: str
    reason: str | None = None
    detail: str = ""
    id: str | None = None
    agent: str | None = None
    modality: str | None = None
    framework: str | None = None
    benchmark: str | None = None
    file: str | None = None
    ref: str | None = None
    seconds: float = 0.0


def compact_ts(iso: str) -> str:
    """``2026-01-01T12:00:00+00:00`` -> ``20260101T120000Z`` (file-name timestamp)."""
    stamp = datetime.fromisoformat(iso).astimezone(timezone.utc)
    return stamp.strftime("%Y%m%dT%H%M%SZ")


def _safe(text: str) -> str:
    from whenpro_core.summary import safe_name

    return safe_name(str(text)) or "unknown"


class BuildStore:
    """An open dataset being built (module docstring). Use :meth:`open`, then
    :meth:`write_kept` (any thread) and :meth:`record` (one thread), then
    :meth:`finish`, then :meth:`close`."""

    def __init__(self, root: Path, header: dict[str, Any], entries: dict[str, Entry], lock_fd: int) -> None:
        self.root = root
        self.header = header
        self.entries = entries
        self._lock_fd = lock_fd
        self.layout: str = header["options"]["layout"]
        self.created: str = header["created"]
        self.ts = compact_ts(self.created)

    # ------------------------------------------------------------------ opening

    @property
    def journal(self) -> Path:
        return self.root / BUILD_DIR / "journal.jsonl"

    @classmethod
    def open(cls, root: str | Path, options: dict[str, Any], *, force: bool = False,
             now: str | None = None) -> "BuildStore":
        """Open (or start) the build in ``root``.

        ``options`` are the settings a resumed build must share (generator, executor,
        layout, seed); a journal made with others raises ConfigError unless ``force``,
        which starts the build over (removing the files the old journal names; a
        ``validation.jsonl`` is kept). A non-empty folder that is not a build raises
        WhenproError unless ``force``. ConfigError when another build holds the lock."""
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise WhenproError("output exists and is a file", path=root, expected="a dataset folder (--out)")
        journal = root / BUILD_DIR / "journal.jsonl"
        if not journal.exists() and root.is_dir() and any(p.name != BUILD_DIR for p in root.iterdir()) \
                and not force:
            raise WhenproError("output folder exists and is not a whenpro build", path=root,
                               expected="a new folder, an earlier build to resume, or --force")
        (root / BUILD_DIR).mkdir(parents=True, exist_ok=True)
        lock_fd = _take_lock(root / BUILD_DIR / "lock")
        try:
            records, _ = applog.read(journal, "whenpro.build.")
            header = next((r for r in records if r.get("format") == JOURNAL_FORMAT), None)
            if header is not None and header.get("options") != options:
                if not force:
                    old = header.get("options") or {}
                    diff = ", ".join(f"{k} {old.get(k)!r} -> {v!r}" for k, v in options.items() if old.get(k) != v)
                    raise ConfigError(f"this dataset was built with other options ({diff})", path=root,
                                      expected="the same --generator/--executor/--layout/--seed to resume, "
                                               "a new --out, or --force to start over")
                _remove_build(root, [Entry.model_validate(r) for r in records if r.get("format") == ATTEMPT_FORMAT])
                records, header = [], None
            elif header is not None and force:
                _remove_build(root, [Entry.model_validate(r) for r in records if r.get("format") == ATTEMPT_FORMAT])
                records, header = [], None
            if header is None:
                header = {"format": JOURNAL_FORMAT, "options": options,
                          "created": now or datetime.now(timezone.utc).isoformat(timespec="seconds")}
                applog.append(journal, header)
            entries: dict[str, Entry] = {}
            for r in records:
                if r.get("format") == ATTEMPT_FORMAT:
                    e = Entry.model_validate(r)
                    entries[e.key] = e
        except BaseException:
            os.close(lock_fd)
            raise
        return cls(root, header, entries, lock_fd)

    def close(self) -> None:
        """Release the build lock."""
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    # ------------------------------------------------------------------ writing

    def target(self, entry: Entry) -> tuple[str, str]:
        """(file, ref) of a kept entry, relative to the root."""
        if self.layout == "jsonl":
            return f"{BUILD_DIR}/rows/{_safe(entry.id or entry.key)}.json", \
                f"data/{_safe(entry.modality or 'text')}.jsonl#{entry.id}"
        name = f"{entry.mode}__{_safe(entry.seed)}-t{_safe(entry.step)}__{self.ts}.json"
        rel = "/".join(["data_release", _safe(entry.modality or "text"), _safe(entry.benchmark or "unknown"),
                        _safe(entry.framework or "unknown"), _safe(name)])
        return rel, rel

    def write_kept(self, doc: dict[str, Any], entry: Entry) -> Entry:
        """Write a kept trace's document atomically and return the entry with ``file``
        and ``ref`` set (thread-safe; the journal line is :meth:`record`'s job)."""
        file, ref = self.target(entry)
        atomic_write_bytes(self.root / file, jsonio.dumps(doc, indent=True) + b"\n")
        return entry.model_copy(update={"file": file, "ref": ref})

    def record(self, entry: Entry) -> None:
        """Append a finished attempt to the journal."""
        applog.append(self.journal, entry.model_dump(mode="json"))
        self.entries[entry.key] = entry

    # ------------------------------------------------------------------ finishing

    def kept(self) -> list[Entry]:
        """Kept entries, sorted by trace id."""
        return sorted((e for e in self.entries.values() if e.status == "kept"), key=lambda e: e.id or "")

    def finish(self, seeds: dict[str, Any] | None = None, *, planned: int | None = None,
               run: dict[str, Any] | None = None) -> dict[str, Any]:
        """Assemble the JSONL files (jsonl layout), remove orphan files, write
        ``taxonomy.yaml`` if missing and ``manifest.json``; returns the manifest.
        ``seeds``/``planned``/``run`` (this run's modes, per-seed count, concurrency)
        describe this run (kept from the old manifest when ``None``)."""
        if self.layout == "jsonl":
            self._assemble_jsonl()
        self._sweep()
        write_taxonomy(self.root)
        old = read_manifest(self.root, fresh_validation=False) or {}
        manifest = compute_manifest(self.header, list(self.entries.values()),
                                    seeds if seeds is not None else old.get("seeds", {}),
                                    planned if planned is not None else old.get("counts", {}).get("planned"))
        manifest["run"] = run if run is not None else old.get("run", {})
        from whenpro_core.bench.validate import validation_counts

        manifest["validation"] = validation_counts(self.root, manifest)
        atomic_write_bytes(self.root / MANIFEST, jsonio.dumps(manifest, indent=True) + b"\n")
        return manifest

    def _assemble_jsonl(self) -> None:
        by_modality: dict[str, list[Entry]] = {}
        for e in self.kept():
            by_modality.setdefault(_safe(e.modality or "text"), []).append(e)
        data = self.root / "data"
        for modality, entries in by_modality.items():
            _stream_atomic(data / f"{modality}.jsonl", (self.root / e.file for e in entries if e.file))
        for stale in data.glob("*.jsonl") if data.is_dir() else []:
            if stale.stem not in by_modality:
                stale.unlink()

    def _sweep(self) -> None:
        named = {e.file for e in self.entries.values() if e.status == "kept" and e.file}
        places = [self.root / BUILD_DIR / "rows"] if self.layout == "jsonl" else [self.root / "data_release"]
        places.append(self.root / "data")
        for place in places:
            if not place.is_dir():
                continue
            for path in place.rglob("*"):
                if not path.is_file():
                    continue
                rel = path.relative_to(self.root).as_posix()
                mine = (rel.endswith(f"__{self.ts}.json") or place.name == "rows") and rel not in named
                torn = path.name.startswith(".") and path.name.endswith(".tmp")
                if mine or torn:
                    path.unlink()


def _take_lock(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    if applog.fcntl is not None:
        try:
            applog.fcntl.flock(fd, applog.fcntl.LOCK_EX | applog.fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError("another whenpro build is writing this dataset", path=path.parent.parent,
                              expected="wait for it to finish, or a different --out") from None
    return fd


def _remove_build(root: Path, entries: list[Entry]) -> None:
    """Start over: remove the files an old journal names, its staged rows, the JSONL
    files, the manifest and the journal (never ``validation.jsonl``)."""
    for e in entries:
        if e.file and ".." not in Path(e.file).parts:
            (root / e.file).unlink(missing_ok=True)
    shutil.rmtree(root / BUILD_DIR / "rows", ignore_errors=True)
    (root / BUILD_DIR / "journal.jsonl").unlink(missing_ok=True)
    (root / MANIFEST).unlink(missing_ok=True)
    for p in (root / "data").glob("*.jsonl") if (root / "data").is_dir() else []:
        p.unlink()


def _stream_atomic(path: Path, docs) -> None:
    """Write ``path`` as JSONL rows built from the staged documents, atomically."""
    from whenpro_core.formats.whowhen_pro_write import to_jsonl_row

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            for doc_path in docs:
                fh.write(to_jsonl_row(jsonio.loads(doc_path.read_bytes())) + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_taxonomy(root: Path) -> None:
    """Write the built-in taxonomy as ``taxonomy.yaml`` (``code: {name, description}``)
    unless ``root`` has one."""
    import yaml

    from whenpro_core.taxonomy import Taxonomy

    target = root / "taxonomy.yaml"
    if target.exists():
        return
    table = {m.code: {"name": m.name, "description": m.description or m.meaning} for m in Taxonomy.builtin()}
    atomic_write_text(target, yaml.safe_dump(table, sort_keys=False, allow_unicode=True, width=100))


# ---------------------------------------------------------------------- the manifest


def compute_manifest(header: dict[str, Any], entries: list[Entry], seeds: dict[str, Any],
                     planned: int | None) -> dict[str, Any]:
    """The manifest of a build from its journal (module docstring); pure."""
    kept = sorted((e for e in entries if e.status == "kept"), key=lambda e: e.id or "")
    dropped = [e for e in entries if e.status != "kept"]
    reasons = Counter(e.reason or "unknown" for e in dropped)
    n = len(entries)
    generated = n - reasons["generate_failed"]
    replayed = generated - reasons["replay_failed"]
    decisive = replayed - reasons["not_decisive"]
    return {
        "format": MANIFEST_FORMAT,
        "created": header.get("created"),
        "updated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "options": header.get("options", {}),
        "seeds": seeds,
        "counts": {"planned": planned if planned is not None else n, "attempted": n, "generated": generated,
                   "replayed": replayed, "decisive": decisive, "kept": len(kept)},
        "dropped": {r: reasons.get(r, 0) for r in DROP_REASONS} | {r: c for r, c in reasons.items()
                                                                 if r not in DROP_REASONS},
        "kept_by_mode": dict(sorted(Counter(e.mode for e in kept).items())),
        "kept_by_framework": dict(sorted(Counter(e.framework or "?" for e in kept).items())),
        "traces": [{"id": e.id, "ref": e.ref, "seed": e.seed, "step": e.step, "agent": e.agent,
                    "mode": e.mode, "framework": e.framework, "modality": e.modality} for e in kept],
        "dropped_traces": [{"seed": e.seed, "step": e.step, "mode": e.mode, "reason": e.reason,
                            "detail": e.detail} for e in sorted(dropped, key=lambda e: e.key)],
    }


def read_manifest(root: str | Path, *, fresh_validation: bool = True) -> dict[str, Any] | None:
    """The manifest of the dataset at ``root`` (``None`` when there is none). With
    ``fresh_validation`` its ``validation`` section is recomputed from
    ``validation.jsonl`` (so readers always see current counts, whether or not
    ``whenpro build --revalidate`` ran). Raises TraceFormatError for an unreadable
    manifest."""
    from whenpro_core.errors import TraceFormatError

    path = Path(root) / MANIFEST
    try:
        data = jsonio.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise TraceFormatError(f"cannot read the build manifest: {exc}", path=path,
                               expected="manifest.json written by whenpro build") from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise TraceFormatError("not a whenpro build manifest", path=path, json_path="$.format",
                               expected=f'"{MANIFEST_FORMAT}"')
    if fresh_validation:
        from whenpro_core.bench.validate import validation_counts

        data["validation"] = validation_counts(root, data)
    return data


def revalidate(root: str | Path) -> dict[str, Any]:
    """Rewrite ``manifest.json`` with current validation counts (``whenpro build
    --revalidate``). Raises WhenproError when the folder holds no build manifest."""
    manifest = read_manifest(root, fresh_validation=True)
    if manifest is None:
        raise WhenproError("no manifest.json here: not a dataset built by whenpro build", path=Path(root),
                           expected="the --out folder of a whenpro build")
    manifest["updated"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    atomic_write_bytes(Path(root) / MANIFEST, jsonio.dumps(manifest, indent=True) + b"\n")
    return manifest


__all__ = ["BUILD_DIR", "BuildStore", "DROP_REASONS", "Entry", "LAYOUTS", "MANIFEST", "compute_manifest",
           "read_manifest", "revalidate", "write_taxonomy"]
