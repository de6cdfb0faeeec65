"""An injected step reads like an honest one (issue 28): for every (step, mode) a build
tries on honest runs of the built-in systems, the offline mutator's step shows none of
the tells outside attackers found (tests/support/tells.py): a text naming one call while
the recorded call is another, a ``var = symbolic = filled`` whose sides disagree, or a
move from the step before that honest runs never make (a tester approving with no test
run before it). The checks fire on no honest step."""

from __future__ import annotations

import pytest

from tests.support.tells import (
    call_mismatch,
    expression_mismatch,
    honest_transitions,
    unseen_transitions,
)
from whenpro_core.dataset.build_plan import fitting_modes
from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env
from whenpro_core.injection.mutators import MUTATORS, mutate
from whenpro_core.trace.model import Trace

pytestmark = pytest.mark.slow

#: (system, seed runs the mutators are tried on, independent honest runs the moves are learnt from)
SYSTEMS = {"arith_team": (range(0, 60), range(1000, 1300)), "code_pair": (range(0, 24), range(500, 620))}


@pytest.fixture(scope="module", params=sorted(SYSTEMS))
def system(request: pytest.FixtureRequest) -> tuple[str, list[Trace], list[Trace]]:
    name = request.param
    env = get_env(name)
    seeds, honest = SYSTEMS[name]
    runs = [run_env(env, s) for s in seeds]
    return name, [t for t in runs if t.outcome.value == "success"], [run_env(env, s) for s in honest]


def _mutations(runs: list[Trace]):
    """Every mutation a build tries on ``runs`` (:func:`fitting_modes`: not at the final
    answer, nor a stop before the third agent step)."""
    for trace in runs:
        for i, modes in fitting_modes(trace, tuple(MUTATORS)).items():
            for mode in modes:
                for seed in (0, 1):
                    yield trace, i, mode, seed, mutate(trace, i, mode, seed).step


def test_the_checks_fire_on_no_honest_step(system):
    _, runs, honest = system
    moves = honest_transitions(honest)
    for trace in runs:
        for step in trace.steps:
            assert call_mismatch(step) is None, (trace.id, step.index, call_mismatch(step))
            assert expression_mismatch(step) is None, (trace.id, step.index, expression_mismatch(step))
            assert unseen_transitions(trace, step.index, moves) is None, (trace.id, step.index)


def test_an_injected_step_names_the_call_it_makes(system):
    name, runs, _ = system
    bad = [(mode, t.id, i, call_mismatch(s)) for t, i, mode, _, s in _mutations(runs) if call_mismatch(s)]
    assert not bad, f"{name}: {len(bad)} mutations whose text and call disagree, e.g. {bad[:4]}"


def test_an_injected_expression_agrees_with_its_symbolic_form(system):
    """The symbolic and filled-in sides agree in every mode, and the stated result is
    what the filled-in side gives except under R.3, whose error is that wrong result (a
    judge finds it by working the sum out, as the taxonomy's sign of R.3 says)."""
    name, runs, _ = system
    bad = [
        (mode, s.content, why)
        for _, _, mode, _, s in _mutations(runs)
        if (why := expression_mismatch(s, results=mode != "R.3"))
    ]
    assert not bad, f"{name}: {len(bad)} mutations whose expression sides disagree, e.g. {bad[:4]}"


def test_an_injected_step_follows_the_step_before_as_honest_runs_do(system):
    """Moves into the new step (the step before it is recorded): a tester's approval
    comes after a test run, as in every honest run, and a coder hands in its final answer
    after an approval, never in answer to a report of failures (A.3, issue 28)."""
    name, runs, honest = system
    moves = honest_transitions(honest)
    bad = []
    for trace, i, mode, _, step in _mutations(runs):
        steps = [*trace.steps[:i], step]
        why = unseen_transitions(trace.model_copy(update={"steps": steps}), i, moves)
        if why:
            bad.append((mode, trace.id, i, why))
    assert not bad, f"{name}: {len(bad)} mutations after a move honest runs never make, e.g. {bad[:4]}"
