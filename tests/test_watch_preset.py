"""``whenpro watch --preset NAME`` (issue 15, item 1): presets rebuild a published
harness's request from their dataset's own files; a followed run (native, chat, OTLP or
agent-session lines) is never one, so watch refuses any preset in one line, before it
follows anything or sends a request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from tests.support.fixtures import TEST_KEY
from tests.support.llm_server import LLMServer

RUN = (
    '{"agent": "planner", "kind": "plan", "content": "add the numbers"}\n'
    '{"agent": "solver", "kind": "action", "content": "2 + 2 = 5"}\n'
)


def _watch(*args: str, server: LLMServer | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=str(REPO), COLUMNS="400")
    if server is not None:
        env.update(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.openai_base_url)
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "watch", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("preset", "dataset"),
    [("whowhen-pro", "a Who&When Pro dataset file"), ("whowhen", "a Who&When dataset file")],
)
@pytest.mark.parametrize("final_pass", [True, False])
def test_a_preset_on_watch_is_refused_in_one_line_before_anything_is_followed(
    llm_server: LLMServer, tmp_path: Path, preset: str, dataset: str, final_pass: bool
) -> None:
    """No followed run can be a preset's document: one usage line, exit 2, nothing
    followed or sent (it used to follow the whole run, then fail the final pass)."""
    run = tmp_path / "run.jsonl"
    run.write_text(RUN)
    args = [str(run), "--model", "openai:gpt-4.1", "--preset", preset, "--idle-timeout", "0"]
    out = _watch(*args, *(["--final-pass"] if final_pass else []), server=llm_server)
    assert out.returncode == 2 and out.stdout == ""
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"whenpro: error: --preset {preset} cannot apply to watch:"), line
    assert dataset in line and "native/chat/otlp/" in line and f"bench --preset {preset}" in line
    assert llm_server.answered == []


def test_an_unknown_preset_is_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(RUN)
    out = _watch(str(run), "--final-pass", "--model", "openai:gpt-4.1", "--preset", "nope")
    assert out.returncode == 2
    (line,) = out.stderr.strip().splitlines()
    assert "unknown preset 'nope'" in line
