"""``whenpro watch --preset NAME`` (issue 15, item 1): a preset applies to the final pass
(``--final-pass``) of the whole followed run. Presets render their dataset's documents;
a followed native/chat/OTLP run is none of those, so the final pass says in one line why
the preset cannot apply (no request is sent), and a preset without the final pass is a
one-line usage error."""

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
    ("preset", "why"),
    [
        ("whowhen-pro", "--preset whowhen-pro needs a Who&When Pro trace"),
        ("whowhen", "--preset whowhen needs a Who&When trace"),
    ],
)
def test_a_preset_final_pass_on_a_followed_run_says_why_it_cannot_apply(
    llm_server: LLMServer, tmp_path: Path, preset: str, why: str
) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(RUN)
    out = _watch(
        str(run),
        "--protocol",
        "heuristic",
        "--model",
        "openai:gpt-4.1",
        "--final-pass",
        "--preset",
        preset,
        "--idle-timeout",
        "0.5",
        server=llm_server,
    )
    assert "Traceback" not in out.stderr + out.stdout
    failed = [line for line in out.stdout.splitlines() if "judge failed:" in line]
    assert len(failed) == 1 and "the final pass cannot apply" in failed[0], out.stdout
    assert why in failed[0] and "(this one is native-lines)" in failed[0], out.stdout
    assert "run ended" in out.stdout
    assert llm_server.answered == []  # nothing was sent in a wording that is not the preset's
    assert out.returncode == 1  # the live heuristic flagged the decisive error (2 + 2 = 5)


def test_a_preset_without_the_final_pass_is_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(RUN)
    out = _watch(str(run), "--model", "openai:gpt-4.1", "--preset", "whowhen-pro", "--idle-timeout", "0.5")
    assert out.returncode == 2 and out.stdout == ""
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("whenpro: error:") and "applies to the final pass" in line and "--final-pass" in line


def test_an_unknown_preset_is_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(RUN)
    out = _watch(str(run), "--final-pass", "--model", "openai:gpt-4.1", "--preset", "nope")
    assert out.returncode == 2
    (line,) = out.stderr.strip().splitlines()
    assert "unknown preset 'nope'" in line
