"""Problems a fresh-user test found in the CLI: a single bad file named by itself is one
error line and status 2, a closed stdout pipe ends with 141, a broken config.toml is
never silently ignored, a JSON document given to ``watch`` says so once."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from conftest import REPO, SAMPLES
from tests.support.cli import run_whenpro
from whenpro_core.cli.app import COMMANDS


def whenpro(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    # wide: Rich wraps at 80 columns without a terminal, and pytest's tmp paths are long
    return run_whenpro(*args, columns=400, **kw)


def one_line_error(out: subprocess.CompletedProcess, *words: str) -> None:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("whenpro: error:"), out.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


# info / ls on one file that fails to import


def test_info_on_one_bad_jsonl_file_is_one_error_line(tmp_path):
    bad = tmp_path / "l4.jsonl"
    bad.write_text('{"agent": "a", "kind": 7}\n')
    one_line_error(whenpro("info", str(bad)), "l4.jsonl")


def test_ls_on_one_bad_file_is_one_error_line(tmp_path):
    bad = tmp_path / "l4.jsonl"
    bad.write_text('{"agent": "a", "kind": 7}\n')
    one_line_error(whenpro("ls", str(bad)), "l4.jsonl")


@pytest.mark.parametrize(
    "rel, lines",
    [
        ("unk.jsonl", ['{"a": 1}', '{"b": 2}']),
        (".whenpro-build/journal.jsonl", ['{"format": "whenpro.build.journal/1", "seed": 1}', '{"key": "k"}']),
    ],
    ids=["unknown", "build-journal"],
)
@pytest.mark.parametrize("command", ["info", "ls"])
def test_json_lines_no_importer_recognises_say_so(tmp_path, rel, lines, command):
    """Valid JSON lines of an unknown format: "no importer recognises", naming the file
    and the JSON lines formats whenpro reads, not "not valid JSON at line 2"."""
    path = tmp_path / rel
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    out = whenpro(command, str(path))
    one_line_error(out, path.name, "no importer recognises these JSON lines", "Supported formats")
    assert "not valid JSON" not in out.stderr


def test_info_on_a_folder_still_lists_bad_files_and_carries_on(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "good.json").write_text((SAMPLES / "team_text" / "trace.json").read_text())
    out = whenpro("info", str(tmp_path))
    assert out.returncode == 0 and "1 trace " in out.stdout and "1 file failed to import" in out.stdout
    assert out.stderr.startswith("whenpro: warning: ") and "bad.json" in out.stderr  # on stderr, not an error


@pytest.mark.parametrize("command", [("info",), ("ls",), ("ls", "--json"), ("ls", "--where", "framework=x")])
def test_a_folder_where_no_file_can_be_read_ends_with_an_error(tmp_path, command):
    """As a folder holding no trace file does: each bad file is a warning, then one error
    line says nothing could be read, and the status is 2 (was 0 with nothing listed)."""
    (tmp_path / "a.json").write_text("{")
    (tmp_path / "b.json").write_text("nope")
    out = whenpro(*command, str(tmp_path))
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert lines[-1].startswith("whenpro: error: ") and "no trace could be read" in lines[-1], out.stderr
    assert "2 files failed to import" in lines[-1] and str(tmp_path) in lines[-1]
    assert command == ("ls", "--json") or out.stdout == ""  # no "0 traces" summary above the error


def test_a_jsonl_release_whose_every_row_is_bad_ends_with_an_error(tmp_path):
    """A file named by itself: its first error, how many more, status 2."""
    data = tmp_path / "data"
    data.mkdir()
    row = '{"id": "r1", "framework": "smolagents", "benchmark": "gaia", "task": "{}", "trajectory": "[]"'
    bad_label = ', "ground_truth": "not JSON"'
    (data / "text.jsonl").write_text(f"{row}}}\n{row}{bad_label}}}\ngarbage\n")
    out = whenpro("ls", str(data / "text.jsonl"))
    assert out.returncode == 0 and "r1" in out.stdout  # one row read: warnings only
    (data / "text.jsonl").write_text(f"{row}{bad_label}}}\ngarbage\n")
    out = whenpro("ls", str(data / "text.jsonl"))
    one_line_error(out, "text.jsonl:1 at $.ground_truth", "and 1 more bad rows")


def test_ls_where_nothing_matches_says_so_on_stderr():
    """It printed nothing at all, as for an empty folder."""
    out = whenpro("ls", str(SAMPLES), "--where", "id=nope")
    assert out.returncode == 0 and out.stdout == ""
    assert out.stderr.startswith("whenpro: none of the ") and "traces in " in out.stderr, out.stderr
    assert out.stderr.rstrip().endswith("matches --where id=nope"), out.stderr


def test_info_into_a_pipe_keeps_a_long_path_on_one_line(tmp_path):
    """Piped (``| grep``, ``> file``) with no COLUMNS, Rich folded every line at 80 columns,
    so a trace's path came out cut in two."""
    deep = tmp_path / ("a_folder_name_long_enough_to_pass_eighty_columns_" * 2) / "trace_with_a_long_name.json"
    deep.parent.mkdir()
    deep.write_text((SAMPLES / "team_text" / "trace.json").read_text())
    out = run_whenpro("info", str(deep), env={"COLUMNS": ""})  # no width given, as in a plain pipe
    assert out.returncode == 0 and str(deep) in out.stdout, out.stdout
    assert all(line == line.rstrip() for line in out.stdout.splitlines()), "lines padded with blanks"


# a stdout pipe closed by its reader (| head) ends quietly with 141, for every command


def _into_closed_pipe(*args: str) -> tuple[int, str]:
    """Run whenpro with stdout a pipe whose reader has already gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "whenpro_core.cli", *args],
            cwd=REPO,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    finally:
        os.close(write)
    return out.returncode, out.stderr


def test_ls_info_and_ls_json_into_a_closed_pipe_exit_141_quietly():
    for args in (("ls", str(SAMPLES)), ("ls", "--json", str(SAMPLES)), ("info", str(SAMPLES))):
        assert _into_closed_pipe(*args) == (141, ""), args


def test_help_into_a_closed_pipe_exits_141_quietly():
    for args in (("--help",), ("ls", "--help")):
        assert _into_closed_pipe(*args) == (141, ""), args


# a broken config.toml is never silently ignored


def test_offline_commands_warn_once_about_a_broken_config(tmp_path):
    (tmp_path / "config.toml").write_text("model = [\n")
    env = {"WHENPRO_CONFIG_DIR": str(tmp_path)}
    trace = str(SAMPLES / "team_text" / "trace.json")
    runs = [
        whenpro("attribute", trace, env=env),
        whenpro("bench", trace, "--protocol", "heuristic", "--out", str(tmp_path / "r.jsonl"), env=env),
    ]
    for out in runs:
        assert out.returncode == 0, out.stderr
        warnings = [line for line in out.stderr.splitlines() if line.startswith("whenpro: warning:")]
        assert len(warnings) == 1 and "config.toml" in warnings[0] and "not valid TOML" in warnings[0], out.stderr
    one_line_error(whenpro("models", env=env), "config.toml", "not valid TOML")


# watch / view --follow on a whole JSON document: one line saying what to do


def test_watch_on_a_pretty_printed_json_document_is_one_error_line(whowhen, tmp_path):
    doc = whowhen / "Hand-Crafted" / "1.json"
    out = whenpro("watch", str(doc), "--idle-timeout", "0.5")
    one_line_error(out, str(doc), "a JSON document, not JSON lines", f"whenpro {doc}")
    assert out.stdout == ""
    compact = tmp_path / "one.json"  # a whole document on one line is a document too
    compact.write_text('{"steps": [\n{"agent": "a"}]}')
    one_line_error(whenpro("watch", str(compact), "--idle-timeout", "0.5"), "not JSON lines")


def test_watch_on_a_binary_file_is_one_error_line(tmp_path):
    video = tmp_path / "clip.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 40 + b"\n" * 50)
    out = whenpro("watch", str(video), "--idle-timeout", "0.5")
    one_line_error(out, str(video), "binary, not JSON lines")
    assert out.stdout == ""


def test_watch_in_a_folder_that_does_not_exist_is_one_error_line(tmp_path):
    """A file to follow may not exist yet, but its folder must: nothing would ever write there."""
    missing = tmp_path / "no-such-folder" / "run.jsonl"
    out = whenpro("watch", str(missing), "--idle-timeout", "0.5")
    one_line_error(out, str(missing.parent), "no such folder", "an existing folder")
    assert out.stdout == ""


def test_watch_on_a_file_that_never_appears_waits_then_fails(tmp_path):
    """A missing file is waited for (one stderr line says so); if it never appears before
    the idle timeout, the run is an error, not a clean exit."""
    missing = tmp_path / "run.jsonl"
    out = whenpro("watch", str(missing), "--idle-timeout", "0.5")
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert lines[0] == f"whenpro: waiting for {missing} to appear", out.stderr
    assert len(lines) == 2 and lines[1].startswith("whenpro: error:"), out.stderr
    assert str(missing) in lines[1] and "never appeared" in lines[1], out.stderr


def test_watch_names_the_file_on_each_bad_line(tmp_path):
    run = tmp_path / "run.jsonl"
    run.write_text('{"agent": "a", "kind": "plan", "content": "x"}\nnot json\n')
    out = whenpro("watch", str(run), "--idle-timeout", "0.5")
    bad = [line for line in out.stdout.splitlines() if "not valid JSON" in line]
    assert bad and bad[0].startswith(f"{run}:2: "), out.stdout


def test_an_llm_protocol_without_a_model_says_it_needs_one():
    out = whenpro("attribute", str(SAMPLES / "team_text" / "trace.json"), "--protocol", "all-at-once", "--no-save")
    one_line_error(out, "protocol all-at-once needs a model", "--model provider:model")


def test_watch_heuristic_with_a_model_needs_the_final_pass(tmp_path):
    run = tmp_path / "run.jsonl"
    run.write_text('{"agent": "a", "kind": "plan", "content": "x"}\n')
    out = whenpro("watch", str(run), "--protocol", "heuristic", "--model", "openai:gpt-4.1", "--idle-timeout", "0.5")
    one_line_error(out, "--protocol heuristic and --model do not go together", "--final-pass")


def test_report_into_a_closed_pipe_still_writes_its_files(tmp_path):
    """report | head: the report files are written whether or not stdout is read."""
    results = tmp_path / "r.jsonl"
    run = whenpro("bench", str(SAMPLES), "--protocol", "heuristic", "--out", str(results), "--no-report")
    assert run.returncode == 0, run.stderr
    assert _into_closed_pipe("report", str(results), "--out", str(tmp_path / "rep")) == (141, "")
    assert (tmp_path / "rep" / "r.report.json").is_file() and (tmp_path / "rep" / "r.report.md").is_file()


# --help: boolean flags are plain flags, as typer shows them


@pytest.mark.parametrize("command", [(), *((name,) for name, _ in COMMANDS)], ids=lambda c: " ".join(c) or "whenpro")
def test_help_shows_boolean_flags_without_a_type(command):
    out = whenpro(*command, "--help")
    assert out.returncode == 0, out.stderr
    assert "--help" in out.stdout and "Show this message and exit." in out.stdout
    assert "<bool>" not in out.stdout, out.stdout
