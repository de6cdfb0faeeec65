"""Live attribution (whenpro_core.live.judge_live) and the `whenpro watch` / `whenpro
serve` commands: a background thread writes a run step by step while the judge works;
heuristic offline, step-by-step through the real openai SDK against the local LLM test
server with scripted (oracle) answers; budgets, failures, the final pass, the OTLP path
and exit statuses."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import REPO, SAMPLES
from tests.support.fixtures import TEST_KEY
from tests.support.judge_oracle import oracle_for
from tests.support.live_writer import LineWriter, dump_lines
from tests.support.llm_server import Fault
from tests.support.waiting import TIMEOUT_S, wait_until
from whenpro_core.attribution.llm_judge import make_judge
from whenpro_core.attribution.run import attribute
from whenpro_core.attribution.step_by_step import judged_blocks
from whenpro_core.errors import ConfigError
from whenpro_core.formats import load_trace
from whenpro_core.live.builders import SpanSet
from whenpro_core.live.events import (
    BudgetExhausted,
    DecisiveError,
    FinalVerdict,
    JudgeFailed,
    RunEnded,
    StepAdded,
    StepJudged,
    Suspect,
    event_record,
)
from whenpro_core.live.follow import FileFollower
from whenpro_core.live.judge_live import Budget, LiveJudge, run_end_reason
from whenpro_core.live.session import attribute_live
from whenpro_core.views.transcript import render_transcript

TEAM = SAMPLES / "team_text" / "trace.json"


def native_lines(trace, *, header_extra: dict | None = None) -> list[bytes]:
    """The run as an agent would write it live: a header, then one step a line."""
    header = {
        "format": "whenpro.trace/1",
        "id": trace.id,
        "framework": trace.framework,
        "task": trace.task.model_dump(mode="json"),
        "agents": [a.model_dump() for a in trace.agents],
        **(header_extra or {}),
    }
    return dump_lines([header, *(s.model_dump(mode="json", exclude={"index", "raw"}) for s in trace.steps)])


#: Seconds without a new step that end a followed run here: longer than any stall of the
#: writer thread on a loaded machine (5 s was not, at load 15 on 2 cores), so a run never
#: ends before its last line is written. Only runs without an end marker wait it out.
IDLE_S = 15.0


async def live_events(path, judge: LiveJudge, lines: list[bytes], *, split=(2, 4)) -> list:
    writer = LineWriter(path, lines, delay=0.03, split=split)
    writer.start()
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=False)
    events = []

    async def go():
        async for ev in attribute_live(follower, judge, idle_timeout=IDLE_S):
            events.append(ev)

    await asyncio.wait_for(go(), TIMEOUT_S)
    writer.join()
    return events


def of(events, cls) -> list:
    return [e for e in events if isinstance(e, cls)]


# ---------------------------------------------------------------------- heuristic


async def test_heuristic_suspects_and_flags_the_decisive_step_as_the_run_streams_in(tmp_path):
    sample = load_trace(TEAM)
    events = await live_events(tmp_path / "run.jsonl", LiveJudge("heuristic"), native_lines(sample))
    assert [e.step.coord for e in of(events, StepAdded)] == [s.coord for s in sample.steps]
    suspects, decisive = of(events, Suspect), of(events, DecisiveError)
    assert suspects and suspects[-1].step == "3" and suspects[-1].mode == "R.3"
    assert len(decisive) == 1 and (decisive[0].step, decisive[0].agent, decisive[0].mode) == ("3", "solver", "R.3")
    # flagged while the run was still going: before the final answer step arrived
    order = [type(e).__name__ + (f":{e.step.coord}" if isinstance(e, StepAdded) else "") for e in events]
    assert order.index("DecisiveError") < order.index("StepAdded:6")
    assert of(events, RunEnded)[0].reason == "final_answer"


async def test_a_clean_run_gets_no_decisive_error(tmp_path):
    clean = load_trace(SAMPLES / "arith_team" / "arith_team-s1.json")
    events = await live_events(tmp_path / "run.jsonl", LiveJudge("heuristic"), native_lines(clean))
    assert not of(events, DecisiveError)
    assert of(events, Suspect)  # suspicions along the way, none strong enough at its step
    assert of(events, RunEnded)[0].reason == "final_answer"


# ---------------------------------------------------------------------- step-by-step


async def test_step_by_step_live_asks_each_new_step_once_with_the_offline_prompts(tmp_path, llm_server, llm_settings):
    sample = load_trace(TEAM)
    llm_server.respond_with(oracle_for(sample))
    batch_judge = make_judge("openai:gpt-4.1", settings=llm_settings(), use_cache=False)
    batch = await attribute(sample, "step-by-step", judge=batch_judge)
    await batch_judge.aclose()
    batch_prompts = [r.prompt for r in llm_server.answered]
    llm_server.reset()
    llm_server.respond_with(oracle_for(sample))

    judge = make_judge("openai:gpt-4.1", settings=llm_settings(), use_cache=False)
    live = LiveJudge("step-by-step", judge=judge)
    events = await live_events(tmp_path / "run.jsonl", live, native_lines(sample))
    await judge.aclose()

    asked = [b.coord for b in judged_blocks(sample, render_transcript(sample))]
    judged = of(events, StepJudged)
    assert [e.step for e in judged] == asked[: asked.index("3") + 1]
    assert [e.decisive for e in judged] == [False] * (len(judged) - 1) + [True]
    (decisive,) = of(events, DecisiveError)
    assert (decisive.step, decisive.agent, decisive.mode) == ("3", "solver", "R.3")
    assert (batch.step, batch.agent, batch.mode) == ("3", "solver", "R.3")
    live_prompts = [r.prompt for r in llm_server.answered]
    assert live_prompts == batch_prompts  # the same conversation as the offline protocol
    assert all(later.startswith(earlier[:-40]) for earlier, later in zip(live_prompts, live_prompts[1:], strict=False))
    assert live.usage.calls == len(judged) and live.usage.cached_tokens > 0  # the prefix cache served
    assert decisive.attribution.usage.calls == len(judged)


@pytest.mark.parametrize(
    "budget,limit", [(Budget(max_calls=2), "calls"), (Budget(max_usd=1e-9), "usd"), (Budget(max_tokens=10), "tokens")]
)
async def test_judging_stops_with_an_event_when_the_budget_is_spent(tmp_path, llm_server, llm_settings, budget, limit):
    sample = load_trace(TEAM)
    llm_server.respond_with(oracle_for(sample))
    judge = make_judge("openai:gpt-4.1", settings=llm_settings(), use_cache=False)
    live = LiveJudge("step-by-step", judge=judge, budget=budget)
    events = await live_events(tmp_path / "run.jsonl", live, native_lines(sample))
    await judge.aclose()
    (spent,) = of(events, BudgetExhausted)
    assert spent.limit == limit and not of(events, DecisiveError)
    calls = 2 if limit == "calls" else 1
    assert len(of(events, StepJudged)) == calls == len(llm_server.answered) == spent.usage.calls
    assert of(events, RunEnded)  # following goes on to the end of the run


async def test_the_final_pass_judges_the_whole_run(tmp_path, llm_server, llm_settings):
    sample = load_trace(TEAM)
    llm_server.respond_with(oracle_for(sample))
    judge = make_judge("openai:gpt-4.1", settings=llm_settings(), use_cache=False)
    live = LiveJudge("heuristic", judge=judge, final_pass=True)
    events = await live_events(tmp_path / "run.jsonl", live, native_lines(sample))
    await judge.aclose()
    (final,) = of(events, FinalVerdict)
    assert final.attribution.protocol == "all-at-once"
    assert (final.attribution.step, final.attribution.agent, final.attribution.mode) == ("3", "solver", "R.3")
    assert type(events[-1]) is FinalVerdict and type(events[-2]) is RunEnded
    assert live.usage.calls == 1 == len(llm_server.answered)


async def test_a_failing_backend_is_an_event_not_a_crash(tmp_path, llm_server, llm_settings):
    sample = load_trace(TEAM)
    llm_server.fail(*[Fault.http(500)] * 10)
    judge = make_judge("openai:gpt-4.1", settings=llm_settings(max_retries=1), use_cache=False)
    events = await live_events(tmp_path / "run.jsonl", LiveJudge("step-by-step", judge=judge), native_lines(sample))
    await judge.aclose()
    (failed,) = of(events, JudgeFailed)
    assert "500" in failed.message and TEST_KEY not in failed.message
    assert len(of(events, StepAdded)) == len(sample.steps) and of(events, RunEnded)


async def test_late_spans_restart_the_conversation_without_asking_again(llm_server, llm_settings):
    fixture = REPO / "tests" / "fixtures" / "otel" / "genai_current.json"
    full = load_trace(fixture)
    spans = SpanSet.from_trace(full)
    root = next(s for s in spans.spans.values() if s.parent_span_id is None)
    # a model span arrives late (after the steps that follow it) and the root agent span,
    # which frames the steps and ends last, with it
    late = next(s for s in sorted(spans.spans.values(), key=lambda s: s.start_ns) if s.name.startswith("chat"))
    early = SpanSet(full.id)
    early.add(s for s in spans.spans.values() if s is not root and s is not late)
    from whenpro_core.formats.base import LoadContext

    ctx = LoadContext(path=fixture)
    before, after = early.build(ctx), spans.build(ctx)
    assert run_end_reason(before) is None and run_end_reason(after) == "root_span_ended"
    llm_server.respond_with(lambda body: "Decisive: No\nError Mode: None\nReason: fine")
    judge = make_judge("openai:gpt-4.1", settings=llm_settings(), use_cache=False)
    live = LiveJudge("step-by-step", judge=judge)
    first = [e async for e in live.update(before)]
    second = [e async for e in live.update(after)]
    await judge.aclose()
    asked_first = {before.steps[e.index].meta["span_id"] for e in first}
    asked_second = {after.steps[e.index].meta["span_id"] for e in second}
    assert asked_first and not asked_first & asked_second  # nothing asked twice
    assert asked_second == {late.span_id}
    assert "I will check the weather." in llm_server.answered[-1].prompt  # the new conversation shows it
    assert "planner" in llm_server.answered[-1].prompt  # and the agent its frame gave the steps


async def test_a_decisive_verdict_waits_for_the_agent_span_that_frames_its_step(tmp_path):
    """OpenTelemetry parents end, and are exported, after their children: until the
    planner's invoke_agent span arrives its steps are the service's. A decisive verdict
    then would name the service (it did when a loaded machine split the exports); it
    waits for the frame and names the planner."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.support.otel_agent import run_workshop_agent
    from whenpro_core.live.otlp_server import OtlpReceiver
    from whenpro_core.live.store import LiveStore

    mem = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "workshop-agent"}))
    tp.add_span_processor(SimpleSpanProcessor(mem))
    trace_id = run_workshop_agent(tp)
    spans = mem.get_finished_spans()
    root = [s for s in spans if s.parent is None]
    live = LiveJudge("heuristic")
    with OtlpReceiver(LiveStore(tmp_path), "127.0.0.1", 0) as rx:
        exporter = OTLPSpanExporter(endpoint=rx.endpoint, timeout=TIMEOUT_S)
        assert exporter.export([s for s in spans if s.parent is not None]).name == "SUCCESS"
        rx.store.flush()  # the written version, as the live judge reads it
        before = rx.store.trace(trace_id)
        first = [e async for e in live.update(before)]
        assert exporter.export(root).name == "SUCCESS"
        rx.store.flush()
        after = rx.store.trace(trace_id)
        second = [e async for e in live.update(after)]
        exporter.shutdown()
    assert {s.agent for s in before.steps} == {"workshop-agent"}  # no frame yet: the service's
    assert of(first, Suspect) and not of(first, DecisiveError)
    (decisive,) = of(second, DecisiveError)
    assert (decisive.step, decisive.agent, decisive.mode) == ("2", "planner", "R.3")


def test_live_judging_needs_a_live_protocol_and_a_model():
    with pytest.raises(ConfigError):
        LiveJudge("all-at-once")
    with pytest.raises(ConfigError, match="model"):
        LiveJudge("step-by-step")


# ---------------------------------------------------------------------- the commands


def whenpro(*args, env=None, timeout=TIMEOUT_S):
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def spawn(*args, env=None):
    return subprocess.Popen(
        [sys.executable, "-m", "whenpro_core.cli", *args],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def test_watch_a_file_being_written_exits_1_on_a_decisive_error(tmp_path):
    path = tmp_path / "run.jsonl"
    proc = spawn("watch", str(path), "--idle-timeout", "5")
    writer = LineWriter(path, native_lines(load_trace(TEAM)), delay=0.05, split=[3], start_delay=0.5)
    writer.start()
    out, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 1, err
    lines = out.splitlines()
    assert any(line.startswith("DECISIVE ERROR step 3 [solver] R.3") for line in lines)
    assert lines[-1] == "run ended (final_answer) after 7 steps"


def test_watch_json_lines_and_exit_0_for_a_clean_run(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(native_lines(load_trace(SAMPLES / "arith_team" / "arith_team-s1.json"))))
    out = whenpro("watch", str(path), "--json", "--steps", "--idle-timeout", "3")
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [r["event"] for r in records]
    assert kinds.count("step_added") == 8 and kinds[-1] == "run_ended" and "decisive_error" not in kinds
    assert records[0]["trace_id"] == "arith_team-s1"


def test_watch_step_by_step_through_the_openai_sdk_with_a_budget(tmp_path, llm_server):
    sample = load_trace(TEAM)
    llm_server.respond_with(oracle_for(sample))
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(native_lines(sample)))
    env = {**os.environ, "OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": llm_server.openai_base_url}
    spent = whenpro(
        "watch",
        str(path),
        "--model",
        "openai:gpt-4.1",
        "--budget-calls",
        "1",
        "--idle-timeout",
        "3",
        "--no-cache",
        env=env,
    )
    assert spent.returncode == 0, spent.stderr
    assert "budget exhausted (calls): 1 calls" in spent.stdout and "DECISIVE" not in spent.stdout
    found = whenpro("watch", str(path), "--model", "openai:gpt-4.1", "--idle-timeout", "3", "--no-cache", env=env)
    assert found.returncode == 1, found.stderr
    assert "judged step 1 [planner]: no" in found.stdout
    assert "DECISIVE ERROR step 3 [solver] R.3 (step-by-step): oracle" in found.stdout
    assert TEST_KEY not in found.stdout + found.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["watch"],  # nothing to watch
        ["watch", "x.jsonl", "--otlp", "127.0.0.1:0"],  # both
        ["watch", "x.jsonl", "--protocol", "binary-search"],  # not a live protocol
        ["watch", "--otlp", "0.0.0.0:0"],  # remote without --allow-remote
        ["serve"],  # serve what?
    ],
)
def test_usage_errors_exit_2_with_one_line(args):
    out = whenpro(*args)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_watch_a_folder_exits_2(tmp_path):
    out = whenpro("watch", str(tmp_path))
    assert out.returncode == 2 and "folder" in out.stderr


def _endpoint(proc) -> str:
    line = proc.stderr.readline()
    assert "receiving OTLP traces at" in line, line
    return line.split(" at ")[1].split()[0]


def test_watch_otlp_judges_an_instrumented_agent_and_exits_by_itself(tmp_path):
    from tests.support.otel_agent import provider, run_workshop_agent

    # exits 10 s after the last export: long enough that a loaded machine's first export
    # (after the endpoint is printed) is never taken for the end of all exports
    proc = spawn("watch", "--otlp", "127.0.0.1:0", "--idle-timeout", "10", "--json", "--store", str(tmp_path))
    try:
        endpoint = _endpoint(proc)
        tp = provider(endpoint, batch=True)
        trace_id = run_workshop_agent(tp)
        tp.shutdown()
        out, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    records = [json.loads(line) for line in out.splitlines()]
    kinds = [r["event"] for r in records]
    assert kinds[0] == "trace_started" and records[0]["trace_id"] == trace_id
    decisive = next(r for r in records if r["event"] == "decisive_error")
    assert decisive["mode"] == "R.3" and decisive["agent"] == "planner"
    assert next(r for r in records if r["event"] == "run_ended")["reason"] == "root_span_ended"
    assert (tmp_path / f"{trace_id}.json").exists()


def test_serve_otlp_stores_traces_until_stopped(tmp_path):
    from tests.support.otel_agent import provider, run_workshop_agent

    proc = spawn("serve", "--otlp", "127.0.0.1:0", "--store", str(tmp_path / "store"))
    try:
        endpoint = _endpoint(proc)
        tp = provider(endpoint)
        trace_id = run_workshop_agent(tp, wrong=False)
        tp.shutdown()
        wait_until((tmp_path / "store" / f"{trace_id}.json").exists, "the stored trace")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "trace started (service workshop-agent)" in out
    stored = load_trace(tmp_path / "store" / f"{trace_id}.json")
    assert len(stored.steps) == 5 and stored.steps[-1].content == "The workshop ends at 11:55."
    assert {s.agent for s in stored.steps} == {"planner"}  # framed by its invoke_agent span


def test_serve_prints_the_event_in_hand_when_sigterm_comes(tmp_path, monkeypatch, capsys):
    """SIGTERM while ``serve`` holds an event (taken from its queue, not yet printed) must not
    lose it: the test above sends SIGTERM as soon as the trace file exists, which is when
    the store announces the trace, so the signal often lands just as ``trace started`` is
    being printed. Here the signal comes at exactly that moment, every time."""
    from whenpro_core.cli import watch
    from whenpro_core.live.events import TraceStarted

    real_open = watch.open_receiver

    def open_receiver(*args, **kwargs):
        receiver = real_open(*args, **kwargs)
        real_subscribe = receiver.store.subscribe

        def subscribe():
            sub = real_subscribe()
            receiver.store.bus.publish(TraceStarted("ab" * 16, str(tmp_path / "t.json"), "svc", 1))
            return sub

        monkeypatch.setattr(receiver.store, "subscribe", subscribe)
        return receiver

    class SignalledPrinter(watch.Printer):
        def __call__(self, ev):
            if isinstance(ev, TraceStarted):
                signal.raise_signal(signal.SIGTERM)  # Ctrl-C / SIGTERM with the event in hand
            super().__call__(ev)

    monkeypatch.setattr(watch, "open_receiver", open_receiver)
    monkeypatch.setattr(watch, "Printer", SignalledPrinter)
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    watch.serve_command(
        "127.0.0.1:0", store=tmp_path / "store", allow_remote=False, max_traces=8, as_json=False, quiet=False
    )
    assert "trace started (service svc)" in capsys.readouterr().out
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before  # handlers put back


def test_event_records_are_json():
    sample = load_trace(TEAM)
    rec = event_record(StepAdded(sample.id, sample.steps[3]))
    assert rec["event"] == "step_added" and rec["step"]["coord"] == "3" and rec["step"]["tool_calls"] == ["calculator"]
    json.dumps(rec)


@pytest.mark.real_traces
@pytest.mark.parametrize("name", ["1.json", "10.json"])
async def test_on_a_real_group_chat_the_last_suspect_is_the_offline_verdict(tmp_path, real_traces, name):
    from whenpro_core.attribution.heuristic import attribute_heuristic

    src = json.loads((real_traces / "who-and-when/Who&When/Algorithm-Generated" / name).read_text())
    messages = [{k: v for k, v in m.items() if k in ("role", "content", "name")} for m in src["history"]]
    path = tmp_path / "ag2.jsonl"
    events = await live_events(path, LiveJudge("heuristic"), dump_lines(messages), split=[1])
    offline = attribute_heuristic(load_trace(path))
    last = of(events, Suspect)[-1]
    assert (last.step, last.agent, last.mode) == (offline.step, offline.agent, offline.mode)
    assert of(events, RunEnded)[0].reason == "idle"  # chat lines carry no end marker
