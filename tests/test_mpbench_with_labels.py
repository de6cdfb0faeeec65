"""An MP-Bench file that also carries Who&When's ``mistake_agent``/``mistake_step``: the
Who&When label stays the ground truth, and the annotator's flags are read as annotations
and accepted alternatives instead of being ignored."""

from __future__ import annotations

import json

from whenpro_core.formats import load_trace


def _entry(name: str, content: str, flag: str, category: str = "") -> dict:
    return {"name": name, "role": "assistant", "content": content, "fail_annotation": flag, "fail_category": category}


def test_annotator_flags_beside_who_and_when_labels_become_alternatives(tmp_path):
    folder = tmp_path / "MP-Bench" / "ann1" / "hand"
    folder.mkdir(parents=True)
    history = [
        {"name": "human", "role": "user", "content": "task", "fail_annotation": "0"},
        _entry("Planner", "plan", "1", "bad plan"),
        _entry("Coder", "code", "0"),
        _entry("Coder", "more code", "1", "wrong code"),
    ]
    doc = {"question": "q", "history": history, "mistake_agent": "Coder", "mistake_step": "2"}
    p = folder / "1.json"
    p.write_text(json.dumps(doc))
    trace = load_trace(p)
    gt = trace.ground_truth
    assert gt is not None and gt.agent == "Coder" and gt.step == "2"
    assert sorted(gt.accepted.step) == ["1", "3"] and gt.accepted.agent == ["Planner"]
    assert sorted(gt.accepted.mode) == ["bad plan", "wrong code"]
    assert {(a.step, a.label) for a in trace.annotations} == {("1", "bad plan"), ("3", "wrong code")}
    assert not any(a.decisive for a in trace.annotations)
