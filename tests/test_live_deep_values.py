"""Issue 13 item 1: values nested very deep neither kill the OTLP receiver's writer nor
make ``convert`` fail with a traceback. An attribute nested 240 (kvlist) or 320 (array)
deep is accepted with a warning (partial success, 0 rejected) and stored as JSON text
below the cap; a trace whose write fails is set aside and reported while the others are
written; the shared JSON writer writes any depth a reader takes back."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO
from tests.support.protobuf_bytes import field
from tests.support.waiting import TIMEOUT_S
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import load_native
from whenpro_core.live import builders
from whenpro_core.live.events import ExportWarning, TraceSetAside, TraceUpdated
from whenpro_core.live.otlp_server import OtlpReceiver
from whenpro_core.live.store import MAX_VALUE_DEPTH, LiveStore
from whenpro_core.storage import jsonio

OTEL = REPO / "tests" / "fixtures" / "otel"
TID = "5b8efff798038103d269b633813fc60c"


def post(url: str, body: bytes, ctype: str = "application/json") -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def drain(sub, until, rounds: int = 400) -> list:
    """Events until ``until(events)`` holds; at most ``rounds`` waits of 50 ms each."""
    events: list = []
    for _ in range(rounds):
        ev = sub.get(0.05)
        if ev is not None:
            events.append(ev)
        if until(events):
            return events
    raise AssertionError(f"the event never came; got {events!r}")


def deep_value(kind: str, depth: int) -> dict:
    """An OTLP AnyValue nested ``depth`` levels of ``kvlistValue`` or ``arrayValue``."""
    value: dict = {"stringValue": "bottom"}
    for _ in range(depth):
        value = (
            {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
            if kind == "kvlist"
            else {"arrayValue": {"values": [value]}}
        )
    return value


def export(trace_id: str, attrs: list[dict], span_id: str = "00f067aa0ba902b7") -> bytes:
    span = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": "chat gpt-4.1",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}, *attrs],
    }
    return jsonio.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


@pytest.fixture
def receiver(tmp_path):
    with OtlpReceiver(LiveStore(tmp_path / "store", flush_interval=0.02), "127.0.0.1", 0) as rx:
        yield rx


@pytest.mark.parametrize("kind,depth", [("kvlist", 240), ("array", 320)])
def test_a_deeply_nested_attribute_is_stored_capped_and_the_writer_goes_on(receiver, kind, depth):
    sub = receiver.store.subscribe()
    status, answer = post(receiver.endpoint, export(TID, [{"key": "deep", "value": deep_value(kind, depth)}]))
    assert status == 200
    partial = json.loads(answer)["partialSuccess"]  # OTLP: a warning is a partial success of 0 rejected
    assert partial["rejectedSpans"] == "0" and f"nested more than {MAX_VALUE_DEPTH} levels" in partial["errorMessage"]
    # a later, ordinary export is written too: the flusher is alive
    good = (OTEL / "genai_current.json").read_bytes()
    assert post(receiver.endpoint, good)[0] == 200
    good_ids = {
        sp["traceId"] for rs in json.loads(good)["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]
    }
    events = drain(sub, lambda ev: {e.trace_id for e in ev if isinstance(e, TraceUpdated)} >= good_ids | {TID})
    assert any(isinstance(e, ExportWarning) and e.trace_id == TID for e in events)
    stored = load_native(receiver.store.folder / f"{TID}.json")
    value = stored.steps[0].raw["attributes"]["deep"]
    for _ in range(MAX_VALUE_DEPTH):  # the first levels are kept as they are...
        value = value["k"] if kind == "kvlist" else value[0]
    assert isinstance(value, str)  # ...what is deeper is its JSON text, whole
    text = json.loads(value)
    for _ in range(depth - MAX_VALUE_DEPTH):
        text = text["k"] if kind == "kvlist" else text[0]
    assert text == "bottom"
    receiver.store.flush()
    assert receiver.store.set_aside == {}


def protobuf_export(kind: str, depth: int) -> bytes:
    """An ExportTraceServiceRequest, written by hand in the wire format (the protobuf
    library refuses to build messages nested over 100 deep), with one span whose
    attribute ``deep`` is a kvlistValue or arrayValue nested ``depth`` levels."""
    value = field(1, b"bottom")  # AnyValue.string_value
    for _ in range(depth):
        if kind == "kvlist":
            key_value = field(1, b"k") + field(2, value)  # KeyValue{key, value}
            value = field(6, field(1, key_value))  # AnyValue.kvlist_value{values: [..]}
        else:
            value = field(5, field(1, value))  # AnyValue.array_value{values: [..]}
    span = (
        field(1, bytes.fromhex(TID))
        + field(2, bytes.fromhex("00f067aa0ba902b7"))
        + field(5, b"chat")
        + field(9, field(1, b"deep") + field(2, value))
    )  # Span.attributes
    return field(1, field(2, field(2, span)))  # resource_spans{scope_spans{spans}}


@pytest.mark.parametrize("kind,depth", [("array", 40), ("kvlist", 240), ("array", 320)])
def test_a_deeply_nested_protobuf_attribute_is_capped_or_refused_in_one_line(receiver, kind, depth):
    status, answer = post(receiver.endpoint, protobuf_export(kind, depth), "application/x-protobuf")
    receiver.store.flush()
    if depth < 45:  # what the protobuf library parses (100 messages deep) is stored, capped
        assert status == 200
        stored = load_native(receiver.store.folder / f"{TID}.json")
        value = stored.steps[0].raw["attributes"]["deep"]
        for _ in range(MAX_VALUE_DEPTH):
            value = value[0]
        assert isinstance(value, str) and json.loads(value)
    else:  # deeper than it parses: a 400 with the reason, nothing stored
        assert status == 400 and b"not an OTLP protobuf export" in answer
        assert not (receiver.store.folder / f"{TID}.json").exists()
    # either way the receiver stores the next export
    assert post(receiver.endpoint, export("a" * 32, []))[0] == 200
    receiver.store.flush()
    assert (receiver.store.folder / f"{'a' * 32}.json").is_file()


def test_a_trace_that_cannot_be_written_is_set_aside_and_reported_and_the_others_are_written(tmp_path, monkeypatch):
    """A fault injected into the trace builder for one trace id (standing for any bug a
    hostile span could hit): that trace is set aside with its spans, the others go on."""
    real_build = builders.SpanSet.build

    def build(self, ctx):
        if self.trace_id == TID:
            raise ValueError("a builder bug")
        return real_build(self, ctx)

    monkeypatch.setattr(builders.SpanSet, "build", build)
    with OtlpReceiver(LiveStore(tmp_path, flush_interval=0.02), "127.0.0.1", 0) as rx:
        sub = rx.store.subscribe()
        assert post(rx.endpoint, export(TID, []))[0] == 200
        assert post(rx.endpoint, export("b" * 32, []))[0] == 200
        events = drain(
            sub,
            lambda ev: (
                any(isinstance(e, TraceSetAside) for e in ev)
                and any(isinstance(e, TraceUpdated) and e.trace_id == "b" * 32 for e in ev)
            ),
        )
        aside = next(e for e in events if isinstance(e, TraceSetAside))
        assert aside.trace_id == TID and "a builder bug" in aside.reason
        assert post(rx.endpoint, export("c" * 32, []))[0] == 200  # the writer is still alive
        drain(sub, lambda ev: any(isinstance(e, TraceUpdated) and e.trace_id == "c" * 32 for e in ev))
    kept = [json.loads(line) for line in Path(aside.path).read_text().splitlines()]
    assert [r["spans"][0]["span_id"] for r in kept] == ["00f067aa0ba902b7"]
    assert not (tmp_path / f"{TID}.json").exists()
    assert sorted(p.name for p in tmp_path.glob("*.json")) == [f"{'b' * 32}.json", f"{'c' * 32}.json"]


def _nested(levels: int) -> dict:
    value: object = "bottom"
    for _ in range(levels):
        value = {"k": value}
    return value  # type: ignore[return-value]


@pytest.mark.parametrize("depth", [300, 1023])
def test_convert_writes_a_trace_whose_free_form_fields_nest_deep(tmp_path, depth):
    """A native trace nesting ``depth`` levels in all (``$.steps[0].meta.x...``) is
    written by ``convert`` (status 0, no traceback) and reads back equal."""
    doc = {
        "format": "whenpro.trace/1",
        "id": "deep",
        "steps": [{"index": 0, "agent": "a", "kind": "assistant", "content": "hi", "meta": {"x": _nested(depth - 4)}}],
    }
    src = tmp_path / "deep.json"
    src.write_text(json.dumps(doc) if depth < 900 else _deep_json(doc, depth))
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "convert", str(src), str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    back, want = load_trace(out), load_trace(src)
    assert [s.content for s in back.steps] == ["hi"]
    assert jsonio.dumps(back.steps[0].meta) == jsonio.dumps(want.steps[0].meta)  # (== recurses too deep)


def _deep_json(doc: dict, depth: int) -> str:
    """``json.dumps`` of ``doc`` without the stdlib's recursion limit (the meta chain)."""
    head = json.dumps({**doc, "steps": [{**doc["steps"][0], "meta": "@@"}]})
    chain = '{"k":' * (depth - 5) + '"bottom"' + "}" * (depth - 5)
    return head.replace('"@@"', '{"x":' + chain + "}")


def test_the_json_writer_takes_any_depth_a_reader_takes_and_names_the_path_beyond():
    value = _nested(1000)
    text = jsonio.dumps(value)
    assert text == b'{"k":' * 1000 + b'"bottom"' + b"}" * 1000
    assert jsonio.dumps(jsonio.loads(text)) == text
    assert jsonio.dumps(jsonio.loads(jsonio.dumps(value, indent=True))) == text
    too_deep = {"a": [_nested(jsonio.MAX_DEPTH)]}
    with pytest.raises(TraceFormatError, match=r"at \$\.a\[0\]\.k\.k.*nested more than 1024 levels"):
        jsonio.dumps(too_deep)


def test_the_iterative_encoder_writes_what_orjson_writes():
    value = {"a": [1, 2.5, {"b": 'x\u00e9\n"', "c": None, "d": True}], "e": {}, "f": [], 3: "int key"}
    for indent in (False, True):
        for sort_keys in (False, True):
            want = jsonio.dumps(value, indent=indent, sort_keys=sort_keys)
            got = jsonio._dumps_iterative(value, indent=indent, sort_keys=sort_keys, default=None)
            assert got == want
    assert jsonio.loads(
        jsonio._dumps_iterative({"s": "\ud800", "n": 2**70}, indent=False, sort_keys=False, default=None)
    ) == {"s": "\ud800", "n": 2**70}


def test_cap_depth_keeps_shallow_values_and_stringifies_deep_ones():
    shallow = {"a": {"b": [1]}}
    assert jsonio.cap_depth(shallow, 3) == (shallow, [])
    capped, paths = jsonio.cap_depth({"a": {"b": {"c": [1]}}, "z": 1}, 2)
    assert capped == {"a": {"b": '{"c":[1]}'}, "z": 1} and paths == ["$.a.b"]
