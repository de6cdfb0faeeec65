"""Inspect AI logs (real_traces/inspect-ai-logs, each quirk of its SOURCE.md): .json and
.eval (zip), one trace per sample, attachments, scores, tool errors, cancelled and empty
logs, and archive limits."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import inspect_ai, load_trace, load_traces, walk
from whenpro_core.trace.model import Modality, Outcome

LOGS = "inspect-ai-logs/tests"
EVAL_LOG = f"{LOGS}/log/test_eval_log"


def test_every_real_log_imports_one_trace_per_sample(real_traces):
    rows = list(walk(real_traces / "inspect-ai-logs"))
    assert not [r for r in rows if r.error]
    assert len(rows) == 23  # 10 samples in the scorer log, 3 in the cancelled one, 1 in each other
    scorer = [r for r in rows if "popularity_dPiJ" in r.path]
    assert [r.key for r in scorer] == [f"{n}_epoch_1" for n in range(1, 11)]
    log = Path(scorer[0].path).name  # ids name the log: the same sample is in several logs
    assert load_trace(f"{real_traces / scorer[0].path}#7_epoch_1").id == f"inspect-popularity-7-e1@{log}"


def test_cancelled_log_still_lists_its_samples(real_traces):
    path = real_traces / f"{LOGS}/analysis/test_logs/2025-05-12T20-28-13-04-00_popularity.json"
    assert json.loads(path.read_text())["status"] == "cancelled"
    traces = load_traces(path)
    assert len(traces) == 3 and all(t.extras["log_status"] == "cancelled" for t in traces)


def test_zero_sample_logs_list_clearly_and_do_not_crash(tmp_path):
    doc = {"version": 2, "status": "cancelled", "eval": {"task": "popularity"}, "samples": []}
    p = tmp_path / "empty.json"
    p.write_text(json.dumps(doc))
    rows = list(walk(p))
    assert len(rows) == 1 and "no samples (status cancelled)" in rows[0].error
    with pytest.raises(TraceFormatError, match="no samples"):
        load_trace(p)
    z = tmp_path / "empty.eval"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("_journal/start.json", json.dumps({"version": 2, "status": "started", "eval": {}}))
        zf.writestr(
            "header.json",
            json.dumps({"version": 2, "status": "error", "eval": {}, "error": {"message": "KeyboardInterrupt"}}),
        )
    rows = list(walk(z))
    assert len(rows) == 1 and "no samples (status error, error: KeyboardInterrupt)" in rows[0].error


def test_same_run_as_eval_and_json_gives_the_same_trace(real_traces):
    for stem in ("log_formats", "log_read_sample"):
        a = load_trace(real_traces / f"{EVAL_LOG}/{stem}.eval")
        b = load_trace(real_traces / f"{EVAL_LOG}/{stem}.json")
        assert (a.id, b.id) == (f"{a.id.split('@')[0]}@{stem}.eval", f"{a.id.split('@')[0]}@{stem}.json")
        assert a.outcome == b.outcome and a.task == b.task
        assert [(s.agent, s.kind, s.content) for s in a.steps] == [(s.agent, s.kind, s.content) for s in b.steps]


def test_older_logs_without_spans_and_newer_with_spans(real_traces):
    old = load_trace(
        real_traces / f"{LOGS}/log/test_list_logs/2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json"
    )
    new = load_trace(real_traces / f"{EVAL_LOG}/log_read_sample.json")
    assert "span_begin" not in {e["event"] for e in old.extras["events"]}
    assert "span_begin" in {e["event"] for e in new.extras["events"]}
    assert old.task.query.startswith("Hey there, hipster")  # attachment:// resolved in the input


def test_empty_events_but_full_messages(real_traces):
    trace = load_trace(real_traces / f"{EVAL_LOG}/log_formats.json")
    assert trace.extras["events"] == [] and [s.kind for s in trace.steps] == ["system", "user", "assistant"]
    assert trace.final_answer == "No" and trace.outcome == Outcome.failure  # match scored I


def test_tool_call_errors_go_to_step_error(real_traces):
    trace = load_trace(real_traces / f"{EVAL_LOG}/log_tool_call_error.json")
    kinds = [s.error.split(":")[0] for s in trace.steps]
    assert kinds[:6] == ["parsing", "timeout", "parsing", "unicode_decode", "permission", "file_not_found"]
    assert trace.steps[-1].error == "output_limit: The tool output limit of 10 MiB was exceeded."
    assert trace.outcome == Outcome.unknown and all(s.kind == "tool" for s in trace.steps)


def test_attachment_images_become_inline_media(real_traces):
    for name in ("log_images.json", "log_images_tc.json"):
        trace = load_trace(real_traces / f"{EVAL_LOG}/{name}")
        user = trace.steps[1]
        assert trace.modality == Modality.image and user.content == "What is this a picture of?"
        assert user.media[0].mime == "image/png" and user.media[0].data.startswith("iVBORw0KGgo")
        assert "attachment://" not in trace.steps[0].content
        assert trace.task.answer == "bike | bicycle"


def test_scores_kept_and_outcome_from_the_main_score(real_traces):
    mmlu = load_trace(real_traces / f"{LOGS}/analysis/test_logs_choices/mmlu-summary-choices.eval")
    assert mmlu.extras["scores"]["choice"]["value"] == "I" and mmlu.outcome == Outcome.failure
    assert mmlu.task.options == ["6.0 e", "6.8 eV", "12.2 eV", "13.6 eV"]
    good = load_trace(real_traces / f"{EVAL_LOG}/log_read_sample.eval")
    assert good.outcome == Outcome.success
    unscored = load_trace(
        real_traces / f"{LOGS}/scorer/logs/2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"
    )
    assert unscored.extras["scores"] == {} and unscored.outcome == Outcome.unknown


def _zip(path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def test_zip_bomb_is_refused_without_extracting(tmp_path, monkeypatch):
    p = tmp_path / "bomb.eval"
    _zip(
        p,
        {
            "header.json": json.dumps({"version": 2, "status": "success", "eval": {}}).encode(),
            "samples/1_epoch_1.json": b" " * 3_000_000,
        },
    )
    monkeypatch.setattr(inspect_ai, "MAX_TOTAL_BYTES", 1_000_000)
    rows = list(walk(p))
    assert "1 of 1 samples not read" in rows[0].error and not list(tmp_path.glob("samples*"))


HEADER = json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}}).encode()


def _sample(sid: int) -> bytes:
    return json.dumps(
        {
            "id": sid,
            "epoch": 1,
            "messages": [{"role": "user", "content": f"task {sid}"}],
            "scores": {"s": {"value": "C"}},
        }
    ).encode()


def _bomb(path: Path, size: int) -> None:
    """An .eval whose sample 2 is ``size`` bytes of spaces (deflates ~1000:1), written in
    1 MiB chunks so the test itself never holds it."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", HEADER)
        zf.writestr("samples/1_epoch_1.json", _sample(1))
        with zf.open("samples/2_epoch_1.json", "w", force_zip64=True) as fh:
            chunk = b" " * (1 << 20)
            for _ in range(size >> 20):
                fh.write(chunk)
        zf.writestr("samples/3_epoch_1.json", _sample(3))


def test_a_bomb_sample_is_left_out_and_said_on_stderr(tmp_path):
    """Issue 13 item 7: a small .eval that expands far past a sane size: `info` imports the
    other samples, names the left-out member on stderr, and never expands it."""
    import subprocess
    import sys

    from conftest import REPO

    p = tmp_path / "bomb.eval"
    _bomb(p, inspect_ai.MAX_MEMBER_BYTES + (2 << 20))
    assert p.stat().st_size < 1_000_000
    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "info", str(p)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "bomb.eval: 2 traces" in " ".join(out.stdout.split())
    assert "samples/2_epoch_1.json expands past 128 MiB; not read" in out.stderr
    assert out.stderr.startswith("whenpro: warning:") and out.stderr.count("\n") == 1
    traces = load_traces(p)
    assert [t.source.key for t in traces] == ["1_epoch_1", "3_epoch_1"]
    assert "not read" in traces[0].extras["whenpro_warnings"][0]
    with pytest.raises(TraceFormatError, match="expands past"):
        load_trace(f"{p}#2_epoch_1")


class _Endless(io.RawIOBase):
    """A decompressing stream that never ends (a member whose declared size lies)."""

    def __init__(self) -> None:
        self.given = 0

    def read(self, n: int = -1) -> bytes:
        n = 1 << 20 if n is None or n < 0 else n
        self.given += n
        return b"\0" * n


def test_members_are_read_as_streams_and_stop_at_the_limit(tmp_path):
    stream = _Endless()
    with pytest.raises(inspect_ai.MemberTooLarge, match="big.json expands past 3 MiB"):
        inspect_ai.read_capped(stream, 3 << 20, name="big.json", path=tmp_path / "x.eval")
    assert stream.given <= (3 << 20) + 1
    assert inspect_ai.read_capped(io.BytesIO(b"abc"), 3, name="a", path=tmp_path) == b"abc"


def test_an_archive_stops_at_its_total_expanded_size(tmp_path, monkeypatch):
    p = tmp_path / "many.eval"
    pad = b" " * 400_000
    _zip(
        p,
        {
            "header.json": HEADER,
            **{f"samples/{i}_epoch_1.json": _sample(i)[:-1] + b', "pad": "' + pad + b'"}' for i in range(1, 6)},
        },
    )
    monkeypatch.setattr(inspect_ai, "MAX_TOTAL_BYTES", 1_000_000)
    traces = load_traces(p)
    assert len(traces) == 2
    assert traces[0].extras["whenpro_warnings"] == ["stopped after 1 MiB expanded: 3 of 5 samples not read"]


def test_truncated_or_corrupt_archives(real_traces, tmp_path):
    data = (real_traces / f"{EVAL_LOG}/log_formats.eval").read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match="zip"):
        load_trace(cut)
    bad_member = tmp_path / "bad.eval"
    _zip(bad_member, {"header.json": b'{"version": 2, "eval": {}}', "samples/1_epoch_1.json": b'{"id": 1, "messa'})
    with pytest.raises(TraceFormatError) as info:
        load_trace(bad_member)
    assert "samples/1_epoch_1.json" in str(info.value) and "truncated" in str(info.value)


@pytest.mark.parametrize(
    "sample, json_path",
    [
        ({"epoch": 1, "messages": []}, "$.samples[0].id"),
        ({"id": 1, "messages": "hi"}, "$.samples[0].messages"),
        ({"id": 1, "messages": [{"role": "user", "content": 5}]}, "$.samples[0].messages[0].content"),
        ({"id": 1, "messages": [{"content": "x"}]}, "$.samples[0].messages[0].role"),
        (
            {"id": 1, "messages": [{"role": "user", "content": [{"type": "image"}]}]},
            "$.samples[0].messages[0].content[0]",
        ),
    ],
)
def test_half_broken_json_logs_name_the_json_path(tmp_path, sample, json_path):
    p = tmp_path / "log.json"
    p.write_text(json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}, "samples": [sample]}))
    with pytest.raises(TraceFormatError) as info:
        load_trace(p)
    assert json_path in str(info.value) and str(p) in str(info.value)


def test_half_broken_eval_member_names_the_member(tmp_path):
    p = tmp_path / "log.eval"
    buf = io.BytesIO()
    _zip(
        buf,
        {
            "header.json": b'{"version": 2, "eval": {}}',
            "samples/s1_epoch_1.json": json.dumps({"id": "s1", "messages": [{"role": 3}]}).encode(),
        },
    )
    p.write_bytes(buf.getvalue())
    with pytest.raises(TraceFormatError) as info:
        load_trace(p)
    assert "samples/s1_epoch_1.json:$.messages[0].role" in str(info.value)


def test_each_model_call_usage_reaches_its_assistant_step_and_the_header(real_traces):
    """A model event's ``output.usage`` is the usage of the assistant message it wrote; the
    step detail and the header total read it (issue 20: per-step usage from Inspect)."""
    from whenpro_core.trace.usage import step_usage
    from whenpro_core.views.traceview import trace_header

    path = real_traces / "inspect-ai-logs" / "tests" / "log" / "test_eval_log" / "log_read_sample.eval"
    if not path.exists():
        pytest.skip(f"{path} not present")
    with zipfile.ZipFile(path) as zf:
        sample = json.loads(zf.read(next(n for n in zf.namelist() if n.startswith("samples/"))))
    calls = [e["output"]["usage"] for e in sample["events"] if e.get("event") == "model"]
    trace = load_traces(path)[0]
    answered = [s for s in trace.steps if s.meta.get("usage")]
    assert [s.meta["usage"] for s in answered] == calls and all(s.kind != "user" for s in answered)
    first = step_usage(answered[0])
    assert (first.input_tokens, first.output_tokens) == (calls[0]["input_tokens"], calls[0]["output_tokens"])
    assert f"{calls[0]['input_tokens']:,} in" in trace_header(trace).usage
