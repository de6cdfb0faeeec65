"""Following a growing trace file (whenpro_core.live.follow): a background thread writes
lines the way a running agent does (with pauses, some lines in two halves) while the
follower runs; steps must appear in order, torn lines wait for their rest, truncation and
rotation are noticed, bad lines are reported and skipped. Each stream must end as the
same trace the file importer reads from the finished file."""

from __future__ import annotations

import asyncio
import json
import os

import orjson
import pytest

from conftest import REPO, SAMPLES
from tests.support.live_writer import LineWriter, dump_lines
from tests.support.waiting import TIMEOUT_S, wait_until
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace
from whenpro_core.live.events import HeaderUpdated, Idle, LineError, StepAdded, TraceReset
from whenpro_core.live.follow import FileFollower, watchfiles_available

BACKENDS = [
    "poll",
    pytest.param("watchfiles", marks=pytest.mark.skipif(not watchfiles_available(), reason="watchfiles not installed")),
]
OTEL = REPO / "tests" / "fixtures" / "otel"

CHAT = [
    {"role": "system", "content": "You are a careful assistant."},
    {"role": "user", "content": "What is 17 * 3?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "calc", "arguments": '{"expr": "17*3"}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "51"},
    {"role": "assistant", "content": "17 * 3 = 51. The answer is 51."},
]


async def run_until(follower: FileFollower, stop, timeout: float = TIMEOUT_S) -> list:
    """Collect the follower's events until ``stop(events)`` holds."""
    events: list = []
    gen = follower.events()

    async def go() -> None:
        async for ev in gen:
            events.append(ev)
            if stop(events):
                return

    try:
        await asyncio.wait_for(go(), timeout)
    finally:
        await gen.aclose()
        follower.close()
    return events


def steps_of(events: list) -> list:
    return [e.step for e in events if isinstance(e, StepAdded)]


def shown_steps(events: list) -> list:
    """The steps a viewer shows after ``events``: each reset drops the steps after its
    ``kept``, each StepAdded appends (and must land at the next index)."""
    shown: list = []
    for e in events:
        if isinstance(e, TraceReset):
            del shown[e.kept :]
        elif isinstance(e, StepAdded):
            assert e.step.index == len(shown)
            shown.append(e.step)
    return shown


def read_all(follower: FileFollower, lines: list[bytes]):
    """A stop condition: the follower has read every byte of ``lines`` (the whole file
    the writer makes), so its trace is final, and the events so far announce exactly
    that trace (the events of the last read are all in: a read's events are yielded one
    by one after it). Checked at each event; a last read that makes no event is
    followed by an Idle one."""
    size = sum(map(len, lines))
    return lambda events: follower.offset == size and shown_steps(events) == follower.trace().steps


def same_trace(a, b) -> bool:
    return a.model_dump(exclude={"source"}) == b.model_dump(exclude={"source"})


@pytest.mark.parametrize("backend", BACKENDS)
async def test_chat_lines_appear_in_order_while_written_with_torn_lines(tmp_path, backend):
    path = tmp_path / "run.jsonl"
    writer = LineWriter(path, dump_lines(CHAT), split=[1, 2, 4])  # the follower starts before the file exists
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=backend == "watchfiles")
    writer.start()
    events = await run_until(follower, lambda ev: len(steps_of(ev)) == len(CHAT))
    writer.join()
    steps = steps_of(events)
    assert [s.index for s in steps] == list(range(len(CHAT)))
    assert [s.kind for s in steps] == ["system", "user", "action", "tool", "assistant"]
    assert not [e for e in events if isinstance(e, (LineError, TraceReset))]
    assert follower.line_format == "chat"
    assert same_trace(follower.trace(), load_trace(path))


async def test_a_torn_last_line_waits_for_its_rest(tmp_path):
    path = tmp_path / "run.jsonl"
    line = orjson.dumps(CHAT[1]) + b"\n"
    path.write_bytes(orjson.dumps(CHAT[0]) + b"\n" + line[:12])
    follower = FileFollower(path, use_watchfiles=False)
    first = follower.poll()
    assert follower.offset == path.stat().st_size  # the torn half is read, and held
    assert [e.step.index for e in first if isinstance(e, StepAdded)] == [0]
    assert not [e for e in first if isinstance(e, LineError)]
    with path.open("ab") as fh:
        fh.write(line[12:-1])  # all but the newline: still not a complete line
    assert follower.poll() == []
    with path.open("ab") as fh:
        fh.write(b"\n")
    more = follower.poll()
    assert [e.step.content for e in more if isinstance(e, StepAdded)] == ["What is 17 * 3?"]
    follower.close()


async def test_native_lines_with_a_header_and_a_closing_header(tmp_path):
    sample = load_trace(SAMPLES / "team_text" / "trace.json")
    header = {
        "format": "whenpro.trace/1",
        "id": "live-run",
        "framework": sample.framework,
        "task": sample.task.model_dump(),
        "agents": [a.model_dump() for a in sample.agents],
    }
    steps = [s.model_dump(mode="json", exclude={"index"}) for s in sample.steps]
    lines = dump_lines([header, *steps, {"id": "live-run", "outcome": "failure", "final_answer": "11:45"}])
    path = tmp_path / "live.jsonl"
    writer = LineWriter(path, lines, split=[3])
    writer.start()
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=False)
    events = await run_until(
        follower, lambda ev: any(isinstance(e, HeaderUpdated) and "outcome" in e.fields for e in ev)
    )
    got = follower.trace()
    assert [s.coord for s in steps_of(events)] == [s.coord for s in sample.steps]
    assert got.id == "live-run" and got.outcome.value == "failure" and got.final_answer == "11:45"
    assert [s.content for s in got.steps] == [s.content for s in sample.steps]
    assert all(e.trace_id == "live-run" for e in events if isinstance(e, StepAdded))
    # once finished, the same file opens with every other command
    assert same_trace(load_trace(path), got)


async def test_a_labelled_header_does_not_end_a_followed_run(tmp_path):
    """A header with a ground truth but no outcome or final answer: the followed run is not
    over (a label never decides that a run failed: watch stopped at the header); the finished
    file still opens as the labelled failure it is."""
    from whenpro_core.live.judge_live import run_end_reason

    sample = load_trace(SAMPLES / "team_text" / "trace.json")
    header = {
        "format": "whenpro.trace/1",
        "id": "labelled-run",
        "framework": sample.framework,
        "task": sample.task.model_dump(),
        "agents": [a.model_dump() for a in sample.agents],
        "ground_truth": sample.ground_truth.model_dump(),
    }
    steps = [s.model_dump(mode="json", exclude={"index"}) for s in sample.steps if s.kind != "final_answer"][:3]
    path = tmp_path / "live.jsonl"
    path.write_bytes(b"".join(dump_lines([header, *steps])))
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=False)
    await run_until(follower, lambda ev: len(steps_of(ev)) == 3)
    assert follower.trace().outcome.value == "unknown" and run_end_reason(follower.trace()) is None
    assert load_trace(path).outcome.value == "failure"


async def test_otlp_lines_follow_one_trace_and_match_the_importer(tmp_path):
    lines = [line + b"\n" for line in (OTEL / "genai_events.jsonl").read_bytes().splitlines() if line.strip()]
    path = tmp_path / "spans.jsonl"
    writer = LineWriter(path, lines, split=[1])
    writer.start()
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=False)
    expected = load_trace(OTEL / "genai_events.jsonl")
    # not "as many steps as expected": the root span, last, changes no count but every agent
    events = await run_until(follower, read_all(follower, lines))
    assert follower.line_format == "otlp"
    assert same_trace(follower.trace(), expected)
    # whatever order spans came in, the announced steps replay to the final trace
    shown = shown_steps(events)
    assert [s.meta["span_id"] for s in shown] == [s.meta["span_id"] for s in expected.steps]


async def test_otlp_parent_exported_after_its_children_reorders_the_trace(tmp_path):
    doc = json.loads((OTEL / "genai_current.json").read_text())
    first_trace = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    requests = []
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                if sp["traceId"] == first_trace:
                    requests.append({"resourceSpans": [{**rs, "scopeSpans": [{**ss, "spans": [sp]}]}]})
    requests.sort(key=lambda r: int(r["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["endTimeUnixNano"]))
    path = tmp_path / "spans.jsonl"
    path.write_bytes(b"".join(dump_lines(requests[:-1])))  # everything but the root span (ends last)
    follower = FileFollower(path, use_watchfiles=False)
    before = follower.poll()
    # the researcher's invoke_agent span frames its steps; until the planner's arrives the
    # planner's steps belong to the service
    assert len(steps_of(before)) == len(requests) - 2
    assert [s.agent for s in steps_of(before)] == [
        "trip-planner",
        "trip-planner",
        "researcher",
        "researcher",
        "trip-planner",
    ]
    with path.open("ab") as fh:
        fh.write(dump_lines(requests[-1:])[0])
    after = follower.poll()
    reset = [e for e in after if isinstance(e, TraceReset)]
    assert reset and reset[0].reason == "reordered" and reset[0].kept == 0
    assert [s.agent for s in steps_of(after)] == ["planner", "planner", "researcher", "researcher", "planner"]
    assert len(follower.trace().steps) == len(requests) - 2
    follower.close()


async def test_truncation_is_noticed_and_the_file_read_again(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(dump_lines(CHAT[:4])))
    follower = FileFollower(path, use_watchfiles=False)
    assert len(steps_of(follower.poll())) == 4
    path.write_bytes(b"".join(dump_lines(CHAT[:2])))  # the agent restarted: shorter file
    events = follower.poll()
    reset = [e for e in events if isinstance(e, TraceReset)]
    assert reset and reset[0].reason == "truncated" and reset[0].kept == 2 and reset[0].step_count == 2
    assert steps_of(events) == []
    assert len(follower.trace().steps) == 2
    with path.open("ab") as fh:
        fh.write(b"".join(dump_lines(CHAT[2:])))
    assert [s.index for s in steps_of(follower.poll())] == [2, 3, 4]
    follower.close()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_rotation_is_noticed_and_the_users_place_kept(tmp_path, backend):
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(dump_lines(CHAT[:3])))
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=backend == "watchfiles")
    gen = follower.events()

    async def next_steps(n: int) -> list:
        got: list = []
        while len(steps_of(got)) < n or not got:
            got.append(await asyncio.wait_for(gen.__anext__(), TIMEOUT_S))
        return got

    try:
        assert len(steps_of(await next_steps(3))) == 3
        os.rename(path, tmp_path / "run.jsonl.1")  # log rotation: a new file under the same name
        other = [CHAT[0], CHAT[1], {"role": "assistant", "content": "Let me think again."}]
        path.write_bytes(b"".join(dump_lines(other)))
        events = await next_steps(1)
        reset = next(e for e in events if isinstance(e, TraceReset))
        assert reset.reason == "rotated" and reset.kept == 2 and reset.step_count == 3
        assert [s.content for s in steps_of(events)] == ["Let me think again."]
    finally:
        await gen.aclose()
        follower.close()


async def test_bad_lines_are_events_and_following_goes_on(tmp_path):
    path = tmp_path / "run.jsonl"
    lines = (
        dump_lines(CHAT[:2])
        + [
            b"{not json\n",
            b"\x1b[2J\x1b]0;pwned\x07[1, 2]\n",
            orjson.dumps({"role": "assistant", "content": 5}) + b"\n",
        ]
        + dump_lines(CHAT[2:])
    )
    path.write_bytes(b"".join(lines))
    follower = FileFollower(path, use_watchfiles=False)
    events = follower.poll()
    errors = [e for e in events if isinstance(e, LineError)]
    assert [e.line for e in errors] == [3, 4, 5]
    assert "not valid JSON" in errors[0].message
    assert "\x1b" not in errors[1].text and "[2J" not in errors[1].text
    assert "content" in errors[2].message
    assert [s.index for s in steps_of(events)] == list(range(len(CHAT)))
    follower.close()


async def test_a_first_line_that_is_no_trace_line_is_reported_until_one_is(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_bytes(b'{"hello": "world"}\n' + dump_lines(CHAT[:1])[0])
    follower = FileFollower(path, use_watchfiles=False)
    events = follower.poll()
    assert isinstance(events[0], LineError) and events[0].line == 1 and "not a trace line" in events[0].message
    assert len(steps_of(events)) == 1 and follower.line_format == "chat"
    follower.close()


async def test_idle_is_reported_once_per_quiet_spell(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(dump_lines(CHAT[:1])))
    follower = FileFollower(path, idle_after=0.2, use_watchfiles=False)
    events = follower.poll()

    def idle_now() -> list:
        events.extend(follower.poll())
        return [e for e in events if isinstance(e, Idle)]

    idle = wait_until(idle_now, "the quiet spell to be reported")
    for _ in range(5):  # the same spell goes on: polled again, it is not reported again
        events.extend(follower.poll())
    idle = [e for e in events if isinstance(e, Idle)]
    assert len(idle) == 1 and idle[0].seconds >= 0.2  # once, not at every poll
    with path.open("ab") as fh:
        fh.write(b"".join(dump_lines(CHAT[1:2])))
    assert len(steps_of(follower.poll())) == 1
    events = []
    wait_until(idle_now, "a new quiet spell")
    assert [type(e) for e in events] == [Idle]  # a new quiet spell, nothing else
    follower.close()


async def test_a_folder_is_an_error_not_a_hang(tmp_path):
    follower = FileFollower(tmp_path, use_watchfiles=False)
    with pytest.raises(TraceFormatError, match="folder"):
        await run_until(follower, lambda ev: True)


@pytest.mark.real_traces
async def test_a_real_group_chat_streamed_as_chat_lines(tmp_path, real_traces):
    src = json.loads((real_traces / "who-and-when/Who&When/Algorithm-Generated/1.json").read_text())
    messages = [{k: v for k, v in m.items() if k in ("role", "content", "name")} for m in src["history"]]
    path = tmp_path / "ag2.jsonl"
    lines = dump_lines(messages)
    writer = LineWriter(path, lines, delay=0.01, split=[0, 2])
    writer.start()
    follower = FileFollower(path, poll_interval=0.02)
    # not "as many StepAdded as messages": once the lines read so far turn out to be a group
    # chat every step is announced again (a reset), so that count is reached early
    events = await run_until(follower, read_all(follower, lines))
    got = follower.trace()
    assert [s.content for s in shown_steps(events)] == [s.content for s in got.steps]
    assert [s.agent for s in got.steps] == [m["name"] for m in messages]
    assert got.framework == "ag2" and same_trace(got, load_trace(path))
    assert not [e for e in events if isinstance(e, LineError)]
