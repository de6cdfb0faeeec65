"""A sharded ``whenpro bench --ray`` / ``--ray-address ADDR`` (issue 18): the driver deals the items
still to run into shards (:func:`whenpro_core.scale.shards.deal`) and starts one Ray task per
shard (:func:`run_on_ray`); a task (:func:`run_shard`) makes its own judges and runs the normal
local runner (:func:`whenpro_core.bench.runner.run_items`) into its own part file. The Ray
session, the cluster-wide rate limiter and the task runner are :mod:`whenpro_core.scale.ray_backend`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from whenpro_core.bench import runner
from whenpro_core.bench.records import ResultsFile
from whenpro_core.scale.ratelimit import gate_judges
from whenpro_core.scale.ray_backend import actor_wait, cluster_cpus, rate_limiter, ray_session, run_tasks
from whenpro_core.scale.shards import Layout, deal


def run_shard(
    items: Sequence[runner.WorkItem],
    part: str,
    concurrency: int,
    use_cache: bool,
    limiter: Any = None,
    images: str | None = None,
    base_url: str | None = None,
) -> runner.RunStats:
    """One shard, in a Ray worker: the normal runner over ``items`` appending to the part
    file ``part``; LLM requests wait for ``limiter`` (an actor handle) when given."""
    judges = runner.make_judges(
        {i.model for i in items}, use_cache=use_cache, concurrency=concurrency, images=images, base_url=base_url
    )
    if limiter is not None:
        gate_judges(judges, actor_wait(limiter))
    with ResultsFile(part) as results:
        return asyncio.run(runner.run_items(items, results, concurrency=concurrency, judges=judges))


def run_on_ray(
    todo: Sequence[runner.WorkItem],
    where: Layout,
    *,
    address: str | None,
    shards: int | None = None,
    concurrency: int = 8,
    use_cache: bool = True,
    max_calls_per_s: float | None = None,
    images: str | None = None,
    base_url: str | None = None,
    on_shard: Callable[[int, runner.RunStats], None] | None = None,
) -> runner.RunStats:
    """Run ``todo`` as Ray tasks, one per shard (default: one per CPU of the cluster),
    each writing ``where.part(i)``; returns the summed stats. Raises the first shard's
    WhenproError after every shard has ended."""
    with ray_session(address) as ray:
        count = shards or cluster_cpus(ray)
        limiter = rate_limiter(ray, max_calls_per_s)
        task = ray.remote(num_cpus=1, max_retries=0)(run_shard)
        where.parts.mkdir(parents=True, exist_ok=True)
        payloads = [
            (list(chunk), str(where.part(i)), concurrency, use_cache, limiter, images, base_url)
            for i, chunk in enumerate(deal(todo, count))
        ]
        total = runner.RunStats()

        def add(index: int, stats: runner.RunStats) -> None:
            total.written += stats.written
            total.errors += stats.errors
            total.read, total.judged = total.read + stats.read, total.judged + stats.judged
            total.seconds = max(total.seconds, stats.seconds)
            total.usage, total.spent = total.usage.add(stats.usage), total.spent.add(stats.spent)
            for kind, n in stats.kinds.items():
                total.kinds[kind] = total.kinds.get(kind, 0) + n
            if on_shard:
                on_shard(index, stats)

        run_tasks(ray, task, payloads, where.part, add)
        return total


__all__ = ["run_on_ray", "run_shard"]
