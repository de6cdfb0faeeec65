"""Native step lines (the ``watch`` format) read afterwards: the final answer comes from
the final_answer step, the outcome from the header's gold answer, and ``info`` on a file
holding one trace shows that trace."""

from __future__ import annotations

import json
import subprocess
import sys

from whenpro_core.formats import load_trace
from whenpro_core.model import Outcome

from conftest import REPO


def _lines(tmp_path, header: dict | None, final: str, name: str = "run.jsonl"):
    rows = ([{"format": "whenpro.trace/1", **header}] if header is not None else []) + [
        {"agent": "planner", "kind": "plan", "content": "Add 17 and 25."},
        {"agent": "solver", "kind": "assistant", "content": "17 + 25 = 42"},
        {"agent": "solver", "kind": "final_answer", "content": final},
    ]
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_final_answer_comes_from_the_final_answer_step(tmp_path):
    trace = load_trace(_lines(tmp_path, None, "42"))
    assert trace.final_answer == "42" and trace.outcome == Outcome.unknown


def test_outcome_is_judged_against_the_headers_gold_answer(tmp_path):
    right = load_trace(_lines(tmp_path, {"id": "r", "task": {"query": "17+25?", "answer": "42"}}, "42", "a.jsonl"))
    wrong = load_trace(_lines(tmp_path, {"id": "w", "task": {"query": "17+25?", "answer": "42"}}, "43", "b.jsonl"))
    assert right.outcome == Outcome.success and wrong.outcome == Outcome.failure


def test_the_headers_own_final_answer_and_outcome_win(tmp_path):
    header = {"id": "h", "task": {"query": "q", "answer": "42"}, "final_answer": "41", "outcome": "success"}
    trace = load_trace(_lines(tmp_path, header, "43"))
    assert trace.final_answer == "41" and trace.outcome == Outcome.success


def test_info_on_a_one_trace_lines_file_shows_the_trace(tmp_path):
    path = _lines(tmp_path, {"id": "run-7", "task": {"query": "17+25?", "answer": "42"}}, "43")
    out = subprocess.run([sys.executable, "-m", "whenpro_core.cli", "info", str(path)], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "run-7" in out.stdout and "final answer" in out.stdout and "43" in out.stdout
    assert "failure" in out.stdout and "1 traces" not in out.stdout
