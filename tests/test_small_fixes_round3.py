"""Issue 33, item 8 (the small ones): ``convert t.json -`` writes C1 controls and bidi
overrides as JSON escapes (the same value, nothing a terminal acts on), as every other
output shows them inert; a trace id of 64 hex digits is judged, and named, as itself;
one member of an ``.eval`` with a bad CRC leaves out that sample only."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.conftest import team_trace
from tests.support.cli import run_whenpro
from whenpro_core.formats.native import write_trace

HOSTILE = "\x9b31m c1 \u202ebidi \u2066isolate\u2069 \x7fdel"


def test_convert_to_stdout_escapes_c1_and_bidi_controls(tmp_path: Path) -> None:
    trace = team_trace()
    trace.steps[1].content = HOSTILE
    trace.steps[2].tool_calls[0].arguments = {"cmd": HOSTILE}
    path = write_trace(trace, tmp_path / "t.json")
    for to in ("native", "atif", "otlp-json"):
        out = run_whenpro("convert", str(path), "-", "--to", to)
        assert out.returncode == 0, out.stderr
        raw = out.stdout.encode("utf-8", "surrogateescape")
        for char in ("\x9b", "\u202e", "\u2066", "\u2069", "\x7f"):
            assert char.encode() not in raw, (to, char)
        assert HOSTILE in json.dumps(json.loads(out.stdout), ensure_ascii=False), to  # the value is kept


def otlp_doc(trace_id: str) -> dict:
    return {
        "resourceSpans": [
            {"scopeSpans": [{"spans": [{"traceId": trace_id, "spanId": "00f067aa0ba902b7", "name": "invoke_agent a"}]}]}
        ]
    }


@pytest.mark.parametrize("digits", [16, 32, 48, 64])
def test_a_hex_trace_id_of_16_to_64_digits_is_taken_as_itself(tmp_path: Path, digits: int) -> None:
    from tests.test_live_otlp import post, stored
    from whenpro_core.live.otlp_server import OtlpReceiver
    from whenpro_core.live.store import LiveStore

    trace_id = ("0123456789abcdef" * 4)[:digits]
    with OtlpReceiver(LiveStore(tmp_path / "s"), "127.0.0.1", 0) as rx:
        status, answer = post(rx.endpoint, json.dumps(otlp_doc(trace_id)).encode())
        assert status == 200, answer
        assert stored(rx) == [f"{trace_id}.json"]


@pytest.mark.parametrize("trace_id", ["0123456789abcdef" * 4 + "ab", "ab" * 40, "not-an-id-at-all!"])
def test_a_refused_trace_id_is_quoted_as_sent(tmp_path: Path, trace_id: str) -> None:
    from tests.test_live_otlp import post
    from whenpro_core.live.otlp_server import OtlpReceiver
    from whenpro_core.live.store import LiveStore

    with OtlpReceiver(LiveStore(tmp_path / "s"), "127.0.0.1", 0) as rx:
        status, answer = post(rx.endpoint, json.dumps(otlp_doc(trace_id)).encode())
    message = json.loads(answer)["message"]
    assert status == 400 and repr(trace_id[:40]) in message, message
    if all(c in "0123456789abcdef" for c in trace_id):
        assert f"{len(trace_id)} hex digits" in message and "not hex" not in message, message


def test_one_member_with_a_bad_crc_leaves_out_that_sample_only(tmp_path: Path) -> None:
    from tests.test_inspect_ai import HEADER, _sample
    from whenpro_core.formats import load_traces

    p = tmp_path / "crc.eval"
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("header.json", HEADER)
        for sid in (1, 2, 3):
            zf.writestr(f"samples/{sid}_epoch_1.json", _sample(sid))
    data = p.read_bytes()
    assert data.count(b'"task 2"') == 1
    p.write_bytes(data.replace(b'"task 2"', b'"task X"'))  # the stored bytes no longer match their CRC

    assert [t.source.key for t in load_traces(p)] == ["1_epoch_1", "3_epoch_1"]
    out = run_whenpro("ls", str(p))
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("crc.eval#") == 2, out.stdout
    assert "samples/2_epoch_1.json" in out.stderr and "CRC" in out.stderr, out.stderr
