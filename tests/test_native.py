"""The native format: schema, write/read round trip, conversion from other formats."""

from __future__ import annotations

import json

import pytest

from conftest import SAMPLES
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import dumps_trace, write_trace
from whenpro_core.library.summary import convert
from whenpro_core.trace.model import Trace


def _same(a: Trace, b: Trace) -> bool:
    return a.model_dump(exclude={"source"}) == b.model_dump(exclude={"source"})


@pytest.mark.parametrize("name", ["team_text", "bar_chart"])
def test_samples_round_trip(tmp_path, name):
    trace = load_trace(SAMPLES / name / "trace.json")
    out = write_trace(trace, tmp_path / "copy.json")
    again = load_trace(out)
    assert _same(trace, again)
    assert again.source.format == "native" and again.source.path == str(out)


def test_schema_validates_samples():
    schema = Trace.model_json_schema()
    assert schema["properties"]["format"]["const"] == "whenpro.trace/1"
    assert {"steps", "ground_truth", "task"} <= set(schema["properties"])


def test_convert_real_who_and_when_round_trips(tmp_path, real_traces):
    src = real_traces / "who-and-when/Who&When/Hand-Crafted/1.json"
    original = load_trace(src)
    [out] = convert(str(src), tmp_path / "one.json").written
    again = load_trace(out)
    assert again.extras.pop("converted_from")["format"] == "whowhen"
    assert _same(original, again)


def test_convert_refuses_to_overwrite(tmp_path):
    target = tmp_path / "t.json"
    target.write_text("precious")
    from whenpro_core.errors import WhenproError

    with pytest.raises(WhenproError, match="exists"):
        convert(str(SAMPLES / "team_text" / "trace.json"), target)
    assert target.read_text() == "precious"


def test_convert_a_folder_writes_one_file_per_trace(tmp_path):
    written = convert(str(SAMPLES), tmp_path / "out").written
    names = {p.name for p in written}
    assert {"sample-bar-chart.json", "sample-workshop-schedule.json"} <= names
    assert len(names) == len(written) == len(list(SAMPLES.rglob("*.json")))


def test_invalid_native_document_names_the_field(tmp_path):
    doc = json.loads(dumps_trace(load_trace(SAMPLES / "team_text" / "trace.json")))
    doc["steps"][2]["tool_calls"][0]["name"] = 7
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match=r"\$\.steps\[2\]\.tool_calls\[0\]\.name"):
        load_trace(p)
    doc = json.loads(dumps_trace(load_trace(SAMPLES / "team_text" / "trace.json")))
    doc["steps"][1]["index"] = 5
    p.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match=r"\$\.steps\[1\]\.index: step index 5 out of order \(expected 1\)"):
        load_trace(p)


def _with_step_values(content: str, meta: dict) -> Trace:
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    trace.steps[0].content = content
    trace.steps[0].meta = meta
    return trace


def test_lone_surrogate_and_huge_int_write_and_read_back_equal(tmp_path):
    """LLM output can hold a lone surrogate ("\\ud800", valid JSON) and meta a number
    beyond 64 bits: orjson refuses both, the writer must still be lossless."""
    trace = _with_step_values("bad \ud800 text", {"big": 10**400, "neg": -(2**70)})
    out = write_trace(trace, tmp_path / "odd.json")
    assert b"\\ud800" in out.read_bytes()
    again = load_trace(out)
    assert again.steps[0].content == "bad \ud800 text"
    assert again.steps[0].meta == {"big": 10**400, "neg": -(2**70)}
    assert _same(trace, again)


def test_convert_cli_writes_a_lone_surrogate(tmp_path):
    from typer.testing import CliRunner

    from whenpro_core.cli import app

    src = write_trace(_with_step_values("x \udfff y", {}), tmp_path / "in.json")
    result = CliRunner().invoke(app, ["convert", str(src), str(tmp_path / "out.json")])
    assert result.exit_code == 0, result.output
    assert load_trace(tmp_path / "out.json").steps[0].content == "x \udfff y"


def _doc_with_gt(**gt):
    doc = json.loads(dumps_trace(load_trace(SAMPLES / "team_text" / "trace.json")))
    doc["ground_truth"] = {**doc["ground_truth"], **gt}
    return doc


def test_a_ground_truth_step_that_is_no_steps_coordinate_is_an_error(tmp_path):
    p = tmp_path / "gt.json"
    p.write_text(json.dumps(_doc_with_gt(step="999", step_index=None)))
    with pytest.raises(TraceFormatError) as info:
        load_trace(p)
    line = info.value.one_line()
    assert str(p) in line and "$.ground_truth.step" in line and "999" in line
    n = len(load_trace(SAMPLES / "team_text" / "trace.json").steps)
    assert f"0..{n - 1}" in line
    empty = tmp_path / "empty.json"  # it said "expected a step coordinate in none: the trajectory has ..."
    empty.write_text(json.dumps({**_doc_with_gt(step="3", step_index=None), "steps": []}))
    with pytest.raises(TraceFormatError, match=r"expected no ground-truth step: the trajectory has no steps\)"):
        load_trace(empty)


def test_round_only_and_step_ground_truths_keep_loading(tmp_path):
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    for i, step in enumerate(trace.steps):
        step.coord = f"{i // 2 + 1}.{i % 2}"
    trace.ground_truth.step, trace.ground_truth.step_index = "2", None
    trace.ground_truth.round_only = True
    assert load_trace(write_trace(trace, tmp_path / "round.json")).ground_truth.step == "2"
    trace.ground_truth.round_only = False
    trace.ground_truth.step = "2.1"
    assert load_trace(write_trace(trace, tmp_path / "coord.json")).ground_truth.step == "2.1"
    trace.ground_truth.step = "7.0"
    with pytest.raises(TraceFormatError, match=r"ground_truth\.step"):
        load_trace(write_trace(trace, tmp_path / "bad.json"))


def test_another_native_version_is_named_not_unknown(tmp_path):
    from whenpro_core.errors import TraceFormatError
    from whenpro_core.formats import load_trace

    doc = (SAMPLES / "team_text" / "trace.json").read_text().replace('"whenpro.trace/1"', '"whenpro.trace/9"')
    (tmp_path / "v9.json").write_text(doc)
    with pytest.raises(TraceFormatError) as info:
        load_trace(tmp_path / "v9.json")
    line = info.value.one_line()
    assert "at $.format: unsupported native format 'whenpro.trace/9'" in line
    assert "whenpro.trace/1; a newer file needs a newer whenpro" in line


def test_attribute_names_the_heuristic_once():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "attribute", str(SAMPLES / "team_text" / "trace.json"), "--no-save"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "heuristic · heuristic" not in out.stdout
    assert any(line.split() == ["protocol", "heuristic"] for line in out.stdout.splitlines())


def test_a_converted_image_trace_keeps_its_images(tmp_path, real_traces):
    """A Who&When Pro trace converted into another folder brings its media files along
    (at their relative paths), so every image still opens from the new file."""
    from whenpro_core.media.paths import resolve_media

    src = real_traces / "who-when-pro-samples" / "data" / "traces" / "mmsearch_car.json"
    (tmp_path / "conv").mkdir()  # an output file's folder must exist (a typo makes no folder)
    [out] = convert(str(src), tmp_path / "conv" / "car.json").written
    trace = load_trace(out)
    refs = [*trace.task.images, *(m for s in trace.steps for m in s.media)]
    assert refs and all(r.path and not r.path.startswith("/") for r in refs)
    for ref in refs:
        found = resolve_media(ref, trace.source.path, trace.source.root)
        assert found == (tmp_path / "conv" / ref.path).resolve()
    again = convert(str(src), tmp_path / "conv" / "car.json", force=True)  # same files: no noise
    assert again.written == [out] and again.notes == []


def test_convert_never_replaces_a_different_media_file(tmp_path, real_traces):
    src = real_traces / "who-when-pro-samples" / "data" / "traces" / "mmsearch_car.json"
    mine = tmp_path / "assets" / "examples" / "mmsearch_car" / "query_0.jpg"
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"my own file")
    done = convert(str(src), tmp_path / "car.json")
    assert mine.read_bytes() == b"my own file"
    assert any(kind == "warning" and "exists with other content; not replaced" in line for kind, line in done.notes)
