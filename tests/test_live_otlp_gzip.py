"""Gzip bodies of the OTLP receiver (issue 33, item 6): every member of a multi-member
body is read (two protobuf exports, each gzipped and concatenated, are one export of both,
as ``gzip -d`` reads them), and bytes after the last member that are not a gzip member
are refused with 400, nothing stored."""

from __future__ import annotations

import base64
import gzip
import json

from google.protobuf.json_format import Parse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.test_live_otlp import OTEL, post, receiver, stored  # noqa: F401  (receiver: a fixture)

PROTOBUF = "application/x-protobuf"


def export(name: str) -> bytes:
    """The OTLP/JSON fixture ``name`` as a protobuf export (OTLP/JSON's hex ids made the
    base64 of protobuf's JSON mapping)."""
    doc = json.loads((OTEL / name).read_text())
    for resource in doc["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for field in ("traceId", "spanId", "parentSpanId"):
                    if span.get(field):
                        span[field] = base64.b64encode(bytes.fromhex(span[field])).decode()
    return Parse(json.dumps(doc), ExportTraceServiceRequest()).SerializeToString()


def trace_ids(body: bytes) -> set[str]:
    request = ExportTraceServiceRequest.FromString(body)
    return {s.trace_id.hex() for r in request.resource_spans for ss in r.scope_spans for s in ss.spans}


def test_every_member_of_a_multi_member_body_is_stored(receiver) -> None:  # noqa: F811
    first, second = export("genai_current.json"), export("openinference.json")
    assert trace_ids(first).isdisjoint(trace_ids(second))
    body = gzip.compress(first) + gzip.compress(second)
    assert post(receiver.endpoint, body, PROTOBUF, {"Content-Encoding": "gzip"})[0] == 200
    assert stored(receiver) == sorted(f"{t}.json" for t in trace_ids(first) | trace_ids(second))


def test_trailing_bytes_after_the_last_member_are_refused(receiver) -> None:  # noqa: F811
    body = gzip.compress(export("genai_current.json")) + b"trailing garbage"
    status, answer = post(receiver.endpoint, body, "application/json", {"Content-Encoding": "gzip"})
    assert status == 400 and "after the gzip data" in json.loads(answer)["message"]
    assert stored(receiver) == []


def test_members_together_are_held_to_the_size_cap(tmp_path) -> None:
    from whenpro_core.live.otlp_server import OtlpReceiver
    from whenpro_core.live.store import LiveStore

    with OtlpReceiver(LiveStore(tmp_path / "s"), "127.0.0.1", 0, max_body=64 * 1024) as rx:
        member = gzip.compress(b" " * (40 * 1024))  # each under the cap, both over it
        body = member + member
        assert post(rx.endpoint, body, "application/json", {"Content-Encoding": "gzip"})[0] == 413
