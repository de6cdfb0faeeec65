"""Issue 13 item 2: what the OTLP receiver acknowledges survives ``kill -9``. A real
receiver process (``whenpro serve --otlp``, and one whose flusher never runs) gets
exports from the real OpenTelemetry SDK exporter, is killed with SIGKILL while exporting,
is started again on the same store, and every span answered 200 is in the trace files.
A big trace is not rewritten whole on every flush."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from conftest import REPO
from tests.support.otel_agent import run_workshop_agent
from tests.support.waiting import TIMEOUT_S, Deadline
from whenpro_core.formats.native import load_native
from whenpro_core.formats.otlp import Span
from whenpro_core.live.events import TraceUpdated
from whenpro_core.live.spool import SPOOL_DIR
from whenpro_core.live.store import LiveStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")


def sdk_batches(n: int) -> list:
    """``n`` runs of the workshop agent (6 spans, one trace each) as the SDK's finished
    spans, one export batch a run."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    mem = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(mem))
    out = []
    for _ in range(n):
        mem.clear()
        run_workshop_agent(tp)
        out.append(list(mem.get_finished_spans()))
    return out


def start(cmd: list[str]) -> tuple[subprocess.Popen, str]:
    """Start a receiver process; returns it and its traces URL, read from the line it
    prints on stderr when listening (AssertionError if it exits first, or never says it
    within the tests' hang guard)."""
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    assert proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = Deadline(TIMEOUT_S)
    while not deadline.expired:
        if sel.select(timeout=1.0):
            line = proc.stderr.readline().decode()
            if "http://" in line:
                return proc, "http://" + line.split("http://", 1)[1].split()[0]
            assert line, "the receiver exited before listening"
    proc.kill()
    raise AssertionError("the receiver never said where it listens")


def export_until_killed(endpoint: str, batches: list, enough: int) -> tuple[list[str], threading.Event, Callable]:
    """Export ``batches`` one by one from a thread with the real OTLP exporter; returns the
    span ids answered 200 (growing), an event set once ``enough`` spans were (or the
    exporter stopped), and ``stop()``: shut the exporter down (its retries against the
    killed receiver end at once) and wait for the thread. The exporter's own timeout is
    only a hang guard, so a slow answer on a loaded machine is never taken for a failure."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    acked: list[str] = []
    reached = threading.Event()
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=TIMEOUT_S)

    def run() -> None:
        for batch in batches:
            if exporter.export(batch).name != "SUCCESS":
                break
            acked.extend(format(s.context.span_id, "016x") for s in batch)
            if len(acked) >= enough:
                reached.set()
        reached.set()

    def stop() -> None:
        exporter.shutdown()
        thread.join(TIMEOUT_S)
        assert not thread.is_alive(), "the exporter thread did not stop"

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return acked, reached, stop


def stored_span_ids(folder: Path) -> set[str]:
    """Every span the store's trace files hold: as a step, or as an agent span framing
    steps (``extras["agent_spans"]``)."""
    ids = set()
    for path in folder.glob("*.json"):
        trace = load_native(path)
        ids |= {step.meta["span_id"] for step in trace.steps}
        ids |= {frame["span_id"] for frame in trace.extras.get("agent_spans", [])}
    return ids


SERVE = [sys.executable, "-m", "whenpro_core.cli", "serve", "--otlp", "127.0.0.1:0", "--quiet", "--store"]


@pytest.mark.parametrize("fsync", [False, True])
def test_kill_9_during_ingest_loses_no_acknowledged_span(tmp_path, fsync):
    store = tmp_path / "store"
    batches = sdk_batches(150)
    proc, endpoint = start([*SERVE, str(store), *(["--fsync"] if fsync else [])])
    try:
        acked, reached, stop_exporting = export_until_killed(endpoint, batches, enough=300)
        assert reached.wait(TIMEOUT_S)
        proc.send_signal(signal.SIGKILL)  # while the exporter goes on posting
        assert proc.wait(TIMEOUT_S) == -signal.SIGKILL
    finally:
        proc.kill()
    stop_exporting()
    assert len(acked) >= 300
    # start it again on the same store, then stop it cleanly
    proc, _endpoint = start([*SERVE, str(store)])
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(TIMEOUT_S) in (0, 130)  # stopped like Ctrl-C, after writing what is pending
    missing = set(acked) - stored_span_ids(store)
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged spans lost"
    assert list((store / SPOOL_DIR).glob("*.jsonl")) == []  # compacted once written


def test_acknowledged_spans_are_in_the_spool_before_any_trace_file_is_written(tmp_path):
    """A receiver whose flusher never runs (flush interval of an hour) is killed: no trace
    file exists, yet a store opened on the folder has every acknowledged span."""
    store = tmp_path / "store"
    script = (
        "import sys, threading\n"
        "from whenpro_core.live.otlp_server import OtlpReceiver\n"
        "from whenpro_core.live.store import LiveStore\n"
        f"rx = OtlpReceiver(LiveStore({str(store)!r}, flush_interval=3600), '127.0.0.1', 0).start()\n"
        "print('listening at', rx.endpoint, file=sys.stderr, flush=True)\n"
        "threading.Event().wait()\n"
    )
    proc, endpoint = start([sys.executable, "-c", script])
    try:
        acked, reached, stop_exporting = export_until_killed(endpoint, sdk_batches(20), enough=60)
        assert reached.wait(TIMEOUT_S)
        proc.send_signal(signal.SIGKILL)
        proc.wait(TIMEOUT_S)
    finally:
        proc.kill()
    stop_exporting()
    assert len(acked) >= 60
    assert list(store.glob("*.json")) == []  # nothing was written but the spool
    reopened = LiveStore(store)
    assert reopened.stats["replayed"] >= len(acked) // 6
    reopened.stop()
    assert set(acked) <= stored_span_ids(store)


def _chat_span(trace_id: str, n: int) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=f"{n + 1:016x}",
        parent_span_id=None,
        name="chat gpt-4.1",
        start_ns=n * 1000,
        end_ns=n * 1000 + 500,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.agent.name": "solver",
            "gen_ai.output.messages": f'[{{"role":"assistant","parts":[{{"type":"text","content":"step {n}"}}]}}]',
        },
    )


@pytest.mark.slow
def test_a_30k_span_trace_is_not_rewritten_whole_on_every_flush(tmp_path):
    big, small = "b" * 32, "5" * 32
    store = LiveStore(tmp_path, big_trace=1000, settle_s=3600, max_spans_per_trace=40_000)
    sub = store.subscribe()
    for batch in range(30):  # 30 exports of 1,000 spans, a flush after each
        store.ingest([_chat_span(big, batch * 1000 + k) for k in range(1000)])
        store.ingest([_chat_span(small, batch)])
        store.flush()
    store.stop()
    final = (tmp_path / f"{big}.json").stat().st_size
    assert len(orjson.loads((tmp_path / f"{big}.json").read_bytes())["steps"]) == 30_000
    assert len(load_native(tmp_path / f"{small}.json").steps) == 30
    # rewriting it whole at each of the 30 flushes would write ~15x its final size
    assert store.stats["bytes"] < 3 * final + 30 * (tmp_path / f"{small}.json").stat().st_size
    # the small trace is written at every flush, not kept waiting for the big one
    updates = [e.trace_id for e in iter(lambda: sub.get_nowait(), None) if isinstance(e, TraceUpdated)]
    assert updates.count(small) == 30 and updates.count(big) < 10


def test_one_store_folder_serves_one_receiver_at_a_time(tmp_path):
    from whenpro_core.errors import ConfigError

    first = LiveStore(tmp_path)
    with pytest.raises(ConfigError, match="in use by another whenpro receiver"):
        LiveStore(tmp_path)
    first.stop()
    LiveStore(tmp_path).stop()  # free again once the first one stopped
