"""Answer matching that forgives form, not content (issue 32, item 4): case, whitespace,
punctuation and the way a number is written, each named as the rule that matched."""

from __future__ import annotations

import pytest

from tests.support.cli import run_whenpro
from whenpro_core.formats.native import write_trace
from whenpro_core.injection.verify import check_answer
from whenpro_core.trace.model import Outcome, Step, Task, Trace


@pytest.mark.parametrize(
    "answer, gold, rule",
    [
        ("CSI Cyber", "CSI: Cyber", "punctuation"),
        ("csi:  CYBER", "CSI: Cyber", "case and whitespace"),
        ("U.S.A.", "USA", "punctuation"),
        ("Rock-and-roll", "rock and roll", "punctuation"),
        ("23.40", "23.4", "number"),
        ("$1,200 per month", "1200 per month", "numbers written alike"),
        ("3.0 apples", "3 apples", "numbers written alike"),
    ],
)
def test_form_is_forgiven_and_the_rule_named(answer, gold, rule):
    result = check_answer(answer, gold)
    assert result.success is True and result.rule == rule
    assert rule in result.detail


@pytest.mark.parametrize(
    "answer, gold",
    [("CSI Miami", "CSI: Cyber"), ("11:56", "11:55"), ("1200 per week", "1200 per month"), ("31", "3 1")],
)
def test_content_still_counts(answer, gold):
    result = check_answer(answer, gold)
    assert result.success is False and result.rule is None and "no rule matched" in result.detail


def test_info_says_which_rule_matched(tmp_path):
    trace = Trace(
        id="t",
        framework="custom",
        task=Task(query="Which show?", answer="CSI: Cyber"),
        steps=[Step(index=0, coord="0", agent="a", kind="final_answer", content="CSI Cyber")],
        final_answer="CSI Cyber",
        outcome=Outcome.unknown,
    )
    path = write_trace(trace, tmp_path / "t.json")
    out = run_whenpro("info", str(path))
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.startswith("answer check"))
    assert "✓" in line and "punctuation" in line
