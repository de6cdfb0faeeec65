"""Adaptive rounds of ``whenpro build``: more attempts for the seed runs whose decisive
item the release caps leave out (issue 14).

The first round runs each seed run's planned attempts (:func:`.build_plan.plan_build`)
until it has ``--per-seed`` decisive items. The release caps (:func:`.build_store.balance`)
then often leave items out: on code_pair, V.2 gives a third of the decisive items and the
tester's steps give almost only A.1 and V.2, so a 25% mode cap and the step-class cap
throw the surplus away. Each later round gives every seed run that has a decisive item but
fewer than ``--per-seed`` released ones (an *open* seed run) up to :data:`ROUND_TRIES` more
attempts, aimed at what the release still lacks: only (step, mode) pairs of its full
:func:`.build_plan.attempt_order` whose kind (step class, failure mode, position tenth of
the step in the seed run) would make the release larger if such an item were decisive
(:func:`grows`), in that order, until one is decisive. A failure mode that fits the seed runs
but has fewer than :data:`SCARCE_ITEMS` decisive items (a *scarce* mode: arith_team's C.2 is
decisive about one time in ten, and one draw of five had none; code_pair's only R.4 item of one
draw was one a form baseline picks, so the release left it out) gets :data:`SCARCE_TRIES`
attempts a round, each at a seed run of its own, any seed run (its one released item may then
give way to the mode: the release prefers the selection that holds the most modes), up to
:data:`SCARCE_BUDGET` in all (:func:`_scarce`). Rounds go on until no open seed run has such a
pair left or its budget (:data:`EXTRA_TRIES` per wanted trace) is spent, and no scarce mode has
a pair or budget left.

Reproducible and resumable: a round's attempts are a function of the journal entries of
the rounds before it (the decisive items found so far, counted before the detectability
filter, which runs once at the end), so a rerun walks the same rounds and skips the
attempts the journal holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from whenpro_core.dataset.build_plan import (
    Attempt,
    Seed,
    attempt_order,
    fitting_modes,
    judge_position,
    released_class,
)
from whenpro_core.dataset.build_store import PLAN_WORK_PER_PAIR, Work, balance, grows_past
from whenpro_core.dataset.journal import Entry

#: Attempts an open seed run gets per round (it stops at its first decisive one).
ROUND_TRIES = 4
#: Attempts beyond the first round per wanted trace of a seed run.
EXTRA_TRIES = 16
#: Decisive items below which a failure mode is scarce (module docstring).
SCARCE_ITEMS = 3
#: Attempts a scarce mode gets per round, at most one per seed run.
SCARCE_TRIES = 4
#: Attempts a scarce mode gets beyond the first round in all.
SCARCE_BUDGET = 16


def in_pool(entry: Entry | None) -> bool:
    """Whether a journal entry is a decisive item the release may use (kept, or dropped
    later by the detectability filter: rounds are planned before it runs)."""
    return entry is not None and (entry.status == "kept" or entry.reason == "detectable")


def open_seeds(chosen: list[Entry], pool: list[Entry], per_seed: int) -> set[str]:
    """Ids of the seed runs with a decisive item in ``pool`` but fewer than ``per_seed``
    in the release ``chosen``."""
    released: dict[str, int] = {}
    for e in chosen:
        released[e.seed] = released.get(e.seed, 0) + 1
    return {e.seed for e in pool if released.get(e.seed, 0) < per_seed}


def grows(
    pool: list[Entry],
    share: float,
    classes: dict[str, float],
    per_seed: int,
    kind: tuple[Any, ...],
    before: int | None = None,
    work: Work | None = None,
) -> bool:
    """Whether one more decisive item of ``kind`` (step class, mode, position tenth), from
    a seed run of its own, makes the release under the caps larger than ``pool``'s
    (``before``: its size, when known, else from the quick search of
    :func:`.build_store.balance`): whether the quick search finds a selection of more
    entries (:func:`.build_store.grows_past`, spending ``work``; default a fresh budget)."""
    cls, mode, tenth = kind
    extra = Entry(
        key="?", seed="?", seed_ref="", step="", step_index=0, mode=mode, status="kept", id="", step_class=cls
    ).model_copy(update={"position": tenth})
    work = work or Work.for_pool(len(pool) + 1, PLAN_WORK_PER_PAIR)
    if before is None:
        before = len(balance(pool, share, classes, per_seed, quick=True, work=work)[0])
    return grows_past([*pool, extra], share, classes, per_seed, before, work)


def next_round(
    seeds: Iterable[Seed],
    pool: list[Entry],
    done: set[str],
    tried: dict[str, int],
    *,
    modes: tuple[str, ...],
    share: float,
    classes: dict[str, float],
    per_seed: int,
    seed: int,
    offline: bool = True,
    work: Work | None = None,
) -> list[list[Attempt]]:
    """The next round's attempts, one list per seed run (module docstring). ``done``
    holds the keys of the attempts the earlier rounds ran, ``tried`` the attempts each
    seed run (by id) and each scarce mode (by :func:`_mode_key`) was given after the
    first round (updated with the attempts returned). The round is planned from one quick
    release search (which seed runs are open, and the release's size) and the growth checks
    of every kind, each with a budget of :data:`.build_store.PLAN_WORK_PER_PAIR` candidate
    evaluations per pair of decisive items, so a round costs at most quadratically in the
    pool; ``work``, when given, is told what they spent."""
    seeds = list(seeds)
    budgets = [Work.for_pool(len(pool) + 1, PLAN_WORK_PER_PAIR) for _ in range(2)]
    chosen, _ = balance(pool, share, classes, per_seed, quick=True, work=budgets[0])
    opened = open_seeds(chosen, pool, per_seed)
    before = len(chosen)
    cache: dict[tuple[Any, ...], bool] = {}
    caps = (share, classes, per_seed, before, budgets[1])
    chains: dict[str, list[Attempt]] = {}
    for s in seeds:
        if s.id not in opened or s.trace is None:
            continue
        budget = per_seed * EXTRA_TRIES - tried.get(s.id, 0)
        chain = _aimed(s, pool, done, cache, min(ROUND_TRIES, budget), modes, caps, seed, offline)
        if chain:
            chains[s.id] = chain
            tried[s.id] = tried.get(s.id, 0) + len(chain)
    if work is not None:
        work.spend(sum(b.spent for b in budgets))
    held = Counter(e.mode for e in pool)
    for mode in (m for m in modes if held[m] < SCARCE_ITEMS):
        budget = min(SCARCE_TRIES, SCARCE_BUDGET - tried.get(_mode_key(mode), 0))
        for s, attempt in _scarce(seeds, mode, done, budget, seed, offline):
            chains.setdefault(s.id, []).append(attempt)
            tried[_mode_key(mode)] = tried.get(_mode_key(mode), 0) + 1
    return list(chains.values())


def _mode_key(mode: str) -> str:
    """The key of ``tried`` that counts the attempts aimed at scarce mode ``mode``."""
    return f"scarce mode {mode}"


def _scarce(
    seeds: list[Seed], mode: str, done: set[str], limit: int, seed: int, offline: bool
) -> list[tuple[Seed, Attempt]]:
    """Up to ``limit`` untried attempts of ``mode``, one per seed run (its first such pair
    in :func:`.build_plan.attempt_order`), the seed runs that have tried ``mode`` least
    first (then in their order)."""
    out: list[tuple[Seed, Attempt]] = []
    tried = {s.id: sum(1 for k in done if k.startswith(f"{s.id}|") and k.endswith(f"|{mode}")) for s in seeds}
    for s in sorted(seeds, key=lambda s: tried[s.id]):
        if len(out) >= limit:
            break
        if s.trace is None:
            continue
        for index, m in attempt_order(s.trace, fitting_modes(s.trace, (mode,), offline=offline), seed):
            attempt = Attempt(s.ref, s.id, index, s.trace.steps[index].coord or str(index), m, s.rel)
            if attempt.key not in done:
                out.append((s, attempt))
                break
    return out


def _aimed(
    s: Seed,
    pool: list[Entry],
    done: set[str],
    cache: dict[tuple[Any, ...], bool],
    limit: int,
    modes: tuple[str, ...],
    caps: tuple[float, dict[str, float], int, int, Work],
    seed: int,
    offline: bool,
) -> list[Attempt]:
    """Up to ``limit`` untried pairs of seed run ``s`` whose kind (the class the built
    step shows, :func:`.build_plan.released_class`) would grow the release (``caps``:
    share, classes, per-seed count, the release's size and the budget of the
    growth checks, for :func:`grows`)."""

    trace = s.trace
    assert trace is not None  # next_round skips seed runs without a trace
    out: list[Attempt] = []
    coords: set[tuple[str, str]] = set()
    for index, mode in attempt_order(trace, fitting_modes(trace, modes, offline=offline), seed):
        if len(out) >= limit:
            break
        coord = trace.steps[index].coord or str(index)
        attempt = Attempt(s.ref, s.id, index, coord, mode, s.rel)
        if attempt.key in done or (coord, mode) in coords:
            continue
        coords.add((coord, mode))
        kind = (released_class(trace, index, mode, seed, offline=offline), mode, judge_position(trace, coord))
        if kind not in cache:
            cache[kind] = grows(pool, caps[0], caps[1], caps[2], kind, before=caps[3], work=caps[4])
        if cache[kind]:
            out.append(attempt)
    return out


__all__ = [
    "SCARCE_BUDGET",
    "SCARCE_ITEMS",
    "SCARCE_TRIES",
    "EXTRA_TRIES",
    "ROUND_TRIES",
    "grows",
    "in_pool",
    "next_round",
    "open_seeds",
]
