"""Issue 13 item 5: slow and numerous clients of the OTLP receiver. Slow bodies hold no
export slot and are cut at a whole-request deadline (a byte now and then does not keep a
request alive); too many connections, in all or from one client, and too many exports at
once are answered 503 with ``Retry-After`` after their body is read, never a TCP reset.
Deadlines are made small here; nothing waits for time to pass: each check waits for
the server's answer, with a bound."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

from tests.support.otel_agent import run_workshop_agent
from tests.support.waiting import TIMEOUT_S, wait_until
from whenpro_core.live.events import ExportRejected
from whenpro_core.live.otlp_server import OtlpReceiver
from whenpro_core.live.store import LiveStore


def slow_request(port: int, declared: int = 1000) -> socket.socket:
    """A connection that sent its headers and one byte of a ``declared``-byte body."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
    sock.sendall(
        f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {declared}\r\n\r\n{{".encode()
    )
    return sock


def answer_of(sock: socket.socket) -> bytes:
    """What the server sends before it closes (b"" for a bare close or a reset); raises
    TimeoutError when it neither answers nor closes within the socket's timeout."""
    out = b""
    try:
        while chunk := sock.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    return out


def sdk_export(endpoint: str) -> str:
    """One run of the workshop agent exported by the real OTLP exporter; its result name."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    mem = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(mem))
    run_workshop_agent(tp)
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=TIMEOUT_S)
    try:
        return exporter.export(mem.get_finished_spans()).name
    finally:
        exporter.shutdown()


def test_forty_slow_bodies_do_not_keep_a_real_export_out_and_are_cut_at_the_deadline(tmp_path):
    # the deadline also bounds the real export's own request: 10 s, so that a loaded
    # machine (load 8 on 2 cores) still delivers it in time
    with OtlpReceiver(LiveStore(tmp_path), "127.0.0.1", 0, max_in_flight=8, request_timeout=10.0) as rx:
        slow = [slow_request(rx.port) for _ in range(40)]
        try:
            assert sdk_export(rx.endpoint) == "SUCCESS"  # while the 40 are still sending
            answers = [answer_of(s) for s in slow]  # each ends: the deadline, not the client
        finally:
            for s in slow:
                s.close()
        rx.store.flush()
        assert len(list(tmp_path.glob("*.json"))) == 1
    assert all(a == b"" or a.startswith(b"HTTP/1.1 408 ") for a in answers)
    assert rx.stats["exports"] == 1


def trickled_answer(sock: socket.socket, byte: bytes) -> bytes:
    """Send ``byte`` on ``sock`` every 20 ms until the server answers or closes; the
    answer (:func:`answer_of`). Closes ``sock``."""
    stop = threading.Event()

    def trickle() -> None:
        for _ in range(5000):  # bounded: 100 s at most
            if stop.wait(0.02):
                return
            try:
                sock.sendall(byte)
            except OSError:
                return

    feeder = threading.Thread(target=trickle, daemon=True)
    feeder.start()
    try:
        return answer_of(sock)
    finally:
        stop.set()
        feeder.join(10)
        sock.close()


def first_rejection(sub) -> ExportRejected:
    """The first ExportRejected event ``sub`` receives (waited for, with a bound)."""
    events: list = []

    def rejected() -> list:
        if isinstance(ev := sub.get(0.05), ExportRejected):
            events.append(ev)
        return events

    wait_until(rejected, "the cut request to be announced")
    return events[0]


def test_a_trickling_client_is_cut_at_the_whole_request_deadline(tmp_path):
    """A byte every 20 ms keeps a per-read timeout happy for ever; the deadline for the
    whole request ends it (408)."""
    with OtlpReceiver(LiveStore(tmp_path), "127.0.0.1", 0, socket_timeout=60, request_timeout=0.5) as rx:
        sub = rx.store.subscribe()
        answer = trickled_answer(slow_request(rx.port, declared=100_000), b" ")
        assert answer == b"" or answer.startswith(b"HTTP/1.1 408 ")
        event = first_rejection(sub)
        assert event.status == 408 and "within 0.5 s" in event.reason
        assert list(tmp_path.glob("*.json")) == []


def test_headers_trickled_past_the_deadline_get_408_not_415(tmp_path):
    """Issue 33, item 8: headers sent a byte at a time past the whole-request deadline
    were answered as a request without a Content-Type (415); the request was late (408)."""
    with OtlpReceiver(LiveStore(tmp_path), "127.0.0.1", 0, socket_timeout=60, request_timeout=0.5) as rx:
        sub = rx.store.subscribe()
        sock = socket.create_connection(("127.0.0.1", rx.port), timeout=TIMEOUT_S)
        sock.sendall(f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1:{rx.port}\r\nX-Slow: ".encode())
        answer = trickled_answer(sock, b"a")
        assert answer == b"" or answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        event = first_rejection(sub)
        assert event.status == 408 and "within 0.5 s" in event.reason, event


async def _post_small(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = b'{"resourceSpans": []}'
    writer.write(
        b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), TIMEOUT_S)
    writer.close()
    return answer


async def _post_many(port: int, n: int) -> list:
    return await asyncio.gather(*(_post_small(port) for _ in range(n)), return_exceptions=True)


@pytest.mark.slow
def test_a_thousand_concurrent_posts_get_200_or_503_with_retry_after_never_a_reset(tmp_path):
    with OtlpReceiver(LiveStore(tmp_path), "127.0.0.1", 0, max_in_flight=2, max_connections=50) as rx:
        answers = asyncio.run(_post_many(rx.port, 1000))
    errors = [a for a in answers if isinstance(a, BaseException)]
    assert not errors, f"{len(errors)} failed, e.g. {errors[0]!r}"
    statuses = [a.split(b" ", 2)[1] for a in answers]
    assert set(statuses) <= {b"200", b"503"}
    assert all(b"\r\nRetry-After: 1\r\n" in a for a in answers if a.split(b" ", 2)[1] == b"503")
    assert statuses.count(b"200") >= 1


def test_one_client_over_its_connection_limit_gets_503_with_retry_after(tmp_path):
    with OtlpReceiver(LiveStore(tmp_path), "127.0.0.1", 0, max_per_client=3, request_timeout=30) as rx:
        held = [slow_request(rx.port) for _ in range(3)]
        try:
            wait_until(lambda: rx.admission.open_from("127.0.0.1") == 3, "the three held connections to be admitted")
            fourth = slow_request(rx.port, declared=1)  # a complete one-byte body
            answer = answer_of(fourth)
            fourth.close()
        finally:
            for s in held:
                s.close()
        assert answer.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: " in answer
        assert b"too many connections from 127.0.0.1" in answer
