"""``whenpro report --rules official`` (issue 15, item 3; issue 29, item 2: the newest
leaderboard and scorer rules) on a small made-up results file whose official numbers were
computed by hand.

The file (one setting, ``m · all-at-once · gold``)::

    row  cell       framework   gold said agent said (gt)   step(default/strict) mode note
    r1   text       smolagents  R.2  R.2  agent             T / T                T
    r2   text       smolagents  R.3  R.2  agent             F / F                F
    r3   text       debate      C.3  C.1  agent_1 (agent_1) T / T                T    C.1 an accepted alternative
    r4   text       debate      -    -    -                 -                    -    failed (backend error)
    r5   image      pixelcraft  P.1  P.1  viewer (viewer)   T / F                T    wrote "Step 03" for gold "3"
    r6   image_gui  openai_cua  A.1  A.1  coder (coder)     T / T                T    split image_gui, modality image
    r7   text       smolagents  (unlabelled)
    r8   text       mathchat    R.2  R.2  agent (assistant) T / T                T    whenpro's default: right

Official rules by hand:

* left out: r4 (failed) and r7 (unlabelled), leaving 6 rows; the strict rule changes r5's
  step to wrong.
* agents: smolagents accepts only ``agent`` (r1, r2 right); openai_cua only
  ``computer_use_agent`` (r6's ``coder`` is wrong); mathchat the labelled agent, not
  ``agent`` (r8 wrong, although whenpro's default scored it right).
* text (r1, r2, r3, r8): Who = debate only (mathchat is single-agent) = 1.0. When =
  mean(smolagents 1/2, debate 1, mathchat 1) = 0.8333. What: gold classes R.2 (r1, r8),
  R.3, C.3; R.2 has tp 2, fp 1 (r2), fn 0 -> P 2/3, R 1, F1 0.8; R.3 and C.3 F1 0 (C.1 is
  its own class) -> What = 0.8 / 3 = 0.2667. All = mean(1/2, 1, 0) = 0.5.
* image (r5): Who = None (pixelcraft is single-agent); When = 0 (strict); What = 1.0;
  All = 0.
* image_gui (r6): openai_cua is single-agent on the newest leaderboard -> Who = None;
  When = 1.0; What = 1.0; All = 0 (agent wrong).
* composite: Who = 1.0 (text only); When = mean(0.8333, 0, 1) = 0.6111;
  What = mean(0.2667, 1, 1) = 0.7556; All = mean(0.5, 0, 0) = 0.1667.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from whenpro_core.bench.official import cell_of, official_report, official_rows
from whenpro_core.bench.records import (
    Record,
    ResultsFile,
    Scores,
    TraceMeta,
    build_record,
    read_records,
    record_key,
)
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Attribution, Modality


def _rec(
    n: int,
    cell: str,
    fw: str,
    gold: str | None,
    said: str | None,
    axes: tuple[bool, bool, bool] | None,
    strict: bool | None = None,
    error: str | None = None,
    modality: str | None = None,
    agents: tuple[str, str | None] = ("agent", None),
) -> Record:
    ref = f"/data/t{n}.json"
    meta = TraceMeta(
        id=f"t{n}",
        framework=fw,
        modality=modality or cell,
        split=cell if modality else "",
        labelled=gold is not None,
        gt_mode=gold,
        gt_agent=agents[1],
    )
    score = None if axes is None else Scores(agent=axes[0], step=axes[1], mode=axes[2], joint=all(axes))
    pred = None if error else Attribution(agent=agents[0], step="3", mode=said, protocol="all-at-once", model="m")
    return Record(
        key=record_key(ref, "all-at-once", "m", True),
        ref=ref,
        protocol="all-at-once",
        model="m",
        trace=meta,
        prediction=pred,
        score=score,
        strict_step=strict if axes else None,
        error=error,
        error_kind="backend" if error else None,
    )


RECORDS = [
    _rec(1, "text", "smolagents", "R.2", "R.2", (True, True, True), True),
    _rec(2, "text", "smolagents", "R.3", "R.2", (True, False, False), False),
    _rec(3, "text", "debate", "C.3", "C.1", (True, True, True), True, agents=("agent_1", "agent_1")),
    _rec(4, "text", "debate", "C.3", None, (False, False, False), False, error="backend: HTTP 500"),
    _rec(5, "image", "pixelcraft", "P.1", "P.1", (True, True, True), False, agents=("viewer", "viewer")),
    _rec(
        6,
        "image_gui",
        "openai_cua",
        "A.1",
        "A.1",
        (True, True, True),
        True,
        modality="image",
        agents=("coder", "coder"),
    ),
    _rec(7, "text", "smolagents", None, "R.2", None),
    _rec(8, "text", "mathchat", "R.2", "R.2", (True, True, True), True, agents=("agent", "assistant")),
]


def test_official_numbers_match_the_hand_computation() -> None:
    (g,) = official_report(RECORDS)
    assert (g.rows, g.dropped_failed, g.dropped_unlabelled, g.strict_changed) == (6, 1, 1, 1)
    assert list(g.cells) == ["text", "image", "image_gui"]
    text, image, gui = g.cells["text"], g.cells["image"], g.cells["image_gui"]
    assert text == pytest.approx({"Who": 1.0, "When": 2.5 / 3, "What": 0.8 / 3, "All": 0.5})
    assert image["Who"] is None and image == pytest.approx({"Who": None, "When": 0.0, "What": 1.0, "All": 0.0})
    assert gui["Who"] is None and gui == pytest.approx({"Who": None, "When": 1.0, "What": 1.0, "All": 0.0})
    assert g.composite == pytest.approx(
        {"Who": 1.0, "When": (2.5 / 3 + 1) / 3, "What": (0.8 / 3 + 2) / 3, "All": 0.5 / 3}
    )


def test_report_rules_official_prints_both_rules_with_what_each_dropped(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    with ResultsFile(results) as out:
        for rec in RECORDS:
            out.append(rec)
    assert len(read_records(results)[0]) == len(RECORDS)
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "report",
            str(results),
            "--rules",
            "official",
            "--out",
            str(tmp_path / "rep"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert (
        "rules: official (Who&When Pro leaderboard and scorer): failed rows left out: 1; unlabelled rows left out: 1"
        in out
    )
    assert "GUI agents but coact out of Who" in out
    assert "strict coordinates changed 1 step verdict" in out
    assert (
        "rules: whenpro (default): failed rows scored wrong on every axis: 1; unlabelled or unreadable rows left out: 1"
        in out
    )
    composite = next(line for line in out.splitlines() if "composite" in line and "rules" not in line)
    assert composite.split()[-5:] == ["6", "100.0", "61.1", "75.6", "16.7"]
    gui = next(line for line in out.splitlines() if "image_gui" in line and "rules" not in line)
    assert gui.split()[-4:] == ["—", "100.0", "100.0", "0.0"]


def test_official_rows_give_each_cell_its_row_count_and_mark_a_partial_composite() -> None:
    """Every official cell is a line with its own scored rows (text r1-r3 and r8, image r5,
    image_gui r6; no video rows: 0 and dashes, as the official table prints a cell a model
    has no rows in); the composite over 3 of the 4 cells carries the official dagger."""
    rows = {r[1]: r[2:] for r in official_rows(official_report(RECORDS))}
    assert list(rows) == ["text", "image", "image_gui", "video", "composite†"]
    assert rows["text"] == ["4", "100.0", "83.3", "26.7", "50.0"]
    assert rows["image"] == ["1", "—", "0.0", "100.0", "0.0"]
    assert rows["image_gui"] == ["1", "—", "100.0", "100.0", "0.0"]
    assert rows["video"] == ["0", "—", "—", "—", "—"]
    assert rows["composite†"] == ["6", "100.0", "61.1", "75.6", "16.7"]


# ---------------------------------------------------------------- the image_gui split


def _gui_doc(**top: object) -> dict:
    traj = [
        {"kind": "user", "content": "Open the settings"},
        {"kind": "action", "step_number": 1, "agent": "coder", "reasoning": "click", "action": "click(3, 4)"},
    ]
    return {
        "id": "gui_1",
        "framework": "coact",
        "benchmark": "osworld",
        "task": {"query": "q"},
        "trajectory": traj,
        "ground_truth": {"agent": "coder", "step": 1, "mode": "A.1"},
        **top,
    }


def test_a_per_file_image_gui_document_is_read_and_keeps_its_split(tmp_path: Path) -> None:
    path = tmp_path / "gui.json"
    path.write_text(json.dumps(_gui_doc(modality="image_gui")))
    trace = load_trace(path)
    assert trace.modality is Modality.image and trace.extras["split"] == "image_gui"
    rec = build_record(
        ref=str(path),
        protocol="heuristic",
        model="heuristic",
        with_gold=True,
        trace=trace,
        prediction=Attribution(agent="coder", step="1", mode="A.1"),
    )
    assert rec.trace.split == "image_gui" and cell_of(rec) == "image_gui" and rec.strict_step is True


def test_the_image_gui_jsonl_split_is_its_own_cell(tmp_path: Path) -> None:
    doc = _gui_doc()
    row = {k: (json.dumps(v) if k in ("task", "trajectory", "ground_truth") else v) for k, v in doc.items()}
    row["extras"] = "{}"
    path = tmp_path / "data" / "image_gui.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(row) + "\n")
    trace = load_trace(f"{path}#gui_1")
    rec = build_record(
        ref=str(path),
        protocol="heuristic",
        model="heuristic",
        with_gold=True,
        trace=trace,
        prediction=Attribution(agent="coder", step="Step 01", step_text="Step 01", mode="A.1"),
    )
    assert cell_of(rec) == "image_gui"
    assert rec.score is not None and rec.score.step and rec.strict_step is False  # "01" is not "1" when strict


def test_whowhen_substring_metric_reproduces_the_original_bug(tmp_path: Path) -> None:
    """Original Who&When evaluate.py: gold "1" is found in predicted "12", gold agent "Web"
    in "WebSurfer"; a failed record counts as wrong. By hand: 3 labelled records, agent
    found in 2 (WebSurfer, Coder), step found in 2 ("12" holds "1", "3" is "3") -> 66.7 / 66.7.
    whenpro's own step axis says 1 of 3."""

    def rec(n: int, gt_agent: str, gt_step: str, agent: str | None, step: str | None) -> Record:
        ref = f"/d/w{n}.json"
        pred = None if agent is None else Attribution(agent=agent, step=step, step_text=step)
        ok = pred is not None and step == gt_step
        return Record(
            key=record_key(ref, "all-at-once", "m", True),
            ref=ref,
            protocol="all-at-once",
            model="m",
            trace=TraceMeta(id=f"w{n}", framework="ag2", labelled=True, gt_agent=gt_agent, gt_step=gt_step),
            prediction=pred,
            score=Scores(agent=False, step=ok, joint=False),
            error=None if pred else "backend: down",
            error_kind=None if pred else "backend",
        )

    results = tmp_path / "ww.jsonl"
    with ResultsFile(results) as out:
        for r in (
            rec(1, "Web", "1", "WebSurfer", "12"),
            rec(2, "Coder", "3", "Coder", "3"),
            rec(3, "Planner", "5", None, None),
        ):
            out.append(r)
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "report",
            str(results),
            "--metric",
            "whowhen-substring",
            "--out",
            str(tmp_path / "rep"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert shown.returncode == 0, shown.stderr
    assert "known bug" in shown.stdout
    row = next(line for line in shown.stdout.splitlines() if line.strip().startswith("m · all-at-once"))
    assert row.split()[-4:] == ["—", "3", "66.7", "66.7"]


def test_whowhen_records_are_scored_by_the_original_script_under_both_rules(tmp_path: Path) -> None:
    """A Hand-Crafted record whose verdict is the decorated speaker ``Orchestrator
    (thought)`` (what --preset whowhen's step-by-step names) is read as the original
    evaluate.py reads its printed log: ``Orchestrator``, found in the gold; step '03'
    holds gold 3 (the substring rule). ``--rules official`` prints it in the Who&When table,
    not in the Pro leaderboard; ``--rules whowhen`` prints the same table."""
    ref = "/d/hc1.json"
    rec = Record(
        key=record_key(ref, "whowhen:step-by-step", "m", True),
        ref=ref,
        protocol="whowhen:step-by-step",
        model="m",
        trace=TraceMeta(
            id="whowhen-hc-1",
            framework="magentic-one",
            subset="Hand-Crafted",
            labelled=True,
            gt_agent="Orchestrator",
            gt_step="3",
        ),
        prediction=Attribution(agent="Orchestrator (thought)", step="3", step_text="03"),
        score=Scores(agent=False, step=True, joint=False),
    )
    results = tmp_path / "hc.jsonl"
    with ResultsFile(results) as out:
        out.append(rec)
    for rules in ("official", "whowhen"):
        shown = subprocess.run(
            [sys.executable, "-m", "whenpro_core.cli", "report", str(results), "--rules", rules],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert shown.returncode == 0, shown.stderr
        row = next(line for line in shown.stdout.splitlines() if "Hand-Crafted" in line)
        assert row.split()[-3:] == ["1", "100.0", "100.0"], rules
        assert "rules: whowhen (the original Who&When evaluate.py)" in shown.stdout
        left_out = "official leaderboard: the one record left out: 1 of the original Who&When files"
        assert (left_out in shown.stdout) == (rules == "official")
        assert "Official leaderboard" not in shown.stdout  # no empty table
    assert official_report([rec]) == []
