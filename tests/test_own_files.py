"""whenpro's own files inside a dataset folder (verdict sidecars, bench results,
report.json) are recognised by content: a dataset walk lists nothing for them (no error
rows in ``ls``, ``info``, ``bench`` or the TUI library), and opening one directly says in
one line what it is."""

from __future__ import annotations

import io
import json
from pathlib import Path

import orjson
import pytest

from bench_data import LABELLED, write_dataset
from conftest import team_trace
from tests.support.cli import one_line_error, run_whenpro
from whenpro_core.attribution.heuristic import attribute_heuristic
from whenpro_core.attribution.verdicts import save_verdict
from whenpro_core.bench import runner
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, load_traces, walk
from whenpro_core.formats.native import write_trace
from whenpro_core.library.listing import walk_rows
from whenpro_core.library.opening import open_target


@pytest.fixture
def attributed(tmp_path) -> tuple[Path, Path]:
    """A folder with one trace and the verdicts sidecar older versions of ``whenpro
    attribute`` left beside it (verdicts now go to whenpro's verdicts folder)."""
    folder = tmp_path / "ds"
    folder.mkdir()
    path = write_trace(team_trace(), folder / "team-1.json")
    trace = load_trace(path)
    saved = save_verdict(trace, attribute_heuristic(trace))
    assert saved is not None and saved.parent != folder
    sidecar = folder / "team-1.json.verdicts.jsonl"
    sidecar.write_bytes(saved.read_bytes())
    return path, sidecar


def test_a_verdicts_sidecar_is_not_listed_in_a_walk(attributed):
    trace_path, sidecar = attributed
    for rows in (list(walk(trace_path.parent)), list(walk_rows(trace_path.parent))):
        assert [(r.path, r.error) for r in rows] == [(str(trace_path), None)]


def test_opening_a_verdicts_file_says_what_it_is(attributed):
    _, sidecar = attributed
    with pytest.raises(TraceFormatError) as info:
        load_trace(sidecar)
    line = info.value.one_line()
    assert "this is a whenpro verdicts file, not a trace" in line and "\n" not in line
    assert "team-1.json" in line  # names the trace it belongs to
    with pytest.raises(TraceFormatError, match="verdicts file"):
        load_traces(sidecar)
    direct = list(walk(sidecar))  # `whenpro ls FILE`, the TUI library of that file
    assert len(direct) == 1 and "whenpro verdicts file" in direct[0].error
    assert [r.error for r in walk_rows(sidecar)] == [direct[0].error]


def test_a_verdicts_file_with_a_huge_first_line_is_still_recognised(tmp_path):
    """A verdict's raw judge outputs can be long: the first line may not fit the 64 KiB
    the registry sniffs."""
    folder = tmp_path / "ds"
    folder.mkdir()
    path = write_trace(team_trace(), folder / "t.json")
    trace = load_trace(path)
    verdict = attribute_heuristic(trace)
    verdict.raw_outputs = ["x" * 200_000]
    save_verdict(trace, verdict)
    assert [r.error for r in walk(folder)] == [None]


def test_lines_that_only_look_like_verdicts_stay_traces(tmp_path):
    """A chat log whose messages have a ``key`` field is still a chat log."""
    p = tmp_path / "chat.jsonl"
    p.write_bytes(
        b"".join(
            orjson.dumps(m) + b"\n"
            for m in [{"key": "a", "role": "user", "content": "hi"}, {"key": "b", "role": "assistant", "content": "yo"}]
        )
    )
    assert [(r.error, r.step_count) for r in walk(p)] == [(None, 2)]


def test_a_second_bench_over_the_folder_ignores_its_own_results_and_report(tmp_path):
    ds = write_dataset(tmp_path)
    out = ds / "results.jsonl"
    first = runner.select(ds)
    bench_command(str(ds), BenchOptions(out=out, report=True), console=_quiet())
    assert out.exists() and (ds / "report.json").exists() and (ds / "report.md").exists()
    again = runner.select(ds)
    assert (again.total, again.bad) == (first.total, first.bad)  # the broken file of bench_data only
    assert not [r for r in walk(ds) if r.path in (str(out), str(ds / "report.json"))]
    bench_command(str(ds), BenchOptions(out=out, report=False), console=_quiet())  # resumes: nothing new
    keys = [orjson.loads(line)["key"] for line in out.read_bytes().splitlines()]
    assert len(keys) == len(set(keys)) == LABELLED + 1


def test_opening_results_and_report_files_directly(tmp_path):
    ds = write_dataset(tmp_path)
    out = ds / "results.jsonl"
    bench_command(str(ds), BenchOptions(out=out, report=True), console=_quiet())
    with pytest.raises(TraceFormatError, match="this is a whenpro bench results file, not a trace"):
        load_trace(out)
    with pytest.raises(TraceFormatError, match="this is a whenpro bench report, not a trace"):
        load_trace(ds / "report.json")
    assert "whenpro bench report" in open_target(str(ds / "report.json")).rows[0].error
    # `whenpro view results.jsonl` still opens the results screen
    assert open_target(str(out)).results == str(out)


@pytest.mark.parametrize(
    "dump",
    [json.dumps, lambda r: json.dumps(r, sort_keys=True, separators=(",", ":"))],
    ids=["spaced", "sorted-keys"],
)
def test_results_re_saved_by_another_json_writer_are_still_results(tmp_path, dump):
    """Recognised by content, not by whenpro's spacing and key order: a walk skips the
    re-saved file, opening it says what it is, ``view`` opens the results screen and
    ``bench --out`` resumes it (it said "not valid JSON at line 2", counted a failed item
    and refused to append)."""
    ds = write_dataset(tmp_path)
    out = ds / "results.jsonl"
    first = runner.select(ds)
    bench_command(str(ds), BenchOptions(out=out, report=False), console=_quiet())
    out.write_text("".join(dump(json.loads(line)) + "\n" for line in out.read_text().splitlines()))
    again = runner.select(ds)
    assert (again.total, again.bad) == (first.total, first.bad)
    assert not [r for r in walk(ds) if r.path == str(out)]
    assert open_target(str(out)).results == str(out)
    for command in ("info", "ls"):
        told = run_whenpro(command, str(out), columns=400)
        assert one_line_error(told) and "this is a whenpro bench results file, not a trace" in told.stderr
    bench_command(str(ds), BenchOptions(out=out, report=False), console=_quiet())  # resumes: nothing new
    keys = [json.loads(line)["key"] for line in out.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == LABELLED + 1


def test_the_tui_shows_a_verdicts_file_as_one_error_row(attributed):
    _, sidecar = attributed
    opened = open_target(str(sidecar))
    assert not opened.dataset and len(opened.rows) == 1 and "whenpro verdicts file" in opened.rows[0].error


def test_recognised_tags_are_the_ones_whenpro_writes():
    from whenpro_core.bench.aggregate import REPORT_FORMAT
    from whenpro_core.formats import whenpro_files
    from whenpro_core.formats.whenpro_files import RECORD_FORMAT

    assert (whenpro_files.RECORD_FORMAT, whenpro_files.REPORT_FORMAT) == (RECORD_FORMAT, REPORT_FORMAT)


def _quiet():
    from rich.console import Console

    return Console(file=io.StringIO(), width=120)
