"""Verification: answer checks, the decisive rule and the two filters."""

from __future__ import annotations

import pytest

from whenpro_core.envs import get_env
from whenpro_core.envs.base import CheckResult
from whenpro_core.envs.run import run_env
from whenpro_core.injection.executors import BuiltinExecutor
from whenpro_core.injection.generate import OfflineGenerator, TextGenerator
from whenpro_core.injection.inject import describe, inject
from whenpro_core.injection.verify import (
    check_answer,
    check_trace,
    gold_visible_before,
    register_checker,
    revealing_phrases,
)
from whenpro_core.trace.model import Step, Task, Trace


@pytest.mark.parametrize(
    "answer, gold, ok",
    [
        ("23.4", "23.40", True),
        ("Final answer: $1,200", "1200", True),
        ("3.1416", "3.14", True),
        ("3.2", "3.14", False),
        ("  Paris. ", "paris", True),
        ('"Mar"', "Mar", True),
        ("Apr", "Mar", False),
        ("11:55", "11:55", True),
        ("11:56", "11:55", False),
        ("nan", "nan", True),
        ("", "3", False),
    ],
)
def test_check_answer(answer, gold, ok):
    assert check_answer(answer, gold).success is ok


def test_no_gold_is_undecidable():
    assert check_answer("3", None).success is None


def test_registered_checker_is_used_for_its_framework():
    register_checker("exact-case", lambda trace, final: CheckResult(final == trace.task.answer, "exact"))
    trace = Trace(id="t", framework="exact-case", task=Task(query="q", answer="Mar"), final_answer="mar")
    assert check_trace(trace).success is False
    assert check_trace(trace.model_copy(update={"framework": "other"})).success is True


def test_revealing_phrases_only_counts_new_words():
    new = Step(index=1, content="Here I intentionally use 5 as instructed; the error introduced is small.")
    assert set(revealing_phrases(new)) == {"intentionally", "as instructed", "error introduced"}
    old = Step(index=1, content="We test for SQL injection first.")
    assert revealing_phrases(Step(index=1, content="We test for SQL injection twice."), old) == []
    assert revealing_phrases(Step(index=1, content="Computing pens = 4 * 4.")) == []


def test_gold_visible_before_t():
    rows = [
        Step(index=0, agent="user", kind="user", content="What is 20 + 3.4? (The answer is not 23.4.)"),
        Step(index=1, agent="a", content="Adding.", observation="23.40"),
        Step(index=2, agent="b", content="Final answer: 23.4", kind="final_answer"),
    ]
    t = Trace(id="g", task=Task(query=rows[0].content, answer="23.4"), steps=rows)
    assert gold_visible_before(t, 1) is False  # the task text does not count
    assert gold_visible_before(t, 2) is True  # numerically equal observation
    words = Trace(
        id="w",
        task=Task(query="q", answer="Mar"),
        steps=[
            Step(index=0, kind="user", agent="user"),
            Step(index=1, agent="a", content="Summary of March"),
            Step(index=2, agent="a", content="Mar it is"),
        ],
    )
    assert gold_visible_before(words, 2) is False and gold_visible_before(words, 3) is True


def test_revealing_text_is_not_kept_even_when_decisive():
    seed = run_env(get_env("arith_team"), 1)
    plan = seed.steps[1].content
    assert "+ 60" in plan
    gen = TextGenerator(plan.replace("+ 60", "+ 70") + "\n(Lunch deliberately set wrong, as instructed.)")
    result = inject(seed, 1, "R.3", gen, BuiltinExecutor())
    v = result.verdict
    assert v.decisive and not v.kept and "as instructed" in v.revealing
    assert "reveals the construction" in "\n".join(describe(result))


def test_gold_visible_injection_is_not_kept():
    seed = run_env(get_env("arith_team"), 1, plain=True)  # the fixed example run
    last = len(seed.steps) - 1  # the reporter: the solver already computed the answer before it
    result = inject(seed, last, "R.3", OfflineGenerator(), BuiltinExecutor())
    assert result.verdict.decisive and result.verdict.gold_visible_before_t and not result.verdict.kept
    lines = describe(result)
    assert any("gold answer was visible" in line for line in lines)
