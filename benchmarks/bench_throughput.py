"""Throughput of ``whenpro bench`` (the runner API: plan -> run_items, all-at-once, one
LLM call per trace) against the local LLM test server with a fixed latency per call, for
a few concurrency values: achieved requests/s against the ideal (concurrency ÷ latency).

Baseline in the same run: the ``ag2tracer`` package (PyPI ``ag2tracer`` 0.1.1, "Failure
attribution on multi-agent traces"), running its all-at-once protocol on the same Who&When
traces against the same server. ag2tracer's API is synchronous (``all_at_once(trace,
model)`` -> one ``litellm.completion`` call), so it is driven the way a user would
parallelise it: a thread pool of ``concurrency`` workers. It reaches the local server
through litellm's OpenAI base URL (``OPENAI_BASE_URL``/``OPENAI_API_BASE`` and
``litellm.api_base``).

ag2tracer is not a whenpro dependency; install it into the same environment to get the
baseline rows (without it the script says so and prints whenpro's rows only):

    python -m pip install ag2tracer==0.1.1

or, to keep it (and litellm) out of the environment, into a folder of its own that is
searched *after* the environment's packages (so both tools use the same openai/pydantic):

    python -m pip install --target /tmp/ag2lib ag2tracer==0.1.1
    python benchmarks/bench_throughput.py --baseline-site /tmp/ag2lib

Usage (from the repository root):

    python benchmarks/bench_throughput.py [WHO_AND_WHEN_DIR] [--latency 0.1]
        [--concurrency 1,4,16,32] [--traces 64] [--baseline-site DIR]

The release-sized setting of issue 18 is ``--latency 1.0 --traces 256 --concurrency 32``
(target: >= 90% of ideal). The traces are the first ``--traces`` files of Who&When's
Algorithm-Generated subset (default folder as in ``benchmarks/protocol_cost.py``); when
more are asked for than the subset has (88), its files are repeated as renamed copies in a
temporary folder, so every item is a distinct trace for both tools. whenpro's response cache is off, so
every trace is one HTTP call for both tools.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_tmp = tempfile.mkdtemp(prefix="whenpro-bench-")
atexit.register(shutil.rmtree, _tmp, ignore_errors=True)  # config, cache, trace copies
os.environ["WHENPRO_CONFIG_DIR"] = os.path.join(_tmp, "config")  # never the user's config or cache
os.environ["WHENPRO_CACHE_DIR"] = os.path.join(_tmp, "cache")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no model-price download at import

from tests.support.judge_oracle import wants_structured  # noqa: E402
from tests.support.llm_server import LLMServer  # noqa: E402
from whenpro_core.formats.registry import iter_files, natural_key  # noqa: E402

ANSWER = {"agent_name": "Orchestrator", "step_number": "1", "error_mode": "R.2", "reason": "benchmark"}
TEXT = "Agent Name: Orchestrator\nStep Number: 1\nError Mode: R.2\nReason for Mistake: benchmark"


def default_dir() -> Path:
    real = os.environ.get("WHENPRO_REAL_TRACES")
    base = Path(real) if real else ROOT.parent / "shared" / "real_traces"
    return base / "who-and-when" / "Who&When"


def bench_files(folder: Path, count: int, scratch: Path) -> list[Path]:
    """``count`` trace files: the subset's first ``count``, or all of them repeated as
    renamed copies under ``scratch`` (``copy-K-NAME``) until there are ``count``."""
    files = sorted(iter_files(folder), key=natural_key)
    if count <= len(files) or not files:
        return files[:count]
    out = list(files)
    scratch.mkdir(parents=True, exist_ok=True)
    while len(out) < count:
        src = files[len(out) % len(files)]
        dst = scratch / f"copy-{len(out) // len(files)}-{src.name}"
        dst.write_bytes(src.read_bytes())
        out.append(dst)
    return out


def answer(body: dict) -> object:
    """The same verdict for every trace: as JSON when a schema is asked, else as lines."""
    return ANSWER if wants_structured(body) else TEXT


class RemoteServer:
    """The test server in a child process (its request handling must not take CPU from
    the client being measured: the machine has two cores). ``requests`` is the number of
    requests it has answered so far."""

    def __init__(self, latency: float) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, latency), daemon=True)
        self._proc.start()
        self.openai_base_url = self._conn.recv()

    @property
    def requests(self) -> int:
        self._conn.send("count")
        return self._conn.recv()

    def close(self) -> None:
        self._conn.send("stop")
        self._proc.join(timeout=10)


def _serve(conn, latency: float) -> None:
    with LLMServer(latency_s=latency) as server:
        server.respond_with(answer)
        conn.send(server.openai_base_url)
        while True:
            msg = conn.recv()
            if msg == "stop":
                return
            conn.send(len(server.requests))


# ---------------------------------------------------------------------- whenpro


async def run_whenpro(files: list[Path], server: RemoteServer, concurrency: int) -> tuple[float, float, int, int]:
    """(seconds, CPU seconds of this process, HTTP requests, failed items) for ``whenpro bench``
    over ``files``."""
    from whenpro_core.attribution.llm_judge import make_judge
    from whenpro_core.attribution.prompts import Message
    from whenpro_core.bench import runner
    from whenpro_core.bench.records import ResultsFile
    from whenpro_core.config import load_settings
    from whenpro_core.formats import walk

    model = "openai:gpt-4.1"
    settings = load_settings(
        model=model,
        openai_api_key="sk-bench",
        openai_base_url=server.openai_base_url,
        concurrency=concurrency,
        cache=False,
        timeout_s=60.0,
        max_retries=2,
    )
    rows = [r for f in files for r in walk(f)]
    items = runner.plan(rows, ["all-at-once"], [model])
    judge = make_judge(model, settings=settings, use_cache=False, threaded=True)  # as bench's make_judges
    results = ResultsFile(Path(tempfile.mkdtemp(prefix="whenpro-tp-")) / "results.jsonl")
    await judge.ask([Message.text("user", "warm-up")])  # SDK import and client set-up, not timed
    before = server.requests
    t0, cpu0 = time.perf_counter(), time.process_time()
    try:
        stats = await runner.run_items(items, results, concurrency=concurrency, judges={model: judge})
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    finally:
        results.close()
        await judge.aclose()
    return seconds, cpu, server.requests - before, stats.errors


# ---------------------------------------------------------------------- ag2tracer


def ag2tracer_or_reason():
    """The ``ag2tracer`` module, or the reason it cannot run here."""
    try:
        import ag2tracer  # noqa: F401
        import litellm  # noqa: F401
    except ImportError as exc:
        return None, (
            f"ag2tracer is not installed ({exc.name} missing); for this baseline: "
            f"{sys.executable} -m pip install ag2tracer==0.1.1"
        )
    return ag2tracer, None


def run_ag2tracer(module, files: list[Path], server: RemoteServer, concurrency: int) -> tuple[float, float, int, int]:
    """(seconds, CPU seconds of this process, HTTP requests, failed traces) for ag2tracer's
    all-at-once over ``files``."""
    import litellm

    os.environ["OPENAI_API_KEY"] = "sk-bench"
    os.environ["OPENAI_BASE_URL"] = os.environ["OPENAI_API_BASE"] = server.openai_base_url
    litellm.api_base = server.openai_base_url
    docs = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    module.all_at_once(docs[0], model="openai/gpt-4o")  # warm-up: imports and client, not timed
    before = server.requests
    failed = 0
    t0, cpu0 = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(module.all_at_once, d, model="openai/gpt-4o") for d in docs]
        for fut in futures:
            try:
                fut.result()
            except Exception:  # noqa: BLE001 - counted and reported
                failed += 1
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return seconds, cpu, server.requests - before, failed


# ---------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=default_dir())
    ap.add_argument("--latency", type=float, default=0.1, help="seconds per call at the server")
    ap.add_argument("--concurrency", default="1,4,16,32")
    ap.add_argument("--traces", type=int, default=64)
    ap.add_argument(
        "--baseline-site", type=Path, help="a folder with ag2tracer installed (pip --target), searched last"
    )
    args = ap.parse_args()
    if args.baseline_site:
        sys.path.append(str(args.baseline_site))
    subset = args.folder / "Algorithm-Generated"
    if not subset.is_dir():
        sys.exit(f"no Who&When folder at {args.folder} (give its path; see the docstring)")
    available = len(list(iter_files(subset)))
    files = bench_files(subset, args.traces, Path(_tmp) / "copies")
    levels = [int(c) for c in args.concurrency.split(",")]
    module, why = ag2tracer_or_reason()
    rows = []
    server = RemoteServer(args.latency)
    try:
        for c in levels:
            seconds, cpu, calls, failed = asyncio.run(run_whenpro(files, server, c))
            rows.append(("whenpro bench", c, seconds, cpu, calls, failed))
            if module is not None:
                try:
                    seconds, cpu, calls, failed = run_ag2tracer(module, files, server, c)
                    rows.append(("ag2tracer 0.1.1", c, seconds, cpu, calls, failed))
                except Exception as exc:  # noqa: BLE001 - say why the baseline could not run
                    why = f"ag2tracer could not run against {server.openai_base_url}: {type(exc).__name__}: {exc}"
                    module = None
    finally:
        server.close()
    repeated = f" ({available} files repeated as copies)" if len(files) > available else ""
    print(
        f"--latency {args.latency:g} --traces {args.traces}: {len(files)} Who&When traces (Algorithm-Generated)"
        f"{repeated}, all-at-once, server latency {args.latency * 1000:.0f} ms per call; whenpro cache off"
    )
    head = (
        f"{'tool':<16} {'concurrency':>11} {'seconds':>8} {'requests':>8} {'req/s':>8} {'ideal':>8} "
        f"{'of ideal':>8} {'failed':>6} {'CPU ms/item':>11}"
    )
    print(head)
    print("-" * len(head))
    base: dict[int, float] = {}
    versus: dict[int, float] = {}
    for tool, c, seconds, cpu, calls, failed in rows:
        rate = calls / seconds if seconds else 0.0
        ideal = c / args.latency
        line = (
            f"{tool:<16} {c:>11} {seconds:>8.2f} {calls:>8} {rate:>8.1f} {ideal:>8.1f} {rate / ideal:>8.0%} {failed:>6}"
            f" {cpu * 1000 / max(calls, 1):>11.1f}"
        )
        if tool.startswith("ag2tracer") and base.get(c):
            line += f"   whenpro x{base[c] / rate:.2f} vs ag2tracer" if rate else ""
            versus[c] = base[c] / rate if rate else float("inf")
        elif tool == "whenpro bench":
            base[c] = rate
        print(line)
    if versus:
        worst = min(versus, key=versus.get)
        verdict = "yes" if versus[worst] >= 1 else "no"
        print(f"whenpro >= ag2tracer at every concurrency: {verdict} (lowest x{versus[worst]:.2f} at {worst})")
    if why:
        print(f"baseline not run: {why}")
    print(
        "each item: whenpro loads, renders, asks (structured output), scores and appends a record; "
        "ag2tracer formats a prompt and asks for text; CPU ms/item: this process's CPU time (all its "
        "threads; the server runs in another process) per request"
    )


if __name__ == "__main__":
    main()
