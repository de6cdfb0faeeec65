"""Every real trace folder of the new formats: the walk lists every trace with no error
rows (label and context files are skipped, not listed as broken traces), `whenpro info`
shows sensible agents and step counts, and the native round trip is lossless."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO
from whenpro_core.formats import load_trace, walk
from whenpro_core.formats.native import load_native, write_trace

#: folder -> (traces it lists, formats chosen by sniffing content)
FOLDERS = {
    "swe-agent-traj": (9, {"swe-agent"}),
    "openhands-trajectories": (6, {"openhands"}),
    "inspect-ai-logs": (23, {"inspect_ai"}),
    "mast-mad-sample": (3, {"mast"}),
    "mast-lint-ag2-dogfood": (24, {"mast"}),
    "agentrx": (57, {"agentrx-magentic", "tau-bench"}),
}


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_walk_lists_every_trace_without_error_rows(real_traces, folder):
    rows = list(walk(real_traces / folder))
    count, formats = FOLDERS[folder]
    assert [r.error for r in rows if r.error] == []
    assert len(rows) == count and {r.format for r in rows} == formats
    assert all(r.step_count and r.step_count > 0 for r in rows)


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_native_round_trip_is_lossless(real_traces, folder, tmp_path):
    for row in walk(real_traces / folder):
        trace = load_trace(row.ref())
        back = load_native(write_trace(trace, tmp_path / "t.json"))
        assert back.model_dump(exclude={"source"}) == trace.model_dump(exclude={"source"}), row.ref()


def _info(target) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "info", str(target)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize(
    "ref, agents, steps",
    [
        ("swe-agent-traj/trajectories/demonstrations/ctf/misc/networking_1.traj", "agent (4)", "6"),
        ("openhands-trajectories/tests/runtime/trajs/basic_interactions.json", "agent (3)", "6"),
        ("inspect-ai-logs/tests/log/test_eval_log/log_images.json", "assistant (1)", "3"),
        ("mast-mad-sample/records/MetaGPT_MMLU_trace16.json", "SimpleReviewer (2)", "6"),
        ("mast-lint-ag2-dogfood/batch1/raw_ag2_records.json#rate-limiter", "Planner (2), Coder (1), Tester (2)", "5"),
        ("agentrx/tau_retail/failed/task_2.json", "Assistant (15)", "32"),
        ("agentrx/magentic_one/trajectories/42576abe-0deb-4869-8c63-225c2d75a95a.json", "Orchestrator (", None),
    ],
)
def test_info_shows_agents_and_step_counts(real_traces, ref, agents, steps):
    out = _info(f"{real_traces}/{ref}")
    assert agents in out
    if steps is not None:
        assert any(line.split()[:2] == ["steps", steps] for line in out.splitlines()), out


def test_info_on_each_folder_counts_traces_and_frameworks(real_traces):
    out = _info(real_traces / "agentrx")
    assert "57 traces" in out and "magentic-one" in out and "tau-bench" in out and "failed" not in out
    out = _info(real_traces / "inspect-ai-logs")
    assert "23 traces" in out and "inspect_ai" in out
