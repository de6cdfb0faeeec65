"""``whenpro attribute --template FILE`` (issue 15, item 1): the all-at-once request in
the user's own words; documented variables; images stay where the transcript places
them; template mistakes are one line naming the file."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, SAMPLES, WHOWHEN
from whenpro_core.attribution.llm_judge import make_judge
from whenpro_core.attribution.run import attribute
from whenpro_core.attribution.template import load_template
from whenpro_core.formats import load_trace

TEMPLATE = """Judge this run of {{ framework }}.
Question: {{ question }}
{% if gold_answer %}Correct answer: {{ gold_answer }}{% endif %}
{{ taxonomy }}
{{ coordinate_hint }}
{{ transcript }}
{{ answer_format }}
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "attribute", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_dry_run_shows_the_template_with_images_in_place(tmp_path: Path) -> None:
    tpl = tmp_path / "t.j2"
    tpl.write_text(TEMPLATE)
    out = _cli(
        str(SAMPLES / "bar_chart" / "trace.json"), "-m", "openai:gpt-4.1", "--template", str(tpl), "--dry-run", "--json"
    )
    assert out.returncode == 0, out.stderr
    (req,) = json.loads(out.stdout)["requests"]
    (msg,) = req["messages"]
    kinds = [p["type"] for p in msg["content"]]
    assert msg["role"] == "user" and "image" in kinds and req["settings"]["structured_output"] is None
    before = "".join(p["text"] for p in msg["content"][: kinds.index("image")] if p["type"] == "text")
    after = "".join(p["text"] for p in msg["content"][kinds.index("image") :] if p["type"] == "text")
    assert before.startswith("Judge this run of") and "Correct answer: Mar" in before  # the task image next
    assert after.lstrip().startswith("<transcript>")
    assert msg["content"][-1]["text"].rstrip().endswith("Reason: (one or two sentences)")
    no_gold = _cli(
        str(SAMPLES / "bar_chart" / "trace.json"),
        "-m",
        "openai:gpt-4.1",
        "--template",
        str(tpl),
        "--no-gold",
        "--dry-run",
    )
    assert no_gold.returncode == 0 and "Correct answer" not in no_gold.stdout


def test_template_mistakes_are_one_line(tmp_path: Path) -> None:
    for text, words in (("{{ questoin }}", "'questoin' is undefined"), ("{% if %}", "syntax error at line 1")):
        tpl = tmp_path / "bad.j2"
        tpl.write_text(text)
        out = _cli(
            str(SAMPLES / "team_text" / "trace.json"), "-m", "openai:gpt-4.1", "--template", str(tpl), "--dry-run"
        )
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and words in out.stderr, out.stderr
        assert str(tpl) in out.stderr
    (tmp_path / "good.j2").write_text(TEMPLATE)
    out = _cli(
        str(SAMPLES / "team_text" / "trace.json"),
        "-m",
        "openai:gpt-4.1",
        "-p",
        "binary-search",
        "--template",
        str(tmp_path / "good.j2"),
        "--dry-run",
    )
    assert out.returncode == 2 and "all-at-once" in out.stderr


def test_the_template_is_what_the_judge_receives(tmp_path: Path, llm_server: Any, llm_settings: Any) -> None:
    tpl = tmp_path / "t.j2"
    tpl.write_text(TEMPLATE)
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    llm_server.respond_with(
        lambda body: '```json\n{"agent_name": "solver", "step_number": 3, "error_mode": "R.3", "reason": "sum"}\n```'
    )

    async def run() -> Any:
        judge = make_judge("openai:gpt-4.1", settings=llm_settings(), use_cache=False)
        try:
            return await attribute(trace, "all-at-once", judge=judge, template=load_template(tpl))
        finally:
            await judge.aclose()

    verdict = asyncio.run(run())
    (sent,) = llm_server.answered
    assert [m["role"] for m in sent.body["messages"]] == ["user"] and "response_format" not in sent.body
    content = sent.body["messages"][0]["content"]
    first = content if isinstance(content, str) else content[0]["text"]
    assert first.startswith("Judge this run of")
    assert (verdict.agent, verdict.step, verdict.mode) == ("solver", "3", "R.3")


RUNAWAY = {
    "division": ("Judge.\n{{ 1/0 }}\n", "line 2", "division by zero"),
    "huge range": ("Judge.\n{% for i in range(100000000) %}{% endfor %}\n", "line 2", "range"),
    "self-calling macro": ("{% macro m() %}{{ m() }}{% endmacro %}\n{{ m() }}\n", "line 1", "recursion"),
    "string multiplication": ('Judge.\n{{ "x" * 1000000000 }}\n', "line 2", "characters"),
    "nested loops": (
        "Judge.\n{% for a in range(99999) %}{% for b in range(99999) %}{% endfor %}{% endfor %}\n",
        "line 2",
        "steps",
    ),
    "output size": ("Judge.\n{% for i in range(99999) %}{{ transcript }}{% endfor %}\n", "line 2", "characters"),
}


@pytest.mark.parametrize("name", sorted(RUNAWAY))
def test_a_runaway_or_failing_template_is_one_line_exit_2(tmp_path: Path, name: str) -> None:
    """A template that raises, recurses, loops for ever or grows without bound stops within
    the limits and is one line naming the template and its line, exit 2 (never a traceback,
    a hang or gigabytes of memory)."""
    text, line, words = RUNAWAY[name]
    tpl = tmp_path / "t.j2"
    tpl.write_text(text)
    out = _cli(str(SAMPLES / "team_text" / "trace.json"), "-m", "openai:gpt-4.1", "--template", str(tpl), "--dry-run")
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert str(tpl) in out.stderr and line in out.stderr and words in out.stderr.lower(), out.stderr


def test_a_failing_template_on_a_real_who_and_when_trace(tmp_path: Path) -> None:
    trace = WHOWHEN / "Algorithm-Generated" / "1.json"
    if not trace.exists():
        pytest.skip(f"real Who&When trace not found at {trace}")
    tpl = tmp_path / "t.j2"
    tpl.write_text("{{ 1/0 }}\n")
    out = _cli(str(trace), "--model", "openai:gpt-4.1", "--template", str(tpl), "--dry-run")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr[-2000:]
    assert str(tpl) in out.stderr and "line 1" in out.stderr
