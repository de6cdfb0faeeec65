"""Trace ids that stay distinct when several runs keep a file of the same name.

Agent harnesses write one file per task instance and name it after the instance, so
two runs of the same task (another model, config or seed) hold files of the same name
in different run folders: SWE-agent 0.x ``<run>/<instance>.traj``, SWE-agent 1.x and
mini-swe-agent ``<run>/<instance>/<instance>.traj[.json]`` (SOURCE.md of
real_traces/swe-agent-traj: three marshmallow variants share one file name). An id made
from the file name alone then names several traces, and ``whenpro convert`` (one
``<id>.json`` per trace) or a bench report mixes them up.

:func:`distinct_id` keeps the plain id (``<prefix>-<stem>``) unless another run folder
beside this file's run folder holds a file at the same relative path; then it appends
``@<run folder name>``. Ids that were unique stay unchanged. Which names repeat is read
from one listing per folder of runs, cached while that folder is unchanged.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

#: Run folders scanned at most beside one run; past this every id is qualified (still
#: distinct, only longer) rather than listing a huge folder.
MAX_RUN_FOLDERS = 5000


def run_folder(path: Path) -> Path:
    """The folder naming the run that holds ``path``: its parent, or the grandparent
    when the parent is named after the file (``<run>/<instance>/<instance>.traj``)."""
    parent = path.parent
    if path.name.startswith(parent.name + ".") and parent.parent != parent:
        return parent.parent
    return parent


@lru_cache(maxsize=64)
def _runs_by_file(container: str, depth: int, _mtime_ns: int) -> dict[str, frozenset[str]] | None:
    """Relative file path (``depth`` parts) -> the run folders under ``container`` that
    hold it; ``None`` when there are too many run folders to list."""
    found: dict[str, set[str]] = {}
    try:
        runs = [e for e in os.scandir(container) if e.is_dir() and not e.name.startswith(".")]
    except OSError:
        return {}
    if len(runs) > MAX_RUN_FOLDERS:
        return None
    for run in runs:
        level = [(run.path, "")]
        for d in range(depth):
            nxt = []
            for folder, prefix in level:
                try:
                    entries = list(os.scandir(folder))
                except OSError:
                    continue
                for e in entries:
                    rel = prefix + e.name
                    if d == depth - 1:
                        if e.is_file():
                            found.setdefault(rel, set()).add(run.name)
                    elif e.is_dir() and not e.name.startswith("."):
                        nxt.append((e.path, rel + "/"))
            level = nxt
    return {k: frozenset(v) for k, v in found.items()}


def repeated_in_other_runs(path: Path) -> bool:
    """True when another run folder beside ``path``'s run folder (:func:`run_folder`)
    holds a file at the same relative path (or there are too many to tell)."""
    path = path.resolve()
    run = run_folder(path)
    container = run.parent
    if container == run:
        return False
    rel = path.relative_to(run).as_posix()
    try:
        mtime = container.stat().st_mtime_ns
    except OSError:
        return False
    index = _runs_by_file(str(container), rel.count("/") + 1, mtime)
    if index is None:
        return True
    return bool(index.get(rel, frozenset()) - {run.name})


def distinct_id(prefix: str, path: Path, stem: str | None = None) -> str:
    """``<prefix>-<stem>`` (``stem`` defaults to the file's stem), with
    ``@<run folder>`` appended when the same file name appears in another run folder
    (see the module doc)."""
    base = f"{prefix}-{stem if stem is not None else path.stem}"
    if repeated_in_other_runs(Path(path)):
        return f"{base}@{run_folder(Path(path).resolve()).name}"
    return base


__all__ = ["MAX_RUN_FOLDERS", "distinct_id", "repeated_in_other_runs", "run_folder"]
