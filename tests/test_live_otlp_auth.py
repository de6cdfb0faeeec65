"""The OTLP receiver off loopback (issue 33, item 8): ``--allow-remote`` requires a
token (``--token`` or a generated one, printed with the line to give exporters), says
plainly that traffic is unencrypted, and refuses exports without ``Authorization:
Bearer <token>`` with 401. The real OpenTelemetry exporter gets in with the header."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.cli import REPO
from tests.support.waiting import TIMEOUT_S, wait_until
from tests.test_live_otlp import OTEL, post, stored
from whenpro_core.live.otlp_server import OtlpReceiver
from whenpro_core.live.store import LiveStore


def test_a_remote_receiver_has_a_token_and_refuses_exports_without_it(tmp_path: Path) -> None:
    body = (OTEL / "genai_current.json").read_bytes()
    with OtlpReceiver(LiveStore(tmp_path / "s", flush_interval=0.02), "0.0.0.0", 0, allow_remote=True) as rx:
        assert rx.token and len(rx.token) >= 32
        local = f"http://127.0.0.1:{rx.port}/v1/traces"
        assert post(local, body)[0] == 401
        assert post(local, body, headers={"Authorization": "Bearer " + "0" * len(rx.token)})[0] == 401
        assert stored(rx) == []
        assert post(local, body, headers={"Authorization": f"Bearer {rx.token}"})[0] == 200
        assert stored(rx)  # the fixture's traces
        assert "unencrypted" in rx.client_note and rx.token in rx.client_note


def test_a_given_token_is_used_on_loopback_too(tmp_path: Path) -> None:
    body = (OTEL / "genai_current.json").read_bytes()
    with OtlpReceiver(LiveStore(tmp_path / "s"), "127.0.0.1", 0, token="s3cret-token") as rx:
        assert post(rx.endpoint, body)[0] == 401
        assert post(rx.endpoint, body, headers={"Authorization": "Bearer s3cret-token"})[0] == 200
    with OtlpReceiver(LiveStore(tmp_path / "t"), "127.0.0.1", 0) as rx:  # loopback alone: no token
        assert rx.token is None and post(rx.endpoint, body)[0] == 200


def test_serve_allow_remote_prints_the_token_and_says_traffic_is_unencrypted(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "whenpro_core.cli", "serve", "--otlp", "0.0.0.0:0", "--allow-remote"]
            + ["--store", str(tmp_path / "store"), "--quiet"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        text = wait_until(lambda: "Ctrl-C stops" in log.read_text() and log.read_text(), "the receiver's banner")
        assert "unencrypted" in text
        token = re.search(r"exporters must send the token (\w+), e\.g\. ", text)
        assert token and f"Authorization=Bearer%20{token.group(1)}" in text, text
        port = re.search(r"0\.0\.0\.0:(\d+)", text)
        assert token and port, text
        endpoint = f"http://127.0.0.1:{port.group(1)}/v1/traces"
        assert post(endpoint, (OTEL / "genai_current.json").read_bytes())[0] == 401

        # the real exporter with the printed header gets in
        exporter = OTLPSpanExporter(
            endpoint=endpoint, timeout=TIMEOUT_S, headers={"Authorization": f"Bearer {token.group(1)}"}
        )
        provider = TracerProvider(resource=Resource.create({"service.name": "remote-agent"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with provider.get_tracer("t").start_as_current_span("invoke_agent planner"):
            pass
        provider.shutdown()
        wait_until(lambda: list((tmp_path / "store").glob("*.json")), "the exported trace on disk")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=TIMEOUT_S)


def test_a_token_cannot_be_empty(tmp_path: Path) -> None:
    from tests.support.cli import one_line_error, run_whenpro

    out = run_whenpro("serve", "--otlp", "127.0.0.1:0", "--token", "", "--store", str(tmp_path))
    assert one_line_error(out), out.stderr
