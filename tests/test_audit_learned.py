"""The learned attacker of the label-leak audit (issue 28): trained on a dataset's own
labels with grouped cross-validation, it finds a tell the hand-written baselines were
not written for, finds nothing where there is nothing, never scores a trace with a model
that saw its label, and gives the same picks every time."""

from __future__ import annotations

import random

import pytest

from audit_data import dataset, make_trace
from whenpro_core.audit.learned import learned_attacks
from whenpro_core.audit.stats import random_chance
from whenpro_core.audit.view import audit_view, label_of

pytest.importorskip("sklearn", reason="the learned attacker needs the audit extra (scikit-learn)")


def samples(traces):
    out = []
    for t in traces:
        view = audit_view(t)
        out.append((view, label_of(t, view)))
    return out


def chance(pairs) -> float:
    return sum(random_chance(v, lab, 17)["step"] for v, lab in pairs) / len(pairs)


def test_the_form_attacker_finds_a_format_tell_and_the_prior_does_not():
    pairs = samples(dataset("format", n=40))
    attacks = learned_attacks(pairs)
    assert set(attacks) == {"form", "structural"}
    form, prior = attacks["form"], attacks["structural"]
    assert len(form.picks) == 40 and form.feature_set == "form"
    assert form.step >= 0.9, form.weights
    assert prior.step < chance(pairs) + 0.15  # labels are uniform over the steps
    assert form.weights and form.weights[0][1] > 0


def test_no_tell_no_find():
    pairs = samples(dataset("none", n=60, seed=3))
    attacks = learned_attacks(pairs)
    assert attacks["form"].step < chance(pairs) + 0.10
    assert attacks["structural"].step < chance(pairs) + 0.10


def test_a_planted_word_on_half_the_labelled_steps_is_learned():
    """No hand-written baseline reads words: the word-odds feature learns one."""
    traces = dataset("none", n=60, seed=4)
    for t in traces[::2]:
        step = next(s for s in t.steps if s.coord == t.ground_truth.step)
        step.content = step.content.replace("Thought: I", "Thought: Notably, I", 1)
    pairs = samples(traces)
    form = learned_attacks(pairs)["form"]
    assert form.step >= chance(pairs) + 0.3, form.weights
    assert form.weights[0][0] == "word_odds"


def test_out_of_fold_a_trace_is_never_scored_by_a_model_that_saw_its_label():
    """Moving one trace's label changes nothing in its own scores (its fold's model never
    saw it), and the same input gives the same picks."""
    traces = dataset("format", n=30, seed=5)
    first = learned_attacks(samples(traces))["form"]
    again = learned_attacks(samples(traces))["form"]
    assert first.picks == again.picks and first.weights == again.weights
    moved = list(traces)
    old = moved[0]
    new = make_trace(0, "none", random.Random(99), at=3)
    moved[0] = old.model_copy(update={"ground_truth": new.ground_truth})
    after = learned_attacks(samples(moved))["form"]
    assert after.picks[old.id].scores == first.picks[old.id].scores


def test_twins_of_one_task_share_a_fold():
    traces = dataset("none", n=20, seed=6)
    for i, t in enumerate(traces):
        t.task.query = f"shared task {i // 2}"
    form = learned_attacks(samples(traces), feature_sets=("structural",))["structural"]
    folds = {}
    for t in traces:
        folds.setdefault(t.task.query, set()).add(form.picks[t.id].fold)
    assert all(len(f) == 1 for f in folds.values())


def test_too_few_traces_learn_nothing():
    assert learned_attacks(samples(dataset("format", n=5))) == {}


def test_attack_traces_reads_loaded_traces_with_their_seed_groups():
    """The entry point for callers holding traces (the build's filter): unlabelled traces
    are left out, and ``groups`` keeps a seed run's traces in one fold."""
    from whenpro_core.audit.learned import attack_traces

    traces = dataset("format", n=24, seed=8)
    unlabelled = traces[0].model_copy(update={"id": "no-label", "ground_truth": None})
    groups = {t.id: f"seed{i // 2}" for i, t in enumerate(traces)}
    attacks = attack_traces([*traces, unlabelled], groups, feature_sets=("form",))
    picks = attacks["form"].picks
    assert set(picks) == {t.id for t in traces} and attacks["form"].step >= 0.9
    assert all(picks[traces[i].id].fold == picks[traces[i + 1].id].fold for i in range(0, 24, 2))
