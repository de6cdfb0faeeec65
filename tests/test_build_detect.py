"""The detectability filter of ``whenpro build`` (issue 14): an item that a form-only
baseline pins to its step is dropped as ``detectable`` and counted in the manifest;
``--keep-detectable`` keeps it; honest steps are not pinned."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys

from audit_data import make_seed, make_trace
from conftest import REPO
from whenpro_core.audit.detect import DetectabilityCheck, filter_items
from whenpro_core.audit.view import audit_view
from whenpro_core.dataset.build import BuildOptions, run_build
from whenpro_core.dataset.build_store import BUILD_DIR
from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env
from whenpro_core.formats import load_trace, walk
from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import GroundTruth

NOW = "2026-01-02T03:04:05+00:00"


def seed_runs(n: int = 20) -> list:
    rng = random.Random(11)
    return [make_seed(i, rng) for i in range(n)]


def test_an_item_written_differently_is_pinned_and_an_honest_one_is_not():
    seeds = seed_runs()
    check = DetectabilityCheck((s.id, s) for s in seeds)
    rng = random.Random(3)
    tell = make_trace(500, "format", rng, at=4)
    pins = check.check(tell, "other-seed")
    assert [p.name for p in pins] == ["format outlier"] or "format outlier" in {p.name for p in pins}
    honest = make_trace(501, "none", rng, at=4)
    assert check.check(honest, "other-seed") == []


def test_honest_steps_of_the_seed_runs_are_almost_never_pinned():
    """Label every step of every seed run in turn: the filter, comparing with the other
    seed runs, pins (almost) none of them (a filter that did would drop honest items
    and bias the dataset's positions)."""
    seeds = seed_runs()
    check = DetectabilityCheck((s.id, s) for s in seeds)
    total = pinned = 0
    for s in seeds:
        for step in audit_view(s).steps:
            labelled = s.model_copy(update={"ground_truth": GroundTruth(agent=step.agent, step=step.coord, mode="R.3")})
            total += 1
            pinned += bool(check.check(labelled, s.id))
    assert total == 200 and pinned <= 4


def test_the_filter_learns_the_build_so_far_in_a_fixed_order():
    seeds = seed_runs()
    check = DetectabilityCheck((s.id, s) for s in seeds)
    rng = random.Random(8)
    items = [(f"k{i:02d}", f"seed{i:03d}", make_trace(600 + i, "format" if i % 2 else "none", rng)) for i in range(12)]
    pinned = filter_items(check, items)
    assert set(pinned) == {k for k, _, t in items if int(k[1:]) % 2}
    assert check.corpus.tokens_labelled.total["#"] == 6  # the accepted ones joined the corpus


def test_own_seed_run_is_not_what_an_item_is_compared_with():
    """Comparing an item with the run it was injected into finds the step at once (the
    first difference); the filter leaves that run out."""
    seeds = seed_runs(6)
    base = seeds[0]
    item = base.model_copy(update={"id": "item", "steps": [s.model_copy() for s in base.steps]})
    at = item.steps[5]
    item.steps[5] = at.model_copy(update={"content": at.content.replace("x = ", "x = 2 + ")})
    item.ground_truth = GroundTruth(agent=at.agent, step=at.coord, mode="R.3")
    check = DetectabilityCheck((s.id, s) for s in seeds)
    assert "twin difference" not in {p.name for p in check.check(item, base.id)}
    assert "twin difference" in {p.name for p in check.check(item, "someone-else")}


def arith_seeds(folder, n: int = 8):
    env = get_env("arith_team")
    for s in range(n):
        write_trace(run_env(env, s), folder / f"arith_team-s{s}.json")
    return folder


def test_build_drops_detectable_items_and_counts_them(tmp_path):
    seeds = arith_seeds(tmp_path / "seeds")
    opts = BuildOptions(per_seed=3, concurrency=2)
    filtered = asyncio.run(run_build(seeds, tmp_path / "ds", opts, now=NOW)).manifest
    kept_all = asyncio.run(
        run_build(seeds, tmp_path / "all", BuildOptions(per_seed=3, concurrency=2, detect=False), now=NOW)
    ).manifest
    dropped = filtered["dropped"]["detectable"]

    def before_balance(m: dict) -> int:  # kept before the adversarial filter and the release's caps
        return m["counts"]["kept"] + sum(
            m["dropped"][r] for r in ("adversarial", "step_class", "mode_share", "position", "form_pick", "per_seed")
        )

    assert dropped > 0 and filtered["run"]["detectable"] == {
        "filter": True,
        "checked": before_balance(kept_all),
        "dropped": dropped,
    }
    assert before_balance(filtered) == before_balance(kept_all) - dropped
    assert kept_all["dropped"]["detectable"] == 0 and kept_all["run"]["detectable"] == {"filter": False}
    c = filtered["counts"]
    assert c["decisive"] == c["kept"] + sum(
        filtered["dropped"][r]
        for r in (
            "construction_leak",
            "gold_visible_before_t",
            "not_representable",
            "control_failed",
            "detectable",
            "adversarial",
            "step_class",
            "mode_share",
            "position",
            "form_pick",
            "per_seed",
        )
    )
    reasons = [d for d in filtered["dropped_traces"] if d["reason"] == "detectable"]
    assert len(reasons) == dropped and all("pins it to its step" in d["detail"] for d in reasons)
    files = [r for r in walk(tmp_path / "ds") if not r.error]
    assert len(files) == filtered["counts"]["kept"] == len(filtered["traces"])
    ids = {t["id"] for t in filtered["traces"]}
    assert {load_trace(r.ref()).id for r in files} == ids
    again = asyncio.run(run_build(seeds, tmp_path / "ds", opts, now=NOW))  # a rerun: nothing new, same result
    assert again.ran == 0 and again.manifest["counts"] == filtered["counts"]
    journal = (tmp_path / "ds" / BUILD_DIR / "journal.jsonl").read_text().splitlines()
    assert sum(json.loads(line).get("reason") == "detectable" for line in journal) == dropped


def test_keep_detectable_from_the_command(tmp_path):
    seeds = arith_seeds(tmp_path / "seeds", 4)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "build",
            str(seeds),
            "--out",
            str(tmp_path / "ds"),
            "--keep-detectable",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert manifest["dropped"]["detectable"] == 0 and manifest["run"]["detectable"]["filter"] is False


def test_build_then_audit_on_the_built_in_systems(tmp_path):
    """run -> build (default: the filter on) -> audit, with and without the seed runs as
    corpus, on both built-in systems and both layouts."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for name, n in (("arith_team", 6), ("code_pair", 4)):
        env = get_env(name)
        for s in range(n):
            write_trace(run_env(env, s), seeds / f"{name}-s{s}.json")
    for layout in ("files", "jsonl"):
        manifest = asyncio.run(
            run_build(seeds, tmp_path / layout, BuildOptions(per_seed=3, layout=layout), now=NOW)
        ).manifest
        kept = manifest["counts"]["kept"]
        assert kept > 0
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "whenpro_core.cli",
                "audit",
                str(tmp_path / layout),
                "--json",
                "--against",
                str(seeds),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=180,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["traces"] == kept and doc["against"] == 10
        assert {g["value"] for g in doc["groups"] if g["by"] == "framework"} <= {"arith_team", "code_pair"}
        assert isinstance(doc["leaky"], bool) and 0 < doc["random"]["step"] < 1
