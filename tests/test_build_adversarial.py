"""Issue 28, builds that survive the learned attacker: the adversarial filter of ``whenpro
build`` leaves out the items a learned attacker finds over random grouped splits, keeps
every failure mode, and the manifest counts what it dropped and why."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from whenpro_core.audit.view import AuditStep, AuditTrace, Label
from whenpro_core.dataset.build_adversarial import MIN_PER_MODE, learnable_items, over_line
from whenpro_core.dataset.journal import Entry

pytest.importorskip("sklearn", reason="the adversarial filter needs scikit-learn (the audit extra)")

MODES = ("A.1", "R.2", "R.3", "V.2")
WORDS = [
    "carry",
    "the",
    "sum",
    "then",
    "check",
    "each",
    "digit",
    "against",
    "the",
    "running",
    "total",
    "before",
    "moving",
    "on",
]


def _pool(n: int, planted: float, rng: random.Random) -> tuple[list[Entry], dict, set[str]]:
    """``n`` two-agent runs of 6 to 10 steps with the label anywhere, written alike; on a
    share ``planted`` of them the labelled step says an odd word ("Notwithstanding")."""
    pool, views, marked = [], {}, set()
    for i in range(n):
        steps = rng.randint(6, 10)
        label = rng.randrange(steps)
        odd = rng.random() < planted
        rows = []
        for r in range(steps):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 12))) + f" = {rng.randint(10, 99)}."
            if odd and r == label:
                text = "Notwithstanding, " + text
            rows.append(AuditStep(r, str(r), "solver" if r % 2 else "checker", "assistant", text))
        key = f"seed{i}|{label}|{MODES[i % 4]}"
        view = AuditTrace(f"t{i:03d}", "whenpro", f"task {i}", tuple(rows), group=f"seed{i}")
        views[key] = (
            view,
            Label(frozenset({rows[label].agent}), frozenset({str(label)}), MODES[i % 4], ranks=(label,)),
        )
        pool.append(
            Entry(
                key=key,
                seed=f"seed{i}",
                seed_ref="r",
                step=str(label),
                step_index=label,
                mode=MODES[i % 4],
                status="kept",
            )
        )
        if odd:
            marked.add(key)
    return pool, views, marked


def test_the_filter_leaves_out_what_the_learned_attacker_finds_and_keeps_every_mode():
    """Half the labelled steps carry a planted word: the form attacker finds them, and the
    filter leaves out planted items (most reliably found first; an unplanted item the
    learner happens to find in most splits may go too), at most a share of each mode a
    pass, never a mode's last items; its report counts them by learner and mode."""
    pool, views, marked = _pool(36, 0.5, random.Random(3))
    dropped, report = learnable_items(pool, views, seed=0)
    found = set(dropped) & marked
    assert len(found) >= 0.8 * len(dropped) and len(found) >= len(marked) // 3
    assert report["filter"] is True and report["dropped"] == len(dropped) == sum(report["by_learner"].values())
    assert report["by_learner"].get("form", 0) >= len(dropped) - 1
    assert report["accuracy"]["form"][0] > report["accuracy"]["random"][0] + 0.2
    assert report["accuracy"]["form"][-1] < report["accuracy"]["form"][0]
    assert all("the form attacker in" in detail for detail in dropped.values())
    left = Counter(e.mode for e in pool if e.key not in dropped)
    assert set(left) == set(MODES) and min(left.values()) >= MIN_PER_MODE
    assert sum(report["by_mode"].values()) == len(dropped)


def test_a_clean_pool_loses_nothing():
    """With no tell planted, no learner is over its line: nothing is left out."""
    pool, views, marked = _pool(30, 0.0, random.Random(5))
    dropped, report = learnable_items(pool, views, seed=0)
    assert not marked and dropped == {} and report["dropped"] == 0


def test_the_lines_are_the_audits():
    """A learner is over its line as the audit's verdict reads it, with room: the prior 5
    points above chance, the form attacker 3 above the prior (or chance), each beyond
    what luck gives on that many traces."""
    assert over_line({"form": 0.12, "structural": 0.14}, 0.10, 400) == ()
    assert over_line({"form": 0.12, "structural": 0.16}, 0.10, 400) == ("structural",)
    assert over_line({"form": 0.20, "structural": 0.12}, 0.10, 400) == ("form",)
    assert over_line({"form": 0.20, "structural": 0.20}, 0.10, 20) == ()  # 4 of 20 at a 10% chance: p = 0.13
