"""Agent scoring on single-agent frameworks (docs/architecture.md, 'Formats and step coordinates' and 'Scoring'):
the plain Who&When-style
agent accuracy counts a prediction right only when it names an accepted agent (``agent``
for a single-agent framework); the official *Agent* metric leaves single-agent
frameworks out, which is not the same as counting them as correct.

A user saw a junk agent name scored ``agt 100.0`` on the image and video rows of a bench
report over the Who&When Pro samples (smolagents, eva)."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from tests.support.fixtures import TEST_KEY
from whenpro_core.bench.aggregate import aggregate
from whenpro_core.bench.records import build_record
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Attribution
from whenpro_core.trace.score import score_prediction

JUNK = "zz-junk-agent"


@pytest.fixture
def samples(real_traces):
    folder = real_traces / "who-when-pro-samples" / "data" / "traces"
    if not folder.is_dir():
        pytest.skip(f"Who&When Pro samples not present at {folder}")
    return {p.stem: load_trace(p) for p in sorted(folder.glob("*.json"))}


def _records(traces, agent_of):
    out = []
    for trace in traces:
        gt = trace.ground_truth
        pred = Attribution(agent=agent_of(trace), step=gt.step, mode=gt.mode, protocol="p", model="m")
        out.append(
            build_record(ref=trace.source.path, protocol="p", model="m", with_gold=True, trace=trace, prediction=pred)
        )
    return out


def test_a_junk_agent_is_wrong_on_single_agent_traces(samples):
    single = [t for t in samples.values() if t.is_single_agent]
    assert {t.framework for t in single} == {"smolagents", "eva"}
    for trace in single:
        gt = trace.ground_truth
        assert not score_prediction(trace, Attribution(agent=JUNK, step=gt.step, mode=gt.mode)).agent
        assert score_prediction(trace, Attribution(agent="Agent", step=gt.step, mode=gt.mode)).agent


def test_report_plain_agent_accuracy_counts_only_accepted_agents(samples):
    traces = list(samples.values())
    junk = aggregate(_records(traces, lambda t: JUNK)).groups[0]
    assert junk.cells["image"].agent is None and junk.cells["video"].agent is None  # left out
    assert junk.cells["image"].agent_acc == 0.0 and junk.cells["video"].agent_acc == 0.0
    assert junk.overall.agent_acc == 0.0
    right = aggregate(_records(traces, lambda t: "agent" if t.is_single_agent else t.ground_truth.agent))
    cells = right.groups[0].cells
    assert cells["image"].agent_acc == cells["video"].agent_acc == cells["text"].agent_acc == 1.0
    assert cells["text"].agent == 1.0 and cells["image"].agent is None


def test_bench_through_an_llm_judge_scores_a_junk_agent_as_wrong(
    samples, real_traces, tmp_path, llm_server, monkeypatch
):
    from whenpro_core.cli.bench import BenchOptions, bench_command

    llm_server.respond_with(lambda body: f"Agent Name: {JUNK}\nStep Number: 1\nError Mode: P.1\nReason: r")
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    out = tmp_path / "results.jsonl"
    report = bench_command(
        str(real_traces / "who-when-pro-samples" / "data" / "traces"),
        BenchOptions(models="openai:gpt-4.1", out=out),
        console=Console(file=io.StringIO()),
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["trace"]["framework"] for r in records} >= {"smolagents", "eva"}
    cells = report.groups[0].cells
    assert cells["image"].agent_acc == 0.0 and cells["video"].agent_acc == 0.0
