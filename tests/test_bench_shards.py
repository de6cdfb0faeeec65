"""Sharded benchmark results without Ray: ``--shard K/N`` job-array runs into part files,
``whenpro report`` over a folder or a glob of parts, resume across the results file and
the parts (a torn part repaired), the merge of a finished run, ``--max-calls-per-s`` in
one process (counted at the local LLM test server), and ``--ray`` without Ray installed."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench_data import LABELLED, differences, strip_timing, write_dataset
from tests.support.fixtures import TEST_KEY
from whenpro_core.bench.records import read_records
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.cli.report import report_command
from whenpro_core.errors import ConfigError, TraceFormatError
from whenpro_core.scale import shards
from whenpro_core.scale.ratelimit import RateLimiter

REPO = Path(__file__).resolve().parent.parent
ITEMS = LABELLED + 1  # the labelled traces and the broken file, heuristic, gold


def keys(path: Path) -> set[str]:
    recs, problems = read_records(path)
    assert not problems
    return {r.key for r in recs}


def test_shard_spec_is_checked():
    assert shards.parse_shard("0/4") == (0, 4) and shards.parse_shard("3/4") == (3, 4)
    for bad in ("4/4", "1", "a/b", "-1/2", "1/0"):
        with pytest.raises(ConfigError, match="K/N"):
            shards.parse_shard(bad)


def test_deal_spreads_items_evenly_and_shard_of_is_stable():
    dealt = shards.deal(list(range(10)), 3)
    assert [len(d) for d in dealt] == [4, 3, 3] and sorted(sum(dealt, [])) == list(range(10))
    assert shards.deal([1], 8) == [[1]] and shards.deal([], 2) == []
    assert {shards.shard_of("a|b|c|gold", 7) for _ in range(3)} == {shards.shard_of("a|b|c|gold", 7)}


def test_job_array_shards_cover_the_run_once_and_report_reads_folder_or_glob(tmp_path):
    data = write_dataset(tmp_path)
    out = tmp_path / "r.jsonl"
    for k in range(3):
        assert bench_command(str(data), BenchOptions(out=out, shard=f"{k}/3")) is None  # a job's share: no report
    parts = sorted((tmp_path / "r.d").glob("part-*.jsonl"))
    per_part = [keys(p) for p in parts]
    assert sum(len(k) for k in per_part) == len(set().union(*per_part)) == ITEMS  # disjoint, complete
    assert not out.exists()
    by_folder = report_command([tmp_path / "r.d"], tmp_path / "rep1", quiet=True)
    by_glob = report_command([str(tmp_path / "r.d" / "part-*.jsonl")], tmp_path / "rep2", quiet=True)
    local = bench_command(str(data), BenchOptions(out=tmp_path / "local.jsonl", report_dir=tmp_path / "rep3"))
    assert local is not None
    for rep in (by_folder, by_glob):
        assert differences(strip_timing(rep.model_dump(mode="json")), strip_timing(local.model_dump(mode="json"))) == []
    # a later run without --shard finds everything done and merges the parts
    bench_command(str(data), BenchOptions(out=out, report=False))
    assert keys(out) == set().union(*per_part) and not any((tmp_path / "r.d").glob("part-*"))


def test_resume_skips_items_finished_in_any_part_and_repairs_a_torn_one(tmp_path, capsys):
    data = write_dataset(tmp_path)
    out = tmp_path / "runs"
    out.mkdir()  # --out as a folder: parts and results.jsonl inside
    bench_command(str(data), BenchOptions(out=out, shard="0/2"))
    part = out / "part-0000.jsonl"
    done = keys(part)
    assert done
    whole = part.read_bytes()
    part.write_bytes(whole + whole.splitlines()[0][:40])  # a record torn by a killed worker
    capsys.readouterr()
    bench_command(str(data), BenchOptions(out=out, report=False))
    err = capsys.readouterr().err
    assert "removed a torn last line" in err
    assert f"{len(done)} already in" in err and f"{ITEMS - len(done)} to run" in err
    assert keys(out / shards.MERGED_NAME) == keys(out / shards.MERGED_NAME) | done
    assert len(keys(out / shards.MERGED_NAME)) == ITEMS and not part.exists()


def test_report_on_an_empty_folder_or_glob_says_so(tmp_path):
    with pytest.raises(TraceFormatError, match="no results files here"):
        report_command([tmp_path], quiet=True)
    with pytest.raises(TraceFormatError, match="no results files here"):
        report_command([str(tmp_path / "part-*.jsonl")], quiet=True)


def test_rate_limiter_spaces_slots_on_its_clock():
    now = [100.0]
    limiter = RateLimiter(4, clock=lambda: now[0])
    assert [limiter.reserve() for _ in range(3)] == [100.0, 100.25, 100.5]
    now[0] = 200.0  # idle for a while: the next slot is now, no burst saved up
    assert limiter.reserve() == 200.0
    with pytest.raises(ConfigError):
        RateLimiter(0)


def test_max_calls_per_s_in_one_process_counted_at_the_server(tmp_path, llm_server, monkeypatch):
    """Without Ray the cap holds for the run's own requests, with 8 items in flight: slots
    are 1/rate apart from the run's start, so the last request cannot reach the server
    before (n - 1) / rate seconds after it (a lower bound: load only makes it later)."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    answer: dict[str, Any] = {"agent_name": "solver", "step_number": "2", "error_mode": "R.3", "reason": "x"}
    llm_server.respond_with(lambda body: answer)
    data = write_dataset(tmp_path)
    begun = time.monotonic()  # the server stamps requests with time.monotonic() too
    bench_command(
        str(data),
        BenchOptions(
            models="openai:gpt-4.1",
            out=tmp_path / "r.jsonl",
            concurrency=8,
            max_calls_per_s=4,
            use_cache=False,
            report=False,
        ),
    )
    starts = sorted(r.started for r in llm_server.requests)
    assert len(starts) == LABELLED
    assert starts[-1] - begun >= (len(starts) - 1) / 4, [round(t - begun, 3) for t in starts]


def test_ray_without_ray_installed_is_one_clear_error(tmp_path):
    data = write_dataset(tmp_path)
    code = (
        "import sys; sys.modules['ray'] = None; sys.argv = ['whenpro', 'bench', sys.argv[1], "
        "'--out', sys.argv[2], '--ray']; from whenpro_core.cli import main; main()"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(data), str(tmp_path / "r.jsonl")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("whenpro: error: ") and "pip install 'whenpro[ray]'" in last


def test_an_unreachable_ray_address_is_one_clear_error_not_a_hang(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'whenpro[ray]')")
    data = write_dataset(tmp_path)
    with pytest.raises(ConfigError, match="cannot connect to the Ray cluster at 127.0.0.1:1"):
        bench_command(str(data), BenchOptions(out=tmp_path / "r.jsonl", ray_address="127.0.0.1:1", report=False))
    assert not (tmp_path / "r.jsonl").exists()
