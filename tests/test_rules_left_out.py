"""``report --rules official|trail`` says in one line why every record was left out when
no record is scored under those rules, instead of an empty table."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.cli import run_whenpro
from tests.test_report_official import _rec
from whenpro_core.bench.records import ResultsFile

TRACEELEPHANT = Path(__file__).parent / "fixtures" / "traceelephant"


def _report(results: Path, rules: str) -> list[str]:
    out = run_whenpro("report", str(results), "--rules", rules, "--out", str(results.parent / "rep"), columns=400)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_official_says_why_when_every_record_is_failed_or_unlabelled(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    with ResultsFile(results) as out:
        out.append(_rec(1, "text", "magentic-one", "R.2", None, (False, False, False), error="backend: HTTP 500"))
        out.append(_rec(2, "text", "magentic-one", "R.2", None, (False, False, False), error="backend: HTTP 500"))
        out.append(_rec(3, "text", "magentic-one", None, "R.2", None))  # unlabelled
    lines = _report(results, "official")
    said = [line for line in lines if line.startswith("official leaderboard:")]
    assert said == [
        "official leaderboard: all 3 records left out: 2 failed (no verdict to score); "
        "1 of unlabelled traces (no ground truth to score against)"
    ]
    assert "Official leaderboard" not in lines  # no empty table
    with ResultsFile(results) as out:  # one scored record: the table, no such line
        out.append(_rec(4, "text", "magentic-one", "R.2", "R.2", (True, False, False), False))
    lines = _report(results, "official")
    assert "Official leaderboard" in lines and not any(x.startswith("official leaderboard:") for x in lines)


def test_official_on_original_who_and_when_files_only(real_traces: Path, tmp_path: Path) -> None:
    data = tmp_path / "Hand-Crafted"
    data.mkdir()
    for name in ("1.json", "2.json"):
        shutil.copy(real_traces / "who-and-when" / "Who&When" / "Hand-Crafted" / name, data / name)
    results = tmp_path / "r.jsonl"
    assert run_whenpro("bench", str(data), "--out", str(results), timeout=600).returncode == 0
    lines = _report(results, "official")
    assert (
        "official leaderboard: all 2 records left out: 2 of the original Who&When files "
        "(scored by its own script's rules instead)"
    ) in lines
    assert "Who&When (original evaluate.py)" in lines


def test_trail_says_why_when_no_trace_has_step_located_errors(tmp_path: Path) -> None:
    shutil.copytree(TRACEELEPHANT, tmp_path / "te")
    results = tmp_path / "r.jsonl"
    assert run_whenpro("bench", str(tmp_path / "te"), "--out", str(results), timeout=600).returncode == 0
    lines = _report(results, "trail")
    (said,) = [line for line in lines if line.startswith("TRAIL metrics:")]
    assert said.startswith("TRAIL metrics: all 2 records left out: 2 of traces labelled without step-located errors")
    assert "TRAIL metrics" not in lines  # no empty table
