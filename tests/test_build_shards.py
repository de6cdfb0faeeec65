"""Sharded builds without Ray (issue 18): ``build --shard K/N`` job-array parts
(``.whenpro-build/journal.d/part-NNNN.jsonl``) merged by a build without ``--shard`` give
the release of a local build; a job interrupted mid-way keeps its finished attempts, which
the merging build reuses; ``build --ray`` without Ray installed is one clear error."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO
from test_build import NOW, SALT, tree
from whenpro_core.dataset.build import BuildOptions, BuildResult, Spread, run_build
from whenpro_core.dataset.build_store import BUILD_DIR
from whenpro_core.dataset.journal import journal_layout, take_lock
from whenpro_core.errors import ConfigError

OPTS = BuildOptions(per_seed=2, concurrency=2)  # the detectability filter on: it runs once, when merging


def build(seeds: Path, out: Path, spread: Spread | None = None, **kw: Any) -> BuildResult:
    return asyncio.run(run_build(seeds, out, OPTS, spread=spread, now=NOW, salt=SALT, **kw))


def journal(out: Path) -> dict[str, dict[str, Any]]:
    """The journal's attempts by key (the journal and any parts; the latest line wins)."""
    where = journal_layout(out)
    lines = []
    for path in [where.merged, *where.part_files()]:
        lines += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["key"]: r for r in lines if "key" in r}


def test_job_array_parts_merged_give_the_release_of_a_local_build(tmp_path, seeds):
    local = build(seeds, tmp_path / "local")
    out = tmp_path / "sharded"
    waiting = True
    for _ in range(20):  # the jobs run again until every round is done (bounded)
        results = [build(seeds, out, Spread(shard=(k, 3))) for k in range(3)]
        assert all(r.manifest == {} for r in results) and not (out / "manifest.json").exists()
        waiting = any(r.waiting for r in results)
        if not waiting:
            break
    assert not waiting
    parts = journal_layout(out).part_files()
    names = {"part-0000.jsonl", "part-0001.jsonl", "part-0002.jsonl"}
    assert len(parts) >= 2 and {p.name for p in parts} <= names  # a job whose share is empty writes none
    seen = [json.loads(line)["key"] for p in parts for line in p.read_text().splitlines()]
    assert len(seen) == len(set(seen))  # each attempt in one part only
    merged = build(seeds, out)
    assert merged.ran == 0  # every attempt was done by the jobs: the merge only selects the release
    assert not journal_layout(out).parts.exists()  # parts folded into journal.jsonl
    assert local.manifest["counts"]["kept"] > 0 and local.manifest["dropped"]["detectable"] >= 0
    assert tree(out) == tree(tmp_path / "local")  # the same files, byte for byte


def test_an_interrupted_job_keeps_its_part_and_the_merging_build_reuses_it(tmp_path, seeds):
    out = tmp_path / "ds"

    def stop(n: int) -> None:
        if n == 3:
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        build(seeds, out, Spread(shard=(0, 2)), after_record=stop)
    before = journal(out)
    assert len(before) == 3 and journal_layout(out).part(0).exists()
    resumed = build(seeds, out)  # no --shard: merges the part and runs the rest here
    after = journal(out)
    assert all(after[k] == before[k] for k in before)  # the same lines (timings too): not run again
    assert resumed.skipped == 3 and tree(out) == tree_of_local(tmp_path, seeds)


def tree_of_local(tmp_path: Path, seeds: Path) -> dict[str, bytes]:
    build(seeds, tmp_path / "local")
    return tree(tmp_path / "local")


def test_a_merging_build_waits_for_running_jobs_and_jobs_refuse_force(tmp_path, seeds):
    out = tmp_path / "ds"
    build(seeds, out, Spread(shard=(0, 2)))
    with pytest.raises(ConfigError, match="other shards' work"):
        asyncio.run(run_build(seeds, out, OPTS, force=True, spread=Spread(shard=(1, 2))))
    held = take_lock(out / BUILD_DIR / "lock", shared=True)  # a job still running
    try:
        with pytest.raises(ConfigError, match="--shard jobs still run"):
            build(seeds, out)
    finally:
        os.close(held)


def test_build_ray_without_ray_installed_is_one_clear_error(tmp_path, seeds):
    code = (
        "import sys; sys.modules['ray'] = None; sys.argv = ['whenpro', 'build', sys.argv[1], "
        "'--out', sys.argv[2], '--ray']; from whenpro_core.cli import main; main()"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(seeds), str(tmp_path / "ds")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("whenpro: error: ")
    assert "pip install 'whenpro[ray]'" in out.stderr
    assert not (tmp_path / "ds").exists()  # refused before anything was written
