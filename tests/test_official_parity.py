"""Issue 29, "Done when": a bench of scripted answers (many answer styles, right and wrong
values) through the local LLM test server, read back by ``report --rules official``,
gives the numbers the official code gives for the same answers:

* Who&When Pro rows (the 64 release rows, the five per-file showcase samples, and three
  made-up image_gui rows: coact, openai_cua, agentoccam): the official harness's own
  ``run.score_record`` (its parser and scorer, called directly) and ``leaderboard``
  (``cell_metrics`` per modality, ``composite``) on the same answers, cell by cell;
* Who&When files (both subsets): the original ``evaluate.py`` rules, written out here from
  that script (first ``Agent Name:\\s*([\\w_]+)`` and ``Step Number:\\s*(\\d+)``, both or no
  prediction, the ground truth a substring of the prediction, over every file).

The official harness is found beside the real traces (skipped with a reason when absent).
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.fixtures import TEST_KEY
from tests.support.llm_server import LLMServer
from whenpro_core.attribution.dry_run import preview
from whenpro_core.attribution.protocols import preset_protocol
from whenpro_core.bench.official import official_report
from whenpro_core.bench.records import read_records
from whenpro_core.bench.substring_metric import substring_rows
from whenpro_core.cli import app
from whenpro_core.config import load_settings
from whenpro_core.formats import load_trace

SETTINGS = load_settings(model="openai:gpt-4.1")
TEMPLATES = [
    "Agent Name: {agent}\nStep Number: {step}\nError Mode: {mode}\nReason: the value was wrong.",
    "**Agent Name:** {agent}\n**Step Number:** {step}\n**Error Mode:** {mode}\n**Reason:** wrong.",
    '```json\n{{"agent_name": "{agent}", "step_number": "{step}", "error_mode": "{mode}"}}\n```',
    "- Agent Name: {agent}\n- Step Number: {step}\n- Error Mode: {mode}\n- Reason: wrong.",
    "Agent Name: {agent}\nStep Number: Step {step}\nError Mode: {lower}\nReason: wrong.",
    "Agent Name: {agent}\nStep Number: 0{step}\nError Mode: unclear\nReason: probably {mode}.",
    'Agent Name: "{agent}", surely\nStep Number: {step}\nError Mode: {mode}\nReason: wrong.',
    "Agent Name: {agent}\nStep Number: {step}\nError Mode: {mode}\nReason: wrong.\nStep Number: 99 as well",
    "Agent: {agent}\nStep: {step}\nMode: {mode}\nReason: wrong.",
    "Draft:\nAgent Name: x\nStep Number: 98\nError Mode: R.1\nReason: a guess.\n\nFinal:\n"
    "Agent Name: {agent}\nStep Number: {step}\nError Mode: {mode}\nReason: wrong.",
]
#: The agent label the official renderers give every step of these frameworks.
FIXED = {"smolagents": "agent", "eva": "agent", "openai_cua": "computer_use_agent", "agentoccam": "web_agent"}


def answer_for(n: int, framework: str, gt_agent: str | None, gt_step: str, gt_mode: str) -> str:
    """The n-th row's scripted answer: a template, and right or wrong values by n."""
    agent = FIXED.get(framework) or gt_agent or "agent"
    if n % 4 == 3:
        agent = "agent" if framework in ("coact", "macnet", "magentic-one") else "nobody"
    step = gt_step if n % 5 != 4 else "77"
    mode = gt_mode if n % 3 != 2 else "R.1"
    return TEMPLATES[n % len(TEMPLATES)].format(agent=agent, step=step, mode=mode, lower=mode.lower())


def user_text(body: dict[str, Any]) -> str:
    """The text of a chat request's (last) user message, whether sent as a string or parts."""
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def _gui_doc(n: int, framework: str, agent: str) -> dict[str, Any]:
    traj = [{"kind": "user", "content": "Open the settings"}] + [
        {"kind": "action", "step_number": i, "agent": agent, "reasoning": f"r{i}", "action": f"click({i}, 4)"}
        for i in (1, 2, 3)
    ]
    return {
        "id": f"gui_{n}",
        "framework": framework,
        "benchmark": "osworld",
        "modality": "image_gui",
        "task": {"query": f"Open the settings ({framework})"},
        "trajectory": traj,
        "ground_truth": {"agent": agent, "step": 2, "mode": "A.1"},
    }


def pro_dataset(real_traces: Path, root: Path) -> list[tuple[str, dict[str, Any], str]]:
    """The Who&When Pro rows under ``root`` (one dataset: taxonomy, the release JSONL, the
    per-file samples and their images, three made-up GUI rows) as (trace ref, release
    document as the official harness reads it, modality)."""
    run = importlib.import_module("whowhen_eval.run")
    (root / "data" / "traces").mkdir(parents=True)
    (root / "data" / "gui").mkdir()
    shutil.copy(real_traces / "who-when-pro-jsonl" / "taxonomy.yaml", root / "taxonomy.yaml")
    shutil.copy(real_traces / "who-when-pro-jsonl" / "data" / "text.jsonl", root / "data" / "text.jsonl")
    shutil.copytree(real_traces / "who-when-pro-samples" / "assets", root / "assets")
    rows = []
    for n, line in enumerate((root / "data" / "text.jsonl").read_text().splitlines(), 1):
        rows.append(
            (f"{root / 'data' / 'text.jsonl'}#{n}", run.release_from_row(json.loads(line), "text", root), "text")
        )
    for path in sorted((real_traces / "who-when-pro-samples" / "data" / "traces").glob("*.json")):
        shutil.copy(path, root / "data" / "traces" / path.name)
        doc = json.loads(path.read_text())
        rows.append((str(root / "data" / "traces" / path.name), doc, doc["modality"]))
    for n, (fw, agent) in enumerate([("coact", "coder"), ("openai_cua", "operator"), ("agentoccam", "browser")]):
        doc = _gui_doc(n, fw, agent)
        path = root / "data" / "gui" / f"{doc['id']}.json"
        path.write_text(json.dumps(doc))
        rows.append((str(path), doc, "image_gui"))
    return rows


def official_numbers(rows: list[tuple[dict[str, Any], str, str]], root: Path) -> dict[str, dict[str, Any]]:
    """The official leaderboard cells and composite for (release, modality, answer) rows."""
    run = importlib.import_module("whowhen_eval.run")
    prompts = importlib.import_module("whowhen_eval.prompts")
    leaderboard = importlib.import_module("whowhen_eval.leaderboard")
    taxonomy = prompts.load_taxonomy(root)
    by_cell: dict[str, list[dict[str, Any]]] = {}
    for release, modality, answer in rows:
        scored = run.score_record(answer, release, release["framework"], taxonomy)
        sc, pr = scored["score"], scored["prediction"]
        by_cell.setdefault(modality, []).append(
            {
                "fw": release["framework"],
                "modality": modality,
                "a_correct": bool(sc["agent"]),
                "s_correct": bool(sc["step"]),
                "m_correct": bool(sc["mode"]),
                "gt_mode": str(release["ground_truth"].get("mode") or ""),
                "pr_mode": str(pr.get("error_mode") or ""),
            }
        )
    cells = {cell: leaderboard.cell_metrics(rs) for cell, rs in by_cell.items()}
    return {**cells, "composite": leaderboard.composite(cells)}


def _bench(dataset: str, preset: str, out: Path, server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    result = CliRunner().invoke(
        app,
        ["bench", dataset, "--preset", preset, "-m", "openai:gpt-4.1", "--out", str(out), "--no-report", "--no-cache"],
    )
    assert result.exit_code == 0, result.output
    return read_records(out)[0]


def test_report_rules_official_equals_the_official_leaderboard_code(
    real_traces: Path, official_harness: Path, llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "pro"
    rows = pro_dataset(real_traces, root)
    protocol = preset_protocol("whowhen-pro", None)
    answers: dict[str, str] = {}
    official_rows = []
    for n, (ref, release, modality) in enumerate(rows):
        trace = load_trace(ref)
        gt = trace.ground_truth
        assert gt is not None and gt.mode
        answer = answer_for(n, release["framework"], gt.agent, str(gt.step), gt.mode)
        (req,) = preview(trace, protocol, "openai:gpt-4.1", SETTINGS, with_gold=False)["requests"]
        answers["".join(p["text"] for p in req["messages"][0]["content"] if p["type"] == "text")] = answer
        official_rows.append((release, modality, answer))
    llm_server.respond_with(lambda body: answers[user_text(body)])
    records = _bench(str(root), "whowhen-pro", tmp_path / "r.jsonl", llm_server, monkeypatch)
    assert len(records) == len(rows) and not any(r.error for r in records)
    (group,) = official_report(records)
    expected = official_numbers(official_rows, root)
    assert set(group.cells) == {"text", "image", "image_gui", "video"}
    for cell in ("text", "image", "image_gui", "video"):
        assert group.cells[cell] == pytest.approx(expected[cell]), cell
    assert group.composite == pytest.approx(expected["composite"])
    assert 0 < expected["composite"]["All"] < 1  # the answers are neither all right nor all wrong


# ---------------------------------------------------------------- Who&When


_ORIGINAL_AGENT = re.compile(r"Agent Name:\s*([\w_]+)", re.IGNORECASE)
_ORIGINAL_STEP = re.compile(r"Step Number:\s*(\d+)", re.IGNORECASE)


def original_accuracy(answers: list[tuple[str, str, str]]) -> tuple[float, float]:
    """evaluate.py on (answer, mistake_agent, mistake_step) per file."""
    agent = step = 0
    for text, gold_agent, gold_step in answers:
        a, s = _ORIGINAL_AGENT.search(text), _ORIGINAL_STEP.search(text)
        if a and s:
            agent += gold_agent in a.group(1)
            step += gold_step in s.group(1)
    return agent / len(answers), step / len(answers)


def test_report_rules_official_equals_the_original_script_on_whowhen(
    whowhen: Path, llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected: dict[str, list[tuple[str, str, str]]] = {}
    answers: dict[tuple[str, str], str] = {}  # (question, the last history line) -> answer
    for subset in ("Hand-Crafted", "Algorithm-Generated"):
        (tmp_path / "ww" / subset).mkdir(parents=True)
        for n, path in enumerate(sorted((whowhen / subset).glob("*.json"))[:12]):
            doc = json.loads(path.read_text())
            shutil.copy(path, tmp_path / "ww" / subset / path.name)
            key = "role" if subset == "Hand-Crafted" else "name"
            speaker = str(doc["history"][int(doc["mistake_step"])].get(key, "Unknown Agent"))
            agent = speaker if n % 3 else doc["mistake_agent"]
            step = str(doc["mistake_step"]) if n % 4 != 3 else "1" + str(doc["mistake_step"])
            answer = answer_for(n, "ag2", agent, step, "R.2")
            last = doc["history"][-1]
            answers[(doc["question"], f"{last.get(key, 'Unknown Agent')}: {last.get('content', '')}"[:300])] = answer
            expected.setdefault(subset, []).append((answer, str(doc["mistake_agent"]), str(doc["mistake_step"])))

    def respond(body: dict[str, Any]) -> str:
        text = user_text(body)
        return next(a for (q, line), a in answers.items() if f"The problem is: {q}\n" in text and line in text)

    llm_server.respond_with(respond)
    records = _bench(str(tmp_path / "ww"), "whowhen", tmp_path / "w.jsonl", llm_server, monkeypatch)
    assert len(records) == 24
    rows = {r.subset: r for r in substring_rows(records, whowhen_only=True)}
    for subset, cases in expected.items():
        agent, step = original_accuracy(cases)
        assert (rows[subset].agent, rows[subset].step) == pytest.approx((agent, step)), subset
    assert official_report(records) == []  # Who&When records are not in the Pro leaderboard
