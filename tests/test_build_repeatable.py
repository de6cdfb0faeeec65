"""Issue 33 items 3 and 9: a build's release is chosen from the same runs and options the
same way whatever its random name salt and whatever order its attempts finished in, and
the release selection's work is bounded (counted in candidate evaluations, never timed)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from whenpro_core.bench.build import BuildOptions, run_build
from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env
from whenpro_core.formats.native import write_trace

NOW = "2026-01-02T03:04:05+00:00"


@pytest.fixture(scope="module")
def arith_seeds(tmp_path_factory) -> Path:
    """Twelve successful arith_team reference runs."""
    folder = tmp_path_factory.mktemp("seeds")
    env = get_env("arith_team")
    for s in range(12):
        write_trace(run_env(env, 3000 + s), folder / f"arith_team-s{s}.json")
    return folder


def _released(manifest: dict) -> set[tuple[str, str, str]]:
    return {(t["seed"], t["step"], t["mode"]) for t in manifest["traces"]}


def test_two_fresh_builds_of_the_same_runs_release_the_same_items(arith_seeds, tmp_path):
    """Two builds with the same runs and options and different name salts (two fresh
    ``whenpro build`` commands) release the same (seed run, step, mode) items, only
    under other names; one runs its attempts one at a time, the other four at once."""
    one = asyncio.run(
        run_build(arith_seeds, tmp_path / "a", BuildOptions(concurrency=1), now=NOW, salt="salt-one")
    ).manifest
    two = asyncio.run(
        run_build(arith_seeds, tmp_path / "b", BuildOptions(concurrency=4), now=NOW, salt="salt-two")
    ).manifest
    assert len(one["traces"]) >= 5
    assert _released(one) == _released(two)
    assert {t["id"] for t in one["traces"]}.isdisjoint({t["id"] for t in two["traces"]})
    assert one["dropped"] == two["dropped"]
