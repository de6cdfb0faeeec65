"""The audit's within-step consistency checks (issue 28): a step whose text and tool call
disagree, an expression whose filled-in side is not what the run computed, a verdict with
no check before it. Small made-up runs written the way arith_team and code_pair write."""

from __future__ import annotations

import json

from whenpro_core.audit.checks import call_mismatch, filled_mismatch, numbers, unchecked_verdict
from whenpro_core.audit.view import AuditStep, AuditTrace


def run(*steps: tuple[str, str, str, str]) -> AuditTrace:
    """Steps as (agent, content, call, observation)."""
    return AuditTrace(
        id="t",
        framework="toy",
        query="q",
        steps=tuple(
            AuditStep(i, str(i + 1), agent, "action" if call else "assistant", content, call, seen)
            for i, (agent, content, call, seen) in enumerate(steps)
        ),
    )


def calc(expression: str) -> str:
    return f"calculator({json.dumps({'expression': expression})})"


def test_numbers_reads_plain_numbers_only():
    assert numbers("x = 8.85, s1000 has 2x and 14 + 45.") == {8.85, 14.0, 45.0}


def test_a_call_that_says_something_else_than_its_text():
    t = run(
        ("solver", "Computing erasers = 8 * 2.", calc("8 * 2"), "16"),
        ("solver", "Computing notebooks = 9 * 5.", calc("9 * 6"), "54"),
        ("solver", "Looking up kiwi_price: lookup(kiwi, price).", 'lookup({"item":"kiwi","column":"price"})', "2"),
        ("solver", "Looking up pear_price: lookup(pear, price).", 'lookup({"item":"plum","column":"price"})', "1"),
        ("verifier", "Approved.", "", ""),
    )
    assert call_mismatch(t) == [0.0, 0.5, 0.0, 0.5, 0.0]


def test_a_call_running_a_changed_copy_of_the_written_code():
    code = "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x * 2)\n    return out\n"
    changed = code.replace("x * 2", "x * 3")
    own = "import os\nprint(1)\nprint(2)\n"
    t = run(
        ("coder", f"First draft:\n```python\n{code}```", "", ""),
        ("tester", "Running the 2 examples.", f"run_tests({json.dumps({'code': code})})", "PASS"),
        ("tester", "Running the 2 examples.", f"run_tests({json.dumps({'code': changed})})", "PASS"),
        ("tester", "Own tests.", f"run_tests({json.dumps({'code': own})})", "ok"),
    )
    assert call_mismatch(t) == [0.0, 0.0, 1.0, 0.0]  # not its own unrelated test code


def test_a_filled_in_number_that_is_not_what_the_run_computed():
    t = run(
        ("solver", "Computing erasers = 8 * 2.", calc("8 * 2"), "16"),
        ("solver", "Computing notebooks = 9 * 5.", calc("9 * 5"), "45"),
        ("solver", "Computing subtotal = erasers + notebooks = 16 + 46.", calc("16 + 46"), "62"),
        ("solver", "Computing total = subtotal * 15 / 100 = 62 * 15 / 100.", calc("62 * 15 / 100"), "9.3"),
        ("verifier", "Checked: erasers = 16, notebooks = 45. Approved.", "", ""),
    )
    assert filled_mismatch(t) == [0.0, 0.0, 1.0, 0.0, 0.0]


def test_a_value_stated_before_counts_and_a_decimal_is_read_whole():
    t = run(
        ("solver", "Computing value = price * stock = 1.25 * 24 = 30.", "", ""),
        ("verifier", "Mismatch: stock = 23 from the task.", "", ""),
        ("solver", "Recomputing value = price * stock = 1.25 * 23.", calc("1.25 * 23"), "28.75"),
    )
    assert filled_mismatch(t) == [0.0, 0.0, 0.0]


def test_a_verdict_with_no_check_before_it():
    t = run(
        ("coder", "```python\ndef f(): pass\n```", "", ""),
        ("tester", "Let me run the 2 examples.", 'run_tests({"code": "x"})', "PASS f() == None"),
        ("tester", "All 2 tests pass. Approved.", "", ""),
        ("coder", "```python\ndef f(): return 1\n```", "", ""),
        ("tester", "The 2 tests pass. Approved.", "", ""),
    )
    assert unchecked_verdict(t) == [0.0, 0.0, 0.0, 0.0, 1.0]


def test_the_last_symbol_of_an_expression_is_not_given_the_expressions_value():
    """A verifier writing ``melon_value = melon_price * melon_stock = 8.25`` states the
    value of melon_value, not of melon_stock: the solver's later ``0.25 * 33`` for
    ``melon_price * melon_stock`` agrees with the run (a default arith_team build's A.3
    item was flagged for this, and so were honest steps)."""
    stock, price = 'lookup({"item":"melon","column":"stock"})', 'lookup({"item":"melon","column":"price"})'
    t = run(
        ("solver", "Getting melon_stock via lookup(melon, stock).", stock, "33"),
        ("solver", "Looking up melon_price: lookup(melon, price).", price, "0.25"),
        ("verifier", "From the task melon_stock = 33, melon_value = melon_price * melon_stock = 8.25. Redo.", "", ""),
        ("solver", "Recomputing melon_value = melon_price * melon_stock = 0.25 * 33 = 8.25.", "", ""),
        ("solver", "Recomputing melon_value = melon_price * melon_stock = 0.25 * 34 = 8.5.", "", ""),
    )
    assert filled_mismatch(t) == [0.0, 0.0, 0.0, 0.0, 1.0]
