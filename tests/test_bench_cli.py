"""``whenpro bench`` and ``whenpro report`` run as a user runs them (subprocesses)."""

from __future__ import annotations

import os
import subprocess
import sys

from bench_data import LABELLED, write_dataset
from conftest import REPO
from tests.support.cli import one_line_error
from tests.support.waiting import wait_until
from whenpro_core.bench.records import read_records
from whenpro_core.formats.native import write_trace


def whenpro(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
    )


def test_bench_then_rerun_then_report(tmp_path):
    data = write_dataset(tmp_path)
    out = tmp_path / "res" / "r.jsonl"
    first = whenpro("bench", str(data), "--out", str(out), "-j", "2", "--where", "framework=smolagents|debate")
    assert first.returncode == 0, first.stderr
    assert "4 traces × 1 setting = 4 items; 0 already in" in first.stderr
    assert "Leaderboard" in first.stdout and "heuristic · gold" in first.stdout
    assert {"r.report.json", "r.report.md"} <= {p.name for p in out.parent.iterdir()}
    again = whenpro("bench", str(data), "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert f"{LABELLED + 1} items; 4 already in" in again.stderr
    keys = [r.key for r in read_records(out)[0]]
    assert len(keys) == len(set(keys)) == LABELLED + 1
    rep = whenpro("report", str(out), "--out", str(tmp_path / "rep"), "-k", "0")
    assert rep.returncode == 0, rep.stderr
    assert "stp±0" in rep.stdout and (tmp_path / "rep" / "r.report.md").exists()


def test_bad_dataset_path_is_one_line_exit_2(tmp_path):
    out = whenpro("bench", str(tmp_path / "no-such-folder"), "--out", str(tmp_path / "r.jsonl"))
    assert one_line_error(out) and "no such file or folder" in out.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_bad_options_are_one_line_exit_2(tmp_path):
    data = write_dataset(tmp_path)
    res = str(tmp_path / "r.jsonl")
    assert one_line_error(whenpro("bench", str(data), "--out", res, "--where", "colour=red"))
    assert one_line_error(whenpro("bench", str(data), "--out", res, "-p", "all-at-once"))
    assert one_line_error(whenpro("report", str(tmp_path / "missing.jsonl")))


def test_an_unusable_model_stops_the_run_with_one_line(tmp_path):
    """No API key and no reachable endpoint: the run stops before or at its first items
    with one error line (after the plan notes when the run had started), and the
    results file holds nothing that would block a rerun."""
    data = write_dataset(tmp_path)
    res = tmp_path / "r.jsonl"
    out = whenpro(
        "bench",
        str(data),
        "--out",
        str(res),
        "--model",
        "openai:gpt-4.1",
        "--where",
        "framework=debate|smolagents|whenpro-team",
        env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.splitlines()[-1].startswith("whenpro: error: ")
    if res.exists():
        assert all(r.error_kind == "backend" for r in read_records(res)[0])


def test_items_that_failed_on_the_backend_make_the_run_exit_2(tmp_path):
    """Fewer backend failures than stop the run (here 2): the run finishes, reports, and
    still exits 2 saying how many items failed and that a rerun retries them."""
    data = write_dataset(tmp_path)
    res = tmp_path / "r.jsonl"
    out = whenpro(
        "bench",
        str(data),
        "--out",
        str(res),
        "--model",
        "openai:gpt-4.1",
        "--limit",
        "2",
        "--no-report",
        env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-x", "WHENPRO_MAX_RETRIES": "0"},
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("whenpro: error: ") and "failed on the model backend" in last
    assert "retry" in last and len(read_records(res)[0]) == 2


def test_ctrl_c_says_it_is_stopping_and_exits_130(tmp_path):
    """ctrl+c mid-run: at once a line saying the items in flight finish first (a thread
    attributing a long trace cannot be stopped), then exit 130; a rerun resumes."""
    import signal

    import psutil

    from whenpro_core.trace.model import Agent, GroundTruth, Step, Trace

    agents = [Agent(id=a) for a in ("planner", "coder")]
    for i in range(2):  # long enough that the heuristic takes seconds
        steps = [
            Step(
                index=k,
                coord=str(k),
                agent=agents[k % 2].id,
                kind="assistant",
                content=f"Step {k}: computing 6 * 7 = 42 and checking it again. " * 20,
            )
            for k in range(6000)
        ]
        write_trace(
            Trace(
                id=f"long-{i}",
                agents=agents,
                steps=steps,
                ground_truth=GroundTruth(agent="coder", step="3", mode="R.3"),
            ),
            tmp_path / "ds" / f"long-{i}.json",
        )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "bench",
            str(tmp_path / "ds"),
            "--out",
            str(tmp_path / "r.jsonl"),
            "-j",
            "2",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    first = ""
    while "to run" not in first:  # "2 traces × 1 setting = 2 items; ... 2 to run"
        line = proc.stderr.readline()
        assert line, first
        first += line
    # both items are in their threads (the main thread + one worker thread per item)
    wait_until(lambda: psutil.Process(proc.pid).num_threads() >= 3, "the items' threads")
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "whenpro: stopping: letting the items in flight finish" in err
    assert err.rstrip().endswith("whenpro: interrupted") and "Traceback" not in err
