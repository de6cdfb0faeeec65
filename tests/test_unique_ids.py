"""Trace ids are distinct within a dataset, so ``whenpro convert`` (one ``<id>.json`` per
trace), bench records and the TUI never mix two traces up: SWE-agent runs of the same
task in several run folders, the same Inspect sample in several logs. Ids that were
already unique stay as they were (Who&When, Who&When Pro)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from whenpro_core.formats import load_trace, walk
from whenpro_core.library.summary import convert

REAL_FOLDERS = [
    "agentrx",
    "inspect-ai-logs",
    "mast-lint-ag2-dogfood",
    "mast-mad-sample",
    "openhands-trajectories",
    "swe-agent-traj",
    "who-and-when",
    "who-when-pro-jsonl",
    "who-when-pro-samples",
]

SWE = {
    "environment": "swe_main",
    "trajectory": [{"thought": "t", "action": "ls", "observation": "o"}],
    "history": [
        {"role": "system", "content": "sys", "agent": "primary"},
        {"role": "user", "content": "fix the bug", "agent": "primary"},
        {"role": "assistant", "content": "t", "agent": "primary"},
    ],
    "info": {"exit_status": "submitted"},
}


def _write(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("folder", REAL_FOLDERS)
def test_walking_a_real_folder_gives_unique_ids(real_traces, folder):
    if not (real_traces / folder).is_dir():
        pytest.skip(f"{folder} not present")
    rows = [r for r in walk(real_traces / folder) if r.error is None]
    dups = {i: n for i, n in Counter(r.id for r in rows).items() if n > 1}
    assert rows and not dups
    for row in rows[:40]:  # listing ids are the loaded traces' ids
        ref = f"{row.path}#{row.key}" if row.key else row.path
        assert load_trace(ref).id == row.id


def test_who_and_when_ids_do_not_change(whowhen, real_traces):
    assert load_trace(whowhen / "Hand-Crafted" / "1.json").id == "whowhen-hc-1"
    sample = real_traces / "who-when-pro-samples" / "data" / "traces" / "macnet_triangle.json"
    if sample.exists():
        assert load_trace(sample).id == json.loads(sample.read_text())["id"]


def test_swe_agent_runs_of_the_same_task_get_the_run_folder_in_their_id(tmp_path):
    a = _write(tmp_path / "runs" / "gpt4__default" / "astropy-1.traj", SWE)
    b = _write(tmp_path / "runs" / "gpt4__t-0.2" / "astropy-1.traj", SWE)
    only = _write(tmp_path / "runs" / "gpt4__default" / "django-2.traj", SWE)
    assert load_trace(a).id == "swe-agent-astropy-1@gpt4__default"
    assert load_trace(b).id == "swe-agent-astropy-1@gpt4__t-0.2"
    assert load_trace(only).id == "swe-agent-django-2"  # its name does not repeat: unchanged
    ids = [r.id for r in walk(tmp_path / "runs")]
    assert sorted(ids) == sorted({*ids}) and len(ids) == 3


def test_swe_agent_1x_layout_run_instance_instance_traj(tmp_path):
    """SWE-agent 1.x writes ``<run>/<instance>/<instance>.traj``: the run folder is one
    level further up."""
    a = _write(tmp_path / "trajectories" / "run-a" / "x__y-1" / "x__y-1.traj", SWE)
    b = _write(tmp_path / "trajectories" / "run-b" / "x__y-1" / "x__y-1.traj", SWE)
    assert (load_trace(a).id, load_trace(b).id) == ("swe-agent-x__y-1@run-a", "swe-agent-x__y-1@run-b")


def test_inspect_ids_name_the_log(real_traces):
    logs = real_traces / "inspect-ai-logs" / "tests" / "log" / "test_eval_log"
    if not logs.is_dir():
        pytest.skip("Inspect logs not present")
    as_json = load_trace(f"{logs / 'log_formats.json'}#1_epoch_1")
    as_eval = load_trace(f"{logs / 'log_formats.eval'}#1_epoch_1")
    assert as_json.id != as_eval.id
    assert as_json.id.startswith("inspect-popularity-1-e1") and "log_formats" in as_json.id


@pytest.mark.parametrize("folder, count", [("swe-agent-traj", 9), ("inspect-ai-logs", 23)])
def test_convert_keeps_every_trace(real_traces, tmp_path, folder, count):
    if not (real_traces / folder).is_dir():
        pytest.skip(f"{folder} not present")
    written = convert(str(real_traces / folder), tmp_path / "out").written
    assert len(written) == len(set(written)) == count
    assert len(list((tmp_path / "out").glob("*.json"))) == count
