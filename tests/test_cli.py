"""The `whenpro` command line, run as a user runs it (a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO, SAMPLES


def whenpro(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "whenpro_core.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_info_on_a_trace_shows_task_agents_and_ground_truth():
    out = whenpro("info", str(SAMPLES / "team_text" / "trace.json"))
    assert out.returncode == 0, out.stderr
    assert "sample-workshop-schedule" in out.stdout
    assert "solver (3)" in out.stdout and "R.3 Numerical/calculation error" in out.stdout


def test_info_on_a_dataset_counts(real_traces):
    out = whenpro("info", str(real_traces / "who-and-when"))
    assert out.returncode == 0, out.stderr
    assert "129 traces" in out.stdout and "captainagent" in out.stdout


def test_ls_json_lines():
    out = whenpro("ls", "--json", str(SAMPLES))
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert {r["id"] for r in rows} >= {"sample-workshop-schedule", "sample-bar-chart"}


def test_bad_input_prints_one_line_and_exits_2(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"history": [')
    out = whenpro("info", str(bad))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "broken.json" in out.stderr and "Traceback" not in out.stderr


def test_convert_then_schema(tmp_path):
    out = whenpro("convert", str(SAMPLES / "team_text" / "trace.json"), str(tmp_path / "t.json"))
    assert out.returncode == 0, out.stderr
    again = whenpro("convert", str(SAMPLES / "team_text" / "trace.json"), str(tmp_path / "t.json"))
    assert again.returncode == 2 and "--force" in again.stderr
    schema = json.loads(whenpro("schema").stdout)
    assert schema["title"] == "Trace"


def test_info_and_ls_never_print_escape_sequences(tmp_path):
    doc = json.loads((SAMPLES / "team_text" / "trace.json").read_text())
    doc["id"] = "evil\x1b]0;pwned\x07\x1b[2J"
    doc["task"]["query"] = "clear \x1b[2J screen"
    doc["agents"][1]["id"] = "plan\x1b[31mner"
    p = tmp_path / "evil.json"
    p.write_text(json.dumps(doc))
    for cmd in ("info", "ls"):
        out = whenpro(cmd, str(p))
        assert out.returncode == 0, out.stderr
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout
