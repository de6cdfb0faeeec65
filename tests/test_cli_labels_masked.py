"""Ids and file names carry a built trace's label (``arith_team-s0__PL.1__1``: the mode and
the step): without ``--labels`` every command shows them masked, as the TUI and ``export``
do, through the one helper (:func:`whenpro_core.views.traceview.unlabelled_ref`); with
``--labels`` they are shown whole (issue 32, item 3)."""

from __future__ import annotations

import json

import pytest

from conftest import SAMPLES
from tests.support.cli import run_whenpro
from whenpro_core.views.traceview import unlabelled_id, unlabelled_ref

BUILT = SAMPLES / "arith_team" / "arith_team-s0__PL.1__1.json"
SEED = SAMPLES / "arith_team" / "arith_team-s0.json"
LEAKS = ("__PL.1", "__R.3", "__A.1", "__1.json", "__2.json", "__4.json", "__1 ", "__1\t", '__1"')


def _leaks(text: str) -> list[str]:
    return [leak for leak in LEAKS if leak in text]


def test_a_file_name_loses_its_mode_and_step_but_keeps_its_extension():
    assert unlabelled_ref("data/arith_team-s0__PL.1__1.json") == "data/arith_team-s0__‹mode›__‹step›.json"
    assert unlabelled_ref("rel.jsonl#smolagents__mmsearch__PL.1__task_0274") == (
        "rel.jsonl#smolagents__mmsearch__‹mode›__task_0274"
    )
    assert unlabelled_ref("a.b/plain.json") == "a.b/plain.json"
    assert unlabelled_id("eva__lvbench__P.1__task_2393__20260423") == "eva__lvbench__‹mode›__task_2393__20260423"


@pytest.mark.parametrize(
    "args",
    [
        ["ls", str(SAMPLES / "arith_team")],
        ["ls", str(SAMPLES / "arith_team"), "--json"],
        ["info", str(BUILT)],
        ["attribute", str(BUILT), "--no-save"],
        ["attribute", str(BUILT), "--no-save", "--json"],
        ["diff", "--text", str(SEED), str(BUILT)],
    ],
    ids=["ls", "ls-json", "info", "attribute", "attribute-json", "diff"],
)
def test_no_command_shows_the_mode_in_an_id_or_file_name_without_labels(args):
    out = run_whenpro(*args)
    assert out.returncode == 0, out.stderr
    assert "‹mode›" in out.stdout
    assert _leaks(out.stdout + out.stderr) == []
    shown = run_whenpro(*args, "--labels")
    assert shown.returncode == 0, shown.stderr
    assert "__PL.1" in shown.stdout and "‹mode›" not in shown.stdout


def test_ls_json_without_labels_masks_id_path_and_key():
    out = run_whenpro("ls", str(SAMPLES / "arith_team"), "--json")
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    built = [r for r in rows if "‹mode›" in r["id"]]
    assert len(built) == 4 and all("‹mode›__‹step›" in r["path"] for r in built)
