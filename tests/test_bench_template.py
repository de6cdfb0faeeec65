"""``whenpro bench --template FILE`` (issue 15, item 1): the all-at-once items of a bench
run worded by the user's Jinja2 template, through the real openai SDK against the local LLM
test server. The template's hash is part of the setting: its resume key, its record and
the report's label, so a run with another template runs again instead of resuming (its
report shows that run's template; ``whenpro report`` on the results compares both)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from bench_data import write_dataset
from conftest import REPO
from tests.support.fixtures import TEST_KEY
from tests.support.llm_server import LLMServer
from tests.support.llm_wire import prompt_text
from whenpro_core.attribution.template import template_sha
from whenpro_core.bench.records import read_records
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.cli.report import report_command

MODEL = "openai:gpt-4.1"
ANSWER = '```json\n{"agent_name": "solver", "step_number": "2", "error_mode": "R.3", "reason": "sum"}\n```'


@pytest.fixture
def served(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    """The environment a user sets to point whenpro at the server."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    llm_server.respond_with(lambda body: ANSWER)
    return llm_server


def _template(path: Path, wording: str) -> Path:
    path.write_text(f"{wording}\nQuestion: {{{{ question }}}}\n{{{{ transcript }}}}\n{{{{ answer_format }}}}\n")
    return path


def _bench(data: Path, out: Path, template: Path) -> str:
    shown = io.StringIO()
    bench_command(
        str(data),
        BenchOptions(out=out, models=MODEL, template=str(template), report_dir=out.parent / "report"),
        console=Console(file=shown, width=240),
    )
    return shown.getvalue()


def test_bench_words_all_at_once_with_the_template_and_keeps_templates_apart(served: LLMServer, tmp_path: Path) -> None:
    data = write_dataset(tmp_path)
    out = tmp_path / "results.jsonl"
    first_tpl = _template(tmp_path / "first.j2", "PINEAPPLE-WORDING: find the decisive error.")
    _bench(data, out, first_tpl)
    first_calls = len(served.answered)
    assert first_calls > 0
    assert all("PINEAPPLE-WORDING" in prompt_text(a.body) for a in served.answered)
    assert all([m["role"] for m in a.body["messages"]] == ["user"] for a in served.answered)
    records = read_records(out)[0]
    settings = {r.protocol for r in records}
    assert len(settings) == 1 and next(iter(settings)).startswith("all-at-once@template:")
    assert any(r.prediction is not None and r.prediction.agent == "solver" for r in records)

    _bench(data, out, first_tpl)  # the same template again: resumed, nothing sent
    assert len(served.answered) == first_calls

    second_tpl = _template(tmp_path / "second.j2", "MANGO-WORDING: which step broke the run?")
    shown = _bench(data, out, second_tpl)
    later = served.answered[first_calls:]
    assert len(later) == first_calls  # every item ran again, not resumed from the first template
    assert all("MANGO-WORDING" in prompt_text(a.body) and "PINEAPPLE" not in prompt_text(a.body) for a in later)
    labels = sorted({r.protocol for r in read_records(out)[0]})
    assert len(labels) == 2  # both settings' records are in the results file
    second = f"all-at-once@template:{template_sha(second_tpl)}"
    written = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [g["protocol"] for g in written["groups"]] == [second]  # bench's report: this run's setting
    assert second in (tmp_path / "report" / "report.md").read_text()
    first = next(label for label in labels if label != second)
    assert "Leaderboard" in shown and f"{first} · gold) left out of the report" in written["scope"]
    compared = io.StringIO()
    report_command([out], tmp_path / "both", console=Console(file=compared, width=240))
    assert all(label in compared.getvalue() for label in labels)


def test_template_with_another_protocol_is_refused_in_one_line(tmp_path: Path) -> None:
    data = write_dataset(tmp_path)
    tpl = _template(tmp_path / "t.j2", "Words.")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "bench",
            str(data),
            "--model",
            MODEL,
            "--protocol",
            "binary-search",
            "--template",
            str(tpl),
            "--out",
            str(tmp_path / "r.jsonl"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "--template words the all-at-once request, not binary-search" in proc.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_a_failing_template_is_a_per_item_error_naming_the_template(served: LLMServer, tmp_path: Path) -> None:
    data = write_dataset(tmp_path)
    out = tmp_path / "results.jsonl"
    tpl = tmp_path / "broken.j2"
    tpl.write_text("Question: {{ question }}\n{{ 1/0 }}\n")
    _bench(data, out, tpl)
    records = read_records(out)[0]
    assert records and not served.answered, [r.error for r in records]  # nothing sent, every item recorded
    read = [r for r in records if r.error and str(tpl) in r.error]  # the dataset has one unreadable trace
    assert len(read) == len(records) - 1, [r.error for r in records]
    assert all(r.error_kind == "trace" and "line 2: ZeroDivisionError" in (r.error or "") for r in read)
