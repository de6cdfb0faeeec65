"""``whenpro watch --protocol counterfactual`` (issue 32, item 3): where the run is
replayable (a built-in system's run carrying its environment), the run is judged live by
the heuristic and, when it ends, the counterfactual search corrects and replays its steps
offline as ``attribute`` does; the step whose correction makes the run succeed is the final
verdict and a flagged decisive error (exit 1). A run that cannot be replayed says why in
one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from test_replay import run_inject, seed_run
from tests.support.live_writer import dump_lines
from tests.support.waiting import TIMEOUT_S
from whenpro_core.trace.model import Trace


def _failed_run() -> Trace:
    """A failed run of the arith team (the planner's step 1 went wrong), as an agent would
    write it: its environment block kept, no label (no ground truth, no injection record)."""
    cf = run_inject(seed_run("arith_team", 3), 1, "PL.1").counterfactual
    extras = {k: v for k, v in cf.extras.items() if k == "env"}
    assert extras, "a built-in run carries its env block"
    return cf.model_copy(update={"ground_truth": None, "extras": extras, "annotations": []})


def _write_lines(trace: Trace, path: Path) -> Path:
    header = trace.model_dump(mode="json", exclude={"steps", "source"}, exclude_none=True)
    header["format"] = "whenpro.trace/1"
    steps = [s.model_dump(mode="json", exclude={"raw"}) for s in trace.steps]
    path.write_bytes(b"".join(dump_lines([header, *steps])))
    return path


def _watch(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "watch", str(path), "--idle-timeout", "2", *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S * 4,
    )


def test_watch_replays_a_replayable_run_when_it_ends(tmp_path: Path) -> None:
    path = _write_lines(_failed_run(), tmp_path / "run.jsonl")
    out = _watch(path, "--protocol", "counterfactual")
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "final verdict (counterfactual): step 1 [planner]" in out.stdout, out.stdout
    assert "corrected and replayed: fixed" in out.stdout  # the replay that confirmed it
    as_json = _watch(path, "--protocol", "counterfactual", "--json")
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    final = [r for r in records if r["event"] == "final_verdict"]
    assert len(final) == 1 and final[0]["attribution"]["protocol"] == "counterfactual"
    assert final[0]["attribution"]["step"] == "1" and as_json.returncode == 1


def test_a_run_that_cannot_be_replayed_says_why(tmp_path: Path) -> None:
    run = _failed_run()
    foreign = run.model_copy(update={"framework": "custom", "extras": {}})
    path = _write_lines(foreign, tmp_path / "run.jsonl")
    out = _watch(path, "--protocol", "counterfactual")
    assert "judge failed: counterfactual final pass skipped: " in out.stdout, out.stdout
    assert "cannot replay this trace offline: it is not a run of a built-in system" in out.stdout
    failed = next(line for line in out.stdout.splitlines() if "judge failed" in line)
    assert failed.endswith(")") and "…" not in failed  # the whole reason, its advice included
    assert "final verdict (counterfactual)" not in out.stdout
