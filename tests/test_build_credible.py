"""Issue 14, the parts measured not met: a release whose caps hold on the release itself
(arith_team's form-classifier leak), code_pair errors that are decisive past the first
draft (the tester keeps its tests; V.2 at a failing check; A.3 hands in the code that
existed; A.1 leaves out the failing case), and counterfactual attribution on a built
trace that finds its environment in the dataset's provenance. Real runs, builds,
injections and audits; small n."""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.support.cli import run_whenpro
from tests.support.tells import (
    built_items,
    call_mismatch,
    expression_mismatch,
    honest_transitions,
    unseen_transitions,
)
from whenpro_core.audit.run import audit_dataset
from whenpro_core.audit.view import audit_view, label_of
from whenpro_core.dataset import build_store
from whenpro_core.dataset.build import BuildOptions, run_attempt
from whenpro_core.dataset.build_plan import (
    LOCAL_FORM_BASELINES,
    MIN_AGENT_STEPS,
    POOL_FORM_BASELINES,
    Attempt,
    candidate_steps,
    fitting_modes,
    pool_form_picks,
    step_class,
)
from whenpro_core.dataset.build_store import FORM_PICK_SLACK, POSITION_SHARE, balance, read_manifest, select_release
from whenpro_core.dataset.journal import Entry
from whenpro_core.envs import get_env
from whenpro_core.envs.code_pair import own_tests
from whenpro_core.envs.run import run_env
from whenpro_core.formats import load_trace
from whenpro_core.injection.executors import BuiltinExecutor
from whenpro_core.injection.generate import OfflineGenerator
from whenpro_core.injection.inject import inject
from whenpro_core.injection.mutators import CRITIQUE, MUTATORS, applicable_modes, build_modes, ends_run, mutate
from whenpro_core.injection.textedit import is_agent_step
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


def test_a_release_holds_no_more_of_a_form_baselines_picks_than_chance_gives():
    """Half the pool's labels sit on the step the length outlier picks (a tester's one-line
    approval): the release keeps at most (mean chance + FORM_PICK_SLACK) of its size there,
    the rest are left out as form_pick; entries no one-trace baseline picks are not cut."""
    modes = ["A.1", "R.3", "R.4", "A.3", "R.1", "V.2", "R.2", "A.4"]
    pool = []
    for i in range(40):
        e = entry(i, "solver/action", modes[i % 8], i % 10)
        e.form_picks = ["length outlier"] if i % 2 else []
        e.chance = 0.2
        pool.append(e)
    chosen, out = balance(pool, 0.25, {"solver/action": 1.0})
    n = len(chosen)
    picked = sum(1 for e in chosen if e.form_picks)
    assert n >= 20 and picked <= max(2, math.floor(round((0.2 + FORM_PICK_SLACK) * n, 9)))
    assert "form_pick" in out.values() and all(pool[int(k[1:])].form_picks for k, r in out.items() if r == "form_pick")


def test_a_release_is_not_cut_below_a_selection_that_holds_every_cap():
    """Labels whose random chance varies from run to run (2 to 10 candidate steps), a
    third of them on a step a one-trace baseline picks: the release holds every cap on
    itself (the form_pick cap at its own mean chance) and is not a remnant of one cut cap
    after cap. Grown under the pool's chance and then cut at its own, such a release fell
    to 14 traces where 27 hold every cap (a code_pair release fell from 17 to 4 when one
    item left the pool)."""
    rng = random.Random(248)
    modes = ["A.1", "A.3", "R.1", "R.2", "R.3", "R.4", "V.2"]
    classes = {"coder/assistant": 0.4, "tester/action": 0.3, "tester/assistant": 0.3}
    pool = []
    for i in range(37):
        e = entry(i, rng.choice(list(classes)), rng.choice(modes), rng.randint(0, 9))
        e.form_picks = ["length outlier"] if rng.random() < 0.3 else []
        e.chance = rng.choice([0.1, 0.2, 0.25, 0.33, 0.5])
        pool.append(e)
    chosen, _ = balance(pool, 0.25, classes, 1)
    n = len(chosen)
    chance = sum(e.chance or 0 for e in chosen) / n
    assert n >= 24
    assert sum(1 for e in chosen if e.form_picks) <= max(2, math.floor(round((chance + FORM_PICK_SLACK) * n, 9)))
    assert max(Counter(e.mode for e in chosen).values()) <= max(1, math.floor(0.25 * n))
    assert max(Counter(e.position for e in chosen).values()) <= max(2, math.ceil(POSITION_SHARE * n))


def _rare_template_picks(selected: list[Entry], views: object, work: object = None) -> dict[str, set[str]]:
    """A stand-in for the rarest template read against the selection itself: it picks
    each entry whose template (here ``seed_ref``) no other entry of the selection shares,
    so that, as with the real baseline, a smaller selection has more rare steps."""
    held = Counter(e.seed_ref for e in selected)
    return {"rarest template": {e.key for e in selected if held[e.seed_ref] == 1}, "form classifier": set()}


def test_a_release_checked_against_itself_does_not_collapse(monkeypatch):
    """A code_pair-like pool (seven modes, the tester's reports crowded with R.1 and V.2)
    whose first selection of 20 has more rare-template picks than chance gives. Leaving
    out one pick and selecting again, round after round, ended at 6 traces in 6 modes
    (each new selection had rare steps of its own; a real code_pair release went 22 ->
    12); the release now keeps at least 12 traces, every mode, and every cap."""
    monkeypatch.setattr(build_store, "_own_picks", _rare_template_picks)
    rng = random.Random(4)
    modes = ["A.1"] * 8 + ["A.3"] * 7 + ["R.1"] * 9 + ["R.2"] * 7 + ["R.3"] * 4 + ["R.4"] * 3 + ["V.2"] * 9
    classes = {"coder/assistant": 0.37, "tester/action": 0.31, "tester/assistant": 0.31}
    pool = []
    for i, mode in enumerate(modes):
        cls = "tester/assistant" if mode in ("V.2", "R.1") else "tester/action" if mode == "A.1" else "coder/assistant"
        template, salted, position = f"t{rng.randrange(25)}", f"{rng.getrandbits(32):08x}", rng.choice(_POSITIONS)
        e = entry(i, cls, mode, position).model_copy(update={"seed_ref": template, "id": salted, "chance": 0.22})
        pool.append(e.model_copy(update={"form_picks": []}))
    chosen, out = select_release(pool, {}, 0.25, classes, 1)
    n = len(chosen)
    assert n >= 12 and {e.mode for e in chosen} == set(modes)
    assert len(out) == len(pool) - n and set(out.values()) <= {"step_class", "position", "mode_share", "form_pick"}
    assert max(Counter(e.mode for e in chosen).values()) <= math.floor(0.25 * n)
    assert len(_rare_template_picks(chosen, None)["rarest template"]) <= math.floor((0.22 + FORM_PICK_SLACK) * n)
    assert max(Counter(e.position for e in chosen).values()) <= max(2, math.ceil(POSITION_SHARE * n))
    by_class = Counter(e.step_class for e in chosen)
    assert all(by_class[c] <= math.ceil(share / sum(classes.values()) * n) for c, share in classes.items())


_POSITIONS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 8, 7]


def test_list_shaped_steps_are_their_own_class():
    plan = Step(index=1, agent="planner", kind="plan", content="Plan:\n1. solver: a = 2 * 3\n2. reporter: report a")
    intro = Step(index=1, agent="planner", kind="plan", content="Reading the task: 2 values lead to a.")
    assert step_class(plan) == "planner/plan/list" and step_class(intro) == "planner/plan"


def test_a_verdict_is_its_own_class():
    """Issue 28: code_pair's R.1 and V.2 label the tester's approval, which shares
    ``tester/assistant`` with its reports of failures; balanced as one class, a default
    build put a third of its labels on approvals and the learned form attacker found them
    by their wording (36% against a prior of 9%). An approval is a class of its own, so
    approvals hold no more of the labels than of the candidate steps."""
    approval = Step(index=3, agent="tester", kind="assistant", content="The 2 tests pass. Approved.")
    report = Step(index=3, agent="tester", kind="assistant", content="1 failing of 2:\n- f(1) == 2: got 3\nPlease fix.")
    assert step_class(approval) == "tester/assistant/verdict" and step_class(report) == "tester/assistant"


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
    """R.1 works from a figure no step gave, in place of a value it reads: at a tool step
    in the call and where the text quotes it (the step keeps its kind and call, as the
    agent's honest tool steps have them); in a computation stated in the text, with the
    result worked out right on the made-up figure (a wrong sum would be R.3, and a tell
    any recomputation finds), in place of the result the step states."""
    tool = _solver_trace("Computing b = a + 3.5 = 6 + 3.5. That completes the plan.", tool=True)
    steps = [mutate(tool, 2, "R.1", seed).step for seed in range(12)]
    for st in steps:  # at a tool step: the made-up figure in the call and its quote; the tool works it out
        m = re.fullmatch(r"Computing b = a \+ 3\.5 = ([\d.]+) \+ 3\.5\. That completes the plan\.", st.content)
        assert m and m[1] != "6" and st.tool_calls[0].arguments == {"expression": f"{m[1]} + 3.5"}, st.content
        assert st.kind == "action" and st.observation is None
    assert len({st.content for st in steps}) > 1
    inhead = _solver_trace("Computing b = 6 + 3 = 9.", tool=False)
    for seed in range(6):
        text = mutate(inhead, 2, "R.1", seed).step.content
        m = re.fullmatch(r"Computing b = (\d+) \+ (\d+) = (\d+)\.", text)
        assert m and text != inhead.steps[2].content and int(m[1]) + int(m[2]) == int(m[3]), text


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
    """After the tester's failing check, reporting that every test passed (R.1: a result
    its run did not give) and leaving the failing case out of its test table (A.1) are
    decisive (A.1 not when another case still fails); approving on the cases it saw pass
    (V.2, where one did) is too; at the coder's fix step, stopping (A.3) would answer the
    tester's report of failures with the final answer, a move no honest run makes (issue
    28), so A.3 does not fit there; a syntax error (A.2) is still caught by the test
    run and never kept as decisive. No mode turns the check itself into a verdict: an
    approval with no test run before it is a move no honest run makes."""
    seen = Counter()
    for trace in code_runs:
        check = next(s.index for s in trace.steps if s.tool_calls)
        fix = next(s.index for s in trace.steps[check + 1 :] if s.agent == "coder")
        assert "A.1" in applicable_modes(trace, check)
        assert not {"R.1", "V.2"} & set(applicable_modes(trace, check)) and "R.1" in applicable_modes(trace, check + 1)
        passed = "PASS" in (trace.steps[check].observation or "")
        assert ("V.2" in applicable_modes(trace, check + 1)) == passed
        assert "A.3" not in applicable_modes(trace, fix)
        tries = [(check + 1, "R.1"), (check, "A.1"), (fix, "A.2")] + [(check + 1, "V.2")] * passed
        for index, mode in tries:
            result = _replay(trace, index, mode)
            seen[mode, result.verdict.decisive] += 1
    assert seen["R.1", True] == len(code_runs) and seen["V.2", False] == 0 and seen["V.2", True] >= 1
    assert seen["A.1", True] >= len(code_runs) - 2  # a draft failing two cases still fails the one left in
    assert seen["A.2", True] == 0


def test_r1_at_the_testers_verdict_reports_a_pass_its_run_did_not_give(code_runs):
    """R.1 at the tester's report of a failing run: its own approval (its wording, its
    kind), stating that every case run passed; the test run before it stays, as in every
    honest run. V.2 there approves on the cases it saw pass. The wording varies with the
    run (the tester's own approvals are drawn per run)."""
    texts = set()
    for trace in code_runs:
        check = next(s for s in trace.steps if s.tool_calls)
        verdict = trace.steps[check.index + 1]
        results = re.findall(r"^(PASS|FAIL)\b", check.observation or "", re.MULTILINE)
        approvals = {
            re.sub(r"\d+", "N", s.content)
            for s in trace.steps
            if s.agent == "tester" and "Approved" in (s.content or "")
        }
        m = mutate(trace, verdict.index, "R.1", seed=1)
        assert m.step.tool_calls == [] and m.step.agent == "tester" and m.step.kind == verdict.kind
        assert re.sub(r"\d+", "N", m.step.content) in approvals
        assert set(re.findall(r"\d+", m.step.content)) == {str(len(results))}
        assert f"all {len(results)} tests passed" in m.description
        if "V.2" in applicable_modes(trace, verdict.index):
            v2 = mutate(trace, verdict.index, "V.2", seed=1).step.content
            assert set(re.findall(r"\d+", v2)) == {str(results.count("PASS"))}
        texts.add(re.sub(r"\d+", "N", m.step.content))
    assert len(texts) >= 3


def test_a_testers_report_of_failures_reads_as_a_critique_in_every_wording():
    """The tester words a failing check in several ways (``Failures (1 of 2):``,
    ``2 failing of 2:``), some with an ask that names no fix word (``Coder, can you fix
    this?``). Each is a report of a problem: A.4 repeating it after the coder answered is
    not tried (it was, about once in five builds, and never kept), and R.1 (reporting
    every case passed) fits there, V.2 (approving on the cases that passed) where one
    did. A passing report (``No failures in 3 tests.``) is no critique."""
    env = get_env("code_pair")
    for seed in (27, 31, 46, 74):
        trace = run_env(env, seed)
        report = next(
            s for s in trace.steps if s.agent == "tester" and not s.tool_calls and re.search(r"fail", s.content, re.I)
        )
        assert CRITIQUE.search(report.content) and "R.1" in build_modes(trace, report.index)
        run = trace.steps[report.index - 1].observation or ""
        assert ("V.2" in build_modes(trace, report.index)) == bool(re.search(r"^PASS", run, re.MULTILINE))
        later = [s.index for s in trace.steps[report.index + 1 :] if s.agent == "tester"]
        assert later and not any("A.4" in build_modes(trace, i) for i in later)
    for passing in ("No failures in 3 tests. Approved.", "Every example passes (2 of 2). Approved."):
        assert not CRITIQUE.search(passing)


def test_build_leaves_out_a4_and_c2_where_they_were_never_kept(code_runs):
    """A.4 at the coder's first draft repeats its opening remark in place of the code the
    tester runs next: the run stops there, a trivial item every time. C.2 by a stale
    figure in the tester's message changes no work (the coder acts on the verdict).
    Builds do not try them; ``whenpro inject`` still offers them."""
    stale, drafts = [], 0
    for trace in code_runs:
        check = next(s.index for s in trace.steps if s.tool_calls)
        draft = max(s.index for s in trace.steps[:check] if s.agent == "coder")
        if "A.4" in applicable_modes(trace, draft):  # an opening remark before the draft
            drafts += 1
            assert "A.4" not in build_modes(trace, draft)
            agents = sum(1 for s in _replay(trace, draft, "A.4").counterfactual.steps if s.agent != "user")
            assert agents < 3
        tester = [s.index for s in trace.steps if s.agent == "tester" and "C.2" in applicable_modes(trace, s.index)]
        assert not any("C.2" in build_modes(trace, index) for index in tester)
        stale += [(trace, index) for index in tester]
    assert drafts >= 2 and len(stale) >= 2 and not any(_replay(t, index, "C.2").verdict.decisive for t, index in stale)


def test_build_does_not_end_a_run_before_its_third_agent_step(code_runs):
    """A.3 at the coder's first draft or the tester's first report hands in what exists
    there as the final answer: the run ends with fewer than MIN_AGENT_STEPS agent steps,
    a trivial item every time. Builds do not plan it there (it wasted about 14 attempts a
    code_pair build); ``whenpro inject`` still offers it. (Later steps of code_pair no
    longer get it: the coder's later steps answer the tester's reports, where handing in is
    a move no honest run makes, issue 28.)"""
    early, later = 0, 0
    for trace in code_runs:
        fits = fitting_modes(trace, tuple(MUTATORS))
        agent_steps = [s.index for s in trace.steps if is_agent_step(s)]
        for n, index in enumerate(agent_steps, start=1):
            if "A.3" not in applicable_modes(trace, index) or not ends_run(trace, index, "A.3"):
                continue
            if n < MIN_AGENT_STEPS:
                early += 1
                assert "A.3" not in fits.get(index, [])
                agents = sum(1 for s in _replay(trace, index, "A.3").counterfactual.steps if is_agent_step(s))
                assert agents < MIN_AGENT_STEPS
            elif index in candidate_steps(trace):
                later += "A.3" in fits.get(index, [])
    assert early >= 2 and later == 0


def test_a_kept_item_is_balanced_by_the_class_of_the_step_as_released(code_runs):
    """R.1 at the tester's report is counted with the tester's verdicts (its report now
    approves, as V.2's does), A.1 at its check with the checks."""
    trace = code_runs[0]
    check = next(s for s in trace.steps if s.tool_calls)
    classes = {}
    for mode, step in (("R.1", trace.steps[check.index + 1]), ("A.1", check)):
        attempt = Attempt("r.json", trace.id, step.index, step.coord or "", mode)
        out = run_attempt(trace, attempt, OfflineGenerator(), BuiltinExecutor(), BuildOptions(), now="t")
        assert out.entry.status == "kept", out.entry.detail
        classes[mode] = out.entry.step_class
    assert classes == {"R.1": "tester/assistant/verdict", "A.1": "tester/action"}


@pytest.fixture(scope="module")
def arith_build(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("arith")
    assert whenpro("run", "arith_team", "--n", "24", "--seed", "7000", "--out", str(root / "runs")).returncode == 0
    built = whenpro("build", str(root / "runs"), "--out", str(root / "ds"))
    assert built.returncode == 0
    # between attempts the build says what it is doing (issue 33: a long selection showed nothing)
    assert "planning round 2 from" in built.stdout and "selecting the release from" in built.stdout
    # and each phase of the release selection says so as it starts (issue 33 round 3)
    phases = ("reading the judge views of", "adversarial filter: learned attacker on", "writing the release: ")
    assert all(p in built.stdout for p in phases), built.stdout[-2000:]
    return root / "ds"


def test_a_default_arith_build_holds_its_caps_and_its_position_reads_as_the_audit_does(arith_build):
    manifest = read_manifest(arith_build)
    shares = manifest["run"]["step_classes"]
    kept = manifest["traces"]
    n = len(kept)
    lines = [json.loads(line) for line in (arith_build / ".whenpro-build" / "journal.jsonl").open()][1:]
    journal = list({e["key"]: e for e in lines}.values())  # the last line of a key wins (detectable re-journals)
    by_id = {e["id"]: e for e in journal if e.get("id")}
    released = [by_id[t["id"]] for t in kept]
    present = sum(shares[c] for c in {e["step_class"] for e in journal if e["status"] == "kept"})
    for cls, count in Counter(e["step_class"] for e in released).items():
        assert count <= math.ceil(shares[cls] / present * n), cls
    assert all(isinstance(e["position"], int) for e in released)
    chance = sum(e["chance"] for e in released) / n  # the audit's random baseline on the release
    for name in LOCAL_FORM_BASELINES:
        picked = sum(1 for e in released if name in e["form_picks"])
        assert picked <= max(2, math.floor(round((chance + FORM_PICK_SLACK) * n, 9))), name
    result = audit_dataset(arith_build)
    assert result.overall.traces == n >= 6


@pytest.fixture(scope="module")
def code_build(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("code")
    # 30 runs from seed 2000: a release whose rarest-template picks against itself went past
    # the form_pick cap when only the kept pool's picks were capped (8 picks against 7)
    assert whenpro("run", "code_pair", "--n", "30", "--seed", "2000", "--out", str(root / "runs")).returncode == 0
    assert whenpro("build", str(root / "runs"), "--out", str(root / "ds")).returncode == 0
    return root / "ds"


def test_a_release_holds_no_more_picks_of_a_baseline_reading_the_dataset_than_chance_gives(code_build):
    """The rarest template and the form classifier read the other traces of the dataset,
    and a smaller corpus makes more steps rare: against the release itself, as ``whenpro
    audit`` reads it, each picks at most (mean chance + FORM_PICK_SLACK) of the released
    labels (two code_pair releases balanced on the one-trace picks scored 13 and 11 points
    above random by the rarest template, one 10.5 points by the form classifier)."""
    journal = [json.loads(line) for line in (code_build / ".whenpro-build" / "journal.jsonl").open()][1:]
    by_id = {e["id"]: e for e in journal if e.get("id")}
    released = read_manifest(code_build)["traces"]
    traces = [load_trace(code_build / t["ref"]) for t in released]
    views = [audit_view(trace) for trace in traces]
    pool = [(v, by_id[t["id"]]["step"], label_of(tr, v)) for v, tr, t in zip(views, traces, released, strict=True)]
    picks = pool_form_picks(pool)
    n = len(released)
    chance = sum(by_id[t["id"]]["chance"] for t in released) / n
    assert n >= 2
    for name in POOL_FORM_BASELINES:
        assert sum(1 for p in picks if name in p) <= max(2, math.floor(round((chance + FORM_PICK_SLACK) * n, 9)))


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

    from whenpro_core.dataset.build import BuildOptions, run_build
    from whenpro_core.dataset.build_adapt import grows, next_round
    from whenpro_core.dataset.build_plan import judge_position, parse_modes, plan_build, released_class, scan_seeds

    runs = tmp_path / "runs"
    assert whenpro("run", "code_pair", "--n", "8", "--seed", "4000", "--out", str(runs)).returncode == 0
    seeds = [s for s in scan_seeds(runs) if s.skip is None]
    classes = {"coder/assistant": 0.4, "tester/action": 0.3, "tester/assistant": 0.3}
    # four seed runs have a decisive V.2 item; the 25% mode cap releases 1 of them
    pool = [entry(i, "tester/assistant", "V.2", i).model_copy(update={"seed": s.id}) for i, s in enumerate(seeds[:4])]
    pool += [entry(4 + i, c, m, 4 + i) for i, (c, m) in enumerate(_OTHERS)]
    # no mode is scarce (SCARCE_ITEMS decisive items each), so every attempt is aimed at growth
    pool += [entry(10 + i, "coder/assistant", m, i) for i in range(2) for m in ("R.2", "A.3")]
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
        cls = released_class(by_id[a.seed_id], a.index, a.mode, 0)
        assert grows(pool, 0.25, classes, 1, (cls, a.mode, judge_position(by_id[a.seed_id], a.coord)))

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


def test_adaptive_rounds_aim_at_the_class_the_release_shows(code_runs):
    """A round aims at the step class the built trace shows (the release balances that
    class): V.2 turns a tester's report of failures into an approval, so a V.2 pair fills
    ``tester/assistant/verdict``, not the class of the report it replaces. With the
    report's class open and the approvals' class full, no V.2 pair is aimed."""
    from whenpro_core.dataset.build_adapt import grows, next_round
    from whenpro_core.dataset.build_plan import Seed, judge_position, released_class

    reports = [
        (t, i)
        for t in code_runs
        for i in fitting_modes(t, ("V.2",))
        if step_class(t.steps[i]) == "tester/assistant" and "V.2" in fitting_modes(t, ("V.2",))[i]
    ]
    assert reports, "no code_pair run with a report of failures V.2 fits"
    for t, i in reports:
        assert released_class(t, i, "V.2", 0) == "tester/assistant/verdict"
        assert released_class(t, i, "V.2", 0, offline=False) == "tester/assistant"
    seeds = [Seed(f"ref{n}", t.id, trace=t) for n, t in enumerate(code_runs)]
    classes = {"coder/assistant": 0.4, "tester/action": 0.3, "tester/assistant": 0.2, "tester/assistant/verdict": 0.1}
    # every seed run but the reports' has a released item; the approvals' class is at its cap
    pool = [entry(n, "tester/assistant/verdict", "R.1", n).model_copy(update={"seed": f"away{n}"}) for n in (0, 8, 9)]
    pool += [entry(1 + n, "coder/assistant", m, n) for n, m in enumerate(("R.2", "R.3", "R.4", "A.1"))]
    # V.2 is not scarce (no attempts aimed at it for want of items); one of its items is
    # a reports' seed run's, which the cap on the approvals' class may leave out
    pool += [entry(5 + n, "tester/action", "V.2", 5 + n).model_copy(update={"seed": f"other{n}"}) for n in range(2)]
    pool += [entry(7, "tester/assistant/verdict", "V.2", 7).model_copy(update={"seed": reports[0][0].id})]
    rounds = next_round(seeds, pool, set(), {}, modes=("V.2",), share=0.5, classes=classes, per_seed=1, seed=0)
    by_id = {s.id: s.trace for s in seeds}
    for a in (a for chain in rounds for a in chain):  # each aimed kind, as the release will show it, grows it
        kind = (released_class(by_id[a.seed_id], a.index, a.mode, 0), a.mode, judge_position(by_id[a.seed_id], a.coord))
        assert kind[0] != "tester/assistant/verdict" and grows(pool, 0.5, classes, 1, kind)


def test_adaptive_rounds_try_a_mode_the_pool_lacks_at_seed_runs_of_their_own(code_runs):
    """A mode that fits the seed runs but has fewer than SCARCE_ITEMS decisive items
    (arith_team's C.2 is decisive about one time in ten) gets SCARCE_TRIES attempts a
    round, each at a seed run of its own, released or not, up to SCARCE_BUDGET in all; a
    mode the pool holds often enough gets none of these."""
    from whenpro_core.dataset.build_adapt import SCARCE_BUDGET, SCARCE_ITEMS, SCARCE_TRIES, next_round
    from whenpro_core.dataset.build_plan import Seed

    seeds = [Seed(f"ref{n}", t.id, trace=t) for n, t in enumerate(code_runs)]
    classes = {"coder/assistant": 0.4, "tester/action": 0.3, "tester/assistant": 0.3}
    pool = [entry(0, "tester/assistant", "V.2", 3).model_copy(update={"seed": seeds[0].id})]
    pool += [entry(n, "tester/assistant", "V.2", n) for n in range(1, SCARCE_ITEMS)]
    tried: dict[str, int] = {}
    done: set[str] = set()
    aimed: list[Attempt] = []
    for _ in range(SCARCE_BUDGET):
        rounds = next_round(
            seeds, pool, done, tried, modes=("V.2", "R.3"), share=0.25, classes=classes, per_seed=1, seed=0
        )
        if not rounds:
            break
        this_round = [a for chain in rounds for a in chain]
        assert len(this_round) <= SCARCE_TRIES and len({a.seed_id for a in this_round}) == len(this_round)
        aimed += this_round
        done |= {a.key for a in this_round}
    assert {a.mode for a in aimed} == {"R.3"} and seeds[0].id in {a.seed_id for a in aimed}
    assert len(aimed) == SCARCE_BUDGET and len(set(a.key for a in aimed)) == len(aimed)
    assert all("R.3" in build_modes(t.trace, a.index) for a in aimed for t in seeds if t.id == a.seed_id)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["arith", "code"])
def test_a_default_builds_labelled_steps_show_none_of_the_tells(which, request):
    """Issue 28 on real builds: no released trace's labelled step names one call and makes
    another, has a filled-in expression whose sides disagree, or is reached by a move no
    honest run makes (code_pair's A.3 included: it no longer answers the tester's report
    of failures with the final answer), and no other step
    of a release names one call and makes another. (An honest solver's slip, a literal off
    by one on the filled-in side of a value the verifier checks, is honest noise: it can
    sit in a seed run.)"""
    dataset = request.getfixturevalue(f"{which}_build")
    env = get_env("arith_team" if which == "arith" else "code_pair")
    moves = honest_transitions(run_env(env, seed) for seed in range(3000, 3000 + (300 if which == "arith" else 120)))
    items = built_items(dataset)
    assert len(items) >= 6
    for trace, index, mode in items:
        step = trace.steps[index]
        assert call_mismatch(step) is None, (mode, step.content)
        assert expression_mismatch(step, results=mode != "R.3") is None, (mode, step.content)
        assert unseen_transitions(trace, index, moves) is None, (mode, step.content)
        others = [s for s in trace.steps if s.index != index]
        assert not [s.content for s in others if call_mismatch(s)], mode
