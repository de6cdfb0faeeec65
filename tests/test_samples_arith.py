"""The committed ``sample_traces/arith_team/`` files: they load, say what they claim, and
are exactly what ``sample_traces/make_arith_team.py`` produces today."""

from __future__ import annotations

import importlib.util

from conftest import SAMPLES
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import dumps_trace

FOLDER = SAMPLES / "arith_team"


def _script():
    spec = importlib.util.spec_from_file_location("make_arith_team", SAMPLES / "make_arith_team.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_samples_are_small_and_up_to_date():
    files = sorted(FOLDER.glob("*.json"))
    assert sum(f.stat().st_size for f in files) < 200_000
    built = {t.id: t for t in _script().build()}
    assert {f.stem for f in files} == set(built)
    for f in files:
        assert f.read_bytes() == dumps_trace(built[f.stem]) + b"\n", f"{f.name} is stale: rerun the script"


def test_seed_runs_succeed_and_counterfactuals_are_labelled():
    traces = [load_trace(f) for f in sorted(FOLDER.glob("*.json"))]
    seeds = [t for t in traces if "injection" not in t.extras]
    injected = [t for t in traces if "injection" in t.extras]
    assert len(seeds) == 3 and all(t.outcome.value == "success" for t in seeds)
    decisive = [t for t in injected if t.extras["injection"]["verdict"]["decisive"]]
    caught = [t for t in injected if not t.extras["injection"]["verdict"]["decisive"]]
    assert len(decisive) == 3 and len(caught) == 1
    for t in decisive:
        assert t.outcome.value == "failure" and t.ground_truth.step == t.extras["injection"]["step"]
        assert t.steps[t.ground_truth.step_index].hidden["is_injected"] is True
    assert caught[0].outcome.value == "success" and caught[0].ground_truth is None
    assert caught[0].annotations[0].label == "R.3"
