"""Sniffing, references, dataset walks and the one-line errors of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SAMPLES
from whenpro_core.errors import TraceFormatError, UnknownFormatError
from whenpro_core.formats import load_trace, walk
from whenpro_core.formats.registry import find_root, split_ref

GOOD = {
    "question": "q",
    "ground_truth": "a",
    "mistake_agent": "A",
    "mistake_step": "0",
    "history": [{"content": "hi", "role": "assistant", "name": "A"}],
}


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty"),
        (b"\x00\x01\x02binary\x00", "binary"),
        (b'{"question": "q", "history": [', "truncated"),
        (b"not json at all", "not valid JSON"),
        ('{"question": "caf\xe9"}'.encode("latin-1"), "not UTF-8"),
    ],
)
def test_bad_bytes_give_one_clear_line(tmp_path, content, message):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError) as info:
        load_trace(p)
    text = str(info.value)
    assert message in text and str(p) in text and "\n" not in text


def test_utf16_with_bom_is_read(tmp_path):
    p = tmp_path / "w.json"
    p.write_bytes(json.dumps(GOOD).encode("utf-16"))
    assert load_trace(p).steps[0].content == "hi"


def test_content_not_name_decides_the_format(tmp_path):
    p = tmp_path / "looks_like.jsonl"
    p.write_text(json.dumps(GOOD))
    assert load_trace(p).source.format == "whowhen"
    q = tmp_path / "trace.json"
    q.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(UnknownFormatError, match="no importer"):
        load_trace(q)


def test_json_lines_of_no_known_format_are_an_unknown_format(tmp_path):
    p = tmp_path / "unk.jsonl"
    p.write_text('{"a": 1}\n\n{"b": 2}\n')
    with pytest.raises(UnknownFormatError, match="no importer recognises these JSON lines"):
        load_trace(p)
    q = tmp_path / "one.jsonl"  # one line and blank space: a JSON document
    q.write_text('{"a": 1}\n\n')
    with pytest.raises(UnknownFormatError, match="no importer recognises this content"):
        load_trace(q)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(TraceFormatError, match="no such file"):
        load_trace(tmp_path / "nope.json")
    with pytest.raises(TraceFormatError, match="folder"):
        load_trace(tmp_path)


def test_key_selects_and_bad_key_is_reported(tmp_path):
    p = tmp_path / "many.json"
    one = json.loads((SAMPLES / "team_text" / "trace.json").read_text())
    two = json.loads((SAMPLES / "bar_chart" / "trace.json").read_text())
    p.write_text(json.dumps([one, two]))
    assert load_trace(f"{p}#2").id == "sample-bar-chart"
    assert load_trace(f"{p}#sample-workshop-schedule").id == "sample-workshop-schedule"
    with pytest.raises(TraceFormatError, match="no trace '9'"):
        load_trace(f"{p}#9")


def test_split_ref_keeps_a_hash_that_is_part_of_a_file_name(tmp_path):
    p = tmp_path / "odd#name.json"
    p.write_text("{}")
    assert split_ref(p) == (p, None)
    assert split_ref(f"{tmp_path}/x.jsonl#12") == (tmp_path / "x.jsonl", "12")


def test_walk_reports_bad_files_and_carries_on(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(GOOD))
    (tmp_path / "b.json").write_bytes(b'{"history": [')
    (tmp_path / "c.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (tmp_path / "notes.txt").write_text("ignored")
    rows = list(walk(tmp_path))
    assert [r.error is None for r in rows] == [True, False, False]
    assert "b.json" in rows[1].error and "truncated" in rows[1].error


def test_walk_a_glob(tmp_path):
    for i in (1, 2, 10):
        (tmp_path / f"{i}.json").write_text(json.dumps(GOOD))
    rows = list(walk(str(tmp_path / "*.json")))
    assert [r.path.rsplit("/", 1)[1] for r in rows] == ["1.json", "2.json", "10.json"]


def test_find_root_climbs_to_the_dataset_marker(tmp_path):
    (tmp_path / "taxonomy.yaml").write_text("{}")
    deep = tmp_path / "data" / "text"
    deep.mkdir(parents=True)
    (deep / "x.json").write_text("{}")
    assert find_root(deep / "x.json") == tmp_path.resolve()


def test_a_dataset_reached_through_a_symlink_keeps_root_and_path_together(tmp_path):
    """``../shared`` as a symlink: the dataset root is found on the path as given (the
    trace's ``source.path``), not on the link's target, so root stays its ancestor."""
    real = tmp_path / "elsewhere" / "release"
    (real / "data").mkdir(parents=True)
    (real / "taxonomy.yaml").write_text("{}")
    (real / "data" / "t.json").write_bytes((SAMPLES / "team_text" / "trace.json").read_bytes())
    link = tmp_path / "shared"
    link.symlink_to(tmp_path / "elsewhere")
    trace = load_trace(link / "release" / "data" / "t.json")
    assert trace.source.root == str(link / "release")
    assert Path(trace.source.path).is_relative_to(trace.source.root)
    rows = list(walk(link / "release"))
    assert rows and all(Path(r.path).is_relative_to(link / "release") for r in rows)


def test_a_named_pipe_is_an_error_row_never_a_hang(tmp_path):
    """Opening a FIFO blocks until a writer comes: it is refused before any open()."""
    import os
    import subprocess
    import sys

    from whenpro_core.library.opening import open_target

    write_ok = (SAMPLES / "team_text" / "trace.json").read_bytes()
    (tmp_path / "good.json").write_bytes(write_ok)
    os.mkfifo(tmp_path / "pipe.json")
    rows = list(walk(tmp_path))  # would block forever on the pipe
    [bad] = [r for r in rows if r.error]
    assert "pipe.json" in bad.path and "not a regular file (a named pipe)" in bad.error
    assert [r.id for r in rows if not r.error] == ["sample-workshop-schedule"]
    with pytest.raises(TraceFormatError, match="not a regular file"):
        load_trace(tmp_path / "pipe.json")
    assert "not a regular file" in open_target(str(tmp_path / "pipe.json")).rows[0].error
    for command in (["ls", str(tmp_path)], ["info", str(tmp_path / "pipe.json")]):
        out = subprocess.run(
            [sys.executable, "-m", "whenpro_core.cli", *command], capture_output=True, text=True, timeout=60
        )
        assert "not a regular file (a named pipe)" in out.stdout + out.stderr
