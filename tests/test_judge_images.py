"""Images for ``openai-compatible:`` judges (issue 15, item 5): sent when the model is
listed in ``vision_models`` in config.toml, or with ``--images on``; never with ``--images
off``; checked on the requests the real openai SDK sends to the local test server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SAMPLES
from tests.support.fixtures import TEST_KEY
from tests.support.llm_server import LLMServer
from tests.support.llm_wire import segments

MODEL = "openai-compatible:qwen2.5-vl-7b"
ANSWER = "Agent Name: agent\nStep Number: 1\nError Mode: P.1\nReason: misread the bar."


def _attribute(server: LLMServer, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WHENPRO_COMPATIBLE_BASE_URL": server.openai_base_url, "WHENPRO_COMPATIBLE_API_KEY": TEST_KEY}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "attribute",
            str(SAMPLES / "bar_chart" / "trace.json"),
            "--model",
            MODEL,
            "--no-save",
            "--no-cache",
            "--json",
            *extra,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def _images_sent(server: LLMServer) -> int:
    (request,) = server.answered
    return sum(n for _, _, n in segments(request.body))


@pytest.mark.parametrize(
    "config, flags, expected",
    [
        ("", [], False),  # a local model reads text only by default
        ('vision_models = ["qwen2.5-vl-7b"]\n', [], True),  # configured as vision-capable
        ('vision_models = ["openai-compatible:qwen2.5-vl-7b"]\n', [], True),
        ("", ["--images", "on"], True),  # by flag
        ('vision_models = ["qwen2.5-vl-7b"]\n', ["--images", "off"], False),
    ],
)
def test_openai_compatible_judges_get_images_when_configured(
    llm_server: LLMServer, config: str, flags: list[str], expected: bool
) -> None:
    if config:
        conf = Path(os.environ["WHENPRO_CONFIG_DIR"]) / "config.toml"
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text(config)
    llm_server.structured = False
    llm_server.respond_with(lambda body: ANSWER)
    out = _attribute(llm_server, *flags)
    assert out.returncode == 0, out.stderr
    assert (_images_sent(llm_server) > 0) is expected


def test_models_says_whether_the_judge_reads_images(tmp_path: Path) -> None:
    conf = Path(os.environ["WHENPRO_CONFIG_DIR"]) / "config.toml"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text('vision_models = ["qwen2.5-vl-7b"]\nconcurrency = 6\n')
    env = {**os.environ, "WHENPRO_COMPATIBLE_BASE_URL": "http://127.0.0.1:9/v1"}
    shown = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "models", "--model", MODEL],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert "images sent" in shown.stdout and "concurrency 6 calls in flight" in shown.stdout, shown.stdout
    other = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "models", "--model", "openai-compatible:llama3"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert "text only" in other.stdout, other.stdout
