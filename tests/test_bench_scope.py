"""What ``whenpro bench``'s report covers: the items of this run's plan only (the traces the
dataset holds now, with the settings asked for), the other records of the results file left
in the file and out of the report with one line saying why; and a dataset with no trace to
score is one error, with no report written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from bench_data import LABELLED, write_dataset
from whenpro_core.bench import runner
from whenpro_core.bench.records import read_records
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.cli.report import report_command
from whenpro_core.errors import ConfigError, TraceFormatError

ITEMS = LABELLED + 1  # the labelled traces and the broken file, heuristic, gold


def quiet() -> Console:
    return Console(file=open("/dev/null", "w"), width=120)


def keys(path: Path) -> set[str]:
    recs, problems = read_records(path)
    assert not problems
    return {r.key for r in recs}


def records_in(report_json: Path) -> dict[str, int]:
    """Records per setting label in a written report.json."""
    return {g["label"]: g["records"] for g in json.loads(report_json.read_text())["groups"]}


def test_a_trace_gone_from_the_dataset_is_left_out_of_bench_s_report_not_of_the_file(tmp_path, capsys):
    data = write_dataset(tmp_path)
    out = tmp_path / "r.jsonl"
    first = bench_command(str(data), BenchOptions(out=out), console=quiet())
    assert first is not None and first.groups[0].records == ITEMS
    (data / "whenpro-team" / "team-7.json").unlink()  # the release changed
    capsys.readouterr()
    again = bench_command(str(data), BenchOptions(out=out), console=quiet())
    err = capsys.readouterr().err
    assert again is not None and [g.records for g in again.groups] == [ITEMS - 1]
    assert records_in(tmp_path / "r.report.json") == {"heuristic · gold": ITEMS - 1}
    assert "1 result of traces no longer in the dataset left out of the report" in err
    assert len(keys(out)) == ITEMS  # the record stays in the results file
    whole = report_command([out], tmp_path / "rep", quiet=True)  # report RESULTS alone: everything
    assert [g.records for g in whole.groups] == [ITEMS]


def test_settings_and_traces_not_in_this_run_are_left_out_with_their_reason(tmp_path, capsys):
    data = write_dataset(tmp_path)
    out = tmp_path / "r.jsonl"
    bench_command(str(data), BenchOptions(out=out, both=True, report=False))
    capsys.readouterr()
    rep = bench_command(str(data), BenchOptions(out=out, where="framework=smolagents"), console=quiet())
    err = capsys.readouterr().err
    assert rep is not None and {g.label: g.records for g in rep.groups} == {"heuristic · gold": 2}
    assert f"{ITEMS * 2 - 2} results left out of the report" in err
    assert f"{(ITEMS - 2) * 2} of traces not chosen in this run" in err  # both settings of the others
    assert "2 of settings not in this run (heuristic · no-gold)" in err
    assert len(keys(out)) == ITEMS * 2
    assert "left out of the report" not in capsys.readouterr().err  # nothing more said
    rep = bench_command(str(data), BenchOptions(out=out, both=True), console=quiet())  # the whole plan again
    assert "left out of the report" not in capsys.readouterr().err
    assert rep is not None and {g.records for g in rep.groups} == {ITEMS}


def test_a_stale_shard_part_of_another_setting_is_merged_but_not_reported(tmp_path):
    data = write_dataset(tmp_path)
    out = tmp_path / "r.jsonl"
    bench_command(str(data), BenchOptions(out=out, shard="0/2"))  # gold, into r.d/part-0000.jsonl
    stale = keys(tmp_path / "r.d" / "part-0000.jsonl")
    assert 0 < len(stale) < ITEMS
    rep = bench_command(str(data), BenchOptions(out=out, gold=False), console=quiet())
    assert rep is not None and [g.label for g in rep.groups] == ["heuristic · no-gold"]
    assert records_in(tmp_path / "r.report.json") == {"heuristic · no-gold": ITEMS}
    merged = keys(out)
    assert stale <= merged and len(merged) == ITEMS + len(stale)  # no record lost in the merge


def test_a_rerun_of_a_failed_part_record_wins_the_merge(tmp_path):
    """A record a part holds, run again by a run without --shard (it failed on the
    backend), is replaced in the merged file by the new record, not the other way round."""
    data = write_dataset(tmp_path)
    out = tmp_path / "r.jsonl"
    bench_command(str(data), BenchOptions(out=out, shard="0/1"))  # every item, into r.d/part-0000.jsonl
    part = tmp_path / "r.d" / "part-0000.jsonl"
    lines = part.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line)["error"] is None)
    failed = json.loads(lines[at])
    failed.update(error="backend down", error_kind="backend", finished_at="2000-01-01T00:00:00+00:00")
    lines[at] = json.dumps(failed, separators=(",", ":"))
    part.write_text("\n".join(lines) + "\n")
    rep = bench_command(str(data), BenchOptions(out=out), console=quiet())
    assert rep is not None and rep.groups[0].errors == 1  # the broken file only
    merged = {r.key: r for r in read_records(out)[0]}
    assert len(merged) == ITEMS and merged[failed["key"]].error is None


def test_a_folder_where_no_file_imports_is_one_error_and_no_report(tmp_path):
    data = tmp_path / "bad"
    data.mkdir()
    (data / "a.json").write_text("{not json")
    (data / "b.json").write_text('{"x": 1}')
    out = tmp_path / "r.jsonl"
    with pytest.raises(ConfigError, match=r"no labelled trace to score in .*bad: 2 files failed to import"):
        bench_command(str(data), BenchOptions(out=out), console=quiet())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad"]  # no results, no report


def test_traces_that_all_fail_to_load_at_run_time_are_one_error_and_no_report(tmp_path, monkeypatch):
    data = write_dataset(tmp_path)

    def broken(ref: str) -> runner.Loaded:
        raise TraceFormatError("cannot be read any more", path=ref)

    monkeypatch.setattr(runner, "_load", broken)
    out = tmp_path / "r.jsonl"
    with pytest.raises(ConfigError, match=f"no labelled trace to score in .*data: {ITEMS} items failed"):
        bench_command(str(data), BenchOptions(out=out), console=quiet())
    assert len(keys(out)) == ITEMS  # the failures are recorded
    assert not list(tmp_path.glob("r.report*")) and not list(tmp_path.glob("*.png"))
