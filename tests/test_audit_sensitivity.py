"""Audit sensitivity (issue 28): tells planted in real ``arith_team`` runs must be flagged,
and the same runs with nothing planted must not.

The base dataset is honest work: successful runs of the real system, each labelled at a
candidate step drawn uniformly at random, so no attacker can beat random on it. Each
planted tell then changes only the labelled steps, in one way a reader could see without
understanding any error: an odd word on half of them, the step made longer, or the tool
call changed without its text. Honest runs of the same system are the ``--against``
corpus where a test says so."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from audit_data import dataset, write
from conftest import REPO
from whenpro_core.audit.run import LEARNED_FORM, STRUCTURAL_PRIOR, audit_traces
from whenpro_core.audit.view import audit_view
from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env
from whenpro_core.formats.build_meta import provenance_seeds
from whenpro_core.trace.model import GroundTruth, Trace

pytest.importorskip("sklearn", reason="the learned attacker needs the audit extra (scikit-learn)")

MODES = ("R.1", "R.2", "R.3", "A.1", "V.2")


@pytest.fixture(scope="module")
def honest() -> list[Trace]:
    """60 successful arith_team runs (seeds 5000-5059)."""
    env = get_env("arith_team")
    runs = [run_env(env, seed) for seed in range(5000, 5060)]
    return [t for t in runs if t.outcome.value == "success"]


@pytest.fixture(scope="module")
def against() -> list[Trace]:
    """20 more successful runs (seeds 6000-6019): the honest corpus."""
    env = get_env("arith_team")
    return [t for t in (run_env(env, seed) for seed in range(6000, 6020)) if t.outcome.value == "success"]


def labelled(runs: list[Trace], seed: int = 1, *, with_call: bool = False) -> list[Trace]:
    """Copies of ``runs``, each labelled at a candidate step drawn uniformly at random
    (among the steps with a tool call when ``with_call``)."""
    rng = random.Random(seed)
    out = []
    for run in runs:
        trace = run.model_copy(deep=True)
        coords = {s.coord for s in audit_view(trace).steps}
        steps = [s for s in trace.steps if s.coord in coords and (s.tool_calls or not with_call)]
        step = rng.choice(steps)
        trace.ground_truth = GroundTruth(agent=step.agent, step=step.coord, mode=rng.choice(MODES))
        out.append(trace)
    return out


def labelled_steps(traces: list[Trace]):
    for t in traces:
        yield next(s for s in t.steps if s.coord == t.ground_truth.step)


def test_honest_runs_labelled_at_random_are_not_called_leaky(honest, against):
    traces = labelled(honest)
    for corpus in ([], against):
        result = audit_traces(traces, corpus)
        assert set(result.learned) == {"form", "structural"}
        assert not result.leaky, result.leaking
        rates = {n: t.rates()["step"] for n, t in result.overall.baselines.items()}
        assert rates[LEARNED_FORM] < result.overall.random.rates()["step"] + 0.10, rates


def test_an_odd_word_on_half_the_labelled_steps_is_flagged(honest):
    traces = labelled(honest)
    for i, step in enumerate(labelled_steps(traces)):
        if i % 2 == 0:
            step.content = f"Notably, {step.content[:1].lower()}{step.content[1:]}"
    result = audit_traces(traces)
    assert LEARNED_FORM in result.leaking, result.leaking
    assert result.overall.form_over_prior()


def test_labelled_steps_made_longer_are_flagged(honest):
    traces = labelled(honest)
    for step in labelled_steps(traces):
        step.content = f"{step.content} {step.content}"
    result = audit_traces(traces)
    assert LEARNED_FORM in result.leaking, result.leaking


def test_a_tool_call_changed_without_its_text_is_flagged(honest, against):
    """The tool is asked something else than the step says (the first digit of its
    arguments one more, or a lookup's item another); the observation stays as recorded."""
    traces = labelled(honest, with_call=True)
    for step in labelled_steps(traces):
        call = step.tool_calls[0]
        text = json.dumps(call.arguments)
        digit = next((c for c in text if c.isdigit()), None)
        if digit is not None:
            args = json.loads(text.replace(digit, str((int(digit) + 1) % 10), 1))
        else:
            args = {k: ("quince" if k == "item" else v) for k, v in call.arguments.items()}
        assert args != call.arguments, call
        step.tool_calls[0] = call.model_copy(update={"arguments": args})
    result = audit_traces(traces, against)
    assert LEARNED_FORM in result.leaking and "call vs text" in result.leaking, result.leaking
    weights = dict(result.learned["form"].weights)
    assert weights.get("call_mismatch", 0.0) > 0, weights


def test_the_structural_prior_is_flagged_when_labels_sit_on_one_slot(honest):
    """Labels always on the first solver step: position and agent alone find them."""
    traces = labelled(honest)
    for t in traces:
        step = next(s for s in t.steps if s.agent == "solver" and s.tool_calls)
        t.ground_truth = GroundTruth(agent=step.agent, step=step.coord, mode="R.3")
    result = audit_traces(traces)
    assert STRUCTURAL_PRIOR in result.leaking, result.leaking


def test_traces_of_one_seed_run_share_a_fold(honest):
    """Groups from a build's provenance: twins of a seed run are never on both sides."""
    traces = labelled(honest[:30], seed=2) + labelled(honest[:30], seed=3)
    for i, t in enumerate(traces):
        t.id = f"x{i}"
        t.task.query = f"unique {i}"  # no twin by task text: only the groups tie them
    groups = {f"x{i}": f"seed{i % 30}" for i in range(60)}
    picks = audit_traces(traces, groups=groups).learned["structural"].picks
    assert all(picks[f"x{i}"].fold == picks[f"x{i + 30}"].fold for i in range(30))


def test_provenance_seeds_reads_only_the_seed(tmp_path):
    doc = {
        "format": "whenpro.build.provenance/1",
        "traces": {"a": {"seed": "s1", "step": "3", "mode": "R.1"}, "b": {"seed": 4}, "c": "x"},
    }
    (tmp_path / "provenance.json").write_text(json.dumps(doc))
    assert provenance_seeds(tmp_path) == {"a": "s1"}
    (tmp_path / "provenance.json").write_text("{not json")
    assert provenance_seeds(tmp_path) == {} and provenance_seeds(tmp_path / "none") == {}


def test_without_scikit_learn_the_panel_runs_and_one_line_says_why(tmp_path):
    folder = write(dataset("format", n=12), tmp_path / "ds")
    code = (
        "import sys; sys.modules['sklearn'] = None; from whenpro_core.cli.app import main; "
        f"main(['audit', {str(folder)!r}, '--json'])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["learned"]["ran"] is False and "pip install whenpro[audit]" in doc["learned"]["note"]
    assert LEARNED_FORM not in [b["name"] for b in doc["baselines"]] and doc["leaky"] is True
    assert out.stderr.count("\n") == 1 and "pip install whenpro[audit]" in out.stderr
