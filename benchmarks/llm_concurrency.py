"""Throughput of the LLM layer against the local test server with a fixed per-call latency.

Claims measured (ratios printed against a named baseline, in one run):
1. concurrency: N calls with ``concurrency=8`` vs the baseline ``concurrency=1`` (sequential).
2. response cache: the same N calls answered from the persistent cache vs the baseline of
   real calls.

Run from the repository root:  /work/venv/bin/python benchmarks/llm_concurrency.py [N] [latency_s]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_tmp = tempfile.mkdtemp(prefix="whenpro-bench-")
os.environ["WHENPRO_CONFIG_DIR"] = os.path.join(_tmp, "config")  # never the user's config or cache
os.environ["WHENPRO_CACHE_DIR"] = os.path.join(_tmp, "cache")

from tests.support.llm_server import LLMServer  # noqa: E402
from whenpro_core.config import load_settings  # noqa: E402
from whenpro_core.llm import LLMRequest, open_backend  # noqa: E402


async def run(server: LLMServer, n: int, concurrency: int, cache: bool) -> tuple[float, int]:
    settings = load_settings(
        model="openai:gpt-4.1",
        openai_api_key="sk-bench",
        openai_base_url=server.openai_base_url,
        concurrency=concurrency,
        cache=cache,
    )
    async with open_backend(settings=settings) as backend:
        await backend.complete(LLMRequest.simple("warm-up"), cache=False)  # SDK import + client
        before = len(server.requests)
        t0 = time.perf_counter()
        await asyncio.gather(
            *[backend.complete(LLMRequest.simple(f"Is step {i} the decisive error?")) for i in range(n)]
        )
        return time.perf_counter() - t0, len(server.requests) - before


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
    with LLMServer(latency_s=latency) as server:
        server.respond_with(lambda body: "no")
        seq, seq_calls = asyncio.run(run(server, n, 1, cache=False))
        par, par_calls = asyncio.run(run(server, n, 8, cache=False))
        miss, miss_calls = asyncio.run(run(server, n, 8, cache=True))
        hit, hit_calls = asyncio.run(run(server, n, 8, cache=True))
    print(f"{n} calls, server latency {latency * 1000:.0f} ms")
    print(f"baseline  concurrency=1         {seq:7.3f} s  ({seq_calls} HTTP calls)")
    print(
        f"          concurrency=8         {par:7.3f} s  ({par_calls} HTTP calls)  speed-up x{seq / par:.1f} vs baseline"
    )
    print(f"baseline  cache miss (8)        {miss:7.3f} s  ({miss_calls} HTTP calls)")
    print(
        f"          cache hit  (8)        {hit:7.3f} s  ({hit_calls} HTTP calls)  speed-up x{miss / hit:.1f} vs cache miss"  # noqa: E501
    )


if __name__ == "__main__":
    main()
