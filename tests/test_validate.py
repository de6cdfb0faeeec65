"""Review of a built dataset (``whenpro_core.dataset.validate``): accept / reject / relabel
with reasons in an append-only ``validation.jsonl``, counts in the manifest on read and
with ``whenpro build --revalidate``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import REPO
from whenpro_core.dataset import validate
from whenpro_core.dataset.build import BuildOptions, run_build
from whenpro_core.dataset.build_store import read_manifest
from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env
from whenpro_core.errors import ConfigError
from whenpro_core.formats import load_trace, walk
from whenpro_core.formats.native import write_trace


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    seeds = tmp_path_factory.mktemp("vseeds")
    env = get_env("arith_team")
    for s in range(6):
        write_trace(run_env(env, s), seeds / f"arith_team-s{s}.json")
    root = tmp_path_factory.mktemp("vds") / "ds"
    opts = BuildOptions(per_seed=3, concurrency=2, max_mode_share=1.0, detect=False)
    asyncio.run(run_build(seeds, root, opts, now="2026-01-02T03:04:05+00:00", salt="validate"))
    return root


@pytest.fixture
def ds(built, tmp_path) -> Path:
    """A private copy of the built dataset (decisions are per test)."""
    import shutil

    return Path(shutil.copytree(built, tmp_path / "ds"))


def test_review_items_list_the_built_labels_and_load(ds):
    items = validate.review_items(ds)
    manifest = read_manifest(ds)
    assert [i.id for i in items] == [t["id"] for t in manifest["traces"]] and len(items) >= 4
    for item in items:
        assert item.status == "pending" and item.latest is None
        trace = load_trace(ds / item.ref)
        assert (trace.ground_truth.agent, trace.ground_truth.step, trace.ground_truth.mode) == (
            item.agent,
            item.step,
            item.mode,
        )
        assert validate.effective_label(item) == item.built


def test_accept_reject_relabel_and_counts(ds):
    a, b, c, d = validate.review_items(ds)[:4]
    validate.record(ds, a.id, "accept", reviewer="ana")
    validate.record(ds, b.id, "reject", reason="the injected step is not the decisive error")
    trace = load_trace(ds / c.ref)
    other = next(s for s in trace.steps if s.coord not in (None, c.step) and s.agent not in ("user", c.agent))
    entry = validate.record(
        ds, c.id, "relabel", reason="an earlier step already broke it", step=other.coord, mode="R.2"
    )
    assert entry.label.step == other.coord and entry.label.agent == other.agent and entry.label.mode == "R.2"
    assert entry.original == c.built and entry.status == "relabelled"
    # a later decision replaces an earlier one; the history stays in the file
    validate.record(ds, d.id, "reject", reason="unsure")
    validate.record(ds, d.id, "accept", reason="on second look it is right")
    items = {i.id: i for i in validate.review_items(ds)}
    assert [items[x.id].status for x in (a, b, c, d)] == ["accepted", "rejected", "relabelled", "accepted"]
    assert validate.effective_label(items[b.id]) is None
    assert validate.effective_label(items[c.id]).mode == "R.2"
    counts = validate.validation_counts(ds)
    total = len(items)
    assert counts["total"] == total and counts["decisions"] == 5
    assert (counts["accepted"], counts["rejected"], counts["relabelled"], counts["pending"]) == (2, 1, 1, total - 4)
    assert counts["relabelled_fields"] == {
        "agent": int(other.agent != c.agent),
        "step": 1,
        "mode": int(c.mode != "R.2"),
    }
    assert sum(counts["validated_modes"].values()) == total - 1 and counts["validated_modes"]["R.2"] >= 1
    assert sum(sum(row.values()) for row in counts["by_mode"].values()) == total
    # the manifest shows fresh counts on read, and on disk after --revalidate
    assert read_manifest(ds)["validation"] == counts
    on_disk = json.loads((ds / "manifest.json").read_text())["validation"]
    assert on_disk["pending"] == total
    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "build", "--out", str(ds), "--revalidate"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    assert f"{total} traces: 2 accepted, 1 rejected, 1 relabelled, {total - 4} pending" in out.stdout
    assert json.loads((ds / "manifest.json").read_text())["validation"]["accepted"] == 2


def test_bad_decisions_are_refused_with_what_was_expected(ds):
    item = validate.review_items(ds)[0]
    cases = [
        (dict(trace_id="nope", verdict="accept"), "no trace 'nope'"),
        (dict(trace_id=item.id, verdict="maybe"), "unknown verdict"),
        (dict(trace_id=item.id, verdict="reject"), "needs a reason"),
        (
            dict(trace_id=item.id, verdict="relabel", reason="x"),
            r"needs a new label \(expected a new agent, step or mode\)",
        ),
        (dict(trace_id=item.id, verdict="relabel", reason="x", mode="Z.9"), "unknown failure mode"),
        (dict(trace_id=item.id, verdict="relabel", reason="x", step="999"), "no step '999'"),
        (dict(trace_id=item.id, verdict="relabel", reason="x", agent="ghost"), "no agent 'ghost'"),
        (dict(trace_id=item.id, verdict="relabel", reason="x", mode=item.mode), "changes nothing"),
        (dict(trace_id=item.id, verdict="accept", mode="R.2"), "are for relabel"),
    ]
    for kw, message in cases:
        with pytest.raises(ConfigError, match=message):
            validate.record(ds, **kw)
    assert not (ds / validate.VALIDATION_FILE).exists()


def test_reasons_are_plain_text_and_torn_lines_are_survived(ds):
    a, b = validate.review_items(ds)[:2]
    entry = validate.record(ds, a.id, "reject", reason="bad\x1b[2J step\n\tignored  " + "x" * 5000)
    assert "\x1b" not in entry.reason and "\n" not in entry.reason and len(entry.reason) == validate.MAX_REASON
    log = ds / validate.VALIDATION_FILE
    with log.open("ab") as fh:  # a writer killed mid-line
        fh.write(b'{"format":"whenpro.validation/1","trace_id":"' + b.id.encode())
    assert [e.trace_id for e in validate.read_validations(ds)] == [a.id]
    validate.record(ds, b.id, "accept")
    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b"" and [json.loads(x)["trace_id"] for x in lines[:-1]] == [a.id, b.id]


def test_concurrent_recorders_never_interleave(ds):
    items = validate.review_items(ds)

    def reviewer(name: str) -> None:
        for n in range(40):
            validate.record(ds, items[n % len(items)].id, "reject", reason=f"{name} {n} " + "y" * 300)

    threads = [threading.Thread(target=reviewer, args=(f"r{k}",)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(validate.read_validations(ds)) == 120
    assert validate.validation_counts(ds)["rejected"] == len(items)


def test_validation_log_and_manifest_are_not_listed_as_traces(ds):
    validate.record(ds, validate.review_items(ds)[0].id, "accept")
    rows = list(walk(ds))
    assert rows and not [r for r in rows if r.error]
    assert {r.id for r in rows} == {i.id for i in validate.review_items(ds)}
