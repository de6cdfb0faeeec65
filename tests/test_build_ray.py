"""``whenpro build --ray`` on a real local Ray (``ray.init(num_cpus=2)``, one session for
the module: Ray starts slowly on a small machine): a build whose rounds run as Ray tasks,
each into its own journal part, gives the release of a local build; a shard killed mid-way
keeps its finished attempts, which the rerun reuses; ``--max-calls-per-s`` holds for the
LLM generator's requests across the cluster, counted at the local LLM test server."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_until
from test_build import NOW, SALT, tree
from test_build_shards import journal
from tests.support.fixtures import TEST_KEY
from tests.support.inject_model import InjectModel
from tests.support.llm_server import LLMServer
from tests.support.local_ray import local_ray
from whenpro_core.dataset.build import BuildOptions, BuildResult, Spread, run_build
from whenpro_core.dataset.journal import journal_layout
from whenpro_core.errors import BackendError

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'whenpro[ray]')")
#: One xdist worker runs every test that starts a local Ray (--dist loadgroup, pyproject):
#: two local clusters started at once on the two cores starved each other.
pytestmark = pytest.mark.xdist_group("ray")

REPO = Path(__file__).resolve().parent.parent
MODEL = "openai:gpt-4.1"


def llm(seed: int) -> BuildOptions:
    """An LLM-generator build; each test its own ``seed`` (prompts, so the workers' shared
    response cache does not answer one test's questions with another's)."""
    return BuildOptions(
        generator="llm", model=MODEL, modes=("R.3",), per_seed=1, concurrency=1, detect=False, seed=seed
    )


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(cache_min_tokens=1 << 40) as srv:
        yield srv


@pytest.fixture(scope="module")
def ray_session(server: LLMServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local Ray for the module; its workers reach the test server with a test key."""
    with local_ray(server, tmp_path_factory.mktemp("ray-home")) as started:
        yield started


@pytest.fixture
def model(ray_session: Any, server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> InjectModel:
    """The driver sees the same server and key as the workers; the server starts clean and
    answers the generator's two questions (a rewrite that replays to a wrong answer)."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    server.reset()
    server.latency_s = 0.0
    scripted = InjectModel(
        plan={"flaw": "Adds the wrong total.", "wrong_result": "a later end time"},
        rewrites=[{"content": "The total is 999 minutes.", "tool_calls": None}],
    )
    server.respond_with(scripted)
    return scripted


def build(seeds: Path, out: Path, opts: BuildOptions, spread: Spread | None = None) -> BuildResult:
    return asyncio.run(run_build(seeds, out, opts, spread=spread, now=NOW, salt=SALT))


def test_a_ray_build_gives_the_release_of_a_local_build(tmp_path, seeds, ray_session):
    opts = BuildOptions(per_seed=2, concurrency=2)  # offline; adaptive rounds and the filter on
    local = build(seeds, tmp_path / "local", opts)
    sharded = build(seeds, tmp_path / "ray", opts, Spread(ray=True, shards=2))
    assert sharded.ran == local.ran > 0 and local.manifest["counts"]["kept"] > 0
    assert not journal_layout(tmp_path / "ray").parts.exists()  # every part merged into journal.jsonl
    assert journal(tmp_path / "ray").keys() == journal(tmp_path / "local").keys()
    assert tree(tmp_path / "ray") == tree(tmp_path / "local")  # manifest, release, provenance: byte for byte


def _shard_worker_pids() -> list[int]:
    """Ray worker processes running a build shard (Ray titles them ``ray::run_build_shard``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(b"ray::run_build_shard"):
                pids.append(int(entry.name))
    return pids


@pytest.mark.timeout(900)  # three builds (killed, resumed, local): on a loaded machine past the 300 s default
def test_a_shard_killed_mid_way_loses_nothing_on_resume(tmp_path, seeds, server, model):
    """Kill one shard's worker once the model has answered a few questions: the build fails
    saying to rerun, the attempts journalled before are kept (merged from the parts), and
    the rerun journals the others without running those again (their lines, timings
    included, are unchanged)."""
    out = tmp_path / "ds"
    server.latency_s = 0.2  # slow enough that the shards are mid-way when one is killed
    killed: list[int] = []

    def killer() -> None:
        wait_until(lambda: len(server.answered) >= 6, "6 answers", timeout=120)
        server.latency_s = 60.0  # hold every shard in its next call: none can finish before the kill
        pids = wait_until(_shard_worker_pids, "a shard worker", timeout=120)
        for pid in pids:  # every shard still running (a loaded run killed a finished one, and nothing failed)
            os.kill(pid, signal.SIGKILL)
        killed.extend(pids)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    with pytest.raises(BackendError, match="run the same command again"):
        build(seeds, out, llm(1), Spread(ray=True, shards=2))
    thread.join(timeout=120)
    assert killed, "no shard worker was found to kill"
    before = journal(out)
    assert before and not journal_layout(out).parts.exists()  # the parts were merged at the failure
    server.latency_s = 0.0
    resumed = build(seeds, out, llm(1), Spread(ray=True, shards=2))
    after = journal(out)
    assert all(after[k] == before[k] for k in before)  # kept, and not run again
    assert resumed.ran == len(after) - len(before) > 0
    build(seeds, tmp_path / "local", llm(1))  # the same build uninterrupted, in one process
    assert after.keys() == journal(tmp_path / "local").keys()


def test_max_calls_per_s_caps_the_generator_across_the_cluster(tmp_path, seeds, server, model):
    """Two shards, capped at 3 requests/s by the shared limiter: request slots are 1/rate
    apart, so n requests span at least (n - 1) / rate seconds at the server; one interval
    is left for a first request that reaches the server late after its slot (the run's
    start is no reference: it includes starting the workers). Uncapped, the same requests
    come within about half a second."""
    rate = 3
    build(seeds, tmp_path / "ds", llm(2), Spread(ray=True, shards=2, max_calls_per_s=rate))
    starts = sorted(r.started for r in server.requests)
    assert len(starts) >= 10  # two questions per attempt, at least one attempt per seed run
    assert starts[-1] - starts[0] >= (len(starts) - 2) / rate, [round(t - starts[0], 3) for t in starts]
