"""The Ray layer of ``whenpro bench --ray`` / ``--ray-address ADDR`` and of ``whenpro
build --ray`` (issue 18): the session, the cluster-wide rate limiter and the task runner.

Only the scheduler changes: the driver plans as usual, deals the items still to run into
shards (:func:`whenpro_core.scale.shards.deal`) and starts one Ray task per shard. A bench
task (:func:`whenpro_core.bench.ray_run.run_shard`) makes its own judges and runs the normal
local runner (:func:`whenpro_core.bench.runner.run_items`, ``concurrency`` items in flight)
appending to its own part file ``part-NNNN.jsonl``; the driver waits for every shard, then the
caller merges the parts (:func:`whenpro_core.bench.results_parts.merge_parts`).

Workers need what the driver has: whenpro importable, the dataset at the same path (a
shared file system), the part folder writable, and the provider settings (API keys in
their environment or config file). A local ``--ray`` cluster is started from the driver's
process, so its workers inherit the driver's environment.

A build (:mod:`whenpro_core.dataset.build`) uses the same session, limiter and task runner
(:func:`run_tasks`) for each round of its attempts: a task
(:func:`whenpro_core.dataset.build.run_build_shard`) runs its seed runs' chains of attempts
into its own journal part.

``max_calls_per_s`` starts one :class:`RateLimiterActor` that every worker asks for a
request slot (:mod:`whenpro_core.scale.ratelimit`): the cap is cluster-wide.

Failures: a task's ConfigError/BackendError is re-raised on the driver as is; a worker that
dies (killed, out of memory) fails its shard with a BackendError saying to rerun; either
way the driver first waits for the other shards, so every finished record is kept. Tasks
are not retried by Ray (``max_retries=0``): the rerun of the command is the retry, and it
skips what is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from whenpro_core.errors import BackendError, ConfigError, WhenproError
from whenpro_core.scale.ratelimit import RateLimiter

#: What to install for ``--ray``.
RAY_EXTRA = "pip install 'whenpro[ray]'"


def import_ray() -> ModuleType:
    """The ``ray`` module; ConfigError naming the extra when it is not installed."""
    try:
        import ray  # deliberate lazy import: Ray is an optional extra and slow to import
    except ModuleNotFoundError:
        raise ConfigError("--ray needs Ray, which is not installed", expected=RAY_EXTRA) from None
    return ray


@contextlib.contextmanager
def ray_session(address: str | None) -> Iterator[ModuleType]:
    """Ray connected for the run: ``address`` an existing cluster (``ray://HOST:10001``,
    ``HOST:6379`` or ``auto``), ``None`` a local Ray started now and stopped after. A
    session already open in this process (a test's, a notebook's) is used as is and left
    open. ConfigError when the cluster cannot be reached."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    if address is not None:
        check_reachable(address)
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(
            f"cannot connect to the Ray cluster at {address}: {exc}",
            expected="--ray-address of a running cluster (ray start --head), or --ray",
        ) from None
    try:
        yield ray
    finally:
        ray.shutdown()


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """ConfigError when ``HOST:PORT`` (optionally ``ray://``) does not accept a TCP
    connection within ``timeout_s`` (Ray itself would retry for minutes). Other forms
    (``auto``) are left to Ray."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ConfigError(
            f"cannot connect to the Ray cluster at {address}: {exc.strerror or exc}",
            expected="--ray-address of a running cluster (ray start --head), or --ray",
        ) from None


class RateLimiterActor:
    """The shared rate limiter, run as a Ray actor (one call at a time): ``reserve()`` as
    :meth:`RateLimiter.reserve`, slots on the wall clock (``time.time``, the clock the
    cluster's machines share)."""

    def __init__(self, rate: float) -> None:
        self._limiter = RateLimiter(rate, clock=time.time)

    def reserve(self) -> float:
        return self._limiter.reserve()


def actor_wait(limiter: Any) -> Callable[[], Any]:
    """An awaitable hook that waits for a slot of a :class:`RateLimiterActor` handle."""

    async def wait() -> None:
        slot = await limiter.reserve.remote()
        await asyncio.sleep(max(0.0, slot - time.time()))

    return wait


def cluster_cpus(ray: ModuleType) -> int:
    """The CPUs of the connected cluster (at least 1): the default number of shards."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def rate_limiter(ray: ModuleType, max_calls_per_s: float | None) -> Any:
    """A :class:`RateLimiterActor` handle for ``max_calls_per_s`` (``None``: no cap, no actor)."""
    if max_calls_per_s is None:
        return None
    return ray.remote(num_cpus=0)(RateLimiterActor).remote(max_calls_per_s)


def run_tasks(
    ray: ModuleType,
    task: Any,
    payloads: Sequence[tuple[Any, ...]],
    part_of: Callable[[int], Path],
    on_done: Callable[[int, Any], None],
) -> None:
    """Start the remote function ``task`` once per payload (shard ``i`` gets
    ``payloads[i]`` as its arguments and writes ``part_of(i)``) and call
    ``on_done(i, result)`` as each ends. Every shard ends before the first shard's error
    is raised: its WhenproError as is, a dead worker's as a BackendError saying to rerun."""
    refs = {task.remote(*args): i for i, args in enumerate(payloads)}
    first_error: WhenproError | None = None
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        index = refs[ready[0]]
        try:
            value = ray.get(ready[0])
        except Exception as exc:  # noqa: BLE001 - every shard ends before the first error is raised
            first_error = first_error or _shard_error(ray, exc, part_of(index))
            continue
        on_done(index, value)
    if first_error is not None:
        raise first_error


def _shard_error(ray: ModuleType, exc: BaseException, part: Path) -> WhenproError:
    cause = getattr(exc, "cause", None)
    if isinstance(exc, ray.exceptions.RayTaskError) and isinstance(cause, WhenproError):
        return cause
    if isinstance(exc, WhenproError):
        return exc
    return BackendError(
        f"a Ray shard failed ({type(exc).__name__}); its finished records are kept; "
        "run the same command again to resume",
        path=part,
    )


__all__ = [
    "RAY_EXTRA",
    "RateLimiterActor",
    "actor_wait",
    "cluster_cpus",
    "import_ray",
    "rate_limiter",
    "ray_session",
    "run_tasks",
]
