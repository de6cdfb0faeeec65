"""The label-leak audit (issue 14): each baseline on a made-up dataset whose leak is
known, a leak-free dataset that must not be called leaky, the injection markers it must
not read, and the real Who&When Pro rows whose format tell it must find."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from audit_data import dataset, make_seed, make_trace, write
from conftest import REPO
from tests.support.cli import run_whenpro
from whenpro_core.audit import audit_traces
from whenpro_core.audit.baselines import BASELINES, format_outlier, kind_change
from whenpro_core.audit.corpus import Corpus
from whenpro_core.audit.run import audit_dataset, top_steps
from whenpro_core.audit.stats import beats_chance, random_chance, wilson
from whenpro_core.audit.view import audit_view, label_of
from whenpro_core.trace.model import GroundTruth


def step_rates(result) -> dict[str, float]:
    return {name: t.rates()["step"] for name, t in result.overall.baselines.items()}


def test_wilson_interval_matches_the_formula():
    low, high = wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(0, 20)[0] == 0.0 and wilson(20, 20)[1] == 1.0


def test_random_baseline_is_exact():
    trace = make_trace(0, "none", random.Random(1), n_steps=10, at=2)
    view = audit_view(trace)
    chance = random_chance(view, label_of(trace, view), 17)
    assert len(view.steps) == 10  # the user's task is framing, not a candidate
    assert chance["step"] == pytest.approx(1 / 10)
    assert chance["agent"] == pytest.approx(5 / 10)
    assert chance["joint"] == pytest.approx(1 / 10 / 17)
    assert chance["mode"] == pytest.approx(1 / 17)


def test_a_leak_free_dataset_is_not_called_leaky():
    result = audit_traces(dataset("none", n=60, seed=3))
    assert not result.leaky, result.leaking
    base = result.overall.random.rates()["step"]
    for name, step in step_rates(result).items():
        if name not in ("first step", "last step"):
            assert step < base + 0.10, name


def test_the_audit_reads_no_injection_marker():
    """The labelled step carries is_injected (hidden), a raw marker, a meta flag and an
    injection record in extras, and is otherwise written like every step: neither the
    panel nor the learned attacker (when installed) finds it."""
    result = audit_traces(dataset("hidden", n=60, seed=3))
    assert not result.leaky, result.leaking


def test_a_few_traces_right_by_luck_are_not_called_leaky():
    """One trace that a baseline gets right is 100% step accuracy with a 95% Wilson
    interval from 21%: a dataset (or a per-mode slice) of one trace was called leaky. The
    verdict tests against chance exactly: one hit at a 10% chance is no leak, while a few
    traces all pinned are, and so is a slice where chance is far from explaining it."""
    one = audit_traces(dataset("format", n=1))
    assert step_rates(one)["format outlier"] == 1.0 and one.overall.random.rates()["step"] > 0.025
    assert not one.leaky and not any(g.leaks() for g in (*one.by_mode.values(), *one.by_framework.values()))
    assert not beats_chance(1, 1, 0.1) and beats_chance(2, 2, 0.1) and not beats_chance(2.5, 10, 0.1)
    assert beats_chance(9, 9, 0.1) and beats_chance(30, 100, 0.2) and not beats_chance(25, 100, 0.2)
    assert audit_traces(dataset("format", n=6)).leaky


@pytest.mark.parametrize(
    "leak, name",
    [
        ("format", "format outlier"),
        ("length", "length outlier"),
        ("digits", "digit outlier"),
        ("kind", "kind change"),
        ("first", "first step"),
        ("first", "common position"),
        ("format", "form classifier"),
    ],
)
def test_each_baseline_finds_its_leak(leak, name):
    result = audit_traces(dataset(leak, n=40), learn=False)  # the panel (tests/test_audit_learned.py: the learner)
    assert step_rates(result)[name] >= 0.9, step_rates(result)
    assert result.leaky and name in result.leaking


def test_rarest_template_finds_a_fixed_sentence_against_seed_runs():
    rng = random.Random(5)
    seeds = [make_seed(100 + i, rng) for i in range(20)]
    result = audit_traces(dataset("template", n=30), seeds, learn=False)
    assert result.against == 20
    assert step_rates(result)["rarest template"] >= 0.9
    assert "rarest template" in result.leaking


def test_first_difference_from_a_twin_run_of_the_same_task():
    rng = random.Random(9)
    traces, seeds = [], []
    for i in range(20):
        query = f"Basket {i}: how many fruits?"
        seed = make_seed(i, random.Random(i), query=query)
        bad = seed.model_copy(update={"id": f"t{i:03d}", "steps": [s.model_copy() for s in seed.steps]})
        at = rng.randrange(1, 11)
        step = bad.steps[at]
        bad.steps[at] = step.model_copy(update={"content": step.content.replace("x = ", "x = 1 + ")})
        bad.ground_truth = GroundTruth(agent=step.agent, step=step.coord, mode="R.3")
        traces.append(bad)
        seeds.append(seed)
    assert step_rates(audit_traces(traces, learn=False))["twin difference"] < 0.5  # no twins in the dataset
    result = audit_traces(traces, seeds, learn=False)
    assert step_rates(result)["twin difference"] == 1.0


def test_majority_mode_and_the_mode_guess_from_form():
    result = audit_traces(dataset("none", n=30, mode="R.3"), learn=False)
    assert result.overall.baselines["majority mode"].rates()["mode"] == 1.0
    assert result.overall.baselines["majority mode"].rates()["step"] == pytest.approx(
        result.overall.random.rates()["step"]
    )


def test_a_baseline_that_abstains_scores_the_random_chance():
    assert top_steps(None) == [] and top_steps([1.0, 1.0]) == []
    assert top_steps([0.0, 2.0, 2.0]) == [1, 2]
    trace = make_trace(0, "none", random.Random(2))
    view = audit_view(trace)
    assert kind_change(view, Corpus([view], {})) is None


def test_format_outlier_pins_the_step_written_differently():
    trace = make_trace(0, "format", random.Random(4), at=4)
    view = audit_view(trace)
    scores = format_outlier(view, Corpus([view], {}))
    assert top_steps(scores) == [label_of(trace, view).ranks[0]]


def test_per_mode_and_framework_slices():
    traces = dataset("none", n=20, seed=1, mode="R.2") + dataset("format", n=20, seed=2, mode="R.3")
    for i, t in enumerate(traces):
        t.id = f"x{i}"
    result = audit_traces(traces, learn=False)
    assert set(result.by_mode) == {"R.2", "R.3"} and set(result.by_framework) == {"toyshop"}
    assert result.by_mode["R.3"].baselines["format outlier"].rates()["step"] >= 0.9
    assert "format outlier" not in result.by_mode["R.2"].leaks()


def test_every_baseline_has_a_unique_name():
    names = [b.name for b in BASELINES]
    assert len(names) == len(set(names)) and {"random"}.isdisjoint(names)


# --------------------------------------------------------------------------- real data


def test_the_who_when_pro_format_tell_is_found(real_traces):
    result = audit_dataset(real_traces / "who-when-pro-jsonl")
    assert result.overall.traces == 64 and result.leaky
    rates = step_rates(result)
    assert rates["format outlier"] >= 0.70 and rates["form classifier"] >= 0.70  # the format tell
    assert {"form classifier", "format outlier"} <= set(result.leaking)
    assert rates["length outlier"] < 0.3 and rates["digit outlier"] < 0.3  # no tell in size
    if result.learned:  # the audit extra is installed: the learned attacker finds it too
        assert rates["learned form"] >= 0.75 and "learned form" in result.leaking
        assert rates["learned form"] - rates["structural prior"] > 0.05 and result.overall.form_over_prior()


@pytest.mark.parametrize(
    "sub", ["who-and-when/Who&When/Algorithm-Generated", "who-and-when/Who&When/Hand-Crafted", "who-when-pro-samples"]
)
def test_the_audit_runs_on_the_other_real_datasets(real_traces, sub):
    result = audit_dataset(real_traces / sub)
    assert result.overall.traces > 0
    rnd = result.overall.random.rates()
    assert 0 < rnd["step"] < 1 and rnd["agent"] is not None
    if sub.startswith("who-and-when"):
        assert rnd["mode"] is None  # Who&When labels have no failure mode


# --------------------------------------------------------------------------- the command


def test_audit_json_has_the_documented_shape(tmp_path):
    folder = write(dataset("format", n=20), tmp_path / "ds")
    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "audit", str(folder), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["traces"] == 20 and doc["leaky"] is True and doc["interval"] == "wilson"
    assert set(doc["random"]) >= {"step", "agent", "mode"}
    assert all(0 <= doc["random"][k] <= 1 for k in ("step", "agent", "mode"))
    names = [b["name"] for b in doc["baselines"]]
    assert names == ["learned form", "structural prior", *(b.name for b in BASELINES)]
    assert doc["learned"] == {"ran": True, "note": None}
    rule = {"baseline_over_random": 0.1, "prior_over_random": 0.1, "form_over_prior": 0.05, "alpha": 0.05}
    assert doc["rule"] == rule
    for b in doc["baselines"]:
        assert set(b) >= {"name", "family", "n", "step", "agent", "mode", "joint", "p_random"}
        assert all(isinstance(b[k], float) and 0 <= b[k] <= 1 for k in ("step", "agent", "mode", "joint", "p_random"))
        assert b["step_low"] <= b["step"] <= b["step_high"] and b["n"] == 20
    form, prior = doc["baselines"][:2]
    assert form["family"] == prior["family"] == "learned"
    assert form["feature_set"] == "form" and prior["feature_set"] == "structural" and form["folds"] == 5
    assert form["features"] and all(set(f) == {"name", "weight"} for f in form["features"])
    assert form["over_prior"] == pytest.approx(form["step"] - prior["step"], abs=1e-3) and 0 <= form["p_prior"] <= 1
    for group in doc["groups"]:
        assert all(b["n"] == group["traces"] for b in group["baselines"])
    assert "format outlier" in doc["leaking"]
    table = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "audit", str(folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert table.returncode == 0 and "random (exact)" in table.stdout and "leaky:" in table.stdout
    assert "learned form attacker vs structural prior: " in table.stdout and "top features" in table.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "audit", str(tmp_path / "nope")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 2 and missing.stderr.startswith("whenpro: error: ")
    assert "Traceback" not in missing.stderr


def test_against_runs_that_cannot_be_read_are_said(tmp_path):
    """``--against`` a folder of files that fail to import ran as if no corpus had been
    given (``"against": 0``, no word said): now one error line when no run could be read,
    and the unreadable files named on stderr when some could."""
    data = write(dataset("template", n=12), tmp_path / "ds")
    bad = tmp_path / "bad"
    bad.mkdir()
    for i in range(3):
        (bad / f"b{i}.json").write_text("{ not json")
    out = run_whenpro("audit", str(data), "--against", str(bad))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "--against" in out.stderr and "3 files failed to import" in out.stderr
    write([make_seed(100, random.Random(1))], bad)
    out = run_whenpro("audit", str(data), "--against", str(bad), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["against"] == 1
    assert "--against: 3 files could not be read" in out.stderr and "b0.json" in out.stderr


def test_against_runs_join_the_corpus_from_the_command(tmp_path):
    rng = random.Random(5)
    data = write(dataset("template", n=20), tmp_path / "ds")
    seeds = write([make_seed(100 + i, rng) for i in range(10)], tmp_path / "seeds")
    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "audit", str(data), "--json", "--against", str(seeds)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["against"] == 10
    assert "rarest template" in doc["leaking"]


def test_unlabelled_datasets_and_bad_files_are_said_in_one_line(tmp_path):
    rng = random.Random(2)
    runs = write([make_seed(i, rng) for i in range(3)], tmp_path / "runs")
    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "audit", str(runs)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "no labelled trace" in out.stderr
    data = write(dataset("format", n=12), tmp_path / "ds")
    (data / "broken.json").write_text('{"format": "whenpro.trace/1", "id": "x", "steps": [')
    result = audit_dataset(data)
    assert result.overall.traces == 12 and result.skipped == 1


def test_a_folder_where_no_file_can_be_read_says_so_in_its_one_line(tmp_path):
    """It said only "no labelled trace in bad", as if the files were unlabelled traces."""
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.json").write_text("{not json")
    (tmp_path / "bad" / "b.json").write_text('{"x": 1}')
    out = run_whenpro("audit", "bad", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "no labelled trace in bad: 2 traces could not be read (first: bad/a.json" in out.stderr, out.stderr


def test_audit_names_each_file_it_could_not_read(tmp_path):
    """Files that fail to import are named on stderr, one line each, and told apart from
    unlabelled traces in the count (it said only "N traces left out")."""
    import shutil

    from conftest import SAMPLES

    for name in ("arith_team-s0__R.3__2.json", "arith_team-s1__R.3__4.json", "arith_team-s0.json"):
        shutil.copy(SAMPLES / "arith_team" / name, tmp_path / name)
    (tmp_path / "cut.json").write_text('{"history": [')
    (tmp_path / "empty.json").write_text("")
    out = run_whenpro("audit", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "cut.json" in out.stderr and "empty.json" in out.stderr and "Traceback" not in out.stderr
    assert "without ground truth, 2 could not be read" in out.stderr
