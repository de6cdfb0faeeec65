"""Issue 13 item 8: cases where whenpro said the wrong thing (silently dropped labels or
images, a wrong outcome, a wrong error location, a folder left behind, the wrong trace
attributed, a server's error hidden), each on real data where it exists and on small
made-up cases."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from tests.support.fixtures import TEST_KEY
from tests.support.llm_server import Fault
from whenpro_core.errors import BackendError, TraceFormatError
from whenpro_core.formats import load_trace, load_traces
from whenpro_core.trace.model import TRACE_HIDDEN_KEY, Outcome

OTEL_FIXTURE = REPO / "tests" / "fixtures" / "otel" / "genai_current.json"


def whenpro(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def one_error_line(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stderr.startswith("whenpro: error: ") and out.stderr.count("\n") == 1, out.stderr
    return out.stderr


# ------------------------------------------------------------------ Who&When: NaN step label


def test_a_nan_mistake_step_is_an_error_not_a_dropped_label(tmp_path, whowhen):
    doc = json.loads((whowhen / "Hand-Crafted" / "1.json").read_text())
    doc["mistake_step"] = float("nan")
    bad = tmp_path / "1.json"
    bad.write_text(json.dumps(doc))  # json writes NaN, as pandas-made files do
    assert '"mistake_step": NaN' in bad.read_text()
    with pytest.raises(TraceFormatError) as info:
        load_trace(bad)
    assert "$.mistake_step" in str(info.value) and "NaN" in str(info.value)
    assert "$.mistake_step" in one_error_line(whenpro("info", str(bad)))


# ------------------------------------------------------------------ CLI: folders and several traces


def test_an_empty_folder_named_like_a_file_is_an_error(tmp_path):
    (tmp_path / "trace.json").mkdir()
    for command in ("info", "ls", "view"):
        line = one_error_line(whenpro(command, str(tmp_path / "trace.json")))
        assert "folder holds no trace files" in line


def test_a_failed_convert_leaves_no_folder_behind(tmp_path, team_file):
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a trace"}')
    one_error_line(whenpro("convert", str(bad), str(tmp_path / "new" / "out") + "/"))
    assert not (tmp_path / "new").exists()
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(bad, src / "bad.json")
    whenpro("convert", str(src), str(tmp_path / "made"))  # every trace skipped: nothing written
    assert not (tmp_path / "made").exists()
    ok = whenpro("convert", str(team_file), str(tmp_path / "good") + "/")
    assert ok.returncode == 0 and list((tmp_path / "good").glob("*.json"))


def test_attribute_refuses_a_file_of_several_traces_naming_path_key(real_traces):
    release = real_traces / "who-when-pro-jsonl" / "data" / "text.jsonl"
    line = one_error_line(whenpro("attribute", str(release), "--no-save"))
    assert "holds 64 traces" in line and f"{release}#1" in line
    one = whenpro("attribute", f"{release}#1", "--no-save", "--json")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["trace"] == load_trace(f"{release}#1").id


# ------------------------------------------------------------------ Who&When Pro: images not read


@pytest.mark.parametrize("value", [5, {"0": "obs.jpg"}, [{"url": "obs.jpg"}, {"path": "ok.jpg"}]])
def test_unreadable_images_are_reported_not_dropped_silently(real_traces, tmp_path, value):
    doc = json.loads((real_traces / "who-when-pro-samples" / "data" / "traces" / "mmsearch_car.json").read_text())
    step = next(i for i, e in enumerate(doc["trajectory"]) if e.get("observation_images"))
    doc["trajectory"][step]["observation_images"] = value
    doc["task"]["images"] = "query.jpg"  # one path, not a list: read as one image, no warning
    path = tmp_path / "mmsearch_car.json"
    path.write_text(json.dumps(doc))
    trace = load_trace(path)
    assert len(trace.task.images) == 1
    notes = trace.extras["whenpro_warnings"]
    assert len(notes) == 1 and f"$.trajectory[{step}].observation_images" in notes[0] and "not read" in notes[0]
    out = whenpro("info", str(path))
    assert out.returncode == 0 and "whenpro: warning:" in out.stderr and "not read" in out.stderr


def test_real_who_when_pro_samples_read_every_image_without_warnings(real_traces):
    for path in sorted((real_traces / "who-when-pro-samples" / "data" / "traces").glob("*.json")):
        for trace in load_traces(path):
            assert not trace.extras.get("whenpro_warnings"), path


# ------------------------------------------------------------------ τ-bench reward, AgentRx labels


def _copy_agentrx(real_traces: Path, tmp_path: Path, part: str) -> Path:
    dest = tmp_path / "agentrx" / part
    shutil.copytree(real_traces / "agentrx" / part, dest)
    return dest


@pytest.mark.parametrize("reward", [12345, -1, True, "1.0"])
def test_tau_bench_reward_out_of_range_is_an_error(real_traces, tmp_path, reward):
    run = json.loads((real_traces / "agentrx" / "tau_retail" / "failed" / "task_12.json").read_text())
    run["reward"] = reward
    path = tmp_path / "task_12.json"
    path.write_text(json.dumps(run))
    with pytest.raises(TraceFormatError, match=r"\$\.reward") as info:
        load_trace(path)
    assert "0 to 1" in str(info.value)


def test_tau_bench_reward_one_is_success(real_traces, tmp_path):
    run = json.loads((real_traces / "agentrx" / "tau_retail" / "failed" / "task_12.json").read_text())
    run["reward"] = 1
    path = tmp_path / "task_12.json"
    path.write_text(json.dumps(run))
    assert load_trace(path).outcome == Outcome.success


def test_agentrx_failure_summary_is_hidden_label_text(real_traces):
    for path in [
        real_traces / "agentrx" / "tau_retail" / "failed" / "task_12.json",
        next((real_traces / "agentrx" / "magentic_one" / "trajectories").glob("*.json")),
    ]:
        trace = load_trace(path)
        assert trace.ground_truth is not None
        assert "failure_summary" not in trace.extras
        assert trace.extras[TRACE_HIDDEN_KEY]["failure_summary"]


def test_agentrx_empty_step_reason_falls_back_to_the_root_cause_reason(real_traces, tmp_path):
    folder = _copy_agentrx(real_traces, tmp_path, "tau_retail")
    labels_path = folder / "ground_truth.json"
    labels = json.loads(labels_path.read_text())
    entry = next(e for e in labels if str(e["trajectory_id"]) == "12")
    root_id = str(entry["root_cause"]["failure_id"])
    for failure in entry["failures"]:
        if str(failure["failure_id"]) == root_id:
            failure["step_reason"] = ""
    labels_path.write_text(json.dumps(labels))
    trace = load_trace(folder / "failed" / "task_12.json")
    why = entry["root_cause"]["reason_for_root_cause"]
    assert trace.ground_truth.reason.endswith(why)
    assert next(a for a in trace.annotations if a.decisive).reason == why


# ------------------------------------------------------------------ OTLP: where a file is cut


def test_a_truncated_pretty_printed_otlp_file_is_reported_where_it_is_cut(tmp_path):
    pretty = json.dumps(json.loads(OTEL_FIXTURE.read_text()), indent=2).encode()
    cut_at = pretty.index(b'"key"', len(pretty) // 2) + 3  # inside a member name, mid-file
    path = tmp_path / "trace.json"
    path.write_bytes(pretty[:cut_at])
    line = pretty[:cut_at].count(b"\n") + 1
    assert line > 100
    with pytest.raises(TraceFormatError) as info:
        load_trace(path)
    assert f"at line {line} column" in str(info.value) and "truncated" in str(info.value)
    assert "line 1 column 2" not in str(info.value)
    assert f"line {line}" in one_error_line(whenpro("info", str(path)))


def test_otlp_json_lines_still_name_the_bad_row(tmp_path):
    doc = json.loads(OTEL_FIXTURE.read_text())
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(doc) + "\n" + json.dumps(doc)[:100] + "\n")
    with pytest.raises(TraceFormatError) as info:
        load_trace(path)
    assert f"{path}:2" in str(info.value)


# ------------------------------------------------------------------ a 200 carrying {"error": ...}

MODELS = ["openai:gpt-4.1", "openai-responses:gpt-4.1", "anthropic:claude-sonnet-4-6"]


@pytest.mark.parametrize("model", MODELS)
async def test_an_error_body_sent_with_200_is_retried_as_a_5xx(model, llm_settings, llm_server):
    from whenpro_core.llm import LLMRequest, open_backend

    llm_server.fail(Fault.http(502, message="upstream overloaded", ok_status=True))
    llm_server.script("fine")
    backend = open_backend(model, llm_settings(model, cache=False))
    reply = await backend.complete(LLMRequest.simple("hi"))
    assert reply.text == "fine" and reply.retries == 1
    assert [r.status for r in llm_server.requests] == [200, 200]
    await backend.aclose()


@pytest.mark.parametrize("model", MODELS)
async def test_an_error_body_sent_with_200_shows_the_servers_message(model, llm_settings, llm_server):
    from whenpro_core.llm import LLMRequest, open_backend

    llm_server.fail(*[Fault.http(503, message=f"model is loading {TEST_KEY}", ok_status=True)] * 3)
    backend = open_backend(model, llm_settings(model, cache=False, max_retries=2))
    with pytest.raises(BackendError) as info:
        await backend.complete(LLMRequest.simple("hi"))
    text = str(info.value)
    assert "model is loading" in text and "sent with HTTP 200" in text and "(after 3 attempts)" in text
    assert TEST_KEY not in text
    assert len(llm_server.requests) == 3
    await backend.aclose()
