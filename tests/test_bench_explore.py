"""Exploring bench results (whenpro_core.bench.explore): results files are recognised
by their first record; every cell of every table can be recomputed from the traces
listed behind it with the docs/architecture.md, 'Scoring' rules; a prediction is set against its ground
truth axis by axis; a moved dataset is found again by trace id."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from statistics import mean

import pytest
from rich.console import Console

from bench_data import write_dataset
from whenpro_core.bench.aggregate import DIMENSIONS, macro_f1
from whenpro_core.bench.explore import (
    ALL,
    cell_outcomes,
    cell_summary,
    columns,
    compare,
    dataset_index,
    load_results,
    pct,
    resolve_ref,
    table_rows,
)
from whenpro_core.bench.report import breakdown_rows, leaderboard_rows
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.whenpro_files import is_results_file


def quiet() -> Console:
    return Console(file=open("/dev/null", "w"), width=120)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The made-up bench dataset run with the heuristic, with and without gold."""
    root = tmp_path_factory.mktemp("explore")
    data = write_dataset(root)
    out = root / "r.jsonl"
    bench_command(str(data), BenchOptions(out=out, both=True, report=False), console=quiet())
    return data, out


def test_results_files_are_recognised_by_their_first_record(run, tmp_path):
    _, out = run
    assert is_results_file(out)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf\n  " + out.read_bytes())
    assert is_results_file(bom)
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"role": "user", "content": "hi"}\n')
    assert not is_results_file(trace)
    assert not is_results_file(tmp_path)  # a folder
    assert not is_results_file(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert not is_results_file(tmp_path / "empty.jsonl")


def test_results_files_are_recognised_whatever_their_json_layout(run, tmp_path):
    """Any JSON writer's spacing and key order; a first record longer than the bytes
    read is judged by its top-level keys; the tag nested in another object is no record."""
    _, out = run
    records = [json.loads(line) for line in out.read_text().splitlines()]
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert is_results_file(spaced)
    long_first = tmp_path / "long.jsonl"
    records[0]["error"] = "cut short"  # sorted before "format"
    records[0]["ref"] += "#" + "x" * 10_000  # and a line longer than the 4 KiB read
    long_first.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    assert is_results_file(long_first)
    nested = tmp_path / "nested.jsonl"
    nested.write_text(json.dumps({"note": {"format": records[0]["format"]}, "x": "y" * 10_000}) + "\n")
    assert not is_results_file(nested)


def _recompute(outcomes, column, composite=False):
    """A cell's value from the traces behind it, by the docs/architecture.md, 'Scoring' rules (the composite
    row: the mean over modalities of the official metrics)."""
    if composite and column.key in ("agent", "step", "error", "joint"):
        by_mod = defaultdict(list)
        for o in outcomes:
            by_mod[o.record.trace.modality].append(o)
        values = [v for v in (_recompute(group, column) for group in by_mod.values()) if v is not None]
        return mean(values) if values else None
    if column.key == "error":
        return macro_f1(
            [
                (
                    o.record.trace.gt_mode.strip().upper(),
                    o.record.trace.gt_mode.strip().upper()
                    if o.mode
                    else ((o.record.prediction.mode or "").strip().upper() if o.record.prediction else "") or "—",
                )
                for o in outcomes
            ]
        )
    if column.key in ("agent", "step", "joint"):
        by_fw = defaultdict(list)
        for o in outcomes:
            by_fw[o.record.trace.framework].append(o.correct)
        return mean(sum(v) / len(v) for v in by_fw.values()) if by_fw else None
    return sum(o.correct for o in outcomes) / len(outcomes) if outcomes else None


def test_every_cell_is_recomputed_from_the_traces_behind_it(run):
    _, out = run
    results = load_results([out])
    assert len(results.report.groups) == 2
    for dim in DIMENSIONS:
        for row in table_rows(results, dim):
            whole = cell_outcomes(results, row)
            assert len(whole) == row.metrics.n
            for col in columns(results.tolerance):
                if col.axis is None:
                    continue
                got = cell_outcomes(results, row, col)
                assert all(o.correct is not None for o in got)
                expected = getattr(row.metrics, col.key)
                value = _recompute(got, col, row.composite)
                if expected is None:
                    assert not got or value is None or col.key == "error", (dim, row.value, col.key)
                else:
                    assert value == pytest.approx(expected), (dim, row.value, col.key)


def test_tables_match_the_report_tables(run):
    _, out = run
    results = load_results([out])
    report = results.report
    cols = columns(results.tolerance)
    keys = ["n", "agent", "step", "error", "joint", "agent_acc", "step_acc", "step_acc_tol"]
    mine = [
        [
            row.label,
            "composite" if row.value == ALL else row.value,
            *[row.cell(next(c for c in cols if c.key == k)) for k in keys],
        ]
        for row in table_rows(results, "modality")
    ]
    assert mine == leaderboard_rows(report)
    _headers, rows = breakdown_rows(report, "framework")
    mine = [
        [row.label, row.value, *[row.cell(next(c for c in cols if c.key == k)) for k in keys]]
        for row in table_rows(results, "framework")
    ]
    assert mine == rows


def test_the_agent_column_leaves_single_agent_frameworks_out(run):
    _, out = run
    results = load_results([out])
    agent = next(c for c in columns(1) if c.key == "agent")
    row = next(r for r in table_rows(results, "modality") if r.value == "text")
    listed = cell_outcomes(results, row, agent)
    assert listed and all(not o.record.trace.single_agent for o in listed)
    assert len(listed) < row.metrics.n
    summary = cell_summary(listed, row, agent)
    assert summary.startswith(f"Agent {pct(row.metrics.agent)} (mean over ")
    assert f"of {len(listed)} correct" in summary


def test_compare_sets_each_axis_against_the_ground_truth(run):
    _, out = run
    results = load_results([out])
    rec = next(r for r in results.records if r.trace.id == "team-7" and r.with_gold)
    lines = {line.axis: line for line in compare(rec)}
    assert lines["agent"].gold == "solver" and lines["step"].gold == "2" and lines["mode"].gold == "R.3"
    assert lines["agent"].predicted == rec.prediction.agent
    assert lines["step"].verdict == rec.score.step and lines["mode"].verdict == rec.score.mode
    debate = next(r for r in results.records if r.trace.id == "debate-21")
    assert {line.axis: line for line in compare(debate)}["step"].gold == "round 1"


def test_a_moved_dataset_is_found_again_by_trace_id(run, tmp_path):
    data, out = run
    moved = tmp_path / "moved"
    shutil.copytree(data, moved)
    results = load_results([out])
    rec = next(r for r in results.records if r.trace.id == "team-9")
    index = dataset_index(moved)
    assert resolve_ref(rec, index) == rec.ref  # the original still exists
    gone = rec.model_copy(update={"ref": str(tmp_path / "gone" / "x.json")})
    assert resolve_ref(gone, index) == str(moved / "whenpro-team" / "team-9.json")
    assert resolve_ref(gone, None) == gone.ref


def test_missing_or_empty_results_are_one_line_errors(tmp_path):
    with pytest.raises(TraceFormatError, match="no such results file"):
        load_results([tmp_path / "nope.jsonl"])
    (tmp_path / "junk.jsonl").write_text("not a record\n")
    with pytest.raises(TraceFormatError, match="no benchmark records"):
        load_results([tmp_path / "junk.jsonl"])
