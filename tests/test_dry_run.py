"""``whenpro attribute TRACE --dry-run --json`` (issue 15, item 2): the exact first
request of each protocol, images as size and hash, no call and no key; checked against
what the real protocol then sends through the real SDKs to the local test server."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from conftest import REPO, SAMPLES
from tests.support.llm_server import LLMServer
from tests.support.llm_wire import segments
from whenpro_core.attribution.dry_run import preview
from whenpro_core.attribution.llm_judge import make_judge
from whenpro_core.attribution.run import attribute
from whenpro_core.formats import load_trace

PROTOCOLS = ["all-at-once", "step-by-step", "binary-search", "hybrid"]


def _dry(trace: str, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # nothing listens there: a call would fail
    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "attribute", trace, "--dry-run", "--json", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_dry_run_needs_no_key_and_describes_images(protocol: str) -> None:
    doc = _dry(str(SAMPLES / "bar_chart" / "trace.json"), "-m", "openai:gpt-4.1", "-p", protocol)
    (req,) = doc["requests"]
    assert (req["provider"], req["model"]) == ("openai", "gpt-4.1")
    assert [m["role"] for m in req["messages"]][:2] == ["system", "user"]
    images = [p for m in req["messages"] for p in m["content"] if p["type"] == "image"]
    assert images and all(set(p) == {"type", "mime", "width", "height", "bytes", "sha256"} for p in images)
    assert all(p["width"] > 0 and p["height"] > 0 and len(p["sha256"]) == 64 for p in images)
    assert req["settings"]["max_tokens"] > 0 and req["settings"]["images"] is True
    assert (req["later"] is None) == (protocol == "all-at-once")


def test_heuristic_dry_run_has_no_requests() -> None:
    assert _dry(str(SAMPLES / "team_text" / "trace.json"))["requests"] == []


def _sent_parts(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """The text (joined) and image hashes of a chat-completions request, in order."""
    out: list[tuple[str, Any]] = []
    for m in body["messages"]:
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        for p in content:
            if p["type"] == "text":
                out.append(("text", p["text"]))
            else:
                data = base64.b64decode(p["image_url"]["url"].split(",", 1)[1])
                out.append(("image", hashlib.sha256(data).hexdigest()))
    return out


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_preview_is_what_the_protocol_then_sends(llm_server: LLMServer, llm_settings: Any, protocol: str) -> None:
    trace = load_trace(SAMPLES / "bar_chart" / "trace.json")
    settings = llm_settings()
    (req,) = preview(trace, protocol, "openai:gpt-4.1", settings)["requests"]
    shown = [
        ("text", p["text"]) if p["type"] == "text" else ("image", p["sha256"])
        for m in req["messages"]
        for p in m["content"]
    ]

    llm_server.respond_with(lambda body: "Agent Name: agent\nStep Number: 1\nError Mode: P.1\nReason: x")

    async def run() -> None:
        judge = make_judge("openai:gpt-4.1", settings=settings, use_cache=False)
        try:
            await attribute(trace, protocol, judge=judge)
        finally:
            await judge.aclose()

    asyncio.run(run())
    first = llm_server.answered[0].body
    assert _sent_parts(first) == shown
    assert sum(n for _, _, n in segments(first)) == sum(1 for kind, _ in shown if kind == "image")
