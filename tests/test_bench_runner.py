"""The benchmark runner over a small dataset built in tmp_path, offline with the
``heuristic`` protocol: planning and ``--where``, records, failures, resuming after an
interrupted run, and the concurrency bound."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import orjson
import pytest

from bench_data import LABELLED, write_dataset
from tests.support.waiting import TIMEOUT_S
from whenpro_core.attribution.heuristic import attribute_heuristic
from whenpro_core.bench import runner
from whenpro_core.bench.records import ResultsFile, build_record, read_records
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.errors import ConfigError, TraceFormatError
from whenpro_core.formats import load_trace
from whenpro_core.trace.score import score_prediction


@pytest.fixture
def dataset(tmp_path) -> Path:
    return write_dataset(tmp_path)


def run(items, out: Path, **kw):
    with ResultsFile(out) as results:
        return asyncio.run(runner.run_items(items, results, **kw))


def keys_of(path: Path) -> list[str]:
    return [r.key for r in read_records(path)[0]]


def quiet_bench(dataset, out, **kw):
    return bench_command(str(dataset), BenchOptions(out=out, report=False, **kw))


# --------------------------------------------------------------------------- planning


def test_plan_covers_labelled_traces_settings_and_bad_files(dataset):
    sel = runner.select(dataset)
    assert (sel.total, sel.unlabelled, sel.bad) == (LABELLED + 2, 1, 1)
    items = runner.plan(dataset, ["heuristic", "heuristic"], ["heuristic"], "both")
    assert len(items) == (LABELLED + 1) * 2  # + the broken file; heuristic once; gold × 2
    assert all(Path(i.ref.split("#")[0]).is_absolute() for i in items)
    assert len({i.key for i in items}) == len(items)
    assert {i.with_gold for i in items} == {True, False}


def test_where_filters_on_listing_fields(dataset):
    img = runner.plan(dataset, ["heuristic"], [], where=runner.parse_where("modality=image"))
    assert [i.summary.id for i in img] == ["smol-image-6"]
    two = runner.plan(
        dataset, ["heuristic"], [], where=runner.parse_where(["framework=debate|whenpro-team", "mode=r.3"])
    )
    assert sorted(i.summary.id for i in two) == ["team-7", "team-9"]
    with pytest.raises(ConfigError, match="unknown --where key"):
        runner.parse_where("colour=red")
    with pytest.raises(ConfigError, match="bad --where term"):
        runner.parse_where("modality")
    with pytest.raises(ConfigError, match="nothing to run"):
        runner.plan(dataset, ["heuristic"], [], where=runner.parse_where("framework=nope"))


def test_limit_and_reproducible_sample(dataset):
    assert len(runner.select(dataset, limit=2).rows) == 2
    a = [r.id for r in runner.select(dataset, sample=3, seed=7).rows]
    b = [r.id for r in runner.select(dataset, sample=3, seed=7).rows]
    assert a == b and len(a) == 3
    everything = [r.id for r in runner.select(dataset).rows]
    assert a == [i for i in everything if i in a]  # dataset order kept


def test_settings_need_a_model_for_llm_protocols():
    assert runner.settings(["heuristic"], []) == [("heuristic", "heuristic")]
    assert runner.settings(["aao", "heuristic"], ["openai:x", "heuristic"]) == [
        ("all-at-once", "openai:x"),
        ("heuristic", "heuristic"),
    ]
    with pytest.raises(ConfigError, match="needs a model"):
        runner.settings(["all-at-once"], [])
    with pytest.raises(ConfigError, match="used by no protocol"):
        runner.settings(["heuristic"], ["openai:x"])
    with pytest.raises(ConfigError, match="unknown protocol"):
        runner.settings(["guess"], [])


def test_missing_dataset_is_a_trace_format_error(tmp_path):
    with pytest.raises(TraceFormatError, match="no such file or folder"):
        runner.select(tmp_path / "nope")


# --------------------------------------------------------------------------- running


def test_records_hold_prediction_scores_and_metadata(dataset, tmp_path):
    out = tmp_path / "r.jsonl"
    items = runner.plan(dataset, ["heuristic"], [], tolerance=1)
    stats = run(items, out)
    records, problems = read_records(out)
    assert problems == [] and stats.written == len(records) == LABELLED + 1
    assert (stats.errors, stats.kinds) == (1, {"trace": 1})
    by_id = {r.trace.id: r for r in records}
    broken = by_id["broken"]
    assert broken.error_kind == "trace" and "broken.json" in broken.error
    assert broken.score is None and broken.prediction is None
    for rec in records:
        if rec is broken:
            continue
        trace = load_trace(rec.ref)
        expected = attribute_heuristic(trace, with_gold=True)
        assert (rec.prediction.agent, rec.prediction.step, rec.prediction.mode) == (
            expected.agent,
            expected.step,
            expected.mode,
        )
        assert rec.score.model_dump() == score_prediction(trace, rec.prediction).as_dict()
        assert rec.score_tol.step == score_prediction(trace, rec.prediction, tolerance=1).step
        assert rec.trace.framework == trace.framework and rec.trace.modality == trace.modality.value
        assert rec.trace.single_agent == (trace.framework == "smolagents")
        assert rec.trace.round_only == (trace.framework == "debate")
        assert rec.trace.gt_mode == trace.ground_truth.mode and rec.trace.tokens > 10
        assert rec.seconds > 0 and rec.error is None and rec.finished_at


def test_gold_setting_reaches_the_protocol(dataset, tmp_path):
    out = tmp_path / "r.jsonl"
    run(runner.plan(dataset, ["heuristic"], [], "both", where=runner.parse_where("id=team-7")), out)
    records = read_records(out)[0]
    assert sorted(r.with_gold for r in records) == [False, True]
    assert all(r.prediction.with_gold == r.with_gold for r in records)


def test_resume_after_a_limited_run_repeats_and_loses_nothing(dataset, tmp_path):
    out = tmp_path / "r.jsonl"
    quiet_bench(dataset, out, limit=3)
    first = out.read_bytes()
    assert len(keys_of(out)) == 3
    quiet_bench(dataset, out)
    keys = keys_of(out)
    assert out.read_bytes().startswith(first)  # finished records untouched
    assert len(keys) == len(set(keys)) == LABELLED + 1
    quiet_bench(dataset, out)  # nothing left to do
    assert keys_of(out) == keys


def test_resume_after_a_torn_last_line(dataset, tmp_path):
    out = tmp_path / "r.jsonl"
    quiet_bench(dataset, out)
    lines = out.read_bytes().splitlines(keepends=True)
    torn_key = orjson.loads(lines[-1])["key"]
    out.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # killed mid-write
    quiet_bench(dataset, out)
    records, problems = read_records(out)
    keys = [r.key for r in records]
    assert problems == [] and len(keys) == len(set(keys)) == LABELLED + 1
    assert keys[-1] == torn_key  # the torn item ran again, once
    assert out.read_bytes().startswith(b"".join(lines[:-1]))


def test_a_complete_last_record_without_newline_is_kept(dataset, tmp_path):
    out = tmp_path / "r.jsonl"
    quiet_bench(dataset, out, limit=2)
    out.write_bytes(out.read_bytes().rstrip(b"\n"))
    results = ResultsFile(out)
    assert results.repaired and len(results.done) == 2
    assert out.read_bytes().endswith(b"\n")
    quiet_bench(dataset, out, limit=2)
    assert len(keys_of(out)) == 2


def test_refuses_to_append_to_a_file_it_does_not_own(dataset, tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"my": "data"}\nsome line without newline')
    before = notes.read_bytes()
    with pytest.raises(ConfigError, match="not a whenpro results file"):
        quiet_bench(dataset, notes)
    assert notes.read_bytes() == before


def test_failed_items_are_retried_by_kind(dataset, tmp_path):
    items = runner.plan(dataset, ["heuristic"], [], where=runner.parse_where("framework=debate"))
    trace = load_trace(items[0].ref)
    common = dict(protocol="heuristic", model="heuristic", with_gold=True, trace=trace, prediction=None)
    done = {
        items[0].key: build_record(ref=items[0].ref, error="BackendError: 503", error_kind="backend", **common),
        items[1].key: build_record(ref=items[1].ref, error="MediaError: bad image", error_kind="trace", **common),
    }
    assert [i.key for i in runner.pending(items, done)] == [items[0].key]
    assert len(runner.pending(items, done, retry_errors=True)) == 2


def test_secrets_never_reach_records():
    rec = build_record(
        ref="/x.json",
        protocol="all-at-once",
        model="openai:x",
        with_gold=True,
        trace=None,
        prediction=None,
        error_kind="backend",
        error="401 for key sk-abcdefghijklmnop1234 (Authorization: Bearer abcdefghijkl)",
    )
    assert "sk-abc" not in rec.error and "abcdefghijkl" not in rec.error and "[redacted]" in rec.error


# --------------------------------------------------------------------------- concurrency


def counting_hook(bound: int):
    """An ``around`` hook that counts items in flight and holds the first ones open
    until ``bound`` items are in flight at once (an event, not a delay): the run can
    only go on if the runner really runs ``bound`` items together (else the wait
    times out and the peak assertion names the shortfall)."""
    state = {"now": 0, "peak": 0, "entered": 0}
    full = asyncio.Event()

    @contextlib.asynccontextmanager
    async def around(item):
        state["now"] += 1
        state["entered"] += 1
        state["peak"] = max(state["peak"], state["now"])
        if state["peak"] >= bound:
            full.set()
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(full.wait(), TIMEOUT_S)
            yield
        finally:
            state["now"] -= 1

    return state, around


@pytest.mark.parametrize("bound", [1, 3])
def test_concurrency_bound_is_respected_and_used(dataset, tmp_path, bound):
    items = runner.plan(dataset, ["heuristic"], [], "both")  # 14 items
    state, around = counting_hook(bound)
    stats = run(items, tmp_path / f"r{bound}.jsonl", concurrency=bound, around=around)
    assert stats.written == state["entered"] == len(items)
    assert state["peak"] == bound


def test_each_trace_is_loaded_once_for_all_its_settings(dataset):
    """Items of one trace (trace-major plan) share one loaded Trace; other traces get their
    own; a broken file fails every item of it the same way; loads run ahead of the taker."""
    items = runner.plan(dataset, ["heuristic"], [], "both")  # every trace twice: gold, no-gold

    async def take_all():
        loads = runner.TraceLoads(items, ahead=3)
        outcomes = []
        for index in range(len(items)):
            try:
                outcomes.append((await loads.take(index))[0])
            except TraceFormatError as exc:
                outcomes.append(exc)
        loads.cancel()
        return outcomes

    outcomes = asyncio.run(take_all())
    by_ref: dict[str, list] = {}
    for item, got in zip(items, outcomes, strict=True):
        by_ref.setdefault(item.ref, []).append(got)
    assert all(len(got) == 2 for got in by_ref.values())
    traces = [got for got in by_ref.values() if not isinstance(got[0], Exception)]
    broken = [got for got in by_ref.values() if isinstance(got[0], Exception)]
    assert len(broken) == 1 and broken[0][0] is broken[0][1]
    assert all(a is b for a, b in traces)
    assert len({id(a) for a, _ in traces}) == len(traces)


def test_concurrency_must_be_positive(dataset, tmp_path):
    with pytest.raises(ConfigError):
        run(runner.plan(dataset, ["heuristic"], []), tmp_path / "r.jsonl", concurrency=0)


def test_work_items_are_plain_data_for_sharding(dataset):
    import pickle

    items = runner.plan(dataset, ["heuristic"], [], "both")
    assert pickle.loads(pickle.dumps(items)) == items
    assert [runner.WorkItem.model_validate_json(i.model_dump_json()) for i in items] == items


def test_a_config_error_stops_the_run_and_keeps_finished_records(dataset, tmp_path):
    """An LLM item without a judge is a ConfigError that concerns every item: the run
    stops with it, and the records finished before it stay in the file."""
    out = tmp_path / "r.jsonl"
    done = runner.plan(dataset, ["heuristic"], [], where=runner.parse_where("framework=debate"))
    llm = runner.plan(dataset, ["all-at-once"], ["openai:gpt-4.1"], where=runner.parse_where("id=team-7"))
    with pytest.raises(ConfigError, match="needs a model"):
        run(done + llm, out, concurrency=1)
    assert sorted(keys_of(out)) == sorted(i.key for i in done)


# --------------------------------------------------------------------------- batched appends


def test_a_record_is_in_the_file_before_the_run_reports_it(dataset, tmp_path):
    """Records are appended in batches, but each is flushed before ``on_record`` sees it:
    a run killed after reporting an item never loses that item."""
    out = tmp_path / "r.jsonl"
    items = runner.plan(dataset, ["heuristic"], [], "both")
    seen: list[str] = []

    def on_record(rec):
        assert rec.key in keys_of(out)  # read back from disk, not from memory
        seen.append(rec.key)

    stats = run(items, out, concurrency=4, on_record=on_record)
    assert stats.written == len(seen) == len(items)
    assert sorted(keys_of(out)) == sorted(i.key for i in items)


def finished_records(dataset) -> list:
    items = runner.plan(dataset, ["heuristic"], [], where=runner.parse_where("framework=debate"))
    common = dict(protocol="heuristic", model="heuristic", with_gold=True, trace=None, prediction=None)
    # finished records: one without a prediction has an error (else a reader skips it)
    return [build_record(ref=item.ref, error="not read", error_kind="trace", **common) for item in items]


def test_records_finished_together_are_written_in_one_write(dataset, tmp_path):
    records = finished_records(dataset)
    assert len(records) >= 2
    out = tmp_path / "r.jsonl"
    writes: list[int] = []

    async def finish_together(results):
        append_many = results.append_many
        results.append_many = lambda batch: (writes.append(len(batch)), append_many(batch))
        batches = runner.RecordBatches(results)
        await asyncio.gather(*(batches.write(r) for r in records))  # all in one loop iteration
        assert writes == [len(records)]
        await batches.write(records[0])  # a later iteration: a batch of its own
        assert writes == [len(records), 1]

    with ResultsFile(out) as results:
        asyncio.run(finish_together(results))
    assert keys_of(out) == [r.key for r in records] + [records[0].key]
    assert ResultsFile(out).repaired is None  # whole lines, resumable


def test_a_failed_batch_write_raises_in_each_of_its_items(dataset, tmp_path):
    records = finished_records(dataset)

    async def write_all(results):
        def refuse(batch):
            raise OSError("disk full")

        results.append_many = refuse
        batches = runner.RecordBatches(results)
        return await asyncio.gather(*(batches.write(r) for r in records), return_exceptions=True)

    with ResultsFile(tmp_path / "r.jsonl") as results:
        outcomes = asyncio.run(write_all(results))
    assert [type(o) for o in outcomes] == [OSError] * len(records)
