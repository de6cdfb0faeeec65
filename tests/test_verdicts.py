"""Saved verdicts: kept in whenpro's verdicts folder (never beside the trace), keyed by
the trace's path and content, moved by ``--verdicts-dir`` / ``WHENPRO_VERDICTS_DIR`` /
``verdicts_dir``; old sidecars still read; whenpro appends only to its own file, and a
verdict that cannot be saved is still shown, with a warning saying why."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, SAMPLES
from whenpro_core.attribution.export import options_for
from whenpro_core.attribution.verdicts import (
    distinct_verdicts,
    load_verdicts,
    same_verdict,
    save_verdict,
    verdicts_path,
)
from whenpro_core.errors import WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import Attribution

VERDICT = Attribution(agent="solver", step="3", mode="R.3", reason="wrong sum")


@pytest.fixture
def trace_file(tmp_path):
    return write_trace(load_trace(SAMPLES / "team_text" / "trace.json"), tmp_path / "t.json")


def _sidecar(trace_file):
    """The file a trace's verdicts are appended to (keyed by its path; its folder made, so a
    test can put something else in its place)."""
    path = verdicts_path(load_trace(trace_file))
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _old_sidecar(trace_file):
    return trace_file.with_name(trace_file.name + ".verdicts.jsonl")


def test_verdicts_go_to_the_data_folder_not_beside_the_trace(trace_file, tmp_path):
    trace = load_trace(trace_file)
    path = save_verdict(trace, VERDICT)
    assert path is not None and path.is_relative_to(tmp_path / "whenpro-data" / "verdicts")
    assert sorted(p.name for p in trace_file.parent.iterdir() if p.is_file()) == ["t.json"]
    assert [v.step for v in load_verdicts(trace)] == ["3"]


def test_a_moved_trace_keeps_its_verdicts_by_content_and_a_grown_one_by_path(trace_file, tmp_path):
    save_verdict(load_trace(trace_file), VERDICT)
    moved = tmp_path / "elsewhere" / "renamed.json"
    moved.parent.mkdir()
    shutil.copyfile(trace_file, moved)
    assert [v.step for v in load_verdicts(load_trace(moved))] == ["3"]  # found by content
    trace = load_trace(trace_file)
    trace.task.query += " (edited)"
    write_trace(trace, trace_file)  # the same path, other content (a session that grew)
    assert [v.step for v in load_verdicts(load_trace(trace_file))] == ["3"]  # found by path
    other = tmp_path / "other.json"
    write_trace(trace, other)  # neither the path nor the content of a verdict
    assert load_verdicts(load_trace(other)) == []


def test_an_old_sidecar_is_still_read_and_never_written(trace_file):
    trace = load_trace(trace_file)
    save_verdict(trace, VERDICT)
    old = _old_sidecar(trace_file)
    old.write_bytes(_sidecar(trace_file).read_bytes())  # as older versions wrote it
    _sidecar(trace_file).unlink()
    save_verdict(trace, VERDICT.model_copy(update={"step": "4"}))
    assert [v.step for v in load_verdicts(trace)] == ["3", "4"]
    assert len(old.read_text().splitlines()) == 1  # the new verdict went to the verdicts folder


def test_the_folder_moves_with_the_variable_the_setting_and_the_option(trace_file, tmp_path, monkeypatch):
    config_dir = tmp_path / "conf"
    config_dir.mkdir()
    monkeypatch.setenv("WHENPRO_CONFIG_DIR", str(config_dir))
    (config_dir / "config.toml").write_text(f'verdicts_dir = "{tmp_path / "from-config"}"\n')
    out = _attribute(str(trace_file), "--json")
    assert out.returncode == 0, out.stderr
    assert len(list((tmp_path / "from-config").glob("*.jsonl"))) == 1
    monkeypatch.setenv("WHENPRO_VERDICTS_DIR", str(tmp_path / "from-env"))  # the environment wins
    out = _attribute(str(trace_file), "--json", "--no-gold")
    assert out.returncode == 0, out.stderr
    assert len(list((tmp_path / "from-env").glob("*.jsonl"))) == 1
    out = _attribute(str(trace_file), "--json", "--verdicts-dir", str(tmp_path / "from-flag"))  # the option wins
    assert out.returncode == 0, out.stderr
    assert len(list((tmp_path / "from-flag").glob("*.jsonl"))) == 1
    assert not (tmp_path / "whenpro-data").exists() and not _old_sidecar(trace_file).exists()


def test_verdicts_append_to_whenpros_own_sidecar(trace_file):
    trace = load_trace(trace_file)
    save_verdict(trace, VERDICT)
    save_verdict(trace, VERDICT.model_copy(update={"step": "4"}))
    assert [v.step for v in load_verdicts(trace)] == ["3", "4"]


def test_a_verdict_saved_after_a_torn_write_reads_back(trace_file):
    """A kill mid-write leaves a last line without its newline; the next save cuts it
    off first instead of gluing the new verdict onto the fragment."""
    trace = load_trace(trace_file)
    save_verdict(trace, VERDICT)
    whole = _sidecar(trace_file).read_bytes()
    _sidecar(trace_file).write_bytes(whole + whole[: len(whole) // 2])  # a torn second record
    save_verdict(trace, VERDICT.model_copy(update={"step": "5"}))
    problems: list[str] = []
    assert [v.step for v in load_verdicts(trace, problems)] == ["3", "5"]
    assert problems == []


def test_a_foreign_file_with_the_sidecars_name_is_never_touched(trace_file):
    foreign = _sidecar(trace_file)
    foreign.write_text('{"my": "notes"}\n')
    with pytest.raises(WhenproError) as info:
        save_verdict(load_trace(trace_file), VERDICT)
    assert str(foreign) in info.value.one_line() and "not a whenpro verdicts file" in info.value.one_line()
    assert foreign.read_text() == '{"my": "notes"}\n'


def test_a_folder_in_the_sidecars_place_is_a_whenpro_error(trace_file):
    _sidecar(trace_file).mkdir()
    with pytest.raises(WhenproError) as info:
        save_verdict(load_trace(trace_file), VERDICT)
    assert str(_sidecar(trace_file)) in info.value.one_line()


def _attribute(*args):
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "attribute", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_prints_the_verdict_and_warns_when_it_cannot_be_saved(trace_file):
    _sidecar(trace_file).mkdir()
    out = _attribute(str(trace_file), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["attribution"]["step"]
    assert out.stderr.startswith("whenpro: warning: verdict not saved") and "--no-save" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_cli_leaves_a_foreign_file_alone(trace_file):
    foreign = _sidecar(trace_file)
    foreign.write_text("my own notes\n")
    out = _attribute(str(trace_file))
    assert out.returncode == 0, out.stderr
    assert "Who" in out.stdout or "agent" in out.stdout.lower()
    assert "not a whenpro verdicts file" in out.stderr
    assert foreign.read_text() == "my own notes\n"


def test_a_rerun_with_the_same_answer_is_one_verdict():
    """One rule for the TUI and the CLI: the same protocol, model, gold setting and
    answer make one verdict, whatever the usage, confidence or timing."""
    rerun = VERDICT.model_copy(update={"confidence": 0.4, "usage": VERDICT.usage.model_copy(update={"calls": 3})})
    other_step = VERDICT.model_copy(update={"step": "4"})
    other_model = VERDICT.model_copy(update={"model": "openai:gpt-4.1"})
    assert same_verdict(VERDICT, rerun)
    assert not same_verdict(VERDICT, other_step) and not same_verdict(VERDICT, other_model)
    kept = distinct_verdicts([VERDICT, other_step, rerun, other_model, other_step])
    assert kept == [VERDICT, other_step, other_model] and kept[0] is VERDICT  # each where it first appears


def test_cli_attribute_run_twice_saves_the_verdict_once(trace_file):
    for _ in range(2):
        out = _attribute(str(trace_file), "--json")
        assert out.returncode == 0, out.stderr
    assert len(_sidecar(trace_file).read_text().splitlines()) == 1
    assert len(load_verdicts(load_trace(trace_file))) == 1


def test_an_export_shows_each_saved_verdict_once(trace_file):
    trace = load_trace(trace_file)
    save_verdict(trace, VERDICT)
    save_verdict(trace, VERDICT.model_copy(update={"confidence": 0.9}))  # the same answer, saved twice
    save_verdict(trace, VERDICT.model_copy(update={"step": "4"}))
    assert [v.step for v in options_for(trace, labels=False).verdicts] == ["3", "4"]
