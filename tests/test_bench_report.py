"""Benchmark reports: files written next to the results, numbers that match the
hand-computed case, the plot and its text fallback, re-rendering from saved results,
and the runner over real Who&When and Who&When Pro traces."""

from __future__ import annotations

import json
import sys

import pytest
from rich.console import Console

from bench_data import LABELLED, write_dataset
from test_bench_aggregate import case
from whenpro_core.bench import runner
from whenpro_core.bench.aggregate import Report, aggregate
from whenpro_core.bench.records import ResultsFile
from whenpro_core.bench.report import PLOT_NAME, report_markdown, text_plot, write_report
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.cli.report import ReportOptions, report_command
from whenpro_core.errors import TraceFormatError


def save(records, path):
    with ResultsFile(path) as results:
        for r in records:
            results.append(r)
    return path


def quiet() -> Console:
    return Console(file=open("/dev/null", "w"), width=120)


def test_report_files_hold_the_hand_computed_numbers(tmp_path):
    results = save(case(), tmp_path / "run" / "results.jsonl")
    report = report_command([results], console=quiet())
    folder = results.parent
    data = Report.model_validate(json.loads((folder / "report.json").read_text()))
    assert data.groups[0].overall.step == pytest.approx((1 / 4 + 2 / 3 + 1 / 2) / 3)
    assert data.model_dump() == json.loads(report.model_dump_json())
    md = (folder / "report.md").read_text()
    # leaderboard: text cell Agent 50.0, Step 37.5, Error 40.0, Joint 12.5; composite Step 52.1
    assert "| m · all-at-once · gold | text | 6 | 50.0 | 37.5 | 40.0 | 12.5 |" in md
    assert "| m · all-at-once · gold | composite | 9 | 50.0 | 52.1 | 61.7 | 39.6 |" in md
    assert "## Failure modes: m · all-at-once · gold" in md
    # R.2: t2 -> R.3, t4 -> none, s1 and d2 right; support 4, predicted 3 (d1 too)
    assert "| R.2 | · | 2 | 1 | 1 | 4 | 66.7 | 50.0 | 57.1 |" in md
    assert "not valid JSON" in md  # the failed items are listed


def test_plot_is_a_png_when_matplotlib_is_present(tmp_path):
    pytest.importorskip("matplotlib")
    written = write_report(aggregate(case()), tmp_path)
    assert written["plot"] == tmp_path / PLOT_NAME
    assert (tmp_path / PLOT_NAME).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"]({PLOT_NAME})" in (tmp_path / "report.md").read_text()


def test_without_matplotlib_the_report_keeps_a_text_plot(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    written = write_report(aggregate(case()), tmp_path)
    assert written["plot"] is None and not (tmp_path / PLOT_NAME).exists()
    md = (tmp_path / "report.md").read_text()
    assert "whenpro[plot]" in md and "unknown" not in text_plot(aggregate(case()))
    assert "n=0" in md  # the text plot lists every length bucket


def test_text_plot_bars_follow_step_accuracy():
    rep = aggregate(case())
    rep.groups[0].breakdowns["length"][0].value = "<4K"
    lines = text_plot(rep, width=36).splitlines()
    row = next(line for line in lines if line.strip().startswith("<4K"))
    assert row.count("█") == round(4 / 9 * 36) and "44.4" in row


def test_report_command_errors_are_one_line_user_errors(tmp_path):
    with pytest.raises(TraceFormatError, match="no such results file"):
        report_command([tmp_path / "missing.jsonl"], console=quiet())
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n")
    with pytest.raises(TraceFormatError, match="no benchmark records"):
        report_command([empty], console=quiet())


def test_report_merges_shards_and_reapplies_tolerance(tmp_path):
    recs = case()
    a = save(recs[:5], tmp_path / "part-0.jsonl")
    b = save(recs[5:], tmp_path / "part-1.jsonl")
    rep = report_command([a, b], tmp_path / "out", ReportOptions(tolerance=2), console=quiet())
    assert rep.groups[0].overall.n == 9 and rep.tolerance == 2
    assert rep.groups[0].overall.step_acc_tol == pytest.approx(7 / 9)
    assert (tmp_path / "out" / "report.md").exists()


def test_markdown_escapes_table_cells():
    rep = aggregate(case())
    rep.groups[0].label = "a|b"
    assert "a\\|b" in report_markdown(rep)


def test_bench_on_a_small_dataset_reports_on_it(tmp_path):
    data = write_dataset(tmp_path)
    out = tmp_path / "runs" / "r.jsonl"
    report = bench_command(str(data), BenchOptions(out=out, both=True), console=quiet())
    assert {g.label for g in report.groups} == {"heuristic · gold", "heuristic · no-gold"}
    for g in report.groups:
        assert (g.records, g.scored, g.errors) == (LABELLED + 1, LABELLED, 1)
        assert list(g.cells) == ["text", "image"] and g.cells["image"].agent is None
        assert {r.value for r in g.breakdowns["framework"]} == {"whenpro-team", "smolagents", "debate"}
        assert [r.value for r in g.breakdowns["length"]] == ["<4K"]
    assert (out.parent / "r.report.json").exists() and (out.parent / "r.report.md").exists()


# --------------------------------------------------------------------------- real traces


@pytest.mark.real_traces
def test_bench_on_who_and_when_hand_crafted(real_traces, tmp_path):
    folder = real_traces / "who-and-when" / "Who&When" / "Hand-Crafted"
    report = bench_command(str(folder), BenchOptions(out=tmp_path / "r.jsonl", limit=5), console=quiet())
    g = report.groups[0]
    assert (g.records, g.scored, g.errors) == (5, 5, 0)
    assert g.overall.error is None  # Who&When labels carry no failure mode
    assert g.overall.agent is not None  # magentic-one is multi-agent
    records = ResultsFile(tmp_path / "r.jsonl").done.values()
    assert {r.trace.framework for r in records} == {"magentic-one"}
    assert all(r.trace.tokens and r.trace.tokens > 500 for r in records)
    steps = [r.score.step for r in records]
    assert g.overall.step_acc == pytest.approx(sum(steps) / 5)


@pytest.mark.real_traces
def test_bench_on_who_when_pro_jsonl(real_traces, tmp_path):
    folder = real_traces / "who-when-pro-jsonl"
    out = tmp_path / "r.jsonl"
    report = bench_command(
        str(folder), BenchOptions(out=out, sample=6, seed=1, both=True, where=["mode=R.3"]), console=quiet()
    )
    records = list(ResultsFile(out).done.values())
    assert [r.error for r in records if r.error] == []
    assert len(records) == 12 and {r.trace.gt_mode for r in records} == {"R.3"}
    assert all(r.ref.endswith(tuple(f"#{n}" for n in range(1, 65))) for r in records)
    for g in report.groups:
        assert g.overall.agent is None  # smolagents is single-agent: no Agent metric
        assert g.overall.agent_acc == 1.0  # ...and its traces expect agent "agent"
        assert g.overall.error is not None and g.confusion.gold == ["R.3"]
    again = runner.plan(folder, ["heuristic"], [], "both", where=runner.parse_where("mode=R.3"), sample=6, seed=1)
    assert {i.key for i in again} == {r.key for r in records}


def test_untrusted_names_are_shown_as_plain_text(tmp_path):
    """Framework names and model answers come from untrusted traces and judges: no
    terminal escapes and no Rich markup get through to the terminal or report.md."""
    from io import StringIO

    from whenpro_core.bench.records import build_record
    from whenpro_core.cli.report import print_report
    from whenpro_core.trace.model import Attribution, GroundTruth, Step, Trace

    trace = Trace(
        id="evil",
        framework="\x1b[2J\x1b[31mred",
        benchmark="[bold]loud[/bold]",
        steps=[Step(index=0, coord="0", agent="a")],
        ground_truth=GroundTruth(agent="a", step="0", mode="R.1"),
    )
    rec = build_record(
        ref="/d/evil.json",
        protocol="heuristic",
        model="heuristic",
        with_gold=True,
        trace=trace,
        prediction=Attribution(agent="a", step="0", mode="\x1b]0;x\x07R.9"),
    )
    report = aggregate([rec])
    buf = StringIO()
    print_report(report, Console(file=buf, width=200, color_system=None))
    shown = buf.getvalue()
    assert "\x1b" not in shown and "\x07" not in shown
    assert "[bold]loud[/bold]" in shown and "[2J[31mred" not in shown
    md = report_markdown(report)
    assert "\x1b" not in md and "[bold]loud[/bold]" in md


@pytest.mark.parametrize("width", [80, 200])
def test_usage_table_keeps_every_header_and_the_setting_at_any_width(tmp_path, width):
    """At 80 columns the eleven usage columns do not fit side by side: the table turns to one
    row per figure instead of cutting headers and squeezing out the setting column."""
    from io import StringIO

    from whenpro_core.bench.report import USAGE_HEADERS
    from whenpro_core.cli.report import print_report

    report = aggregate(case())
    buf = StringIO()
    print_report(report, Console(file=buf, width=width, color_system=None))
    usage = buf.getvalue().split("Usage", 1)[1].split("Agent:", 1)[0]
    assert all(h in usage for h in USAGE_HEADERS[1:]) and "m · all-at-once · gold" in usage
    assert max(len(line.rstrip()) for line in usage.splitlines()) <= width


def test_rules_line_counts_a_failed_row_where_it_is_scored():
    """A labelled trace whose attribution failed is scored wrong on every axis; a file that
    could not be read has no ground truth and is left out, and the line says so (it
    counted both as scored wrong while the leaderboard held neither unreadable row)."""
    from whenpro_core.bench.report import whenpro_rules_header

    line = whenpro_rules_header(case())  # t4 failed (labelled), bad.json unreadable
    assert "failed rows scored wrong on every axis: 1;" in line
    assert "unlabelled or unreadable rows left out: 1;" in line
