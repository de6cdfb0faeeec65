"""Reviews reach the numbers (issue 14): ``bench`` and ``report`` score a built dataset
with the latest review decision of each trace (a rejected trace is not scored, a
relabelled one is scored with its new label), ``--labels built`` restores the built
labels, and ``build --export-validated`` writes a release of the accepted traces only."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from whenpro_core.bench.records import read_records
from whenpro_core.bench.reviewed import apply_reviews
from whenpro_core.dataset import validate
from whenpro_core.dataset.build import BuildOptions, run_build
from whenpro_core.dataset.build_store import read_manifest
from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env
from whenpro_core.formats import load_trace, walk
from whenpro_core.formats.native import write_trace

NOW = "2026-01-02T03:04:05+00:00"


def whenpro(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def built(tmp: Path, layout: str = "files") -> Path:
    seeds = tmp / "seeds"
    seeds.mkdir()
    env = get_env("arith_team")
    for s in range(6):
        write_trace(run_env(env, s), seeds / f"arith_team-s{s}.json")
    out = tmp / f"ds-{layout}"
    manifest = asyncio.run(
        run_build(seeds, out, BuildOptions(per_seed=3, layout=layout, detect=False), now=NOW)
    ).manifest
    assert manifest["counts"]["kept"] >= 4
    return out


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """A built dataset where the first trace is rejected and the second relabelled to
    the step the heuristic predicts (so its step becomes right), with bench results."""
    tmp = tmp_path_factory.mktemp("reviewed")
    ds = built(tmp)
    results = tmp / "res" / "r.jsonl"
    first = whenpro("bench", str(ds), "--out", str(results), "--labels", "built", "--no-report")
    assert first.returncode == 0, first.stderr
    records = {r.trace.id: r for r in read_records(results)[0]}
    items = validate.review_items(ds)
    wrong = next(i for i in items[1:] if not records[i.id].score.step and records[i.id].prediction.step)
    validate.record(ds, items[0].id, "reject", reason="not the failure it claims")
    validate.record(
        ds, wrong.id, "relabel", reason="the decisive error is where it shows", step=records[wrong.id].prediction.step
    )
    return ds, results, items[0].id, wrong.id, records


def test_bench_leaves_a_rejected_trace_out_and_scores_a_relabel(reviewed, tmp_path):
    ds, _, rejected, relabelled, before = reviewed
    results = tmp_path / "r.jsonl"
    run = whenpro("bench", str(ds), "--out", str(results))
    assert run.returncode == 0, run.stderr
    assert "1 trace rejected in review left out" in run.stderr
    assert "labels: the latest review decision of each trace (1 rejected, left out; 1 relabelled" in run.stdout
    ids = {r.trace.id for r in read_records(results)[0]}
    assert rejected not in ids and relabelled in ids  # the rejected trace was not run
    report = json.loads((tmp_path / "r.report.json").read_text())
    assert report["labels"].startswith("labels: the latest review decision")
    n = report["groups"][0]["overall"]["n"]
    assert n == len(before) - 1
    step_hits = report["groups"][0]["overall"]["step_acc"] * n
    expected = sum(r.score.step for i, r in before.items() if i not in (rejected, relabelled)) + 1
    assert round(step_hits) == expected  # the relabelled trace now scores on step
    assert "labels: the latest review decision" in (tmp_path / "r.report.md").read_text()


def test_report_applies_reviews_to_saved_results_and_built_restores(reviewed, tmp_path):
    ds, results, rejected, relabelled, before = reviewed
    rep = whenpro("report", str(results), "--out", str(tmp_path / "a"))
    assert rep.returncode == 0, rep.stderr
    doc = json.loads((tmp_path / "a" / "r.report.json").read_text())
    assert doc["groups"][0]["overall"]["n"] == len(before) - 1
    built_rep = whenpro("report", str(results), "--out", str(tmp_path / "b"), "--labels", "built")
    assert built_rep.returncode == 0, built_rep.stderr
    assert "labels: as built" in built_rep.stdout
    doc = json.loads((tmp_path / "b" / "r.report.json").read_text())
    assert doc["groups"][0]["overall"]["n"] == len(before)
    assert doc["groups"][0]["overall"]["step_acc"] * len(before) == pytest.approx(
        sum(r.score.step for r in before.values())
    )
    bad = whenpro("report", str(results), "--labels", "mine")
    assert bad.returncode == 2 and "unknown --labels" in bad.stderr


def test_a_relabelled_record_is_scored_against_the_new_label(reviewed):
    ds, results, rejected, relabelled, before = reviewed
    records, reviews = apply_reviews(read_records(results)[0])
    by_id = {r.trace.id: r for r in records}
    assert rejected not in by_id
    rec = by_id[relabelled]
    assert rec.score.step and rec.trace.gt_step == before[relabelled].prediction.step
    assert rec.prediction == before[relabelled].prediction and rec.finished_at == before[relabelled].finished_at


@pytest.mark.parametrize("layout", ["files", "jsonl"])
def test_export_validated_writes_the_accepted_traces_only(tmp_path, layout):
    ds = built(tmp_path, layout)
    items = validate.review_items(ds)
    validate.record(ds, items[0].id, "accept")
    validate.record(ds, items[1].id, "accept")
    validate.record(ds, items[2].id, "reject", reason="no")
    validate.record(ds, items[3].id, "accept")
    validate.record(ds, items[3].id, "reject", reason="changed my mind")  # the latest decision counts
    out = tmp_path / "release"
    done = whenpro("build", "--out", str(ds), "--export-validated", str(out))
    assert done.returncode == 0, done.stderr
    assert "exported 2 accepted traces" in done.stdout
    rows = [r for r in walk(out) if not r.error]
    assert sorted(load_trace(r.ref()).id for r in rows) == sorted([items[0].id, items[1].id])
    manifest = read_manifest(out)
    assert manifest["counts"]["kept"] == 2 and len(manifest["traces"]) == 2
    assert manifest["export"]["left_out"] == {"pending": len(items) - 4, "rejected": 2}
    assert manifest["validation"]["accepted"] == 2
    assert (out / "taxonomy.yaml").is_file()
    if layout == "jsonl":
        assert [p.name for p in (out / "data").iterdir()] == ["text.jsonl"]
    again = whenpro("build", "--out", str(ds), "--export-validated", str(out))
    assert again.returncode == 2 and "not empty" in again.stderr
    with_seeds = whenpro("build", str(ds), "--out", str(ds), "--export-validated", str(tmp_path / "x"))
    assert with_seeds.returncode == 2 and "takes no SEEDS" in with_seeds.stderr
