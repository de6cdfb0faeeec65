"""Release selection of ``whenpro build``: time and candidate evaluations for 12, 60 and
200 seed runs with ``--per-seed 3``, against the same search without its work budget.

For each size it runs ``arith_team`` that many times (in memory, seeds 5000 on), and
makes a pool of decisive items as a build with ``--per-seed 3`` holds them: 1 to 3 items
per seed run, at the (step, mode) pairs the build tries first there (its seeded attempt
order), with their real step class and position tenth (a stand-in for which attempts turn
out decisive: no attempt is run, so the numbers are the selection's alone). It then times

* **release** — :func:`whenpro_core.dataset.build_store.balance`, the search the release and
  each planning round run, with its default budget (:class:`~whenpro_core.dataset.build_store.Work`);
* **planning round** — :func:`whenpro_core.dataset.build_adapt.next_round`, the adaptive
  round that hung in issue 33 (a release search for every kind of item it might try);

and the **baseline**: the two without their budgets (``WORK_PER_PAIR`` and
``PLAN_WORK_PER_PAIR`` set to 10^9), each planning check a whole quick release search of the
pool with the item added (not the one size past the current release), as before the budget;
the round's one quick search of the release is this branch's (before, a full search and a
quick one); skipped at 200 seed runs,
where it grows with the cube of the pool and more (``--baseline-200`` runs it anyway).
Printed per size: the pool, the release size and modes, the seconds, the candidate
evaluations per pair of candidates, and the ratios budgeted / baseline.

Usage::

    /work/main/.venv/bin/python benchmarks/build_selection.py [--sizes 12,60,200] [--baseline-200]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from whenpro_core.dataset import build_adapt, build_store  # noqa: E402
from whenpro_core.dataset.build_adapt import next_round  # noqa: E402
from whenpro_core.dataset.build_plan import (  # noqa: E402
    Seed,
    attempt_order,
    fitting_modes,
    judge_position,
    parse_modes,
    step_class,
)
from whenpro_core.dataset.build_store import Work, balance, seeded_order  # noqa: E402
from whenpro_core.dataset.journal import Entry  # noqa: E402
from whenpro_core.envs import get_env  # noqa: E402
from whenpro_core.envs.run import run_env  # noqa: E402

MODES = parse_modes(None, "offline")


def seed_runs(n: int) -> list[Seed]:
    """``n`` successful arith_team runs as build seeds."""
    env = get_env("arith_team")
    out = []
    for s in range(5000, 5000 + 4 * n):
        trace = run_env(env, s)
        if trace.outcome.value == "success":
            out.append(Seed(ref=f"run-{s}", id=f"arith_team-s{s}", trace=trace))
        if len(out) == n:
            break
    return out


def decisive_pool(seeds: list[Seed]) -> list[Entry]:
    """1 to 3 decisive items per seed run at its first attempted (step, mode) pairs."""
    rng = random.Random(2)
    pool = []
    for s in seeds:
        assert s.trace is not None
        for index, mode in attempt_order(s.trace, fitting_modes(s.trace, MODES), 0)[: rng.choice([1, 2, 3, 3])]:
            coord = s.trace.steps[index].coord or str(index)
            pool.append(
                Entry(
                    key=f"{s.id}|{coord}|{mode}",
                    seed=s.id,
                    seed_ref=s.ref,
                    step=coord,
                    step_index=index,
                    mode=mode,
                    status="kept",
                    step_class=step_class(s.trace.steps[index]),
                    position=judge_position(s.trace, coord),
                    form_picks=["length outlier"] if rng.random() < 0.15 else [],
                    chance=0.1,
                )
            )
    return seeded_order(pool, 0)


def measure(seeds: list[Seed], pool: list[Entry]) -> dict[str, float]:
    """Seconds and evaluations of the release search and of one planning round."""
    held = sorted({e.step_class or "?" for e in pool})
    classes = {c: 1 / len(held) for c in held}
    work = Work.for_pool(len(pool))
    start = time.perf_counter()
    chosen, _ = balance(pool, 0.25, classes, 3, work=work)
    release = time.perf_counter() - start
    planned = Work(0)
    start = time.perf_counter()
    rounds = next_round(
        seeds, pool, set(), {}, modes=MODES, share=0.25, classes=classes, per_seed=3, seed=0, work=planned
    )
    planning = time.perf_counter() - start
    return {
        "release_s": release,
        "release_work": work.spent,
        "kept": len(chosen),
        "modes": len({e.mode for e in chosen}),
        "plan_s": planning,
        "plan_work": planned.spent,
        "aimed": sum(len(c) for c in rounds),
    }


def whole_search(
    kept: list[Entry], share: float, classes: dict[str, float], per_seed: int | None, size: int, work: Work
) -> bool:
    """The planning check as it was: a whole quick release search with the item added."""
    return len(balance(kept, share, classes, per_seed, quick=True, work=work)[0]) > size


def unbounded(seeds: list[Seed], pool: list[Entry]) -> dict[str, float]:
    """:func:`measure` with the search as it ran before (no budget, whole searches)."""
    saved = build_store.WORK_PER_PAIR, build_adapt.PLAN_WORK_PER_PAIR, build_adapt.grows_past
    build_store.WORK_PER_PAIR, build_adapt.PLAN_WORK_PER_PAIR, build_adapt.grows_past = 10**9, 10**9, whole_search
    try:
        return measure(seeds, pool)
    finally:
        build_store.WORK_PER_PAIR, build_adapt.PLAN_WORK_PER_PAIR, build_adapt.grows_past = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="12,60,200", help="seed-run counts (default 12,60,200)")
    parser.add_argument("--baseline-200", action="store_true", help="also run the unbounded baseline past 100 seeds")
    args = parser.parse_args()
    print("seeds pool | release: kept modes s eval/pair | planning round: s eval/pair aimed | baseline (no budget)")
    for n in (int(x) for x in args.sizes.split(",")):
        seeds = seed_runs(n)
        pool = decisive_pool(seeds)
        got = measure(seeds, pool)
        pairs = len(pool) ** 2
        line = (
            f"{n:5d} {len(pool):4d} | {got['kept']:4.0f} {got['modes']:3.0f} {got['release_s']:7.2f}s "
            f"{got['release_work'] / pairs:6.1f} | {got['plan_s']:7.2f}s {got['plan_work'] / pairs:6.1f} "
            f"{got['aimed']:4.0f} | "
        )
        if n > 100 and not args.baseline_200:
            print(line + "skipped (cubic; --baseline-200 runs it)", flush=True)
            continue
        base = unbounded(seeds, pool)
        print(
            line + f"kept {base['kept']:.0f}, {base['modes']:.0f} modes, release {base['release_s']:.2f}s "
            f"(x{got['release_s'] / base['release_s']:.2f}), planning {base['plan_s']:.2f}s "
            f"(x{got['plan_s'] / base['plan_s']:.2f}), {base['aimed']:.0f} aimed",
            flush=True,
        )


if __name__ == "__main__":
    main()
