"""Defects a fresh user found in round 4, each pinned by the behaviour the user saw."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REAL_TRACES
from tests.support.cli import run_whenpro
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace
from whenpro_core.trace.coords import normalize_coord, small_int
from whenpro_core.views.search import find_coord

REPO = Path(__file__).resolve().parents[1]
TEAM = REPO / "sample_traces" / "team_text" / "trace.json"
HUGE = "1" * 5000  # past CPython's 4,300-digit int() limit


def test_small_int_bounds_digit_strings() -> None:
    assert small_int("12") == 12
    assert small_int(" 007 ") == 7
    assert small_int(HUGE) is None
    assert small_int("1" * 19) is None
    assert small_int("x1") is None and small_int("") is None and small_int("-3") is None


def test_go_to_a_huge_step_number_finds_no_step() -> None:
    trace = load_trace(TEAM)
    assert find_coord(trace, HUGE) is None
    assert find_coord(trace, "#" + HUGE) is None
    assert find_coord(trace, "1." + HUGE) is None
    assert normalize_coord(HUGE) == HUGE


def _real(*parts: str) -> Path:
    path = REAL_TRACES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real traces not present at {path} (set WHENPRO_REAL_TRACES)")
    return path


@pytest.mark.parametrize(
    "where",
    [
        ("native", TEAM),
        ("otlp", REPO / "tests" / "fixtures" / "otel" / "genai_current.json"),
    ],
    ids=lambda w: w[0],
)
def test_a_huge_key_names_no_row(where: tuple[str, Path]) -> None:
    with pytest.raises(TraceFormatError):
        load_trace(f"{where[1]}#{HUGE}")


@pytest.mark.real_traces
@pytest.mark.parametrize(
    "parts",
    [
        ("who-when-pro-jsonl", "data", "text.jsonl"),
        ("langsmith", "langsmith-sdk", "langsmith_py_wrap_openai_.json"),
        ("who-and-when", "Who&When", "Algorithm-Generated", "17.json"),
        ("mast-mad-sample", "records", "AG2_GSM-Plus_trace2.json"),
    ],
    ids=lambda p: p[0],
)
def test_a_huge_key_names_no_row_in_real_files(parts: tuple[str, ...]) -> None:
    with pytest.raises(TraceFormatError):
        load_trace(f"{_real(*parts)}#{HUGE}")


def test_info_and_inject_with_a_huge_number_print_one_error_line(tmp_path: Path) -> None:
    info = run_whenpro("info", f"{TEAM}#{HUGE}")
    assert info.returncode == 2, info.stderr[-500:]
    assert "Traceback" not in info.stderr and info.stderr.startswith("whenpro: error:")
    assert "no trace" in info.stderr
    inject = run_whenpro("inject", str(TEAM), "--step", "#" + HUGE, "--mode", "R.3", "--out", str(tmp_path))
    assert inject.returncode == 2, inject.stderr[-500:]
    assert "Traceback" not in inject.stderr and "no step" in inject.stderr


def test_the_library_hides_merged_sub_agent_files_as_walk_does() -> None:
    from whenpro_core.formats import walk
    from whenpro_core.library.listing import walk_rows

    codex = REPO / "tests" / "fixtures" / "codex-cli"
    assert [r.path for r in walk_rows(codex)] == [r.path for r in walk(codex)]
    folder = _real("claude-code")
    listed = [r.path for r in walk_rows(folder)]
    assert listed == [r.path for r in walk(folder)]
    assert not [p for p in listed if p.endswith("/subagents/agent-aac57f5.jsonl")]


def test_a_trail_label_field_of_the_wrong_type_is_named(tmp_path: Path) -> None:
    import shutil

    trail = REPO / "tests" / "fixtures" / "trail" / "data" / "GAIA"
    shutil.copy(next(trail.glob("*.json")), tmp_path / "t1.json")
    labels = tmp_path / "t1.labels.json"
    labels.write_text('{"trace_id":"abc123","errors":[{"category":5,"location":"s2","impact":"HIGH"}]}')
    trace = load_trace(tmp_path / "t1.json")
    notes = [str(n) for n in trace.extras.get("whenpro_warnings", [])]
    assert notes == [f"labels not read: {labels} at $.errors[0].category: wrong type (got int) (expected a string)"]


def test_watch_shows_a_judge_failure_whole() -> None:
    from whenpro_core.cli.watch import format_event
    from whenpro_core.live.events import JudgeFailed

    reason = (
        "counterfactual final pass skipped: run.jsonl: cannot replay this trace offline: it is not a run of a "
        "built-in system (expected a model (--model or a saved default) to correct and replay the steps, "
        "or a run written by a built-in system with its env block)"
    )
    assert format_event(JudgeFailed("t1", reason)) == f"judge failed: {reason}"


def _watched_run(tmp_path: Path) -> Path:
    from test_watch_counterfactual import _write_lines

    trace = load_trace(REPO / "sample_traces" / "arith_team" / "arith_team-s0__PL.1__1.json")
    assert trace.id == "arith_team-s0__PL.1__1"
    return _write_lines(trace, tmp_path / "run.jsonl")


def test_watch_masks_the_label_in_trace_ids_unless_labels(tmp_path: Path) -> None:
    import json

    path = _watched_run(tmp_path)
    for extra in ((), ("--json",), ("--json", "--steps")):
        out = run_whenpro("watch", str(path), "--idle-timeout", "1", *extra)
        assert "Traceback" not in out.stderr, out.stderr
        assert "PL.1" not in out.stdout, (extra, out.stdout)
    records = [json.loads(line) for line in out.stdout.splitlines()]
    assert {r["trace_id"] for r in records if "trace_id" in r} == {"arith_team-s0__‹mode›__‹step›"}
    shown = run_whenpro("watch", str(path), "--idle-timeout", "1", "--json", "--labels")
    assert '"trace_id":"arith_team-s0__PL.1__1"' in shown.stdout.replace(" ", "")


def test_a_report_table_heading_is_one_line_however_narrow_the_table() -> None:
    import io

    from rich.console import Console

    from whenpro_core.cli.report import _table

    title = "Failure modes: openai:gpt-4o-mini-2024-07-18 · all-at-once · gold"
    out = io.StringIO()
    Console(file=out, width=1000).print(_table(title, ["gold", "n"], [["R.3", "1"]]))
    assert out.getvalue().splitlines()[0] == title


def test_waterfall_totals_of_a_trace_without_times_show_a_dash() -> None:
    from whenpro_core.views.waterfall import seconds_text, waterfall

    tree = waterfall(load_trace(TEAM))
    assert tree.span_s is None and tree.agents
    assert {seconds_text(r.seconds) for r in tree.agents} == {"—"}
