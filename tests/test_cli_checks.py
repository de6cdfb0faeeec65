"""Bad command lines found by a fresh-user test of the CLI: each ends in one line
``whenpro: error: ...`` and exit status 2 (or the documented status), never a traceback,
never a half-done run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REAL_TRACES, REPO, SAMPLES

TRACE = str(SAMPLES / "team_text" / "trace.json")
JSONL = REAL_TRACES / "who-when-pro-jsonl" / "data" / "text.jsonl"


def whenpro(*args: str, cwd=REPO, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "whenpro_core.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, **kw)


def one_line_error(out: subprocess.CompletedProcess, *words: str) -> None:
    """Exit 2, exactly one stderr line starting ``whenpro: error:``, holding ``words``."""
    assert out.returncode == 2, (out.returncode, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("whenpro: error:"), out.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


# 1. bench --out / --report-dir that cannot be written: refused before the run

def test_bench_out_under_a_file_is_refused_before_the_run(tmp_path):
    (tmp_path / "somefile.json").write_text("{}")
    out = whenpro("bench", TRACE, "--protocol", "heuristic",
                  "--out", str(tmp_path / "somefile.json" / "x.jsonl"))
    one_line_error(out, "somefile.json", "is a file")
    assert (tmp_path / "somefile.json").read_text() == "{}"


def test_bench_out_in_an_unwritable_place_is_refused_before_the_run():
    out = whenpro("bench", TRACE, "--protocol", "heuristic", "--out", "/proc/x.jsonl")
    one_line_error(out, "/proc/x.jsonl")


def test_bench_report_dir_under_a_file_is_refused_before_the_run(tmp_path):
    (tmp_path / "f").write_text("mine")
    out = whenpro("bench", TRACE, "--protocol", "heuristic", "--out", str(tmp_path / "r.jsonl"),
                  "--report-dir", str(tmp_path / "f" / "rep"))
    one_line_error(out, "is a file")
    assert not (tmp_path / "r.jsonl").exists()
