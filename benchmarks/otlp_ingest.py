"""OTLP receiver ingest rate: spans per second received over loopback, converted to
steps and written to disk, for protobuf and JSON bodies, against the offline importer
reading the same spans from an OTLP/JSON-lines file (the baseline).

Each run builds export requests with the real OpenTelemetry SDK (the GenAI agent of
``tests/support/otel_agent.py``: 6 spans per trace), then ``--clients`` threads post them
over keep-alive HTTP/1.1 connections (``http.client``) to a receiver on 127.0.0.1, and the
clock stops when every trace is on disk (the store's flush included). The baseline times
``load_traces`` on a file holding the same requests as JSON lines.

Usage: ``python benchmarks/otlp_ingest.py [--traces 400] [--clients 8] [--reps 3]``.

``--memory [SPANS]`` (default 100,000) measures memory instead: a receiver process
(``whenpro serve --otlp``) is sent SPANS spans (chat spans of about 300 bytes, 500 an
export) in two shapes, many traces of 500 spans and two traces holding half each, and
its peak resident memory (``VmHWM``) is printed against the baseline: the file importer,
in its own process, loading the same spans from an OTLP/JSON-lines file.
The machine is shared: numbers move between runs; ratios are in one run (medians of
interleaved repetitions). Every stored version of a trace is written atomically with an
fsync, which bounds the rate of small one-trace requests.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from google.protobuf.json_format import MessageToDict  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tests.support.otel_agent import run_workshop_agent  # noqa: E402
from whenpro_core.formats import load_traces  # noqa: E402
from whenpro_core.live.otlp_server import OtlpReceiver  # noqa: E402
from whenpro_core.live.store import LiveStore  # noqa: E402


def _hex_ids(doc):
    if isinstance(doc, dict):
        return {
            k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else _hex_ids(v))
            for k, v in doc.items()
        }
    if isinstance(doc, list):
        return [_hex_ids(v) for v in doc]
    return doc


def build_requests(n_traces: int) -> tuple[list[bytes], list[bytes], int]:
    """(protobuf bodies, OTLP/JSON bodies, spans in all): one request per trace."""
    mem = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(mem))
    pb, js, spans = [], [], 0
    for _ in range(n_traces):
        mem.clear()
        run_workshop_agent(tp)
        finished = mem.get_finished_spans()
        spans += len(finished)
        req = encode_spans(finished)
        pb.append(req.SerializeToString())
        js.append(json.dumps(_hex_ids(MessageToDict(req))).encode())
    return pb, js, spans


def ingest(bodies: list[bytes], ctype: str, clients: int, folder: Path, n_traces: int) -> float:
    """Seconds to post every body and have every trace on disk."""
    store = LiveStore(folder, max_traces=64, flush_interval=0.05)
    with OtlpReceiver(store, "127.0.0.1", 0, max_in_flight=clients + 4) as rx:
        chunks = [bodies[i::clients] for i in range(clients)]
        errors: list[int] = []

        def client(mine: list[bytes]) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", rx.port, timeout=30)
            for body in mine:
                conn.request("POST", "/v1/traces", body, {"Content-Type": ctype})
                resp = conn.getresponse()
                resp.read()
                if resp.status != 200:
                    errors.append(resp.status)
            conn.close()

        threads = [threading.Thread(target=client, args=(c,)) for c in chunks]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        store.flush()
        took = time.perf_counter() - start
        if errors:
            raise SystemExit(f"{len(errors)} exports failed: {sorted(set(errors))}")
    on_disk = len(list(folder.glob("*.json")))
    if on_disk != n_traces:
        raise SystemExit(f"{on_disk} traces on disk, expected {n_traces}")
    return took


def _chat_body(trace_id: str, first: int, n: int) -> bytes:
    """An OTLP/JSON export of ``n`` chat spans of ``trace_id`` (span ids from ``first``)."""
    spans = [
        {
            "traceId": trace_id,
            "spanId": f"{first + k + 1:016x}",
            "name": "chat gpt-4.1",
            "startTimeUnixNano": str((first + k) * 1000),
            "endTimeUnixNano": str((first + k) * 1000 + 500),
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.agent.name", "value": {"stringValue": "solver"}},
                {
                    "key": "gen_ai.output.messages",
                    "value": {
                        "stringValue": json.dumps(
                            [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": f"step {first + k}: " + "x" * 200}],
                                }
                            ]
                        )
                    },
                },
            ],
        }
        for k in range(n)
    ]
    return json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "bench"}}]},
                    "scopeSpans": [{"spans": spans}],
                }
            ]
        }
    ).encode()


def _receiver_peak(bodies: list[bytes], folder: Path) -> int:
    """Peak resident KiB (``ru_maxrss`` from ``wait4``) of a ``whenpro serve --otlp``
    process sent ``bodies`` over one keep-alive connection, then stopped (SIGINT: it
    writes everything before it exits)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "whenpro_core.cli", "serve", "--otlp", "127.0.0.1:0", "-q", "--store", str(folder)],
        cwd=REPO,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        line = proc.stderr.readline().decode() if proc.stderr else ""
        port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        for body in bodies:
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                raise SystemExit(f"export answered {resp.status}")
        conn.close()
        proc.send_signal(signal.SIGINT)
        _pid, _status, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
        return usage.ru_maxrss
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()


def memory(spans: int) -> None:
    """Print the receiver's peak memory for ``spans`` spans against the importer's."""
    per = 500
    many = [_chat_body(f"{k + 1:032x}", 0, per) for k in range(spans // per)]
    half = spans // 2
    two = [_chat_body(f"{(k * per // half) + 1:032x}", (k * per) % half, per) for k in range(spans // per)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "spans.jsonl").write_bytes(b"\n".join(many) + b"\n")
        code = (
            "import resource, sys; from whenpro_core.formats import load_traces; "
            f"t = load_traces({str(tmp / 'spans.jsonl')!r}); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
        )
        base = int(
            subprocess.run(
                [sys.executable, "-c", code],
                cwd=REPO,
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                check=True,
            ).stdout.split()[-1]
        )
        for name, bodies in (
            (f"receiver, {len(many)} traces of {per} spans", many),
            (f"receiver, 2 traces of {half} spans", two),
        ):
            rows.append((name, _receiver_peak(bodies, tmp / name.split(",")[1].strip().replace(" ", "_"))))
    print(f"{spans} spans, OTLP/JSON, {per} spans an export, peak resident memory (VmHWM / ru_maxrss)")
    print(f"{'process':42s} {'peak MiB':>9s} {'vs baseline':>12s}")
    print(f"{'baseline: importer loading the same spans':42s} {base / 1024:9.0f} {1.0:11.2f}x")
    for name, peak in rows:
        print(f"{name:42s} {peak / 1024:9.0f} {peak / base:11.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=400)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3, help="repetitions; medians are printed")
    ap.add_argument(
        "--memory",
        type=int,
        nargs="?",
        const=100_000,
        default=None,
        metavar="SPANS",
        help="measure the receiver's peak memory for SPANS spans instead (default 100000)",
    )
    args = ap.parse_args()
    if args.memory:
        memory(args.memory)
        return
    pb, js, spans = build_requests(args.traces)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "spans.jsonl").write_bytes(b"\n".join(js) + b"\n")
        bases, pbs, jss = [], [], []
        for rep in range(args.reps):  # interleaved, so load on the shared machine hits all three
            start = time.perf_counter()
            assert len(load_traces(tmp / "spans.jsonl")) == args.traces
            bases.append(time.perf_counter() - start)
            pbs.append(ingest(pb, "application/x-protobuf", args.clients, tmp / f"pb{rep}", args.traces))
            jss.append(ingest(js, "application/json", args.clients, tmp / f"json{rep}", args.traces))
        base, t_pb, t_js = (statistics.median(x) for x in (bases, pbs, jss))
    rate = lambda seconds: spans / seconds  # noqa: E731
    print(f"{args.traces} traces, {spans} spans, {args.clients} clients, loopback, stored to disk")
    print(f"{'path':42s} {'spans/s':>10s} {'vs baseline':>12s}")
    print(f"{'baseline: importer on an OTLP/JSON file':42s} {rate(base):10.0f} {1.0:11.2f}x")
    print(f"{'receiver, protobuf (x-protobuf)':42s} {rate(t_pb):10.0f} {base / t_pb:11.2f}x")
    print(f"{'receiver, JSON':42s} {rate(t_js):10.0f} {base / t_js:11.2f}x")
    print(f"protobuf / JSON: {t_js / t_pb:.2f}x")


if __name__ == "__main__":
    main()
