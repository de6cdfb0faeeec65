"""TraceElephant runs (``<system>-runs-*/<task>/step_records.json`` + ``trace_metadata.json``)
import with their labels, and ``bench`` runs on them offline end to end.

The two runs in tests/fixtures/traceelephant/ are written for whenpro from the fields the
benchmark's own loader reads (GitHub ``TraceElephant/TraceElephant``,
``code/trace_locate/lib/utils.py`` at commit 351703c; see the folder's README): its data on
Hugging Face is not reachable from here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.cli import one_line_error, run_whenpro
from whenpro_core.formats import load_trace, walk

SAMPLE = Path(__file__).parent / "fixtures" / "traceelephant"
MAGENTIC = SAMPLE / "magentic-runs-sample" / "assistantbench_7" / "step_records.json"
CAPTAIN = SAMPLE / "captain-runs-sample" / "gaia_12" / "step_records.json"


def test_a_run_imports_with_its_label_on_the_one_based_step() -> None:
    trace = load_trace(MAGENTIC)
    assert trace.id == "traceelephant-magentic-runs-sample-assistantbench_7"
    assert (trace.framework, trace.benchmark, trace.outcome.value) == ("magentic-one", "traceelephant", "failure")
    assert [s.coord for s in trace.steps] == ["1", "2", "3", "4", "5"]
    assert [s.agent for s in trace.steps] == ["Orchestrator", "WebSurfer", "WebSurfer", "Orchestrator", "Orchestrator"]
    gt = trace.ground_truth
    assert gt is not None and (gt.agent, gt.step, gt.step_index) == ("Orchestrator", "4", 3)
    assert trace.steps[3].content.startswith("Blink Fitness Avenue A offers classes")
    assert trace.task.answer == "CrossFit Alphabet City"
    assert trace.extras["tests_status"] == "failed"
    # the full input of each call is kept: its last message shown, the record as stored
    assert trace.steps[1].meta["input"].startswith("Next speaker: WebSurfer")
    assert trace.steps[1].raw["input"]["messages"][0]["role"] == "system"
    assert [c.name for c in trace.steps[1].tool_calls] == ["web_search"]
    assert trace.steps[0].meta["usage"]["prompt_tokens"] == 1050


def test_an_answer_stored_as_the_python_repr_of_the_completion() -> None:
    trace = load_trace(CAPTAIN)
    first, second = trace.steps[0], trace.steps[1]
    assert first.kind == "action" and first.content == ""
    assert [c.name for c in first.tool_calls] == ["seek_experts_help"]
    assert json.loads(str(first.tool_calls[0].arguments))["group_name"] == "Music_Discography_Experts"
    assert second.content.startswith("From the discography: Misa Criolla (2000), Corazón libre")
    assert "I'm counting" in second.content  # a quote inside a repr'd string is decoded
    assert trace.ground_truth is not None and trace.ground_truth.agent == "Music_Historian_Expert"
    assert trace.final_answer == "The answer is 4."


def test_a_walk_lists_the_runs_not_their_metadata_files() -> None:
    rows = list(walk(SAMPLE))
    assert sorted(r.id for r in rows) == [
        "traceelephant-captain-runs-sample-gaia_12",
        "traceelephant-magentic-runs-sample-assistantbench_7",
    ]
    assert all(r.error is None for r in rows)
    out = run_whenpro("info", str(MAGENTIC.with_name("trace_metadata.json")))
    assert out.returncode != 0 and one_line_error(out)
    assert "TraceElephant run's metadata" in out.stderr


def test_a_label_past_the_run_is_one_warning_and_no_step(tmp_path: Path) -> None:
    run = tmp_path / "magentic-runs-x" / "t1"
    shutil.copytree(MAGENTIC.parent, run)
    meta = json.loads((run / "trace_metadata.json").read_text(encoding="utf-8"))
    (run / "trace_metadata.json").write_text(json.dumps({**meta, "mistake_step": 9}), encoding="utf-8")
    trace = load_trace(run / "step_records.json")
    assert trace.ground_truth is not None and trace.ground_truth.step is None
    (note,) = trace.extras["whenpro_warnings"]
    assert "trace_metadata.json" in note and "$.mistake_step" in note and "step 9 is not one of the 5 steps" in note


def test_bench_runs_offline_on_the_runs_and_reports(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE, tmp_path / "te")
    results = tmp_path / "r.jsonl"
    out = run_whenpro("bench", str(tmp_path / "te"), "--out", str(results), timeout=600)
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2
    assert {r["trace"]["gt_agent"] for r in records} == {"Orchestrator", "Music_Historian_Expert"}
    report = json.loads(results.with_suffix(".report.json").read_text(encoding="utf-8"))
    assert report and "traceelephant" in json.dumps(report)
