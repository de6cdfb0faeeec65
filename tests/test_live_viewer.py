"""Following a file for a viewer (whenpro_core.live.viewer) and the incoming-traces
listing (whenpro_core.live.listing): a background thread writes a run while the stream
is read; unlike ``whenpro watch``, the stream goes on after the run ends; a file
truncated to nothing starts a new judge; a judge that raises becomes an event."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from conftest import SAMPLES
from tests.support.live_writer import LineWriter, dump_lines
from whenpro_core.errors import ConfigError
from whenpro_core.formats import load_trace
from whenpro_core.live.events import (
    DecisiveError,
    HeaderUpdated,
    Idle,
    JudgeFailed,
    LiveMarks,
    RunEnded,
    StepAdded,
    StepsChange,
    Suspect,
    TraceEvicted,
    TraceReset,
    TraceStarted,
    TraceUpdated,
    fold_steps,
)
from whenpro_core.live.follow import FileFollower
from whenpro_core.live.judge_live import LiveJudge
from whenpro_core.live.listing import LiveListing, age
from whenpro_core.live.viewer import follow_live, live_judges

TEAM = SAMPLES / "team_text" / "trace.json"


def native_lines(trace) -> list[bytes]:
    header = {
        "format": "whenpro.trace/1",
        "id": trace.id,
        "framework": trace.framework,
        "task": trace.task.model_dump(mode="json"),
        "agents": [a.model_dump() for a in trace.agents],
    }
    return dump_lines([header, *(s.model_dump(mode="json", exclude={"index", "raw"}) for s in trace.steps)])


async def collect(stream, events: list, until, timeout: float = 30.0) -> None:
    async def go() -> None:
        async for ev in stream:
            events.append(ev)
            if until(events):
                return

    await asyncio.wait_for(go(), timeout)


def of(events, cls) -> list:
    return [e for e in events if isinstance(e, cls)]


async def test_the_stream_goes_on_after_the_run_ends(tmp_path):
    sample = load_trace(TEAM)
    path = tmp_path / "run.jsonl"
    writer = LineWriter(path, native_lines(sample), split=[2])
    writer.start()
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=False)
    stream = follow_live(follower, lambda: LiveJudge("heuristic"))
    events: list = []
    await collect(stream, events, lambda ev: bool(of(ev, RunEnded)))
    writer.join()
    assert [e.step.coord for e in of(events, StepAdded)] == [s.coord for s in sample.steps]
    decisive = of(events, DecisiveError)
    assert len(decisive) == 1 and (decisive[0].step, decisive[0].mode) == ("3", "R.3")
    assert of(events, RunEnded)[0].reason == "final_answer"
    # a closing header written after the final answer still arrives
    with path.open("ab") as fh:
        fh.write(dump_lines([{"id": sample.id, "outcome": "failure"}])[0])
    await collect(stream, events, lambda ev: bool(of(ev, HeaderUpdated)))
    assert follower.trace().outcome.value == "failure"
    follower.close()
    rest = [ev async for ev in stream]  # ends once the follower is closed
    assert not of(rest, StepAdded)


async def test_a_file_truncated_to_nothing_starts_a_new_judge(tmp_path):
    sample = load_trace(TEAM)
    lines = native_lines(sample)
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(lines[:5]))  # header + 4 steps, the wrong one included
    made = []

    def make() -> LiveJudge:
        made.append(LiveJudge("heuristic"))
        return made[-1]

    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=False)
    stream = follow_live(follower, make)
    events: list = []
    await collect(stream, events, lambda ev: bool(of(ev, Suspect)) and len(of(ev, StepAdded)) == 4)
    path.write_bytes(b"")
    await collect(stream, events, lambda ev: bool(of(ev, TraceReset)))
    path.write_bytes(b"".join(lines))
    await collect(stream, events, lambda ev: bool(of(ev, RunEnded)))
    follower.close()
    await stream.aclose()
    reset = of(events, TraceReset)[0]
    assert (reset.reason, reset.kept) == ("truncated", 0)
    assert len(made) == 2  # the new run is judged from scratch
    assert of(events, RunEnded)[0].step_count == len(sample.steps)


class Exploding(LiveJudge):
    async def update(self, trace):
        raise RuntimeError("judge bug")
        yield  # pragma: no cover


async def test_a_judge_that_raises_is_an_event_and_following_goes_on(tmp_path):
    sample = load_trace(TEAM)
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(native_lines(sample)[:3]))
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=False)
    stream = follow_live(follower, lambda: Exploding("heuristic"))
    events: list = []
    await collect(stream, events, lambda ev: bool(of(ev, JudgeFailed)))
    assert "RuntimeError: judge bug" in of(events, JudgeFailed)[0].message
    with path.open("ab") as fh:
        fh.write(native_lines(sample)[3])
    await collect(stream, events, lambda ev: len(of(ev, StepAdded)) == 3)
    follower.close()
    await stream.aclose()
    assert len(of(events, JudgeFailed)) == 1


async def test_without_a_judge_only_the_followers_events_come(tmp_path):
    sample = load_trace(TEAM)
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(native_lines(sample)))
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=False)
    stream = follow_live(follower, None)
    events: list = []
    await collect(stream, events, lambda ev: len(of(ev, StepAdded)) == len(sample.steps))
    follower.close()
    events += [ev async for ev in stream]
    assert not of(events, Suspect) and not of(events, RunEnded)


def test_live_judges_take_the_watch_settings():
    make, llm = live_judges()
    assert llm is None and make().protocol == "heuristic"
    with pytest.raises(ConfigError, match="cannot judge live"):
        live_judges("binary-search")


def test_the_listing_follows_store_and_judge_events():
    listing = LiveListing()
    step = load_trace(TEAM).steps[3]
    listing.apply(TraceStarted("a" * 32, "/s/a.json", "svc", 0), now=100.0)
    listing.apply(TraceUpdated("a" * 32, "/s/a.json", 4, 0, ()), now=105.0)
    assert listing.apply(Suspect("a" * 32, 3, "3", "solver", "R.3", "why", "heuristic")) == "a" * 32
    listing.apply(RunEnded("a" * 32, "final_answer", 4))
    listing.apply(TraceStarted("b" * 32, "/s/b.json", None, 1), now=110.0)
    listing.apply(TraceEvicted("a" * 32, "/s/a.json"))
    assert listing.apply(Suspect("c" * 32, 0, "0", "x", None, None, "heuristic")) is None  # unknown trace
    rows = listing.ordered()
    assert [r.trace_id for r in rows] == ["a" * 32, "b" * 32]
    a = rows[0]
    assert (a.service, a.steps, a.updated, a.in_memory, a.ended) == ("svc", 4, 105.0, False, "final_answer")
    assert a.suspect.step == "3" and a.decisive is None and step.coord == "3"
    assert [type(e).__name__ for e in listing.judge_state("a" * 32)] == ["Suspect", "RunEnded"]
    assert (age(4), age(75), age(7300), age(200000)) == ("4s", "1m", "2h", "2d")


def test_a_burst_of_events_folds_into_one_change_of_the_steps():
    """One rule for the live view and ``whenpro watch``: the steps still as shown are
    the fewest any reset or reorder kept; steps added or replaced mean re-reading."""
    step = load_trace(TEAM).steps[0]
    tid = "a" * 32
    assert fold_steps([], 5) == StepsChange(5)
    assert fold_steps([HeaderUpdated(tid, ("outcome",))], 5) == StepsChange(5, header=True)
    burst = [
        StepAdded(tid, step),
        TraceReset(tid, "truncated", 2, 2),
        StepAdded(tid, step),
        TraceUpdated(tid, "/s/a.json", 4, 3, ()),
    ]
    assert fold_steps(burst, 5) == StepsChange(2, grew=True)
    assert fold_steps([TraceUpdated(tid, "/s/a.json", 6, 6, (step,))], 5) == StepsChange(5, grew=True)


def test_judge_marks_keep_the_latest_and_forget_steps_cut_away():
    tid = "a" * 32
    marks = LiveMarks()
    assert not marks.apply(StepAdded(tid, load_trace(TEAM).steps[0]))
    assert marks.apply(Suspect(tid, 1, "1", "solver", "R.3", "why", "heuristic"))
    assert marks.apply(Suspect(tid, 4, "4", "solver", "R.3", "why", "heuristic"))
    assert marks.apply(RunEnded(tid, "final_answer", 5))
    assert marks.suspect is not None and marks.suspect.index == 4
    assert marks.apply(TraceReset(tid, "truncated", 3, 3))  # step 4 is gone
    assert marks.suspect is None and marks.ended is not None
    assert not marks.apply(TraceReset(tid, "rotated", 3, 3))  # nothing left to forget
    assert [type(e).__name__ for e in marks.events()] == ["RunEnded"]


async def test_a_header_stating_the_outcome_first_does_not_stop_judging(tmp_path):
    """Issue 32: a run whose first line already says ``"outcome": "failure"`` is still judged
    step by step as its lines arrive; the run ends once the file goes quiet, not at its header."""
    sample = load_trace(TEAM)
    lines = native_lines(sample)
    header = orjson.loads(lines[0])
    header["outcome"] = "failure"
    path = tmp_path / "run.jsonl"
    path.write_bytes(dump_lines([header])[0])
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=False, idle_after=0.3)
    stream = follow_live(follower, lambda: LiveJudge("heuristic"))
    events: list = []
    await collect(stream, events, lambda ev: bool(of(ev, Idle)))
    assert not of(events, RunEnded)  # the header alone does not end the run
    writer = LineWriter(path, lines[1:])
    writer.start()
    await collect(stream, events, lambda ev: bool(of(ev, RunEnded)))
    writer.join()
    follower.close()
    await stream.aclose()
    decisive = of(events, DecisiveError)
    assert len(decisive) == 1 and (decisive[0].step, decisive[0].mode) == ("3", "R.3")
    assert of(events, RunEnded)[0].step_count == len(sample.steps)


async def test_a_finished_file_stating_its_outcome_ends_when_quiet(tmp_path):
    sample = load_trace(TEAM)
    lines = native_lines(sample)
    header = orjson.loads(lines[0])
    header["outcome"] = "failure"
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join([dump_lines([header])[0], *lines[1:-1]]))  # no final answer step
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=False, idle_after=0.3)
    stream = follow_live(follower, lambda: LiveJudge("heuristic"))
    events: list = []
    await collect(stream, events, lambda ev: bool(of(ev, RunEnded)))
    follower.close()
    await stream.aclose()
    ended = of(events, RunEnded)[0]
    assert (ended.reason, ended.step_count, ended.outcome) == ("outcome", len(sample.steps) - 1, "failure")


async def test_watch_judges_the_steps_after_a_header_stating_the_outcome(tmp_path):
    """The same for ``whenpro watch`` (live.session.attribute_live): it ends after the steps."""
    from whenpro_core.live.session import attribute_live

    sample = load_trace(TEAM)
    lines = native_lines(sample)
    header = orjson.loads(lines[0])
    header["outcome"] = "failure"
    path = tmp_path / "run.jsonl"
    path.write_bytes(dump_lines([header])[0])
    writer = LineWriter(path, lines[1:], start_delay=0.2)
    writer.start()
    follower = FileFollower(path, poll_interval=0.02, use_watchfiles=False, idle_after=5.0)
    events = [ev async for ev in attribute_live(follower, LiveJudge("heuristic"))]
    writer.join()
    assert of(events, RunEnded)[0].step_count == len(sample.steps)
    assert [(e.step, e.mode) for e in of(events, DecisiveError)] == [("3", "R.3")]
