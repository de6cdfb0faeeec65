"""Release selection of ``whenpro build``: seconds for 12, 60 and 200 seed runs with
``--per-seed 3``, against the same search one candidate evaluation at a time (the baseline:
the search before issue 33 round 3, :func:`tests.support.build_pool.one_by_one_selections`,
which chooses the same entries and counts the same evaluations).

For each size it runs ``arith_team`` that many times (seeds 5000 on) and times, with the
search and with the baseline:

* **release** — :func:`whenpro_core.dataset.build_store.balance` over a pool of decisive
  items as a ``--per-seed 3`` build holds them (:func:`tests.support.build_pool.decisive_pool`:
  1 to 3 items per seed run at the pairs the build tries first, real step classes and
  positions; no attempt is run), with its default budget;
* **planning round** — :func:`whenpro_core.dataset.build_adapt.next_round` over that pool;
* **whole build** — ``whenpro build RUNS --out DS --per-seed 3`` in this process
  (:func:`whenpro_core.dataset.build.run_build`: every attempt, every adaptive round, the
  detectability and adversarial filters and the release), with its rounds counted;
* **final selection** — inside that build, the release selection at its end
  (``BuildStore._select``: adversarial filter, balance, form-pick rounds) with the audit
  form memo against the same selection with the memo bypassed
  (:func:`tests.support.build_pool.uncached`, the named baseline), asserting both choose
  the same release with the same adversarial report.

Wall and CPU seconds of this process (the machine may be shared: CPU time is what the
search itself costs). The baseline's whole build is skipped past 60 seed runs unless
``--baseline-build`` (it takes hours at 200), and the baseline's release and planning past
``--baseline-max`` seed runs. numpy (which the search imports when it first exchanges) and
scikit-learn (the adversarial filter's) are imported before anything is timed.

Usage::

    /work/main/.venv/bin/python benchmarks/build_selection.py [--sizes 12,60,200] [--baseline-build]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.build_pool import (  # noqa: E402
    MODES,
    arith_seed_runs,
    decisive_pool,
    even_classes,
    one_by_one_selections,
    uncached,
)
from whenpro_core.audit import features, form  # noqa: E402
from whenpro_core.dataset import build_store  # noqa: E402
from whenpro_core.dataset.build import BuildOptions, run_build  # noqa: E402
from whenpro_core.dataset.build_adapt import next_round  # noqa: E402
from whenpro_core.dataset.build_plan import Seed  # noqa: E402
from whenpro_core.dataset.build_store import Work, balance  # noqa: E402
from whenpro_core.formats.native import write_trace  # noqa: E402


@contextmanager
def one_by_one() -> Iterator[None]:
    """The baseline search in place of the release search's selections."""
    saved = build_store._selections
    build_store._selections = one_by_one_selections
    try:
        yield
    finally:
        build_store._selections = saved


def timed(run: Callable[[], Any]) -> tuple[Any, float, float]:
    """``run()``'s result, wall seconds and CPU seconds (this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = run()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def selection(seeds: list[Seed]) -> dict[str, Any]:
    """The release search and one planning round over the decisive pool of ``seeds``."""
    pool = decisive_pool(seeds)
    classes = even_classes(pool)
    (chosen, _), release_s, release_cpu = timed(lambda: balance(pool, 0.25, classes, 3, work=Work.for_pool(len(pool))))
    rounds, plan_s, plan_cpu = timed(
        lambda: next_round(seeds, pool, set(), {}, modes=MODES, share=0.25, classes=classes, per_seed=3, seed=0)
    )
    return {
        "pool": len(pool),
        "kept": len(chosen),
        "release": (release_s, release_cpu),
        "plan": (plan_s, plan_cpu),
        "aimed": sum(len(c) for c in rounds),
    }


@contextmanager
def final_selection_timed(times: dict[str, tuple[float, float]]) -> Iterator[None]:
    """While inside, each build's final release selection (``BuildStore._select``) runs
    twice: with the audit form memo (emptied first) and then plain (:func:`uncached`, the
    named baseline); both must choose the same release with the same adversarial report.
    ``times`` gets ``"cached"`` and ``"uncached"`` (wall, CPU) seconds; the build goes on
    with the cached result."""
    saved = build_store.BuildStore._select

    def both(store: build_store.BuildStore, run: dict[str, Any], say: Callable[[str], None]) -> Any:
        plain_run = copy.deepcopy(run)
        form.clear_caches()
        features._ngrams.cache_clear()
        got, wall, cpu = timed(lambda: saved(store, run, say))
        times["cached"] = (wall, cpu)
        with uncached():
            plain, wall, cpu = timed(lambda: saved(store, plain_run, say))
        times["uncached"] = (wall, cpu)
        assert (got, run) == (plain, plain_run), "the cached final selection chose otherwise"
        return got

    build_store.BuildStore._select = both  # type: ignore[method-assign]
    try:
        yield
    finally:
        build_store.BuildStore._select = saved  # type: ignore[method-assign]


def whole_build(seeds: list[Seed]) -> dict[str, Any]:
    """A ``--per-seed 3`` build of ``seeds`` in a fresh folder: seconds, rounds and traces kept."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        runs.mkdir()
        for s in seeds:
            assert s.trace is not None
            write_trace(s.trace, runs / f"{s.id}.json")
        final: dict[str, tuple[float, float]] = {}
        with final_selection_timed(final):
            result, wall, cpu = timed(lambda: asyncio.run(run_build(runs, Path(tmp) / "ds", BuildOptions(per_seed=3))))
    return {
        "build": (wall, cpu),
        "rounds": len(result.rounds),
        "released": len(result.manifest["traces"]),
        "final": final,
    }


def seconds(pair: tuple[float, float]) -> str:
    return f"{pair[0]:.1f}s ({pair[1]:.1f} CPU)"


def ratio(new: tuple[float, float], old: tuple[float, float]) -> str:
    return f"x{old[1] / new[1]:.1f} CPU" if new[1] > 0 else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="12,60,200", help="seed-run counts (default 12,60,200)")
    parser.add_argument("--baseline-max", type=int, default=200, help="largest size the baseline search runs at")
    parser.add_argument("--baseline-build", action="store_true", help="also the baseline's whole build past 60")
    parser.add_argument("--no-build", action="store_true", help="time the search alone, no whole builds")
    args = parser.parse_args()
    importlib.import_module("numpy")  # the search's lazy import, once per process: not timed
    with contextlib.suppress(ImportError):  # the adversarial filter's, likewise (else the memo's run pays it)
        importlib.import_module("sklearn.ensemble")
    now = datetime.now(UTC).isoformat(timespec="seconds")
    print(f"# {now}, load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    print("seeds | pool kept | release: search, one by one | planning round: search, one by one, aimed | whole build")
    for n in (int(x) for x in args.sizes.split(",")):
        seeds = arith_seed_runs(n)
        got = selection(seeds)
        line = f"{n:5d} | {got['pool']:4d} {got['kept']:3d} | {seconds(got['release'])}"
        base = None
        if n <= args.baseline_max:
            with one_by_one():
                base = selection(seeds)
            assert (base["kept"], base["aimed"]) == (got["kept"], got["aimed"]), "the baseline chose otherwise"
            line += f", {seconds(base['release'])} {ratio(got['release'], base['release'])}"
        line += f" | {seconds(got['plan'])}"
        if base is not None:
            line += f", {seconds(base['plan'])} {ratio(got['plan'], base['plan'])}"
        line += f", {got['aimed']} aimed |"
        print(line, flush=True)
        if args.no_build:
            continue
        built = whole_build(seeds)
        print(f"      build: {seconds(built['build'])}, {built['rounds']} rounds, {built['released']} kept", flush=True)
        cached, plain = built["final"]["cached"], built["final"]["uncached"]
        print(
            f"      final selection (adversarial filter on): memo {seconds(cached)}, "
            f"uncached {seconds(plain)} ({ratio(cached, plain)})",
            flush=True,
        )
        if n <= 60 or args.baseline_build:
            with one_by_one():
                old = whole_build(seeds)
            print(
                f"      one by one: {seconds(old['build'])}, {old['rounds']} rounds, {old['released']} kept "
                f"({ratio(built['build'], old['build'])})",
                flush=True,
            )


if __name__ == "__main__":
    main()
