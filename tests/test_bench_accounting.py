"""Honest accounting in ``whenpro bench`` (issue 15, item 5), through the real openai SDK
against the local LLM test server: each record keeps the ``usage`` of the calls it
represents and, separately, what this run ``spent``; a second run served from the
response cache shows the same usage and spends nothing; a failed item keeps what it
spent; ``--concurrency N`` really has N calls in flight."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from bench_data import write_dataset
from tests.support.fixtures import TEST_KEY
from tests.support.llm_server import LLMServer
from tests.support.llm_wire import prompt_text
from whenpro_core.bench.aggregate import aggregate
from whenpro_core.bench.records import Record, read_records
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.errors import BackendError
from whenpro_core.trace.model import Usage

MODEL = "openai:gpt-4.1"


def generic_judge(body: dict[str, Any]) -> dict[str, Any]:
    """A judge that answers every protocol question the same way (structured output)."""
    prompt = prompt_text(body)
    if "first half (" in prompt:
        return {"half": "first", "reason": "earlier"}
    if "Which failure mode is it?" in prompt:
        return {"error_mode": "R.3", "reason": "arithmetic"}
    return {"agent_name": "solver", "step_number": "2", "error_mode": "R.3", "reason": "arithmetic"}


@pytest.fixture
def served(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    """The environment a user sets to point whenpro at the server."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    return llm_server


def _bench(data: Path, out: Path, **kw: Any) -> list[Record]:
    bench_command(str(data), BenchOptions(out=out, report=False, models=MODEL, **kw))
    return read_records(out)[0]


def _no_seconds(u: Usage) -> Usage:
    return u.model_copy(update={"seconds": 0.0})


def test_a_second_bench_served_by_the_cache_shows_the_same_usage_and_spends_nothing(
    served: LLMServer, tmp_path: Path
) -> None:
    data = write_dataset(tmp_path)
    served.respond_with(generic_judge)
    first = _bench(data, tmp_path / "first.jsonl", protocols="all-at-once,binary-search")
    http = len(served.answered)
    attributed = [r for r in first if r.error_kind != "trace"]  # the dataset has one broken file
    assert http > 0 and attributed and not [r for r in attributed if r.error]
    assert all(r.usage.calls > 0 and _no_seconds(r.spent) == _no_seconds(r.usage) for r in attributed)

    second = _bench(data, tmp_path / "second.jsonl", protocols="all-at-once,binary-search")
    assert len(served.answered) == http  # every answer came from the response cache
    by_key = {r.key: r for r in first}
    for rec in second:
        assert _no_seconds(rec.usage) == _no_seconds(by_key[rec.key].usage)
        assert (rec.spent.calls, rec.spent.input_tokens, rec.spent.cost_usd) == (0, 0, 0.0)

    one, two = aggregate(first), aggregate(second)
    for g1, g2 in zip(one.groups, two.groups, strict=True):
        assert _no_seconds(g1.usage) == _no_seconds(g2.usage) and g1.usage.calls > 0
        assert g1.spent.calls == g1.usage.calls and g2.spent.calls == 0
    assert sum(g.usage.calls for g in one.groups) == http


def test_usage_totals_do_not_depend_on_the_order_records_finished(served: LLMServer, tmp_path: Path) -> None:
    """Found by a run where the cached second bench finished its items in another order:
    costs summed in finishing order differed in the last bits of a float."""
    data = write_dataset(tmp_path)
    served.respond_with(generic_judge)
    records = _bench(data, tmp_path / "r.jsonl", protocols="all-at-once,binary-search")
    forward, backward = aggregate(records), aggregate(list(reversed(records)))
    for g1, g2 in zip(forward.groups, backward.groups, strict=True):
        assert g1.usage == g2.usage and g1.spent == g2.spent


def test_a_failed_item_keeps_what_it_spent(served: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Binary search whose first call is answered and whose second fails (HTTP 500, no
    retries): the failed record still counts the answered call."""
    monkeypatch.setenv("WHENPRO_MAX_RETRIES", "0")
    data = write_dataset(tmp_path)
    calls = {"n": 0}
    lock = threading.Lock()

    def first_then_broken(body: dict[str, Any]) -> dict[str, Any]:
        with lock:
            calls["n"] += 1
            n = calls["n"]
        if n > 1:
            raise RuntimeError("backend down")
        return generic_judge(body)

    served.respond_with(first_then_broken)
    out = tmp_path / "r.jsonl"
    with pytest.raises(BackendError, match="1 item failed on the model backend"):
        _bench(data, out, protocols="binary-search", where=["framework=whenpro-team"], limit=1, concurrency=1)
    (rec,) = read_records(out)[0]
    assert rec.error_kind == "backend" and rec.prediction is None
    assert rec.spent.calls == rec.usage.calls == 1 and rec.spent.input_tokens > 0


def test_concurrency_n_means_n_calls_in_flight(served: LLMServer, tmp_path: Path) -> None:
    """``concurrency`` in config.toml defaults to 4; ``bench --concurrency 6`` must still
    have 6 calls in flight. The server holds the first six requests until all six have
    arrived (a barrier, so no timing is assumed); with only 4 in flight it would break."""
    data = write_dataset(tmp_path)
    barrier = threading.Barrier(6, timeout=30)
    seen = {"n": 0}
    lock = threading.Lock()

    def gathered(body: dict[str, Any]) -> dict[str, Any]:
        with lock:
            seen["n"] += 1
            n = seen["n"]
        if n <= 6:
            barrier.wait()
        return generic_judge(body)

    served.respond_with(gathered)
    records = _bench(data, tmp_path / "r.jsonl", protocols="all-at-once", concurrency=6, use_cache=False)
    assert len([r for r in records if not r.error]) >= 6
    assert served.max_in_flight == 6
