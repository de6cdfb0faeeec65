"""``whenpro bench --ray`` on a real local Ray (``ray.init(num_cpus=2)``, one session for
the module: Ray starts slowly on a small machine) against the local LLM test server,
through the real OpenAI SDK: a sharded run gives the same records and report as a local
one, a worker killed mid-shard loses nothing on resume, and ``--max-calls-per-s`` holds
cluster-wide, counted at the server."""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench_data import differences, strip_timing, write_dataset
from tests.support.fixtures import TEST_KEY
from tests.support.llm_server import LLMServer
from tests.support.local_ray import local_ray
from whenpro_core.bench.records import read_records
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.errors import BackendError

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'whenpro[ray]')")
#: One xdist worker runs every test that starts a local Ray (--dist loadgroup, pyproject):
#: two local clusters started at once on the two cores starved each other.
pytestmark = pytest.mark.xdist_group("ray")

REPO = Path(__file__).resolve().parent.parent
MODEL = "openai:gpt-4.1"
#: Every judge question gets this answer (all-at-once asks one question per item).
ANSWER = {"agent_name": "solver", "step_number": "2", "error_mode": "R.3", "reason": "fixed answer"}


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(cache_min_tokens=1 << 40) as srv:  # no emulated prompt cache: usage does not depend on order
        yield srv


@pytest.fixture(scope="module")
def ray_session(server: LLMServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local Ray for the module; its workers reach the test server with a test key."""
    with local_ray(server, tmp_path_factory.mktemp("ray-home")) as started:
        yield started


@pytest.fixture
def bench_env(ray_session: Any, server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    """The driver sees the same server and key as the workers; the server starts clean."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    server.reset()
    server.latency_s = 0.0
    server.respond_with(lambda body: ANSWER)
    return server


def records_by_key(path: Path) -> dict[str, Any]:
    recs, problems = read_records(path)
    assert not problems
    return {r.key: strip_timing(r.model_dump(mode="json")) for r in recs}


def run(data: Path, out: Path, **kw: Any) -> Any:
    return bench_command(
        str(data),
        BenchOptions(models=MODEL, both=True, out=out, use_cache=False, report_dir=out.parent / "report", **kw),
    )


def test_sharded_run_gives_the_records_and_report_of_a_local_run(tmp_path, bench_env):
    data = write_dataset(tmp_path)
    local = run(data, tmp_path / "local" / "r.jsonl", concurrency=2)
    local_calls = len(bench_env.answered)
    sharded = run(data, tmp_path / "ray" / "r.jsonl", ray=True, ray_shards=2, concurrency=2)
    assert len(bench_env.answered) == 2 * local_calls == 24  # one question per LLM item, in both runs
    assert not (tmp_path / "ray" / "r.d").exists()  # parts merged into r.jsonl and removed
    a, b = records_by_key(tmp_path / "local" / "r.jsonl"), records_by_key(tmp_path / "ray" / "r.jsonl")
    assert len(a) == 14 and differences(a, b) == []  # 6 labelled traces + 1 broken file, gold and no gold
    assert differences(strip_timing(local.model_dump(mode="json")), strip_timing(sharded.model_dump(mode="json"))) == []
    local_md = (tmp_path / "local" / "report" / "r.report.md").read_text()
    ray_md = (tmp_path / "ray" / "report" / "r.report.md").read_text()
    assert "Leaderboard" in local_md and differences(md_without_timing(local_md), md_without_timing(ray_md)) == []


def md_without_timing(md: str) -> list[str]:
    """report.md's lines without the timing column (``sec``) and the results paths."""
    out, timed = [], False
    for line in md.splitlines():
        if "r.jsonl" in line or line.startswith("Created: "):
            continue
        if line.startswith("|"):
            cells = line.strip("|").split("|")
            timed = timed or cells[-1].strip() == "sec"
            line = "|".join(cells[:-1]) if timed else line
        else:
            timed = False
        out.append(line)
    return out


def _shard_worker_pids() -> list[int]:
    """Ray worker processes running a shard (Ray titles them ``ray::run_shard``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(b"ray::run_shard"):
                pids.append(int(entry.name))
    return pids


def test_a_worker_killed_mid_shard_loses_nothing_on_resume(tmp_path, bench_env):
    """Kill one shard's worker after a few answers: the run fails saying to rerun; the
    records written before stay, and the rerun asks the model only for the others."""
    data = write_dataset(tmp_path)
    out = tmp_path / "r.jsonl"
    killed: list[int] = []
    asked = itertools.count()
    held = threading.Event()  # set once a worker is killed: requests after the 4th wait for it

    def respond(body: dict[str, Any]) -> Any:
        if next(asked) >= 4:
            held.wait(120)  # the shards stay mid-way however slow the machine is
        return ANSWER

    bench_env.respond_with(respond)

    def killer() -> None:
        try:
            for _ in range(20_000):  # bounded poll for the event: 4 answers seen by the server
                if len(bench_env.answered) >= 4 and (pids := _shard_worker_pids()):
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])
                    return
                threading.Event().wait(0.005)
        finally:
            held.set()

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    with pytest.raises(BackendError, match="run the same command again"):
        run(data, out, ray=True, ray_shards=2, concurrency=1, report=False)
    thread.join(timeout=60)
    assert killed, "no shard worker was found to kill"
    parts = sorted((tmp_path / "r.d").glob("part-*.jsonl"))
    before: dict[str, Any] = {}
    for part in parts:
        before.update(records_by_key(part))
    llm_before = [k for k, r in before.items() if r["error"] is None]
    assert 0 < len(before) < 14 and not out.exists()
    bench_env.reset()
    bench_env.latency_s = 0.0
    bench_env.respond_with(lambda body: ANSWER)
    run(data, out, ray=True, ray_shards=2, concurrency=2, report=False)
    after = records_by_key(out)
    assert len(after) == 14
    assert all(after[k] == before[k] for k in before)  # nothing finished was run again or lost
    assert len(bench_env.answered) == 12 - len(llm_before)  # 12 LLM items; the broken file has no call
    assert not (tmp_path / "r.d").exists()


def test_max_calls_per_s_holds_across_the_cluster(tmp_path, bench_env):
    """Two shards × 4 in flight, capped at 2 requests/s by the shared limiter: the shared
    slots are 1/rate apart from the run's start, so the last of the 12 requests cannot reach
    the server before (12 - 1) / rate seconds after the run began. A busy machine only
    makes requests later, so this bound holds under any load (a per-window count did not:
    a late first request bunches with the next ones)."""
    data = write_dataset(tmp_path)
    rate = 4
    begun = time.monotonic()  # the server stamps requests with time.monotonic() too
    run(data, tmp_path / "r.jsonl", ray=True, ray_shards=2, concurrency=4, report=False, max_calls_per_s=rate)
    starts = sorted(r.started for r in bench_env.requests)
    assert len(starts) == 12
    assert starts[-1] - begun >= (len(starts) - 1) / rate, [round(t - begun, 3) for t in starts]
    assert len(orjson.loads((tmp_path / "r.jsonl").read_bytes().splitlines()[0])["key"]) > 0
