"""The OTLP/HTTP receiver and its store (whenpro_core.live.otlp_server / store): the
real OpenTelemetry SDK and OTLP exporter export to it over loopback; JSON bodies are
posted with urllib; malformed, oversized and foreign requests are refused with nothing
stored; memory stays bounded under a bounded concurrent load."""

from __future__ import annotations

import dataclasses
import gzip
import json
import resource
import threading
import urllib.error
import urllib.request

import pytest

from conftest import REPO
from tests.support.otel_agent import provider, run_workshop_agent
from tests.support.waiting import TIMEOUT_S, Deadline, wait_until
from whenpro_core.errors import ConfigError
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import load_native
from whenpro_core.live.events import ExportRejected, TraceEvicted, TraceStarted, TraceUpdated
from whenpro_core.live.otlp_server import OtlpReceiver, parse_address
from whenpro_core.live.store import LiveStore

OTEL = REPO / "tests" / "fixtures" / "otel"


@pytest.fixture
def receiver(tmp_path):
    rx = OtlpReceiver(LiveStore(tmp_path / "store", flush_interval=0.02), "127.0.0.1", 0)
    with rx:
        yield rx


def post(url: str, body: bytes, ctype: str = "application/json", headers: dict | None = None):
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": ctype, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def drain(sub, until, timeout: float = TIMEOUT_S) -> list:
    events, deadline = [], Deadline(timeout)
    while True:
        ev = sub.get(0.05)
        if ev is not None:
            events.append(ev)
        if until(events):
            return events
        deadline.check("the events", lambda: f"got {events!r}")


def stored(rx) -> list:
    rx.store.flush()
    return sorted(p.name for p in rx.store.folder.glob("*.json"))


@pytest.mark.parametrize("gzip_body", [False, True])
def test_the_real_sdk_exports_and_the_trace_is_on_disk_and_announced(receiver, gzip_body):
    sub = receiver.store.subscribe()
    tp = provider(receiver.endpoint, gzip=gzip_body)
    trace_id = run_workshop_agent(tp)
    tp.shutdown()
    # the invoke_agent span ends (and is exported) last: it then frames the five steps and
    # makes them the planner's, which the store announces as a replacement of them all
    events = drain(
        sub,
        lambda ev: any(
            isinstance(e, TraceUpdated) and e.step_count == 5 and e.added and all(s.agent == "planner" for s in e.added)
            for e in ev
        ),
    )
    started = [e for e in events if isinstance(e, TraceStarted)]
    assert [e.trace_id for e in started] == [trace_id] and started[0].service == "workshop-agent"
    on_disk = load_trace(receiver.store.folder / f"{trace_id}.json")  # a native trace any command opens
    assert on_disk.id == trace_id and on_disk.framework == "otel"
    assert [s.kind for s in on_disk.steps] == ["action", "tool", "action", "tool", "assistant"]
    assert {s.agent for s in on_disk.steps} == {"planner"}
    assert on_disk.task.query.startswith("A workshop starts at 09:10")
    assert "2 * 15 = 20" in on_disk.steps[2].content
    # replaying the announced steps gives the stored trace
    shown: list = []
    for e in events:
        if isinstance(e, TraceUpdated):
            del shown[e.kept :]
            shown.extend(e.added)
    assert [s.meta["span_id"] for s in shown] == [s.meta["span_id"] for s in on_disk.steps]
    assert receiver.store.trace(trace_id).steps == on_disk.steps
    assert receiver.stats["rejected"] == 0


def test_endpoint_alone_is_enough_via_the_standard_environment(receiver, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.base_url)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))  # no arguments at all
    trace_id = run_workshop_agent(tp, wrong=False)
    tp.shutdown()
    assert stored(receiver) == [f"{trace_id}.json"]


@pytest.mark.parametrize("fixture,framework", [("genai_current.json", "otel"), ("openinference.json", "openinference")])
def test_otlp_json_posted_with_urllib_matches_the_file_importer(receiver, fixture, framework):
    body = (OTEL / fixture).read_bytes()
    status, answer = post(receiver.endpoint, body)
    assert status == 200 and json.loads(answer) == {}
    doc = json.loads(body)
    ids = sorted({sp["traceId"] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]})
    assert stored(receiver) == [f"{i}.json" for i in ids]
    for tid in ids:
        got = load_native(receiver.store.folder / f"{tid}.json")
        want = load_trace(f"{OTEL / fixture}#{tid}")
        assert got.framework == framework and got.steps
        assert got.model_dump(exclude={"source"}) == want.model_dump(exclude={"source"})


def test_protobuf_and_json_of_the_same_spans_give_the_same_trace(tmp_path):
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    mem = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(mem))
    run_workshop_agent(tp)
    request = encode_spans(mem.get_finished_spans())
    as_json = MessageToDict(request)
    for rs in as_json["resourceSpans"]:  # OTLP/JSON ids are hex, not protobuf-JSON base64
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for k in ("traceId", "spanId", "parentSpanId"):
                    if k in sp:
                        import base64

                        sp[k] = base64.b64decode(sp[k]).hex()
    traces = []
    for name, body, ctype in (
        ("pb", request.SerializeToString(), "application/x-protobuf"),
        ("json", json.dumps(as_json).encode(), "application/json"),
    ):
        with OtlpReceiver(LiveStore(tmp_path / name), "127.0.0.1", 0) as rx:
            assert post(rx.endpoint, body, ctype)[0] == 200
            rx.store.flush()
            (path,) = list(rx.store.folder.glob("*.json"))
            traces.append(load_native(path))
    assert traces[0].model_dump(exclude={"source"}) == traces[1].model_dump(exclude={"source"})


@pytest.mark.parametrize(
    "body,ctype,headers,status",
    [
        (b"\x0a\xff\xff\xff", "application/x-protobuf", {}, 400),  # truncated protobuf
        (b'{"resourceSpans": [', "application/json", {}, 400),  # torn JSON
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": '
            b'[{"traceId": "../../etc", "spanId": "00f067aa0ba902b7"}]}]}]}',
            "application/json",
            {},
            400,
        ),  # an id that is no hex
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "00f067aa0ba902b7"}]}]}]}',
            "application/json",
            {},
            400,
        ),  # no trace id
        (b"[1, 2]", "application/json", {}, 400),
        (b"not gzip at all", "application/json", {"Content-Encoding": "gzip"}, 400),
        (b"{}", "text/plain", {}, 415),  # what a web page could post
        (b"{}", "application/json", {"Content-Encoding": "br"}, 415),
    ],
)
def test_malformed_bodies_are_refused_and_nothing_is_stored(receiver, body, ctype, headers, status):
    sub = receiver.store.subscribe()
    got, answer = post(receiver.endpoint, body, ctype, headers)
    assert got == status
    if ctype == "application/json":
        assert json.loads(answer)["message"]
    assert stored(receiver) == []
    rejected = drain(sub, lambda ev: any(isinstance(e, ExportRejected) for e in ev))
    assert rejected[0].status == status


def test_oversized_bodies_are_refused_with_413_before_and_after_gzip(tmp_path):
    with OtlpReceiver(LiveStore(tmp_path / "s"), "127.0.0.1", 0, max_body=64 * 1024) as rx:
        big = b'{"resourceSpans": []' + b" " * (100 * 1024) + b"}"
        assert post(rx.endpoint, big)[0] == 413
        bomb = gzip.compress(big)  # small on the wire, too big once decompressed
        assert len(bomb) < 64 * 1024
        assert post(rx.endpoint, bomb, headers={"Content-Encoding": "gzip"})[0] == 413
        assert (
            post(rx.endpoint, gzip.compress(b'{"resourceSpans": []}'), headers={"Content-Encoding": "gzip"})[0] == 200
        )
        assert stored(rx) == []


def test_other_paths_methods_and_hosts_are_refused(receiver):
    body = (OTEL / "genai_current.json").read_bytes()
    assert post(receiver.endpoint.replace("/v1/traces", "/v1/metrics"), body)[0] == 404
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(receiver.endpoint, timeout=TIMEOUT_S)
    assert exc.value.code == 405
    assert post(receiver.endpoint, body, headers={"Host": "attacker.example:4318"})[0] == 400  # DNS rebinding
    assert stored(receiver) == []
    assert post(receiver.endpoint, body, headers={"Host": f"localhost:{receiver.port}"})[0] == 200


def test_non_loopback_addresses_need_allow_remote(tmp_path):
    with pytest.raises(ConfigError, match="allow-remote"):
        OtlpReceiver(LiveStore(tmp_path), "0.0.0.0", 0)
    assert parse_address(None) == ("127.0.0.1", 4318)
    assert parse_address("localhost:9000") == ("localhost", 9000)
    assert parse_address("[::1]:0") == ("::1", 0)
    with pytest.raises(ConfigError):
        parse_address("127.0.0.1:http")


def test_memory_is_capped_and_an_evicted_trace_resumes_from_disk(tmp_path):
    store = LiveStore(tmp_path, max_traces=2, flush_interval=0.02)
    sub = store.subscribe()
    doc = json.loads((OTEL / "genai_current.json").read_text())
    spans_by_trace: dict[str, list] = {}
    from whenpro_core.formats.base import LoadContext
    from whenpro_core.formats.otlp import spans_of

    for sp in spans_of(doc, LoadContext(path=tmp_path)):
        spans_by_trace.setdefault(sp.trace_id, []).append(sp)
    first, second = list(spans_by_trace)

    def as_trace(spans, new_id):
        return [dataclasses.replace(s, trace_id=new_id, attributes=dict(s.attributes)) for s in spans]

    for n in range(5):  # ten traces; the first one of each pair gets only half its spans
        for tid, spans in spans_by_trace.items():
            half = spans if tid == second else spans[: len(spans) // 2]
            store.ingest(as_trace(half, f"{n:02x}" + tid[2:]))
        store.flush()
        assert store.in_memory_count <= 2
    assert len(list(tmp_path.glob("*.json"))) == 10
    evicted = {
        e.trace_id
        for e in drain(sub, lambda ev: sum(isinstance(e, TraceEvicted) for e in ev) >= 8)
        if isinstance(e, TraceEvicted)
    }
    resumed = f"00{first[2:]}"
    assert resumed in evicted and len(load_native(tmp_path / f"{resumed}.json").steps) < len(spans_by_trace[first])
    store.ingest(as_trace(spans_by_trace[first], resumed))  # the rest of an evicted trace arrives
    store.flush()
    full = load_native(tmp_path / f"{resumed}.json")
    want = load_trace(f"{OTEL / 'genai_current.json'}#{first}")
    assert [s.meta["span_id"] for s in full.steps] == [s.meta["span_id"] for s in want.steps]
    assert [s.content for s in full.steps] == [s.content for s in want.steps]


def test_spans_over_a_traces_cap_are_rejected_as_a_partial_success(tmp_path):
    with OtlpReceiver(LiveStore(tmp_path, max_spans_per_trace=3), "127.0.0.1", 0) as rx:
        status, answer = post(rx.endpoint, (OTEL / "genai_current.json").read_bytes())
        assert status == 200
        partial = json.loads(answer)["partialSuccess"]
        assert int(partial["rejectedSpans"]) > 0 and "limit" in partial["errorMessage"]
        rx.store.flush()
        assert all(len(load_native(p).steps) <= 3 for p in rx.store.folder.glob("*.json"))


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.slow
def test_bounded_load_on_loopback_stores_every_export_with_bounded_memory(tmp_path):
    """20 concurrent exporters x 20 batches (one new trace per batch) through the real
    OTLP exporter; memory cap 16 traces."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    mem = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(mem))
    batches = []
    for _ in range(20):
        mem.clear()
        run_workshop_agent(tp)
        batches.append(list(mem.get_finished_spans()))
    store = LiveStore(tmp_path, max_traces=16, flush_interval=0.05)
    rss_before = _rss_mb()
    peak = {"traces": 0}
    results: list = []
    with OtlpReceiver(store, "127.0.0.1", 0, max_in_flight=64) as rx:

        def exporter_thread(k: int) -> None:
            exp = OTLPSpanExporter(endpoint=rx.endpoint, timeout=TIMEOUT_S)  # a hang guard: retries included
            for spans in batches:  # the same runs, exported by 20 processes = 20 x 20 traces
                results.append(exp.export(_retag(spans, k)).name)
                peak["traces"] = max(peak["traces"], store.in_memory_count)
            exp.shutdown()

        threads = [threading.Thread(target=exporter_thread, args=(k,)) for k in range(20)]
        for t in threads:
            t.start()
        wait_until(lambda: not any(t.is_alive() for t in threads), "the 20 exporters to finish")
    assert results.count("SUCCESS") == 400, set(results)
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 400
    assert all(len(load_native(p).steps) == 5 for p in files[:20])  # + the invoke_agent frame
    assert store.in_memory_count <= 16 and peak["traces"] <= 2 * 16 + 20
    assert _rss_mb() - rss_before < 300  # coarse: traces are on disk, not piling up in memory


def _retag(spans, k: int):
    """Copies of ``spans`` under a trace id unique to exporter ``k``."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext

    out = []
    for s in spans:
        ctx = s.context
        tid = ctx.trace_id ^ (k + 1) << 64
        new_ctx = SpanContext(tid, ctx.span_id, ctx.is_remote, ctx.trace_flags, ctx.trace_state)
        parent = s.parent
        if parent is not None:
            parent = SpanContext(tid, parent.span_id, parent.is_remote, parent.trace_flags, parent.trace_state)
        out.append(
            ReadableSpan(
                name=s.name,
                context=new_ctx,
                parent=parent,
                resource=s.resource,
                attributes=s.attributes,
                events=s.events,
                links=s.links,
                kind=s.kind,
                status=s.status,
                start_time=s.start_time,
                end_time=s.end_time,
                instrumentation_scope=s.instrumentation_scope,
            )
        )
    return out


def test_the_real_exporter_gets_a_clean_refusal_for_an_oversized_batch(tmp_path):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    mem = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(mem))
    with tp.get_tracer("t").start_as_current_span(
        "chat big", attributes={"gen_ai.operation.name": "chat", "blob": "x" * 50_000}
    ):
        pass
    with OtlpReceiver(LiveStore(tmp_path), "127.0.0.1", 0, max_body=16 * 1024) as rx:
        sub = rx.store.subscribe()
        result = OTLPSpanExporter(endpoint=rx.endpoint, timeout=TIMEOUT_S).export(mem.get_finished_spans())
        assert result.name == "FAILURE"
        assert drain(sub, lambda ev: any(isinstance(e, ExportRejected) for e in ev))[0].status == 413
        assert stored(rx) == []


def test_a_bare_word_is_not_taken_for_a_host():
    for text in ("notaport", "http"):
        with pytest.raises(ConfigError, match=r"expected HOST:PORT \(e\.g\. 127\.0\.0\.1:4318\)"):
            parse_address(text)
    assert parse_address("localhost") == ("localhost", 4318)
    assert parse_address("127.0.0.2") == ("127.0.0.2", 4318)


@pytest.mark.parametrize("trace_id", ["../../etc", None])
def test_400_bodies_name_the_json_path_in_one_form(receiver, trace_id):
    span = {"spanId": "00f067aa0ba902b7", **({"traceId": trace_id} if trace_id else {})}
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    got, answer = post(receiver.endpoint, body)
    assert got == 400
    assert "at $.resourceSpans[0].scopeSpans[0].spans[0].traceId" in json.loads(answer)["message"]
