"""``whenpro convert IN OUT --to atif`` (issue 17, item 3): any trace whenpro reads is written
as a Harbor ATIF trajectory that validates against the published schema
(tests/fixtures/atif, generated from Harbor's own models) and the rules the models add,
and reads back with the same steps, agents, tool calls and observations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import REAL_TRACES, REPO, team_trace
from whenpro_core.formats import load_trace
from whenpro_core.formats.atif_write import trace_to_atif, write_atif
from whenpro_core.trace.model import Trace

SCHEMA = json.loads((REPO / "tests" / "fixtures" / "atif" / "trajectory.schema.json").read_text(encoding="utf-8"))
AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")
REFS = [
    "claude-code/VibeCodingTracker/claude_code.jsonl",
    "claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "claude-code/spotter/subagent.jsonl",
    "codex-cli/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    "codex-cli/VibeCodingTracker/codex.jsonl",
    "gemini-cli/VibeCodingTracker/gemini.jsonl",
    "gemini-cli/codemie-code/session-2025-12-01T21-45-5b959dae.json",
    "harbor-atif/harbor/hello-world.trajectory.json",
    "harbor-atif/harbor/hello-world-context-summarization.trajectory.json",
    "langsmith/langsmith-sdk/langsmith_py_wrap_openai_reasoning.json",
    "openhands-trajectories/tests/runtime/trajs/basic_interactions.json",
    "swe-agent-traj/trajectories/demonstrations/ctf/misc/networking_1.traj",
    "inspect-ai-logs/tests/log/test_eval_log/log_images.json",
    "mast-lint-ag2-dogfood/batch1/raw_ag2_records.json#rate-limiter",
]


def check_atif(doc: dict) -> None:
    """The published schema, plus the rules Harbor's models check in code."""
    jsonschema.validate(doc, SCHEMA)
    for i, step in enumerate(doc["steps"]):
        assert step["step_id"] == i + 1
        if step["source"] != "agent":
            assert not [f for f in AGENT_ONLY if step.get(f) is not None], step
        ids = {c["tool_call_id"] for c in step.get("tool_calls") or []}
        for result in (step.get("observation") or {}).get("results", []):
            assert result.get("source_call_id") in (None, *ids)


def shape(trace: Trace) -> list[tuple]:
    return [
        (
            s.agent,
            s.kind,
            s.coord,
            s.content,
            s.observation,
            s.error,
            [(c.id, c.name, c.arguments) for c in s.tool_calls],
            s.meta.get("reasoning"),
        )
        for s in trace.steps
    ]


def round_trip(trace: Trace, tmp_path: Path) -> Trace:
    path = write_atif(trace, tmp_path / f"{len(list(tmp_path.iterdir()))}.trajectory.json")
    check_atif(json.loads(path.read_text(encoding="utf-8")))
    back = load_trace(path)
    assert back.source.format == "atif"
    return back


@pytest.mark.real_traces
@pytest.mark.parametrize("ref", REFS)
def test_real_traces_export_valid_atif_and_read_back(real_traces: Path, ref: str, tmp_path: Path) -> None:
    trace = load_trace(f"{real_traces}/{ref}")
    back = round_trip(trace, tmp_path)
    # ids of calls the source did not name are made up on export (ATIF needs one)
    assert [(a, k, c, t, o, e, [(n, g) for _, n, g in calls], r) for a, k, c, t, o, e, calls, r in shape(back)] == [
        (a, k, c, t, o, e, [(n, g) for _, n, g in calls], r) for a, k, c, t, o, e, calls, r in shape(trace)
    ]
    assert [a.id for a in back.agents] == [a.id for a in trace.agents]
    assert back.id == trace.id and back.final_answer == trace.final_answer and back.outcome == trace.outcome
    assert back.task == trace.task and back.framework == trace.framework


def test_made_up_team_trace_round_trips_with_labels(tmp_path: Path) -> None:
    trace = team_trace()
    back = round_trip(trace, tmp_path)
    assert shape(back) == shape(trace)
    assert back.ground_truth == trace.ground_truth
    doc = trace_to_atif(trace)
    assert "hidden" not in json.dumps(doc["steps"])  # injection markers never leave


@pytest.mark.real_traces
def test_convert_to_atif_on_the_command_line(real_traces: Path, tmp_path: Path) -> None:
    out = tmp_path / "codex.trajectory.json"
    src = real_traces / REFS[4]
    done = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "convert", str(src), str(out), "--to", "atif"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    check_atif(doc)
    assert len(doc["steps"]) == len(load_trace(src).steps)
    assert sum(len(s.get("tool_calls") or []) for s in doc["steps"]) == sum(
        len(s.tool_calls) for s in load_trace(src).steps
    )
    bad = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "convert", str(src), str(out), "--to", "yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "unknown output format 'yaml'" in bad.stderr


def test_the_schema_rejects_what_harbor_rejects() -> None:
    doc = trace_to_atif(team_trace())
    doc["steps"][0]["source"] = "tool"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)


assert REAL_TRACES  # the fixture module is importable without the real traces


@pytest.mark.parametrize(
    "sample", ["bar_chart/trace.json", "video_scene_qa/trace.json", "arith_team/arith_team-s0__R.3__2.json"]
)
def test_images_frames_and_annotations_read_back_from_atif(sample: str, tmp_path: Path) -> None:
    """``convert --to atif`` then back: every step's images and video frames (in
    ``extra.whenpro.media``) and the trace's annotations are the same, and the file is
    still valid ATIF."""
    src = REPO / "sample_traces" / sample
    out = tmp_path / "out.atif"
    done = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "convert", str(src), str(out), "--to", "atif"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    check_atif(json.loads(out.read_text(encoding="utf-8")))
    trace, back = load_trace(src), load_trace(out)
    assert [[m.model_dump() for m in s.media] for s in back.steps] == [
        [m.model_dump() for m in s.media] for s in trace.steps
    ]
    assert back.annotations == trace.annotations
    assert any(s.media for s in trace.steps) or trace.annotations  # the sample has something to keep
