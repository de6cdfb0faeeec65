"""``whenpro bench`` and ``whenpro report`` write report.json / report.md /
step_by_length.png next to the results (``NAME.report.json`` … for ``NAME.jsonl`` other than
``bench-results.jsonl`` and ``results.jsonl``): they overwrite only report files whenpro wrote
itself (each carries a marker) and refuse, in one line, to replace a user's file."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from bench_data import write_dataset
from test_bench_aggregate import case
from test_bench_cli import one_line_error, whenpro
from whenpro_core.bench.aggregate import aggregate
from whenpro_core.bench.records import ResultsFile
from whenpro_core.bench.report import MD_MARKER, PLOT_NAME, is_whenpro_report_file, write_report
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.cli.report import ReportOptions, report_command
from whenpro_core.errors import ConfigError

USER_MD = "# My notes on the run\n\nDo not lose me.\n"


def quiet() -> Console:
    return Console(file=io.StringIO(), width=120)


def results_in(folder):
    folder.mkdir(parents=True, exist_ok=True)
    with ResultsFile(folder / "results.jsonl") as results:
        for r in case():
            results.append(r)
    return folder / "results.jsonl"


@pytest.mark.parametrize(
    "name, content",
    [
        ("report.md", USER_MD),
        ("report.json", json.dumps({"my": "own report"})),
        (PLOT_NAME, "not even a png"),
    ],
)
def test_report_refuses_to_overwrite_a_users_file(tmp_path, name, content):
    results = results_in(tmp_path / "run")
    mine = results.parent / name
    mine.write_text(content)
    with pytest.raises(ConfigError) as info:
        report_command([results], console=quiet())
    line = info.value.one_line()
    assert name in line and "not written by whenpro" in line and "--out" in line
    assert mine.read_text() == content
    written = {p.name for p in results.parent.iterdir()} - {"results.jsonl", name}
    assert written == set()  # nothing half-written either


def test_report_overwrites_its_own_files_and_marks_them(tmp_path):
    results = results_in(tmp_path / "run")
    report_command([results], console=quiet())
    folder = results.parent
    assert (folder / "report.md").read_text().splitlines()[0] == MD_MARKER
    assert all(is_whenpro_report_file(folder / n) for n in ("report.md", "report.json", PLOT_NAME))
    report_command([results], None, ReportOptions(tolerance=0), console=quiet())  # a rerun replaces them
    assert json.loads((folder / "report.json").read_text())["tolerance"] == 0


def test_reports_written_before_the_marker_still_count_as_whenpros(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    legacy = "# whenpro benchmark report\n\nResults: x\n"
    (folder / "report.md").write_text(legacy)
    assert is_whenpro_report_file(folder / "report.md")
    assert not is_whenpro_report_file(folder / "notes.md")  # no such file
    (folder / "notes.md").write_text(USER_MD)
    assert not is_whenpro_report_file(folder / "notes.md")


def test_report_into_another_folder_leaves_the_users_file_alone(tmp_path):
    results = results_in(tmp_path / "run")
    (results.parent / "report.md").write_text(USER_MD)
    report_command([results], tmp_path / "elsewhere", console=quiet())
    assert (tmp_path / "elsewhere" / "report.md").read_text().startswith(MD_MARKER)
    assert (results.parent / "report.md").read_text() == USER_MD


def test_bench_refuses_before_running_anything(tmp_path):
    data = write_dataset(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "r.report.md").write_text(USER_MD)  # the report of r.jsonl is r.report.md
    with pytest.raises(ConfigError, match="r.report.md exists and was not written by whenpro"):
        bench_command(str(data), BenchOptions(out=folder / "r.jsonl"), console=quiet())
    assert not (folder / "r.jsonl").exists() and (folder / "r.report.md").read_text() == USER_MD
    bench_command(str(data), BenchOptions(out=folder / "r.jsonl", report=False), console=quiet())  # --no-report runs
    assert (folder / "r.jsonl").exists() and (folder / "r.report.md").read_text() == USER_MD
    bench_command(str(data), BenchOptions(out=folder / "r.jsonl", report_dir=tmp_path / "rep"), console=quiet())
    assert (tmp_path / "rep" / "r.report.json").exists()


def test_cli_refusals_are_one_line_exit_2(tmp_path):
    data = write_dataset(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "r.report.json").write_text("{}")
    bench = whenpro("bench", str(data), "--out", str(folder / "r.jsonl"))
    assert one_line_error(bench) and "r.report.json" in bench.stderr and "--no-report" in bench.stderr
    results = results_in(tmp_path / "run")
    (results.parent / "report.md").write_text(USER_MD)
    rep = whenpro("report", str(results))
    assert one_line_error(rep) and "report.md" in rep.stderr
    assert (results.parent / "report.md").read_text() == USER_MD


def test_write_report_checks_every_file_first(tmp_path):
    (tmp_path / PLOT_NAME).write_bytes(b"\x89PNG\r\n\x1a\n" + b"user picture")
    with pytest.raises(ConfigError, match=PLOT_NAME):
        write_report(aggregate(case()), tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {PLOT_NAME}


def test_report_dir_puts_the_report_elsewhere(tmp_path):
    import subprocess
    import sys

    from conftest import REPO, SAMPLES

    (tmp_path / "r.report.md").write_text("# my own notes\n")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "bench",
            str(SAMPLES / "team_text"),
            "--out",
            str(tmp_path / "r.jsonl"),
            "--report-dir",
            str(tmp_path / "rep"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "r.report.md").read_text() == "# my own notes\n"
    assert (tmp_path / "rep" / "r.report.md").is_file()


def test_two_results_files_in_one_folder_keep_their_own_reports(tmp_path):
    """report's files are named after the results file: two results side by side do not
    overwrite each other's report; bench's default results name keeps report.md."""
    folder = tmp_path / "runs"
    folder.mkdir()
    records = case()
    for name, part in (("results-a.jsonl", records[:4]), ("results-b.jsonl", records[4:])):
        with ResultsFile(folder / name) as results:
            for r in part:
                results.append(r)
    for name in ("results-a.jsonl", "results-b.jsonl"):
        out = whenpro("report", str(folder / name))
        assert out.returncode == 0, out.stderr
    a, b = (folder / "results-a.report.md", folder / "results-b.report.md")
    assert a.is_file() and b.is_file()
    assert "results-a.jsonl" in a.read_text() and "results-b.jsonl" in b.read_text()
    assert a.read_text() != b.read_text()
    for stem in ("results-a", "results-b"):
        doc = json.loads((folder / f"{stem}.report.json").read_text())
        assert doc["sources"] == [str(folder / f"{stem}.jsonl")]
    assert not (folder / "report.md").exists() and not (folder / "report.json").exists()
    (folder / "results-a.jsonl").rename(folder / "bench-results.jsonl")
    assert whenpro("report", str(folder / "bench-results.jsonl")).returncode == 0
    assert json.loads((folder / "report.json").read_text())["sources"] == [str(folder / "bench-results.jsonl")]
