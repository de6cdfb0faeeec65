"""The memo of the audit's form functions (issue 33 round 3): a build reads the same
traces under many corpora, so shape tokens, shapes and line templates are computed once
per content; the cached path gives exactly what the plain functions give, on real
arith_team seed runs."""

from __future__ import annotations

import pytest

from tests.support.build_pool import arith_seed_runs, labelled_views, uncached
from whenpro_core.audit import form
from whenpro_core.dataset.build_plan import pool_form_picks


@pytest.fixture(scope="module")
def pool():
    return labelled_views(arith_seed_runs(16))


def test_form_picks_on_a_real_pool_are_the_same_cached_cold_warm_and_uncached(pool):
    form.clear_caches()
    cold = pool_form_picks(pool)
    assert form.trace_tokens.cache_info().currsize == len(pool)
    warm = pool_form_picks(pool)
    assert form.trace_tokens.cache_info().hits >= len(pool)
    memo = form.trace_tokens
    before = memo.cache_info()
    with uncached():
        plain = pool_form_picks(pool)
    assert memo.cache_info() == before  # the plain path really bypassed the memo
    assert cold == warm == plain
    assert any(cold)  # the baselines pick some labelled steps: the comparison is not of empty lists


def test_the_memo_is_keyed_by_content_not_identity(pool):
    """Equal views built apart share an entry; a changed step text is a new key."""
    from dataclasses import replace

    view = pool[0][0]
    twin = replace(view, steps=tuple(replace(s) for s in view.steps))
    assert twin is not view and form.trace_tokens(twin) == form.trace_tokens(view)
    first = view.steps[0]
    changed = replace(view, steps=(replace(first, content=first.content + "\n```\nx = 1\n```"), *view.steps[1:]))
    assert form.trace_shapes(changed)[0]["fence"] is True
    assert form.trace_shapes(view)[0] == form.shape(first.content or first.text)
    cached = form.trace_tokens(changed)
    with uncached():
        assert form.trace_tokens(changed) == cached


def test_learned_attack_on_a_real_pool_is_the_same_cached_and_uncached(pool):
    pytest.importorskip("sklearn", reason="the learned attacker needs the audit extra (scikit-learn)")
    from whenpro_core.audit.learned import learned_attacks

    samples = [(view, label) for view, _, label in pool]
    form.clear_caches()
    cached = learned_attacks(samples)
    with uncached():
        plain = learned_attacks(samples)
    assert cached and set(cached) == set(plain)
    for name, attack in cached.items():
        assert attack.picks == plain[name].picks and attack.weights == plain[name].weights
