"""Issue 13 item 9: the MAD (MAST) MetaGPT record whose ``trace`` is a JSON string
``{run_id, prompt, content, timestamp, cost, log_file}`` with loguru lines in ``content``
(SOURCE.md of real_traces/mast-mad-sample). That record is in the sample's holdout, so the
record here is made up in the same form; the real records are checked to open unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import REPO
from whenpro_core.formats import load_trace, walk

LOG = "\n".join(
    [
        "2025-02-03 09:15:01.120 | INFO     | metagpt.roles.role:_act:391 - Alice(SimpleCoder): "
        "to do SimpleWriteCode(SimpleWriteCode)",
        "```python",
        "def add(a, b):",
        "    return a - b",
        "```",
        "2025-02-03 09:15:04.500 | INFO     | metagpt.utils.cost_manager:update_cost:57 - Total running cost: $0.001",
        "2025-02-03 09:15:04.610 | INFO     | __main__:_act:85 - Bob(SimpleTester): to do SimpleWriteTest(SimpleWriteTest)",  # noqa: E501
        "```python",
        "def test_add():",
        "    assert add(2, 2) == 4",
        "```",
        "2025-02-03 09:15:08.002 | INFO     | metagpt.roles.role:_act:391 - Charlie(SimpleReviewer): "
        "to do SimpleWriteReview(SimpleWriteReview)",
        "2025-02-03 09:15:11.930 | INFO     | __main__:_act:85 - Bob(SimpleTester): to do SimpleWriteTest(SimpleWriteTest)",  # noqa: E501
        "```python",
        "def test_add_negative():",
        "    assert add(-1, 1) == 0",
        "```",
    ]
)


def _vote(mode: str, *votes: object) -> dict:
    return {"failure mode": mode, **{f"annotator_{i + 1}": v for i, v in enumerate(votes)}}


RECORD = {
    "round": "Round 1",
    "mas_name": "MetaGPT",
    "benchmark_name": "ProgramDev",
    "trace_id": 99,
    "trace": json.dumps(
        {
            "run_id": 7,
            "prompt": "write a function that adds two numbers",
            "content": LOG,
            "timestamp": "2025-02-03 09:15:01",
            "cost": 0.01,
            "log_file": "logs/7.txt",
        },
        indent=2,
    ),
    "annotations": [
        _vote("1.1 Poor task constraint compliance\n\nFailure to adhere to the task.", True, True, False),
        _vote("2.2 Step repetition\n\nUnnecessary reiteration.", True, False, False),
        _vote("4.2 Lack of result verification\n\nNo checking.", True, True, float("nan")),
    ],
}


def test_the_loguru_metagpt_form_opens_one_step_per_role_action(tmp_path):
    path = tmp_path / "MetaGPT_ProgramDev_trace99.json"
    path.write_text(json.dumps(RECORD))
    trace = load_trace(path)
    assert [s.agent for s in trace.steps] == [
        "Alice(SimpleCoder)",
        "Bob(SimpleTester)",
        "Charlie(SimpleReviewer)",
        "Bob(SimpleTester)",
    ]
    assert [(a.id, a.role) for a in trace.agents] == [
        ("Alice(SimpleCoder)", "SimpleCoder"),
        ("Bob(SimpleTester)", "SimpleTester"),
        ("Charlie(SimpleReviewer)", "SimpleReviewer"),
    ]
    first = trace.steps[0]
    assert first.content == "```python\ndef add(a, b):\n    return a - b\n```"  # the cost line ends it
    assert first.meta["action"] == "SimpleWriteCode" and first.meta["time"] == "2025-02-03 09:15:01.120"
    assert first.meta["name"] == "Alice" and first.meta["role"] == "SimpleCoder"
    assert trace.steps[2].content == ""  # the reviewer's action logged no text
    assert trace.task.query == "write a function that adds two numbers"
    assert trace.framework == "metagpt" and trace.benchmark == "programdev"
    # annotator majorities: 2 of 3 yes, 1 of 3 no, 2 of 2 valid (a NaN vote is none)
    assert [a.label for a in trace.annotations] == ["Poor task constraint compliance", "Lack of result verification"]
    assert trace.extras["trace_meta"]["run_id"] == 7


def test_the_loguru_form_lists_and_shows_in_info(tmp_path):
    path = tmp_path / "MetaGPT_ProgramDev_trace99.json"
    path.write_text(json.dumps([RECORD]))
    rows = list(walk(path))
    assert len(rows) == 1 and rows[0].error is None and rows[0].step_count == 4
    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "info", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    assert "Alice(SimpleCoder)" in out.stdout


def test_log_text_without_any_marker_is_still_one_clear_error(tmp_path):
    path = tmp_path / "bad.json"
    record = {**RECORD, "trace": json.dumps({"run_id": 1, "prompt": "p", "content": "just prose, no log lines"})}
    path.write_text(json.dumps(record))
    rows = list(walk(path))
    assert rows[0].error and "no speaker markers" in rows[0].error and "$.trace" in rows[0].error


def test_real_mad_records_still_open_as_before(real_traces):
    records = real_traces / "mast-mad-sample" / "records"
    by_name = {p.name: load_trace(p) for p in sorted(records.glob("*.json"))}
    assert len(by_name) >= 3
    metagpt = by_name["MetaGPT_MMLU_trace16.json"]
    assert [s.agent for s in metagpt.steps][:2] == ["Human", "SimpleCoder"]
    assert metagpt.annotations and all(a.source == "mad" for a in metagpt.annotations)
    ag2 = by_name["AG2_GSM-Plus_trace2.json"]
    assert len(ag2.steps) == 10 and "note" in ag2.extras["hidden"]
