"""Importer messages for two common mistakes (one line, the JSON path, what was
expected):

* a document that clearly is of a format (its identifying fields are there) but whose
  main list has the wrong type says so at that list, not "no importer recognises this
  content";
* an empty trajectory with a ground-truth step says the trajectory is empty, not
  "step index 4 out of range (expected 0..-1)"."""

from __future__ import annotations

import json

import pytest

from whenpro_core.errors import TraceFormatError, UnknownFormatError
from whenpro_core.formats import load_trace, walk

GT_SMOL = {"agent": None, "step": 2, "mode": "R.1"}
WWP = {"id": "x", "benchmark": "b", "modality": "text", "task": {"query": "q"}}


def _error(tmp_path, doc) -> str:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError) as info:
        load_trace(path)
    assert not isinstance(info.value, UnknownFormatError), info.value
    line = info.value.one_line()
    assert "\n" not in line and str(path) in line
    return line


@pytest.mark.parametrize(
    "doc, where, expected",
    [
        (
            {"history": "oops", "question": "q", "mistake_agent": "a", "mistake_step": "4"},
            "$.history",
            "a list of messages",
        ),  # Who&When
        ({"history": {"0": "x"}, "mistake_step": "0"}, "$.history", "a list of messages"),
        ({"history": "oops", "trajectory": [], "info": {}}, "$.history", "list"),  # SWE-agent
        (
            {"messages": "oops", "trajectory_format": "mini-swe-agent-1", "info": {}},
            "$.messages",
            "list",
        ),  # mini-swe-agent
        ({"task_id": 1, "reward": 0.0, "traj": "oops"}, "$.traj", "a list of chat messages"),  # τ-bench
        ({"instance_id": "i", "instruction": "fix it", "history": "oops"}, "$.history", "list"),  # OpenHands
        ({"messages": 5}, "$.messages", "a list of messages"),  # OpenAI chat
        ({"messages": "oops"}, "$.messages", "a list of messages"),
        ({"messages": {"role": "user", "content": "hi"}}, "$.messages", "a list of messages"),
        (
            {
                **WWP,
                "framework": "magentic-one",
                "trajectory": "oops",
                "ground_truth": {"agent": "websurfer", "step": "1.1", "mode": "R.1"},
            },
            "$.trajectory",
            "list",
        ),
    ],
)
def test_a_recognisable_document_with_a_wrong_typed_main_list(tmp_path, doc, where, expected):
    line = _error(tmp_path, doc)
    assert f"at {where}: wrong type" in line and expected in line


def test_who_and_when_with_an_empty_history(tmp_path):
    line = _error(tmp_path, {"history": [], "question": "q", "mistake_agent": "a", "mistake_step": "4"})
    assert "at $.mistake_step" in line and "history is empty" in line and "0..-1" not in line


@pytest.mark.parametrize(
    "framework, gt",
    [
        ("smolagents", GT_SMOL),
        ("magentic-one", {"agent": "websurfer", "step": "1.1", "mode": "R.1"}),
        ("debate", {"round": 1, "agents": ["alice"], "mode": "R.1"}),
    ],
)
def test_who_when_pro_with_an_empty_trajectory(tmp_path, framework, gt):
    line = _error(tmp_path, {**WWP, "framework": framework, "trajectory": [], "ground_truth": gt})
    assert "at $.ground_truth" in line and "trajectory is empty" in line


def test_who_when_pro_jsonl_row_with_an_empty_trajectory(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    row = {
        "id": "x1",
        "framework": "smolagents",
        "benchmark": "b",
        "task": json.dumps({"query": "q"}),
        "trajectory": "[]",
        "ground_truth": json.dumps(GT_SMOL),
        "extras": "{}",
    }
    (data / "text.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(TraceFormatError, match="trajectory is empty") as info:
        load_trace(f"{data / 'text.jsonl'}#1")
    assert "text.jsonl:1 at $.ground_truth.step" in info.value.one_line()


def test_agentrx_labels_for_an_empty_tau_run(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"task_id": 7, "reward": 0.0, "traj": []}))
    (tmp_path / "ground_truth.json").write_text(
        json.dumps(
            [
                {
                    "trajectory_id": 7,
                    "failures": [
                        {"failure_id": 1, "step_number": 3, "failed_agent": "Assistant", "failure_category": "x"}
                    ],
                    "root_cause": {"failure_id": 1},
                }
            ]
        )
    )
    with pytest.raises(TraceFormatError, match="trajectory is empty") as info:
        load_trace(tmp_path / "run.json")
    assert "ground_truth.json at $[0].failures[0].step_number" in info.value.one_line()


@pytest.mark.parametrize(
    "doc",
    [
        {"history": "just a string"},  # nothing says which format
        {"trajectory": "oops", "framework": "x"},
    ],
)
def test_documents_without_identifying_fields_stay_unknown(tmp_path, doc):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    rows = list(walk(path))
    assert len(rows) == 1 and "no importer recognises this content" in rows[0].error


@pytest.mark.parametrize(
    "bom, codec, cut",
    [("\ufeff", "utf-16-le", 1), ("\ufeff", "utf-32-le", 2)],
    ids=["utf-16", "utf-32"],
)
def test_a_cut_utf16_or_utf32_file_is_one_line_naming_the_encoding(tmp_path, bom, codec, cut):
    """A file with a UTF-16/32 byte-order mark whose last character is cut off (a copy
    stopped mid-way) says which encoding failed and why, naming the file."""
    path = tmp_path / "t.json"
    path.write_bytes((bom + json.dumps(GT_SMOL)).encode(codec)[:-cut])
    with pytest.raises(TraceFormatError) as info:
        load_trace(path)
    line = info.value.one_line()
    assert "\n" not in line and str(path) in line
    assert f"invalid {codec[:6].upper()} text: truncated data" in line
