"""The `whenpro` command line, run as a user runs it (a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO, SAMPLES


def whenpro(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_info_on_a_trace_shows_task_agents_and_ground_truth_with_labels():
    out = whenpro("info", "--labels", str(SAMPLES / "team_text" / "trace.json"))
    assert out.returncode == 0, out.stderr
    assert "sample-workshop-schedule" in out.stdout
    assert "solver (3)" in out.stdout and "R.3 Numerical/calculation error" in out.stdout


def test_info_and_attribute_hide_the_label_by_default():
    """Labels hidden (the default, as in the TUI): nothing derived from the ground truth
    is printed — not its agent/step/mode, not its reason, not a ✓/✗ against it, not a
    dataset's counts by mode; --labels shows them."""
    trace = SAMPLES / "team_text" / "trace.json"
    gt = json.loads(trace.read_text())["ground_truth"]
    for out in (whenpro("info", str(trace)), whenpro("info", str(SAMPLES / "team_text"))):
        assert out.returncode == 0, out.stderr
        for leak in ("ground truth", "R.3", "Numerical/calculation", "by mode", gt["reason"][:40]):
            assert leak not in out.stdout, (leak, out.args)
    out = whenpro("attribute", str(trace), "--no-save")  # its own prediction (R.3 here) is no leak
    assert out.returncode == 0 and "protocol" in out.stdout, out.stderr
    for leak in ("ground truth", "matches", "differs", gt["reason"][:40]):
        assert leak not in out.stdout, leak
    rec = json.loads(whenpro("attribute", str(trace), "--no-save", "--json").stdout)
    assert "ground_truth" not in rec and "score" not in rec
    shown = whenpro("attribute", str(trace), "--no-save", "--labels")
    assert "ground truth" in shown.stdout and "R.3" in shown.stdout
    assert "by mode" in whenpro("info", "--labels", str(SAMPLES / "team_text")).stdout
    rec = json.loads(whenpro("attribute", str(trace), "--no-save", "--json", "--labels").stdout)
    assert rec["ground_truth"]["mode"] == "R.3" and set(rec["score"]) == {"agent", "step", "mode", "joint"}


def test_info_on_a_dataset_counts(real_traces):
    out = whenpro("info", str(real_traces / "who-and-when"))
    assert out.returncode == 0, out.stderr
    assert "129 traces" in out.stdout and "captainagent" in out.stdout


def test_ls_json_lines():
    out = whenpro("ls", "--json", str(SAMPLES))
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert {r["id"] for r in rows} >= {"sample-workshop-schedule", "sample-bar-chart"}


def test_ls_where_uses_the_row_filter_of_bench_and_the_library():
    """``ls --where`` keeps the rows ``bench --where`` would (same keys, values
    case-insensitive, ``|`` alternatives); a bad key is one error line."""
    everything = [json.loads(line) for line in whenpro("ls", "--json", str(SAMPLES)).stdout.splitlines()]
    images = whenpro("ls", "--json", "--where", "modality=IMAGE", str(SAMPLES))
    assert images.returncode == 0, images.stderr
    rows = [json.loads(line) for line in images.stdout.splitlines()]
    assert rows and len(rows) < len(everything)
    assert {r["id"] for r in rows} == {r["id"] for r in everything if r.get("modality") == "image"}
    either = whenpro("ls", "--json", "-w", "modality=image|video", str(SAMPLES))
    assert {json.loads(line)["modality"] for line in either.stdout.splitlines()} == {"image", "video"}
    bad = whenpro("ls", "--where", "colour=red", str(SAMPLES))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "colour" in bad.stderr


def test_ls_where_mode_needs_labels():
    """Filtering by failure mode reads the ground truth: without ``--labels`` it is one
    error line, not a list of the traces that carry the mode (labels stay hidden)."""
    hidden = whenpro("ls", "--where", "mode=R.3", str(SAMPLES / "arith_team"))
    assert hidden.returncode == 2 and hidden.stdout == "" and hidden.stderr.count("\n") == 1
    assert "--labels" in hidden.stderr
    shown = whenpro("ls", "--labels", "--json", "--where", "mode=R.3", str(SAMPLES / "arith_team"))
    assert shown.returncode == 0 and {json.loads(line)["gt_mode"] for line in shown.stdout.splitlines()} == {"R.3"}


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


def test_unwritable_output_is_one_line_not_a_traceback(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        import os

        if os.access(ro, os.W_OK):  # running as root: a file in the way works everywhere
            blocker = tmp_path / "file"
            blocker.write_text("x")
            target = blocker / "out.json"
        else:
            target = ro / "out.json"
        out = whenpro("convert", str(SAMPLES / "team_text" / "trace.json"), str(target))
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1
        assert "cannot write" in out.stderr
    finally:
        ro.chmod(0o700)


def test_glob_or_path_matching_nothing_is_an_error(tmp_path):
    for cmd in (["ls"], ["info"], ["convert"]):
        args = [*cmd, str(tmp_path / "*.nomatch")] + ([str(tmp_path / "o")] if cmd == ["convert"] else [])
        out = whenpro(*args)
        assert out.returncode == 2 and "matches no file" in out.stderr, (cmd, out.stderr)
    assert whenpro("info", "").returncode == 2


def test_listing_errors_go_to_stderr(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    import shutil

    shutil.copy(SAMPLES / "team_text" / "trace.json", tmp_path / "good.json")
    out = whenpro("ls", str(tmp_path))
    assert out.returncode == 0
    assert "bad.json" not in out.stdout and "bad.json" in out.stderr
    assert "sample-workshop-schedule" in out.stdout


def test_unknown_command_is_not_taken_for_a_path():
    out = whenpro("atribute", str(SAMPLES / "team_text" / "trace.json"))
    assert out.returncode == 2 and "atribute" in out.stderr and "attribute" in out.stderr


def test_convert_never_overwrites_on_an_id_clash(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("a", "b"):
        (src / name).mkdir()
        (src / name / "trace.json").write_text((SAMPLES / "team_text" / "trace.json").read_text())
    out = whenpro("convert", str(src), str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr
    assert len(list((tmp_path / "out").glob("*.json"))) == 2


def test_attribute_and_info_never_print_escape_sequences(tmp_path):
    doc = json.loads((SAMPLES / "team_text" / "trace.json").read_text())
    evil = "solver\x1b]52;c;SGVsbG8=\x07\x1b[2J"
    for step in doc["steps"]:
        if step["agent"] == "solver":
            step["agent"] = evil
    doc["ground_truth"]["agent"] = evil
    doc["ground_truth"]["reason"] = "see \x1b]0;PWNED\x07 here"
    p = tmp_path / "evil.json"
    p.write_text(json.dumps(doc))
    for args in (("attribute", str(p), "--no-save"), ("info", str(p))):
        out = whenpro(*args)
        assert out.returncode == 0, out.stderr
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout, args


def test_info_on_a_folder_counts_in_singular_and_plural(tmp_path):
    (tmp_path / "t.json").write_text((SAMPLES / "team_text" / "trace.json").read_text())
    (tmp_path / "broken.json").write_text('{"history": [')
    out = whenpro("info", str(tmp_path))
    assert ": 1 trace (1 file failed to import)" in " ".join(out.stdout.split()), out.stdout


def test_info_counts_bad_rows_of_a_jsonl_release_as_rows(tmp_path):
    """Two bad lines of one JSONL release were "2 files failed to import"."""
    data = tmp_path / "data"
    data.mkdir()
    row = {"id": "r1", "framework": "smolagents", "benchmark": "gaia", "task": "{}", "trajectory": "[]"}
    lines = [json.dumps(row), '{"id": "x", "broken', "garbage"]
    (data / "text.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "broken.json").write_text('{"history": [')
    out = whenpro("info", str(tmp_path))
    assert "(1 file and 2 rows failed to import)" in " ".join(out.stdout.split()), out.stdout
