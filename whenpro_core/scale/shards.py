"""Sharded benchmark results (issue 18): where the part files of a sharded ``whenpro bench``
go, which work items a shard runs, what is already done across all parts, and the merge
a finished run does.

Layout (:func:`layout`): with ``--out bench-results.jsonl`` the parts are
``bench-results.d/part-NNNN.jsonl`` next to it and a finished run merges them into
``bench-results.jsonl``; with ``--out FOLDER`` (an existing folder) the parts are
``FOLDER/part-NNNN.jsonl`` and the merged file is ``FOLDER/results.jsonl``. Each part is an
ordinary append-only results file (``whenpro_core.bench.records.ResultsFile``) written
by one process, so a killed worker loses at most its records in flight.

Resume: :func:`~whenpro_core.bench.results_parts.done_everywhere` reads the merged file and
every part (repairing torn last lines), the latest record of a key (finished last) winning;
finished items in any part are skipped.

Sharding: ``--shard K/N`` (job arrays, no Ray) keeps the items whose key hashes to ``K``
(:func:`shard_of`: stable across runs and machines, independent of what is done);
a Ray run deals the items still to run round-robin into equal shards (:func:`deal`).
"""

from __future__ import annotations

import glob
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from whenpro_core.errors import ConfigError, TraceFormatError

#: Name of the merged results file when ``--out`` is a folder.
MERGED_NAME = "results.jsonl"
#: Glob of the part files in a parts folder.
PART_GLOB = "part-*.jsonl"

T = TypeVar("T")


@dataclass(frozen=True)
class Layout:
    """Where a run's results live: ``merged`` (the one results file a finished run leaves)
    and ``parts`` (the folder of ``part-NNNN.jsonl`` files written by shards)."""

    merged: Path
    parts: Path

    def part(self, index: int) -> Path:
        """The part file of shard ``index`` (0-based): ``parts/part-NNNN.jsonl``."""
        return self.parts / f"part-{index:04d}.jsonl"

    def part_files(self) -> list[Path]:
        """The part files present, in name order."""
        if not self.parts.is_dir():
            return []
        return sorted(p for p in self.parts.glob(PART_GLOB) if p.is_file())


def layout(out: str | Path) -> Layout:
    """The layout for ``--out``: an existing folder holds its parts and ``results.jsonl``;
    a file ``NAME.jsonl`` has its parts in ``NAME.d/`` next to it."""
    path = Path(out)
    if path.is_dir():
        return Layout(merged=path / MERGED_NAME, parts=path)
    return Layout(merged=path, parts=path.with_name(f"{path.stem}.d"))


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with ``0 <= K < N`` (K is 0-based, as ``$SLURM_ARRAY_TASK_ID``
    with ``--array=0-(N-1)``). ConfigError otherwise."""
    k_text, sep, n_text = text.partition("/")
    if sep and k_text.strip().isdigit() and n_text.strip().isdigit():
        k, n = int(k_text), int(n_text)
        if 0 <= k < n:
            return k, n
    raise ConfigError(f"--shard {text!r} is not K/N", expected="K/N with 0 <= K < N, e.g. 0/4 … 3/4")


def shard_of(key: str, shards: int) -> int:
    """The shard (0-based, of ``shards``) of a work item's resume ``key``: a stable hash."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") % shards


def deal(items: Sequence[T], shards: int) -> list[list[T]]:
    """``items`` dealt round-robin into at most ``shards`` non-empty lists (equal sizes ±1,
    so a long dataset's similar neighbours spread over the shards)."""
    n = max(1, min(shards, len(items)))
    return [list(items[i::n]) for i in range(n)] if items else []


def results_paths(specs: Sequence[str | Path]) -> list[Path]:
    """The results files named by ``whenpro report``'s arguments: a file as is, a folder
    as its ``*.jsonl`` files (the merged file and the parts), a glob such as
    ``'out.d/part-*.jsonl'`` as its matches (sorted). TraceFormatError when a folder or
    glob names no results file."""
    out: list[Path] = []
    for spec in specs:
        path = Path(spec)
        if path.is_dir():
            found = sorted(p for p in path.glob("*.jsonl") if p.is_file())
        elif not path.exists() and glob.has_magic(str(spec)):
            found = sorted(Path(p) for p in glob.glob(str(spec)) if Path(p).is_file())
        else:
            out.append(path)
            continue
        if not found:
            raise TraceFormatError(
                "no results files here",
                path=path,
                expected="a results .jsonl, a folder of them or a glob of part files",
            )
        out += found
    return out


__all__ = [
    "MERGED_NAME",
    "PART_GLOB",
    "Layout",
    "deal",
    "layout",
    "parse_shard",
    "results_paths",
    "shard_of",
]
