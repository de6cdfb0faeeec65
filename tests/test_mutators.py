"""Offline mutators and generators: each mode's edit, where it fits, errors, determinism,
and robustness on real traces."""

from __future__ import annotations

import glob
import random
import re

import pytest

from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env
from whenpro_core.errors import ConfigError
from whenpro_core.formats import load_trace
from whenpro_core.injection.generate import InjectionRequest, OfflineGenerator
from whenpro_core.injection.mutators import MUTATORS, applicable_modes, mutate, perturb
from whenpro_core.injection.registry import get_generator
from whenpro_core.injection.verify import revealing_phrases
from whenpro_core.trace.model import Agent, Step, Task, ToolCall, Trace


def _trace() -> Trace:
    """A small hand-written run: user, plan, two calculator steps, a check, an answer."""
    rows = [
        dict(agent="user", kind="user", content="Pens cost $3 and notebooks $7. Buy 4 pens and 2 notebooks. Total?"),
        dict(
            agent="planner",
            kind="plan",
            content="Plan:\n1. solver: pens = 4 * 3\n2. solver: notebooks = 2 * 7\n"
            "3. solver: total = pens + notebooks\n4. reporter: report total",
        ),
        dict(
            agent="solver",
            kind="action",
            content="Computing pens = 4 * 3.",
            tool_calls=[ToolCall(id="c1", name="calculator", arguments={"expression": "4 * 3"})],
            observation="12",
        ),
        dict(
            agent="solver",
            kind="action",
            content="Computing notebooks = 2 * 7.",
            tool_calls=[ToolCall(id="c2", name="calculator", arguments={"expression": "2 * 7"})],
            observation="14",
        ),
        dict(agent="verifier", kind="assistant", content="Checked pens = 12 against the task: correct. Approved."),
        dict(
            agent="solver",
            kind="action",
            content="Computing total = 12 + 14. That was the last item.",
            tool_calls=[ToolCall(id="c3", name="calculator", arguments={"expression": "12 + 14"})],
            observation="26",
        ),
        dict(agent="reporter", kind="final_answer", content="Final answer: 26"),
    ]
    return Trace(
        id="hand",
        framework="hand",
        agents=[Agent(id="verifier", role="Verifier")],
        task=Task(query=rows[0]["content"], answer="26"),
        steps=[Step(index=i, coord=str(i), **r) for i, r in enumerate(rows)],
    )


def _flagged() -> Trace:
    """:func:`_trace` where the verifier reports a problem (and approves later), and the
    solver once states a result without the calculator."""
    t = _trace()
    t.steps[4].content = "Mismatch on pens: the conversation has 12, but it looks wrong. Solver, please fix."
    t.steps[3] = t.steps[3].model_copy(
        update={
            "content": "Computing notebooks = 2 * 7 = 14.",
            "tool_calls": [],
            "observation": None,
            "kind": "assistant",
        }
    )
    t.steps.insert(
        6,
        Step(
            index=6,
            coord="6",
            agent="verifier",
            kind="assistant",
            content="Checked pens = 12, notebooks = 14: correct. Approved.",
        ),
    )
    for n, st in enumerate(t.steps):
        st.index, st.coord = n, str(n)
    return t


def test_applicable_modes_per_step_kind():
    t = _trace()
    assert applicable_modes(t, 0) == []  # the user's task is never injected
    assert {"R.3", "PL.1"} <= set(applicable_modes(t, 1)) and "A.1" not in applicable_modes(t, 1)
    assert "A.3" not in applicable_modes(t, 1)  # the planner never says it is done nor answers
    assert {"R.3", "A.1", "R.2", "R.4", "A.3"} <= set(applicable_modes(t, 2))  # the solver says it is done later
    assert "R.1" not in applicable_modes(t, 2)  # this solver never states a result without its tool
    assert "R.1" in applicable_modes(_flagged(), 2)
    assert "A.4" in applicable_modes(t, 3) and "A.4" not in applicable_modes(t, 2)
    assert "V.2" not in applicable_modes(t, 4)  # an approval already: approving is no error
    assert "V.2" in applicable_modes(_flagged(), 4) and "V.2" not in applicable_modes(_flagged(), 6)
    assert "A.3" not in applicable_modes(t, 6)  # already the final answer


def test_r3_changes_the_argument_and_the_quoted_content_consistently():
    t = _trace()
    m = mutate(t, 2, "R.3")
    expr = m.step.tool_calls[0].arguments["expression"]
    assert expr != "4 * 3" and f"pens = {expr}." in m.step.content
    assert m.step.observation is None and m.step.index == 2 and m.step.coord == "2" and m.step.agent == "solver"
    assert t.steps[2].tool_calls[0].arguments["expression"] == "4 * 3"  # the seed is untouched


def test_a1_corrupts_the_argument_and_the_text_says_the_call_it_makes():
    t = _trace()
    m = mutate(t, 5, "A.1")
    assert m.step.tool_calls[0].arguments["expression"] == "12"  # lost its last operand
    assert m.step.content == "Computing total = 12. That was the last item."  # as the agent wrote the call


def test_a1_uses_another_value_seen_for_the_same_argument():
    trace = run_env(get_env("arith_team"), 2)  # table task with two items
    i = next(s.index for s in trace.steps if s.tool_calls and s.tool_calls[0].name == "lookup")
    m = mutate(trace, i, "A.1", seed=1)
    args, before = m.step.tool_calls[0].arguments, trace.steps[i].tool_calls[0].arguments
    assert args != before and set(args) == set(before)


def test_a3_a4_v2_pl1_r2_r1_c2_edits():
    t = _trace()
    a3 = mutate(t, 3, "A.3")  # the solver's own remark, too early; its step keeps its form and tool call
    assert a3.step.content == "Computing notebooks = 2 * 7. That was the last item."
    assert a3.step.kind == "action" and a3.step.tool_calls == t.steps[3].tool_calls
    a4 = mutate(t, 3, "A.4")
    assert a4.step.content == t.steps[2].content and a4.step.tool_calls[0].arguments == {"expression": "4 * 3"}
    f = _flagged()
    v2 = mutate(f, 4, "V.2")  # the verifier's own approval, in place of its report
    assert v2.step.content == f.steps[6].content and v2.step.kind == f.steps[4].kind
    pl1 = mutate(t, 1, "PL.1")
    assert pl1.step.content.count("\n") == t.steps[1].content.count("\n") - 1
    assert [ln.split(".")[0] for ln in pl1.step.content.splitlines()[1:]] == ["1", "2", "3"]
    r2 = mutate(t, 5, "R.2")
    assert r2.step.tool_calls[0].arguments["expression"] == "12 - 14" and "12 - 14" in r2.step.content
    r1 = mutate(f, 2, "R.1")  # a made-up input, worked on by the calculator: kind and call shape kept
    assert r1.step.kind == f.steps[2].kind == "action" and [c.name for c in r1.step.tool_calls] == ["calculator"]
    expr = r1.step.tool_calls[0].arguments["expression"]
    assert re.fullmatch(r"\d+ \* \d+", expr) and expr != "4 * 3"  # a figure no step gave, in the call ...
    assert r1.step.content == f"Computing pens = {expr}."  # ... and where the text quotes it
    c2 = mutate(t, 6, "C.2")  # the reporter takes the solver's earlier figure instead of 26
    assert c2.step.content != t.steps[6].content and "26" not in c2.step.content


def test_a3_in_the_agents_own_final_format_when_it_never_says_it_is_done():
    trace = run_env(get_env("code_pair"), 0)
    final = trace.steps[-1]
    i = next(s.index for s in trace.steps if s.agent == "coder" and "```python" in s.content)
    m = mutate(trace, i, "A.3")
    assert m.step.kind == "final_answer" and not m.step.tool_calls
    assert m.step.content.split("```")[0] == final.content.split("```")[0]  # the coder's own final wording
    assert m.step.content.split("```python\n")[1] == trace.steps[i].content.split("```python\n")[1]


def test_no_mutator_writes_one_fixed_sentence():
    """Over many traces, a mode's new text is not one sentence: it follows each agent."""
    env = get_env("arith_team")
    added: dict[str, set[str]] = {}
    for seed in range(40):
        t = run_env(env, seed)
        for i in range(1, len(t.steps)):
            for mode in ("R.1", "V.2", "A.3"):
                if mode in applicable_modes(t, i):
                    new = mutate(t, i, mode, seed).step.content
                    added.setdefault(mode, set()).add(re.sub(r"\d+(\.\d+)?", "N", new))
    assert all(len(v) >= 3 for v in added.values()) and set(added) >= {"R.1", "A.3"}, added


def test_r4_swaps_in_another_quantity_of_the_task():
    m = mutate(_trace(), 2, "R.4")
    expr = m.step.tool_calls[0].arguments["expression"]
    assert expr != "4 * 3" and set(expr.replace("*", " ").split()) <= {"3", "4", "7", "2"}


def test_a2_breaks_code_syntax():
    trace = run_env(get_env("code_pair"), 0)
    m = mutate(trace, 1, "A.2")
    code = m.step.content.split("```python\n")[1]
    with pytest.raises(SyntaxError):
        compile(code.split("```")[0], "x", "exec")


def test_mutations_are_deterministic_per_seed_and_vary_across_seeds():
    t = _trace()
    assert mutate(t, 2, "R.3", seed=3).step == mutate(t, 2, "R.3", seed=3).step
    assert len({mutate(t, 2, "R.3", seed=s).step.content for s in range(12)}) > 2


def test_perturb_keeps_format_and_never_returns_the_same_value():
    rng = random.Random(0)
    for token in ("0", "3", "2.50", "09:10", "100"):
        for _ in range(20):
            out = perturb(token, rng)
            assert out != token and out.count(".") == token.count(".") and out.count(":") == token.count(":")
            assert not out.startswith("-")


def test_unfit_and_unknown_modes_are_clear_errors():
    t = _trace()
    with pytest.raises(ConfigError, match="does not fit step 4.*expected one of"):
        mutate(t, 4, "A.1")
    with pytest.raises(ConfigError, match="no offline mutator for mode 'P.1'"):
        mutate(t, 2, "P.1")
    with pytest.raises(ConfigError, match="framing"):
        mutate(t, 0, "R.3")
    with pytest.raises(ConfigError, match="out of range"):
        mutate(t, 99, "R.3")


def test_generators():
    t = _trace()
    gen = get_generator("offline")
    out = gen.generate(InjectionRequest(t, 2, "R.3"))
    assert out.generator == "offline" and out.description
    text = get_generator("text:Computing pens = 5 * 3.").generate(InjectionRequest(t, 2, "R.3"))
    assert text.step.content == "Computing pens = 5 * 3." and text.step.tool_calls == t.steps[2].tool_calls
    for spec, msg in (
        ("llm", "needs a model"),
        ("llm:openai:gpt-4.1", "no API key for openai:gpt-4.1"),
        ("text:", "empty"),
        ("magic", "unknown generator"),
        ("text:@/no/such/file", "cannot read"),
    ):
        with pytest.raises(ConfigError, match=msg):
            get_generator(spec)


def test_text_generator_reads_a_file(tmp_path):
    f = tmp_path / "step.txt"
    f.write_text("Computing pens = 4 * 4.\n", encoding="utf-8")
    out = get_generator(f"text:@{f}").generate(InjectionRequest(_trace(), 2, "R.3"))
    assert out.step.content == "Computing pens = 4 * 4.\n"


def test_no_mutator_writes_a_revealing_phrase():
    traces = [_trace(), run_env(get_env("arith_team"), 0), run_env(get_env("code_pair"), 1)]
    for t in traces:
        for i in range(len(t.steps)):
            for mode in applicable_modes(t, i):
                for seed in range(3):
                    assert revealing_phrases(mutate(t, i, mode, seed).step, t.steps[i]) == []


@pytest.mark.real_traces
def test_mutators_on_real_who_and_when_traces(real_traces):
    files = sorted(glob.glob(str(real_traces / "who-and-when" / "Who&When" / "*" / "*.json")))[::12]
    assert files
    seen = set()
    gen = OfflineGenerator()
    for f in files:
        trace = load_trace(f)
        for i in range(len(trace.steps)):
            for mode in applicable_modes(trace, i):
                out = gen.generate(InjectionRequest(trace, i, mode, seed=1))
                seen.add(mode)
                s = out.step
                assert (s.index, s.coord, s.agent) == (i, trace.steps[i].coord, trace.steps[i].agent)
                assert (s.content, s.tool_calls, s.kind) != (
                    trace.steps[i].content,
                    trace.steps[i].tool_calls,
                    trace.steps[i].kind,
                ), (f, i, mode)
    assert {"R.3", "A.4", "C.2"} <= seen
    assert seen <= set(MUTATORS)


def test_c2_stale_figure_reaches_the_tool_call():
    """C.2 by a stale figure: the agent computes with the peer's earlier figure, in its tool
    call as in its words (an edit of the wording alone left the result right: never decisive)."""
    rows = [
        dict(agent="user", kind="user", content="Three tickets at the current rate. Cost?"),
        dict(agent="planner", kind="assistant", content="The rate is 5 per ticket."),
        dict(agent="planner", kind="assistant", content="Correction: the rate is 6 per ticket."),
        dict(
            agent="solver",
            kind="action",
            content="Computing cost = 3 * 6.",
            tool_calls=[ToolCall(id="c1", name="calculator", arguments={"expression": "3 * 6"})],
            observation="18",
        ),
        dict(agent="reporter", kind="final_answer", content="Final answer: 18"),
    ]
    t = Trace(
        id="stale",
        framework="hand",
        task=Task(query=rows[0]["content"], answer="18"),
        steps=[Step(index=i, coord=str(i), **r) for i, r in enumerate(rows)],
    )
    c2 = mutate(t, 3, "C.2")
    assert c2.step.content == "Computing cost = 3 * 5."
    assert c2.step.tool_calls[0].arguments == {"expression": "3 * 5"} and c2.step.kind == "action"
    assert "earlier 5 in its tool call" in c2.description


def _discount_trace() -> Trace:
    """A solver computing ``discount = subtotal * 20 / 100`` from the subtotal it computed."""
    t = _trace()
    steps = t.steps[:4] + [
        Step(
            index=4,
            coord="4",
            agent="solver",
            kind="action",
            content="Computing subtotal = pens + notebooks = 12 + 14.",
            tool_calls=[ToolCall(id="c4", name="calculator", arguments={"expression": "12 + 14"})],
            observation="26",
        ),
        Step(
            index=5,
            coord="5",
            agent="solver",
            kind="action",
            content="Computing discount = subtotal * 20 / 100 = 26 * 20 / 100.",
            tool_calls=[ToolCall(id="c5", name="calculator", arguments={"expression": "26 * 20 / 100"})],
            observation="5.2",
        ),
        Step(index=6, coord="6", agent="reporter", kind="final_answer", content="Final answer: 5.2"),
    ]
    return t.model_copy(update={"steps": steps})


def test_r3_misreads_a_constant_not_a_value_the_run_computed():
    """Issue 28: R.3 perturbing ``26`` in ``subtotal * 20 / 100 = 26 * 20 / 100`` leaves a
    filled-in number that is not the subtotal the run computed, which the audit's
    'filled vs symbolic' check finds mechanically (a default arith_team build was leaky by
    it). Where the expression has a literal, R.3 misreads the literal, on both sides."""
    from whenpro_core.audit.checks import filled_mismatch
    from whenpro_core.audit.view import audit_view

    t = _discount_trace()
    changed = set()
    for seed in range(12):
        m = mutate(t, 5, "R.3", seed)
        expr = m.step.tool_calls[0].arguments["expression"]
        assert expr.startswith("26 * ") and f"= {expr}." in m.step.content, (seed, m.step.content)
        mutated = t.model_copy(update={"steps": [*t.steps[:5], m.step, t.steps[6]]})
        assert not any(filled_mismatch(audit_view(mutated))), (seed, m.step.content)
        changed.add(expr)
    assert len(changed) > 1


def _pair_trace() -> Trace:
    """A coder and a tester: draft, failing run, report, fix, passing run, approval, final."""
    code = "```python\ndef f(x):\n    return x\n```"
    fixed = "```python\ndef f(x):\n    return x + 1\n```"
    call = [ToolCall(id="t", name="run_tests", arguments={"code": "def f(x):\n    return x\n"})]
    rows = [
        dict(agent="user", kind="user", content="Write f: f(1) == 2."),
        dict(agent="coder", kind="assistant", content=f"Initial implementation:\n{code}"),
        dict(agent="tester", kind="action", content="Running the 1 examples.", tool_calls=call, observation="FAIL"),
        dict(agent="tester", kind="assistant", content="1 failing of 1:\n- f(1) == 2: got 1\nPlease fix, coder."),
        dict(agent="coder", kind="assistant", content=f"Fixed:\n{fixed}"),
        dict(agent="tester", kind="action", content="Running the 1 examples.", tool_calls=call, observation="PASS"),
        dict(agent="tester", kind="assistant", content="All 1 tests passed. Approved."),
        dict(agent="coder", kind="final_answer", content=f"Final code:\n{fixed}"),
    ]
    return Trace(
        id="pair",
        framework="hand",
        agents=[Agent(id="tester", role="Tester")],
        task=Task(query=rows[0]["content"]),
        steps=[Step(index=i, coord=str(i), **r) for i, r in enumerate(rows)],
    )


def test_a3_does_not_answer_a_report_of_failures_with_a_final_answer():
    """Issue 28: the coder hands in only after the tester's approval; A.3 at its fix step
    answered the tester's report of failures with the final answer, a move no honest run
    of code_pair made (3 of 17 labelled steps of a default build). A.3's final answer
    comes only after the kind of step the agent's own final answer follows."""
    t = _pair_trace()
    assert "A.3" not in applicable_modes(t, 4)
    assert "A.3" in applicable_modes(t, 1)  # after the task, as before a final answer: still stopping early


def test_r3_does_not_fit_where_every_number_is_a_value_the_run_worked_out():
    """``total = pens + notebooks = 12 + 14``: both numbers are values the run computed;
    changing one leaves the filled-in side disagreeing with the run, which the audit's
    'filled vs symbolic' check finds mechanically (issue 28). R.3 has no coherent edit there."""
    t = _discount_trace()
    assert "R.3" not in applicable_modes(t, 4) and "R.3" in applicable_modes(t, 5)
