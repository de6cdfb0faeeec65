"""Issue 14, the parts measured not met: a release whose caps hold on the release itself
(arith_team's form-classifier leak), code_pair errors that are decisive past the first
draft (the tester keeps its tests; V.2 at a failing check; A.3 hands in the code that
existed; A.1 leaves out the failing case), and counterfactual attribution on a built
trace that finds its environment in the dataset's provenance. Real runs, builds,
injections and audits; small n."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.support.cli import run_whenpro
from whenpro_core.audit.run import audit_dataset
from whenpro_core.bench.build_plan import step_class
from whenpro_core.bench.build_store import POSITION_SHARE, Entry, balance, read_manifest
from whenpro_core.envs import get_env
from whenpro_core.envs.code_pair import own_tests
from whenpro_core.envs.run import run_env
from whenpro_core.injection.executors import BuiltinExecutor
from whenpro_core.injection.generate import OfflineGenerator
from whenpro_core.injection.inject import inject
from whenpro_core.injection.mutators import applicable_modes, mutate
from whenpro_core.trace.model import Agent, Step, Task, ToolCall, Trace


def whenpro(*args: str) -> subprocess.CompletedProcess[str]:
    return run_whenpro(*args, timeout=300)


def entry(i: int, cls: str, mode: str, position: int) -> Entry:
    return Entry(
        key=f"k{i}",
        seed=f"s{i}",
        seed_ref="r",
        step="1",
        step_index=1,
        mode=mode,
        status="kept",
        id=f"id{i:02d}",
        steps=10,
        step_class=cls,
        position=position,
    )


def test_every_cap_holds_on_the_release_itself():
    """A pool crowded on one class (the plans), one tenth and one mode: the released set
    keeps every class within ceil(share * n), every tenth within POSITION_SHARE (at
    least 2) and every mode within 25%, measured on the release (a single pass measured
    each cap on the set before the next cap cut it, and let the plans hold 30%)."""
    classes = {"planner/plan/list": 0.15, "solver/action": 0.6, "verifier/assistant": 0.25}
    pool = [entry(i, "planner/plan/list", "PL.1" if i % 2 else "R.2", 0) for i in range(12)]
    modes = ["A.1", "R.3", "R.4", "A.3", "R.1", "V.2"]
    pool += [entry(20 + i, "solver/action", modes[i % 6], 1 + i % 9) for i in range(24)]
    pool += [entry(50 + i, "verifier/assistant", "V.2", 5 + i % 4) for i in range(4)]
    chosen, out = balance(pool, 0.25, classes)
    n = len(chosen)
    assert n >= 10 and len(out) == len(pool) - n and set(out.values()) <= {"step_class", "position", "mode_share"}
    by_class = Counter(e.step_class for e in chosen)
    assert by_class["planner/plan/list"] <= math.ceil(0.15 * n)
    assert max(Counter(e.position for e in chosen).values()) <= max(2, math.ceil(POSITION_SHARE * n))
    assert max(Counter(e.mode for e in chosen).values()) <= max(1, math.floor(0.25 * n))


def test_list_shaped_steps_are_their_own_class():
    plan = Step(index=1, agent="planner", kind="plan", content="Plan:\n1. solver: a = 2 * 3\n2. reporter: report a")
    intro = Step(index=1, agent="planner", kind="plan", content="Reading the task: 2 values lead to a.")
    assert step_class(plan) == "planner/plan/list" and step_class(intro) == "planner/plan"


def _solver_trace(content: str, *, tool: bool) -> Trace:
    steps = [
        Step(index=0, agent="user", kind="user", content="q"),
        Step(index=1, agent="solver", kind="assistant", content="Computing a = 2 * 3 = 6."),
        Step(
            index=2,
            agent="solver",
            kind="action" if tool else "assistant",
            content=content,
            tool_calls=[ToolCall(id="c", name="calculator", arguments={"expression": "6 + 3.5"})] if tool else [],
            observation="9.5" if tool else None,
        ),
        Step(index=3, agent="reporter", kind="final_answer", content="Final answer: 9.5"),
    ]
    return Trace(id="t", framework="arith_team", task=Task(query="q"), agents=[Agent(id="solver")], steps=steps)


def test_r1_states_its_claim_where_the_agent_states_results():
    """R.1 writes the made-up result as the agent writes its results: before a remark
    that closes the step (not after it), in place of a result the step already states
    (not a second ``= N``), and in the tool's number form (9.5 doubled is 19, not 19.0)."""
    tool = _solver_trace("Computing b = a + 3.5 = 6 + 3.5. That completes the plan.", tool=True)
    texts = {mutate(tool, 2, "R.1", seed).step.content for seed in range(12)}
    assert all(
        t.startswith("Computing b = a + 3.5 = 6 + 3.5 = ") and t.endswith(". That completes the plan.") for t in texts
    )
    assert not any(".0." in t for t in texts)
    inhead = _solver_trace("Computing b = 6 + 3 = 9.", tool=False)
    for seed in range(6):
        text = mutate(inhead, 2, "R.1", seed).step.content
        assert text.startswith("Computing b = 6 + 3 = ") and text.count("=") == 2 and text != inhead.steps[2].content


@pytest.fixture(scope="module")
def code_runs() -> list[Trace]:
    """Successful code_pair reference runs whose first draft fails a shown example."""
    env = get_env("code_pair")
    runs = [run_env(env, seed) for seed in range(200, 260)]
    return [t for t in runs if t.outcome.value == "success" and sum(1 for s in t.steps if s.tool_calls) >= 2][:6]


def _replay(trace: Trace, index: int, mode: str):
    return inject(trace, index, mode, OfflineGenerator(), BuiltinExecutor())


def test_the_tester_reruns_its_own_tests(code_runs):
    trace = code_runs[0]
    runs = [s for s in trace.steps if s.tool_calls]
    assert runs[1].tool_calls[0].arguments["tests"] == runs[0].tool_calls[0].arguments["tests"]
    assert own_tests(list(trace.steps)) == runs[-1].tool_calls[0].arguments["tests"]


def test_errors_past_the_first_draft_are_decisive_and_labels_stay_honest(code_runs):
    """At the tester's failing check, approving without running it (V.2) and leaving the
    failing case out of its test table (A.1) are decisive (A.1 not when another case
    still fails); at the coder's fix step,
    stopping (A.3) hands in the code that existed before it, which fails; a syntax error
    (A.2) is still caught by the test run and never kept as decisive."""
    seen = Counter()
    for trace in code_runs:
        check = next(s.index for s in trace.steps if s.tool_calls)
        fix = next(s.index for s in trace.steps[check + 1 :] if s.agent == "coder")
        assert {"V.2", "A.1"} <= set(applicable_modes(trace, check))
        for index, mode in ((check, "V.2"), (check, "A.1"), (fix, "A.3"), (fix, "A.2")):
            result = _replay(trace, index, mode)
            seen[mode, result.verdict.decisive] += 1
    assert seen["V.2", True] == len(code_runs)
    assert seen["A.1", True] >= len(code_runs) - 2  # a draft failing two cases still fails the one left in
    assert seen["A.3", True] == len(code_runs) and seen["A.2", True] == 0


@pytest.fixture(scope="module")
def arith_build(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("arith")
    assert whenpro("run", "arith_team", "--n", "24", "--seed", "7000", "--out", str(root / "runs")).returncode == 0
    assert whenpro("build", str(root / "runs"), "--out", str(root / "ds")).returncode == 0
    return root / "ds"


def test_a_default_arith_build_holds_its_caps_and_its_position_reads_as_the_audit_does(arith_build):
    manifest = read_manifest(arith_build)
    shares = manifest["run"]["step_classes"]
    kept = manifest["traces"]
    n = len(kept)
    journal = [json.loads(line) for line in (arith_build / ".whenpro-build" / "journal.jsonl").open()][1:]
    by_id = {e["id"]: e for e in journal if e.get("id")}
    released = [by_id[t["id"]] for t in kept]
    present = sum(shares[c] for c in {e["step_class"] for e in journal if e["status"] == "kept"})
    for cls, count in Counter(e["step_class"] for e in released).items():
        assert count <= math.ceil(shares[cls] / present * n), cls
    assert all(isinstance(e["position"], int) for e in released)
    result = audit_dataset(arith_build)
    assert result.overall.traces == n >= 6


@pytest.fixture(scope="module")
def code_build(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("code")
    assert whenpro("run", "code_pair", "--n", "12", "--seed", "4000", "--out", str(root / "runs")).returncode == 0
    assert whenpro("build", str(root / "runs"), "--out", str(root / "ds")).returncode == 0
    return root / "ds"


def test_counterfactual_on_a_built_trace_finds_its_environment_in_the_provenance(code_build, tmp_path):
    """The trace file holds no env block (it would re-create the seed run); attribute
    reads only the env block of provenance.json above it and replays. Outside its
    dataset, one line says what to pass."""
    files = sorted(code_build.glob("data_release/**/*.json"))
    assert files
    doc = json.loads(files[0].read_text())
    assert "env" not in json.dumps(doc.get("extras") or {}) and "seed" not in json.dumps(doc.get("extras") or {})
    out = whenpro("attribute", "--protocol", "counterfactual", "--json", str(files[0]))
    assert out.returncode == 0, out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["attribution"]["step"] is not None and "ground_truth" not in verdict
    lonely = tmp_path / "lonely.json"
    shutil.copy(files[0], lonely)
    out = whenpro("attribute", "--protocol", "counterfactual", str(lonely))
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "provenance.json" in out.stderr and "--model" in out.stderr


_OTHERS = [("coder/assistant", "R.2"), ("coder/assistant", "A.3"), ("coder/assistant", "R.3"), ("tester/action", "A.1")]


def test_adaptive_rounds_aim_at_what_the_release_lacks_and_resume_to_the_same_build(tmp_path):
    """Seed runs whose decisive item the caps leave out get more attempts, only of kinds
    (step class, mode, position) that would grow the release; a rerun walks the same
    rounds from the journal and runs nothing."""
    import asyncio

    from whenpro_core.bench.build import BuildOptions, run_build
    from whenpro_core.bench.build_adapt import grows, next_round
    from whenpro_core.bench.build_plan import judge_position, parse_modes, plan_build, scan_seeds

    runs = tmp_path / "runs"
    assert whenpro("run", "code_pair", "--n", "8", "--seed", "4000", "--out", str(runs)).returncode == 0
    seeds = [s for s in scan_seeds(runs) if s.skip is None]
    classes = {"coder/assistant": 0.4, "tester/action": 0.3, "tester/assistant": 0.3}
    # four seed runs have a decisive V.2 item; the 25% mode cap releases 1 of them
    pool = [entry(i, "tester/assistant", "V.2", i).model_copy(update={"seed": s.id}) for i, s in enumerate(seeds[:4])]
    pool += [entry(4 + i, c, m, 4 + i) for i, (c, m) in enumerate(_OTHERS)]
    assert not grows(pool, 0.25, classes, 1, ("tester/assistant", "V.2", 9))
    assert grows(pool, 0.25, classes, 1, ("tester/action", "R.4", 9))
    tried: dict[str, int] = {}
    rounds = next_round(
        seeds, pool, set(), tried, modes=("V.2", "R.2", "A.3"), share=0.25, classes=classes, per_seed=1, seed=0
    )
    released = {e.seed for e in balance(pool, 0.25, classes, 1)[0]}
    aimed = [a for chain in rounds for a in chain]
    assert aimed and {a.seed_id for a in aimed} <= {s.id for s in seeds[:4]} - released
    assert all(a.mode != "V.2" for a in aimed)  # the release is full of V.2
    by_id = {s.id: s.trace for s in seeds}
    for a in aimed:
        step = by_id[a.seed_id].steps[a.index]
        assert grows(pool, 0.25, classes, 1, (step_class(step), a.mode, judge_position(by_id[a.seed_id], a.coord)))

    out = tmp_path / "ds"
    first = asyncio.run(
        run_build(runs, out, BuildOptions(concurrency=2, detect=False), now="2026-01-01T00:00:00+00:00")
    )
    again = asyncio.run(run_build(runs, out, BuildOptions(concurrency=2, detect=False)))
    assert again.ran == 0 and again.manifest["counts"] == first.manifest["counts"]
    assert again.manifest["traces"] == first.manifest["traces"]
    assert max(Counter(t["seed"] for t in first.manifest["traces"]).values()) == 1
    other = asyncio.run(run_build(runs, tmp_path / "ds2", BuildOptions(concurrency=1, detect=False)))
    assert sorted(a.key for a in other.plan.attempts) == sorted(a.key for a in first.plan.attempts)  # another salt
    first_round = plan_build(scan_seeds(runs), parse_modes(None, "offline"), 1).attempts
    assert len(first.plan.attempts) > len(first_round)  # the rounds after the first aimed more attempts
