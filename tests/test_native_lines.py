"""Native step lines (the ``watch`` format) read afterwards: the final answer comes from
the final_answer step, the outcome from the header's gold answer, and ``info`` on a file
holding one trace shows that trace."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Outcome


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
    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "info", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "run-7" in out.stdout and "final answer" in out.stdout and "43" in out.stdout
    assert "failure" in out.stdout and "by modality" not in out.stdout  # not dataset counts


# Bad or cut-off lines (an agent killed mid-write) are skipped, as the follower skips them


def _with_bad_lines(tmp_path, *bad: tuple[int, str]):
    path = _lines(tmp_path, {"id": "run-8", "task": {"query": "17+25?", "answer": "42"}}, "43")
    rows = path.read_text().splitlines()
    for at, text in bad:
        rows.insert(at, text)
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_cut_off_last_line_is_skipped_and_reported(tmp_path):
    path = _with_bad_lines(tmp_path, (4, '{"agent":"r","kind":"final_'))
    trace = load_trace(path)
    assert [s.kind for s in trace.steps][-1] == "final_answer" and len(trace.steps) == 3
    [warning] = trace.extras["whenpro_warnings"]
    assert "skipped 1 bad line (line 5" in warning and "JSON ends too early" in warning


def test_a_chat_line_cut_off_mid_file_names_its_column_not_line_2(tmp_path):
    """``line 3: JSON ends too early at line 2 column 1``: the line was parsed with its newline."""
    path = tmp_path / "chat.jsonl"
    path.write_text(
        '{"role":"user","content":"hi"}\n{"role":"assistant","content":\n{"role":"assistant","content":"yo"}\n'
    )
    [warning] = load_trace(path).extras["whenpro_warnings"]
    assert warning.startswith("skipped 1 bad line (line 2: JSON ends too early at column 31"), warning


def test_bad_lines_in_the_middle_are_skipped_and_counted(tmp_path):
    path = _with_bad_lines(tmp_path, (2, "not json"), (3, '{"agent": "x", "kind": 7}'))
    trace = load_trace(path)
    assert len(trace.steps) == 3 and trace.final_answer == "43"
    [warning] = trace.extras["whenpro_warnings"]
    assert warning.startswith("skipped 2 bad lines (lines 3, 4; line 3: not valid JSON at column 1")


def test_one_bad_line_is_named_once_with_its_column(tmp_path):
    path = _with_bad_lines(tmp_path, (1, '{"agent": "a", oops}'))
    [warning] = load_trace(path).extras["whenpro_warnings"]
    assert warning.startswith("skipped 1 bad line (line 2: not valid JSON at column 16")
    assert "line 1" not in warning  # a JSON line is one line: no "line 1 column 16"


def test_steps_after_a_skipped_line_keep_their_coordinates(tmp_path):
    """A cut line in the middle must not drop the good steps after it as 'out of order'."""
    path = tmp_path / "l7.jsonl"
    lines = [
        json.dumps({"format": "whenpro.trace/1", "id": "l7"}),
        json.dumps({"index": 0, "agent": "a", "kind": "plan", "content": "start"}),
        '{"index": 1, "agent": "a", "kind": "assis',
        *(json.dumps({"index": i, "agent": "a", "kind": "assistant", "content": f"s{i}"}) for i in (2, 3, 4)),
    ]
    path.write_text("\n".join(lines) + "\n")
    trace = load_trace(path)
    assert [s.coord for s in trace.steps] == ["0", "2", "3", "4"]
    assert [s.index for s in trace.steps] == [0, 1, 2, 3]
    assert "skipped 1 bad line (line 3" in trace.extras["whenpro_warnings"][0]


def test_a_file_of_only_bad_lines_is_still_an_error(tmp_path):
    import pytest

    from whenpro_core.errors import TraceFormatError

    path = tmp_path / "bad.jsonl"
    path.write_text('{"agent": "a", "kind": 7}\nnot json\n')
    with pytest.raises(TraceFormatError, match="bad.jsonl:1"):
        load_trace(path)


def test_the_cli_opens_the_file_and_warns_once_naming_the_file(tmp_path):
    path = _with_bad_lines(tmp_path, (2, "not json"), (5, '{"agent":"r","kind":"final_'))
    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "attribute", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and str(path) in warnings[0] and "lines 3, 6" in warnings[0], out.stderr


def test_chat_message_lines_skip_a_cut_off_line_too(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(
        '{"role": "user", "content": "17+25?"}\n{"role": "assistant", "content": "42"}\n{"role": "assistant", "cont\n'
    )
    trace = load_trace(path)
    assert [s.content for s in trace.steps][-1] == "42"
    assert "skipped 1 bad line (line 3" in trace.extras["whenpro_warnings"][0]


def test_ls_warns_about_skipped_lines_once_like_info(tmp_path):
    import subprocess
    import sys

    path = _with_bad_lines(tmp_path, (2, "not json"))
    for command in (["ls", str(path)], ["ls", str(tmp_path)], ["ls", str(path), "--json"]):
        out = subprocess.run(
            [sys.executable, "-m", "whenpro_core.cli", *command], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        assert out.stderr.count("skipped 1 bad line (line 3: not valid JSON") == 1, out.stderr
    assert '"warnings":["skipped 1 bad line' in out.stdout
