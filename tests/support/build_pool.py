"""Pools of decisive items as ``whenpro build --per-seed 3`` holds them, and the release
search as it ran before issue 33 round 3 (one candidate evaluation at a time), shared by
tests/test_build_repeatable.py and benchmarks/build_selection.py; and the audit's form
functions without their memo (:func:`uncached`, issue 33 round 3) with labelled judge views
of real seed runs (:func:`labelled_views`) to compare them on.

A pool is made from real arith_team seed runs without running any attempt: 0 to 3 items per
seed run at the (step, mode) pairs the build tries first there (its seeded attempt order),
with their real step class and position tenth, standing in for the attempts that turn out
decisive."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from unittest import mock

from whenpro_core.audit import baselines, corpus, features, form, learned
from whenpro_core.audit.view import AuditTrace, Label, audit_view
from whenpro_core.dataset import build_store
from whenpro_core.dataset.build_plan import (
    Seed,
    attempt_order,
    fitting_modes,
    judge_position,
    parse_modes,
    step_class,
)
from whenpro_core.dataset.build_store import FILL_TRIES, Work, seeded_order
from whenpro_core.dataset.journal import Entry
from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env

#: The modes of an offline build (every mode with a mutator).
MODES = parse_modes(None, "offline")


def arith_seed_runs(n: int, first: int = 5000) -> list[Seed]:
    """The first ``n`` successful arith_team runs from per-run seed ``first`` on, as build
    seeds (in memory: ref ``run-<seed>``, id ``arith_team-s<seed>``)."""
    env = get_env("arith_team")
    out = []
    for s in range(first, first + 4 * n):
        trace = run_env(env, s)
        if trace.outcome.value == "success":
            out.append(Seed(ref=f"run-{s}", id=f"arith_team-s{s}", trace=trace))
        if len(out) == n:
            break
    return out


def decisive_pool(seeds: Sequence[Seed], items: Sequence[int] = (1, 2, 3, 3), picked: float = 0.15) -> list[Entry]:
    """A pool of decisive items: for each seed run, ``random.choice(items)`` of its first
    attempted (step, mode) pairs, each picked by the length-outlier baseline with
    probability ``picked`` (seeded: the same seeds give the same pool), in the order and
    with the ids a build's search reads (:func:`~whenpro_core.dataset.build_store.seeded_order`)."""
    rng = random.Random(2)
    pool = []
    for s in seeds:
        assert s.trace is not None
        for index, mode in attempt_order(s.trace, fitting_modes(s.trace, MODES), 0)[: rng.choice(list(items))]:
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
                    form_picks=["length outlier"] if rng.random() < picked else [],
                    chance=0.1,
                )
            )
    return seeded_order(pool, 0)


def even_classes(pool: Sequence[Entry]) -> dict[str, float]:
    """An equal share for each step class the pool holds."""
    held = sorted({e.step_class or "?" for e in pool})
    return {c: 1 / len(held) for c in held}


# ------------------------------------------------- the search before round 3, as it ran


def one_by_one_selections(
    keys: build_store._Groups, limits: list[int], target: int, work: Work, quick: bool = False
) -> Iterator[list[int]]:
    """:func:`whenpro_core.dataset.build_store._selections` as it ran before: each candidate
    evaluation one check of one entry against the counts, each exchange tried pair by pair
    and each entry left out scanned one by one (the reference the faster search must match,
    selection for selection and evaluation for evaluation, and the benchmark's baseline)."""
    work.spend(len(keys.rows))
    if not build_store._may_reach(keys, limits, target):
        return
    for n, mix in enumerate(build_store._orders(keys, target, 0 if quick else FILL_TRIES)):
        if n and not work.left:
            return
        yield [mix[i] for i in _fill([keys.rows[i] for i in mix], limits, target, work)]


def _fill(rows: list[tuple[int, ...]], limits: list[int], target: int, work: Work) -> list[int]:
    counts: Counter[int] = Counter()
    inside: list[int] = []

    def fits(i: int, without: int | None = None) -> bool:
        work.spend()
        out = rows[without] if without is not None else ()
        return all(counts[g] + 1 - (g in out) <= limits[g] for g in rows[i])

    def move(i: int, sign: int) -> None:
        for g in rows[i]:
            counts[g] += sign
        if sign > 0:
            inside.append(i)
        else:
            inside.remove(i)

    for i in range(len(rows)):
        if len(inside) < target and fits(i):
            move(i, 1)
    if len(inside) < target and work.left:
        work.spend(len(rows))
        size = Counter(g for row in rows for g in row)
        binding = [tuple(g if size[g] > limits[g] else -1 for g in row) for row in rows]
        while len(inside) < target and work.left and _exchange(len(rows), binding, inside, fits, move, work):
            pass
    return inside


def _exchange(
    n: int,
    binding: list[tuple[int, ...]],
    inside: list[int],
    fits: Callable[..., bool],
    move: Callable[[int, int], None],
    work: Work,
) -> bool:
    outside = [i for i in range(n) if i not in inside]
    failed: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
    for x in outside:
        if not work.left:
            return False
        for y in list(inside):
            pair = (binding[x], binding[y])
            if pair in failed or not fits(x, without=y):
                failed.add(pair)
                continue
            move(y, -1)
            move(x, 1)
            z = next((z for z in outside if z not in (x, y) and fits(z)), None)
            if z is not None:
                move(z, 1)
                return True
            move(x, -1)
            move(y, 1)
            failed.add(pair)
    return False


#: The memoised form functions and the modules that call them by name.
_MEMOISED = ("line_templates", "trace_shapes", "trace_tokens")
_CALLERS = (form, corpus, baselines, features, learned)


@contextmanager
def uncached() -> Iterator[None]:
    """Inside, every caller of :mod:`whenpro_core.audit.form`'s memoised functions calls
    the plain function (its ``__wrapped__``), as does :mod:`~whenpro_core.audit.features`'
    word 3-grams: the audit as it ran before the memo."""
    plain = {name: getattr(form, name).__wrapped__ for name in _MEMOISED}
    with ExitStack() as stack:
        for module in _CALLERS:
            for name in _MEMOISED:
                if hasattr(module, name):
                    stack.enter_context(mock.patch.object(module, name, plain[name]))
        stack.enter_context(mock.patch.object(features, "_ngrams", features._ngrams.__wrapped__))
        yield


def labelled_views(seeds: Sequence[Seed], modes: Sequence[str] = MODES) -> list[tuple[AuditTrace, str, Label]]:
    """``(judge view, labelled coordinate, label)`` of each seed run's trace, labelled at
    a seeded candidate step with a seeded mode: the shape :func:`pool_form_picks` reads."""
    rng = random.Random(3)
    out = []
    for s in seeds:
        assert s.trace is not None
        view = audit_view(s.trace, group=s.id)
        step = rng.choice(view.steps)
        label = Label(
            frozenset({step.agent.lower()}), frozenset({step.coord}), rng.choice(list(modes)), ranks=(step.rank,)
        )
        out.append((view, step.coord, label))
    return out
