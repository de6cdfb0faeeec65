"""Who&When Pro JSONL release: the real text split, a 10,000-row dataset listed without
decoding trajectories, video rows, and bad lines."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import orjson
import pytest

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, sniff, walk
from whenpro_core.formats import whowhen_pro_jsonl as wj
from whenpro_core.formats.whowhen_pro_jsonl import WhoWhenProJsonlImporter, row_index
from whenpro_core.formats.whowhen_pro_steps import HIDDEN_FIELDS
from whenpro_core.trace.model import Modality

RELEASE = "who-when-pro-jsonl"


def _row(trace_id, framework, task, trajectory, gt, extras=None, benchmark="bench"):
    """One release line: plain id/framework/benchmark, then JSON-string fields."""
    return json.dumps(
        {
            "id": trace_id,
            "framework": framework,
            "benchmark": benchmark,
            "task": json.dumps(task),
            "trajectory": json.dumps(trajectory),
            "ground_truth": json.dumps(gt),
            "extras": json.dumps(extras or {}),
        },
        separators=(",", ":"),
    ).encode()


def _smol(trace_id="t1", step=2, mode="R.2"):
    traj = [{"kind": "user", "content": "q"}] + [
        {
            "kind": "action",
            "step_number": n,
            "reasoning": f"r{n}</code>",
            "code": "x",
            "observation": "o",
            "observation_images": [],
            "error": None,
            "is_final_answer": n == 3,
        }
        for n in (1, 2, 3)
    ]
    return _row(
        trace_id, "smolagents", {"query": "q", "answer": "a"}, traj, {"agent": None, "step": step, "mode": mode}
    )


def _dataset(tmp_path, name, lines, newline_at_end=True):
    root = tmp_path / "ds"
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "taxonomy.yaml").write_text("R.2:\n  name: Reasoning error\n  description: A slip.\n")
    path = root / "data" / name
    path.write_bytes(b"\n".join(lines) + (b"\n" if newline_at_end else b""))
    return path


# --------------------------------------------------------------------------- real data


def test_every_real_row_imports_with_the_right_coordinate(real_traces):
    path = real_traces / RELEASE / "data" / "text.jsonl"
    lines = path.read_bytes().splitlines()
    assert len(lines) == 64
    summaries = list(walk(path))
    assert [s.key for s in summaries] == [str(n) for n in range(1, 65)]
    for n, (line, summary) in enumerate(zip(lines, summaries, strict=True), start=1):
        row = orjson.loads(line)
        traj, gt = orjson.loads(row["trajectory"]), orjson.loads(row["ground_truth"])
        trace = load_trace(f"{path}#{n}")
        assert (trace.id, trace.framework, trace.benchmark) == (row["id"], "smolagents", "dabench")
        assert trace.modality is Modality.text and trace.source.key == str(n)
        assert Path(trace.source.root) == real_traces / RELEASE  # dataset root: taxonomy.yaml
        labelled = trace.steps[trace.ground_truth.step_index]
        # trajectory[step] is the labelled action and its coordinate is str(step).
        assert labelled.raw == traj[gt["step"]] and labelled.coord == str(gt["step"])
        assert labelled.raw["step_number"] == gt["step"] and labelled.kind == "action"
        assert trace.ground_truth.mode == gt["mode"] and trace.ground_truth.agent == "agent"
        assert [s.coord for s in trace.steps] == [None] + [str(k) for k in range(1, len(traj))]
        assert (summary.id, summary.gt_step, summary.gt_mode, summary.error) == (
            row["id"],
            str(gt["step"]),
            gt["mode"],
            None,
        )
        for step in trace.steps:
            assert not step.content.endswith("</code>") or "<code>" in step.content
            assert not any(k in step.raw for k in HIDDEN_FIELDS)
        assert trace.final_answer


def test_open_by_trace_id(real_traces):
    path = real_traces / RELEASE / "data" / "text.jsonl"
    first_id = orjson.loads(path.read_bytes().split(b"\n", 1)[0])["id"]
    assert load_trace(f"{path}#{first_id}").source.key == "1"
    with pytest.raises(TraceFormatError) as err:
        load_trace(f"{path}#999")
    assert "1..64" in err.value.expected


def test_ten_thousand_rows_are_listed_without_decoding_trajectories(real_traces, tmp_path):
    real = (real_traces / RELEASE / "data" / "text.jsonl").read_bytes().splitlines()
    small = sorted(real, key=len)[:16]  # keep the file small: the 16 shortest rows
    lines, want = [], []
    for n in range(10_000):
        row = orjson.loads(small[n % len(small)])
        new_id = f"{row['id']}__copy{n:05d}"
        mode = orjson.loads(row["ground_truth"])["mode"]
        lines.append(small[n % len(small)].replace(f'"id":"{row["id"]}"'.encode(), f'"id":"{new_id}"'.encode(), 1))
        want.append((new_id, mode))
    path = _dataset(tmp_path, "text.jsonl", lines)
    before = dict(wj.STATS)
    summaries = list(walk(path.parent.parent))
    assert len(summaries) == 10_000
    assert [(s.id, s.gt_mode) for s in summaries] == want
    assert all(s.error is None and s.step_count is None for s in summaries)
    decoded = ("trajectory_decodes", "rows_loaded")
    assert [before[k] for k in decoded] == [wj.STATS[k] for k in decoded]  # no trajectory decoded, no row opened
    # Opening row 7,777 later decodes that row only.
    trace = load_trace(f"{path}#7777")
    assert trace.id == want[7776][0]
    assert wj.STATS["trajectory_decodes"] == before["trajectory_decodes"] + 1
    assert wj.STATS["rows_loaded"] == before["rows_loaded"] + 1


# --------------------------------------------------------------------------- shapes and root


def test_video_rows_resolve_frames_against_video_assets(tmp_path):
    traj = [
        {"kind": "system", "content": "s"},
        {"kind": "user", "content": "q"},
        {
            "kind": "assistant",
            "content": "",
            "tool_calls": [{"id": "c", "name": "frame_select", "arguments": '{"nframes": 1}'}],
        },
        {
            "kind": "tool",
            "tool_call_id": "c",
            "content": "1 frame",
            "frames": [{"index": 0, "time_s": 3, "path": "assets/frames/v1/f0.jpg"}],
        },
        {"kind": "assistant", "content": "<answer>A</answer>", "injected": True},
    ]
    line = _row(
        "eva_1",
        "eva",
        {"query": "q", "options": {"A": "x"}, "answer": "A"},
        traj,
        {"agent": None, "step": 4, "mode": "P.1"},
        extras={"video_context": {"videos": ["v1.mp4"]}},
    )
    path = _dataset(tmp_path, "video.jsonl", [line])
    frame_file = path.parent.parent / "video_assets" / "eva" / "assets" / "frames" / "v1" / "f0.jpg"
    frame_file.parent.mkdir(parents=True)
    frame_file.write_bytes(b"\xff\xd8\xff")
    (path.parent.parent / "video_assets" / "eva" / "v1.mp4").write_bytes(b"\x00")
    trace = load_trace(f"{path}#1")
    assert trace.modality is Modality.video and trace.extras["video_context"] == {"videos": ["v1.mp4"]}
    frame = trace.steps[3].media[0]
    assert frame.path == "video_assets/eva/assets/frames/v1/f0.jpg"
    assert (Path(trace.source.root) / frame.path).is_file()
    assert trace.task.images[0].kind == "video" and trace.task.images[0].path == "video_assets/eva/v1.mp4"
    assert trace.ground_truth.step == "1" and trace.steps[4].hidden == {"injected": True}
    assert list(walk(path))[0].gt_step == "1"


def test_extras_merge_into_the_top_level_and_image_gui_is_image(tmp_path):
    traj = [
        {"kind": "user", "content": "q"},
        {"kind": "action", "step_number": 1, "agent": "coder", "reasoning": "r", "action": "a"},
    ]
    line = _row(
        "coact_1",
        "coact",
        {"query": "q"},
        traj,
        {"agent": "coder", "step": 1, "mode": "A.1"},
        extras={"agents": [{"id": "coder", "role": "Coder"}], "topology": "multi"},
    )
    path = _dataset(tmp_path, "image_gui.jsonl", [line])
    trace = load_trace(path)
    assert trace.modality is Modality.image and trace.extras == {"topology": "multi", "split": "image_gui"}
    assert trace.agents[0].role == "Coder" and trace.ground_truth.agent == "coder"


def test_content_decides_not_the_file_name(tmp_path):
    path = _dataset(tmp_path, "release.txt", [_smol()])
    assert isinstance(sniff(path), WhoWhenProJsonlImporter)
    per_file = tmp_path / "one.jsonl"
    per_file.write_text(
        json.dumps(
            {
                "id": "x",
                "framework": "smolagents",
                "benchmark": "b",
                "task": {"query": "q"},
                "trajectory": [],
                "ground_truth": None,
            }
        )
    )
    assert not isinstance(sniff(per_file), WhoWhenProJsonlImporter)


def test_row_index_is_cached_per_size_and_mtime(tmp_path):
    path = _dataset(tmp_path, "text.jsonl", [_smol("a"), _smol("b")])
    first = row_index(path)
    assert row_index(path) is first and [r.id for r in first.rows] == ["a", "b"]
    path.write_bytes(path.read_bytes() + _smol("c") + b"\n")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert [r.id for r in row_index(path).rows] == ["a", "b", "c"]


def test_a_later_listing_reads_the_saved_index_until_the_file_changes(tmp_path):
    lines = [_smol(f"t{n}", step=1 + n % 3) for n in range(80)]
    path = _dataset(tmp_path, "text.jsonl", lines)
    scans = wj.STATS["index_scans"]
    first = row_index(path).rows
    wj._CACHE.clear()  # a new process: nothing in memory
    assert row_index(path).rows == first
    assert wj.STATS["index_scans"] == scans + 1  # the second listing read the saved index
    path.write_bytes(path.read_bytes() + _smol("late") + b"\n")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    wj._CACHE.clear()
    assert [r.id for r in row_index(path).rows][-2:] == ["t79", "late"]
    assert wj.STATS["index_scans"] == scans + 2


def test_a_blank_row_asked_for_by_number_says_it_is_blank(tmp_path):
    """``file#2`` of a file whose line 2 is blank said "no row '2' (expected a row number
    1..3 ...)", a number inside the range it gave."""
    path = _dataset(tmp_path, "text.jsonl", [_smol("t1"), b"", _smol("t3")])
    with pytest.raises(TraceFormatError, match=r"row 2 is a blank line \(expected a row number of a non-blank line"):
        row_index(path).find("2")
    assert row_index(path).find("3").id == "t3"


def test_a_file_replaced_with_its_size_and_mtime_kept_is_scanned_again(tmp_path):
    """``cp -p``, ``rsync -t`` or ``touch -r`` can put back a file's mtime after new content
    of the same size; the saved index of the old content was read for the new one."""
    path = _dataset(tmp_path, "text.jsonl", [_smol(f"t{n}") for n in range(80)])
    before = path.stat()
    assert [r.id for r in row_index(path).rows][:2] == ["t0", "t1"]
    path.write_bytes(path.read_bytes().replace(b'"t0"', b'"u0"', 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    wj._CACHE.clear()  # a new process
    assert [r.id for r in row_index(path).rows][:2] == ["u0", "t1"]


def test_a_damaged_saved_index_is_ignored_and_a_file_with_bad_rows_is_not_saved(tmp_path):
    path = _dataset(tmp_path, "text.jsonl", [_smol(f"t{n}") for n in range(70)])
    first = row_index(path).rows
    saved = wj.saved_index_path(wj.file_key(path))
    good = saved.read_bytes()
    head, body = good.split(b"\n", 1)
    flipped = body.replace(b'"start":[', b'"start":["x",', 1)  # a damaged body, header intact
    for damage in (b"{not json", b"[]", head + b"\n" + flipped, good[: len(good) // 2], head):
        saved.write_bytes(damage)
        wj._CACHE.clear()
        assert row_index(path).rows == first
    bad = _dataset(tmp_path, "image.jsonl", [_smol(f"t{n}") for n in range(70)] + [b'{"id":"x",oops}'])
    assert row_index(bad).rows[-1].error is not None
    assert not wj.saved_index_path(wj.file_key(bad)).exists()


def test_the_fast_read_of_a_release_line_agrees_with_the_careful_one(real_traces, tmp_path):
    """Every line the fast path accepts gives exactly the careful path's row; odd lines
    (escapes, spaces, other key orders, bad ground truths) are left to the careful path."""
    real = (real_traces / RELEASE / "data" / "text.jsonl").read_bytes().splitlines()
    odd = [
        _smol('quo"te'),
        _smol("trajectory"),  # a "trajectory" before the key: left to the careful path
        _smol("t").replace(b',"task":"', b',"task":"\\"trajectory\\":', 1),
        _smol("t").replace(b'","framework"', b'" ,"framework"', 1),
        _smol("t").replace(b'"task":"', b'"task":null,"x":"', 1),
        _smol("t").replace(b'{"id"', b'{"framework":"smolagents","id"', 1),
        _smol("t", step="2").replace(b'"ground_truth":"', b'"ground_truth":"[1,', 1),
        _smol("t", step=9),
        _smol("t").replace(b'"extras":"{}"}', b'"extras":"{}"} '),
        _row("ü-id", "smolagents", {"query": "q"}, [], None),
        _row("t", "magentic-one", {"query": "q"}, [], {"agent": "A", "step": "1.2", "mode": "R.1"}),
    ]
    path = _dataset(tmp_path, "text.jsonl", real + odd)
    import mmap

    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        start, fast_taken = 0, 0
        for n, line in enumerate(real + odd, start=1):
            end = start + len(line)
            fast = wj._fast_row(mm, n, start, end)
            careful = wj._careful_row(mm, path, n, start, end, False)
            if fast is not None:
                fast_taken += 1
                assert fast == careful, line[:80]
            start = end + 1
    assert fast_taken >= len(real)


def test_the_scan_releases_passed_pages_and_still_reads_every_row(tmp_path, monkeypatch):
    lines = [_smol(f"t{n}") for n in range(40)]
    path = _dataset(tmp_path, "text.jsonl", lines)
    whole = wj._scan_file(path, path.stat().st_size)
    monkeypatch.setattr(wj, "_RELEASE_EVERY", 1)  # release after every line
    assert wj._scan_file(path, path.stat().st_size) == whole
    assert [r.id for r in whole] == [f"t{n}" for n in range(40)]


# --------------------------------------------------------------------------- bad lines


def test_bad_lines_become_error_rows_and_raise_on_open(tmp_path):
    good = _smol("good")
    not_json = b'{"id":"nj","framework":"smolagents","benchmark":"b",oops}'
    list_traj = good.replace(b'"trajectory":"', b'"trajectory":[1],"x":"', 1)
    non_utf8 = _smol("nu").replace(b"r1", b"r\xff1", 1)
    wrong_gt = _smol("gt", step="2").replace(b'"ground_truth":"', b'"ground_truth":"[1,', 1)
    out_of_range = _smol("oor", step=9)
    blank = b"   "
    truncated = good[: len(good) // 2]
    path = _dataset(
        tmp_path,
        "text.jsonl",
        [good, not_json, list_traj, non_utf8, wrong_gt, blank, out_of_range, truncated],
        newline_at_end=False,
    )
    rows = {int(s.key): s for s in walk(path)}
    assert sorted(rows) == [1, 2, 3, 4, 5, 7, 8]  # the blank line 6 is skipped
    assert rows[1].error is None and rows[1].gt_step == "2"
    assert rows[4].error is None  # a bad byte deep in a trajectory: found on open
    assert rows[7].error is None and rows[7].gt_step == "9"
    for n in (2, 3, 5, 8):
        assert rows[n].error.startswith(f"{path}:{n}"), rows[n].error
    assert "trajectory is not a JSON string" in rows[3].error
    assert "truncated line" in rows[8].error
    assert "$.ground_truth" in rows[5].error
    expectations = {
        2: ("not valid JSON", None),
        3: ("trajectory is not a JSON string", "$.trajectory"),
        4: ("not UTF-8", None),
        5: ("ground_truth", "$.ground_truth"),
        7: ("step index out of range", "$.ground_truth.step"),
        8: ("truncated", None),
    }
    for n, (words, json_path) in expectations.items():
        with pytest.raises(TraceFormatError) as err:
            load_trace(f"{path}#{n}")
        assert err.value.row == n and err.value.path == str(path) and words in str(err.value)
        if json_path:
            assert err.value.json_path == json_path
    assert load_trace(f"{path}#1").id == "good"


@pytest.mark.parametrize(
    "field,value,json_path",
    [
        ("task", {"query": "q"}, "$.task"),
        ("trajectory", '{"kind": "user"}', "$.trajectory"),
        ("ground_truth", "[1]", "$.ground_truth"),
        ("extras", "not json", "$.extras"),
        ("framework", 3, "$.framework"),
    ],
)
def test_wrong_field_types_name_the_field_and_row(tmp_path, field, value, json_path):
    row = orjson.loads(_smol())
    row[field] = value
    line = orjson.dumps(row)
    path = _dataset(tmp_path, "text.jsonl", [_smol("ok"), line])
    with pytest.raises(TraceFormatError) as err:
        WhoWhenProJsonlImporter().load(path, "2", None)
    assert (err.value.row, err.value.json_path) == (2, json_path)


def test_empty_file_lists_nothing(tmp_path):
    path = _dataset(tmp_path, "text.jsonl", [], newline_at_end=False)
    assert list(WhoWhenProJsonlImporter().summaries(path, None)) == []
    with pytest.raises(TraceFormatError):
        WhoWhenProJsonlImporter().load(path, None, None)
