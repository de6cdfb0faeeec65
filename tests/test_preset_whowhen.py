"""``--preset whowhen`` (issue 15, item 1): the original Who&When requests
(``Automated_FA/Lib/utils.py``) for every Who&When trace in ../shared/real_traces, checked
against expectations written from the original rules, independently of whenpro's code:

* a system message and one user message; at most 1,024 output tokens; free text;
* the speaker is ``name`` (Algorithm-Generated) or the decorated ``role`` (Hand-Crafted);
* all-at-once: the unnumbered ``SPEAKER: CONTENT`` transcript, the gold answer, the
  ``Agent Name`` / ``Step Number`` / ``Reason for Mistake`` format;
* step-by-step: ``Step I - SPEAKER: CONTENT`` lines up to the step asked about, every
  step asked about (humans and terminals too), yes only for an answer starting ``1. yes``;
* binary search: the unnumbered segment, halves split at start + (end - start) // 2,
  ``upper half`` checked first.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from whenpro_core.attribution.dry_run import preview
from whenpro_core.attribution.llm_judge import make_judge
from whenpro_core.attribution.protocols import preset_protocol
from whenpro_core.attribution.run import attribute
from whenpro_core.cli import app
from whenpro_core.config import load_settings
from whenpro_core.errors import ConfigError
from whenpro_core.formats import load_trace

SETTINGS = load_settings(model="openai:gpt-4.1")


def files(real_traces: Path) -> list[Path]:
    root = real_traces / "who-and-when" / "Who&When"
    found = sorted(root.glob("*/*.json"))
    assert len(found) == 129
    return found


def speakers_and_contents(path: Path) -> list[tuple[str, str]]:
    doc = json.loads(path.read_text())
    key = "role" if "Hand-Crafted" in path.parts else "name"
    return [(str(e.get(key, "Unknown Agent")), str(e.get("content", ""))) for e in doc["history"]]


def request(path: Path, protocol: str, gold: bool = True) -> tuple[str, str, dict]:
    (req,) = preview(
        load_trace(path), preset_protocol("whowhen", protocol), "openai:gpt-4.1", SETTINGS, with_gold=gold
    )["requests"]
    assert [m["role"] for m in req["messages"]] == ["system", "user"]
    assert req["settings"]["max_tokens"] == 1024 and req["settings"]["structured_output"] is None
    system, user = ("".join(p["text"] for p in m["content"]) for m in req["messages"])
    return system, user, req


def test_every_trace_all_three_requests(real_traces: Path) -> None:
    for path in files(real_traces):
        doc = json.loads(path.read_text())
        entries = speakers_and_contents(path)
        gold = f"The answer to the problem is: {doc['ground_truth']}\n"
        _, user, _ = request(path, "all-at-once")
        assert doc["question"] in user and gold in user
        assert "\n\n" + "\n".join(f"{s}: {c}" for s, c in entries) + "\n\n" in user, path
        assert re.search(r"Agent Name: .*\n Step Number: .*\n Reason for Mistake:", user)
        _, first, req = request(path, "step-by-step")
        s0, c0 = entries[0]
        assert f"Step 0 - {s0}: {c0}\n" in first and f"({0}) was by '{s0}'" in first and gold in first
        assert "1. Yes/No.\n2. Reason:" in first and "Step 1 - " not in first
        assert "fresh request" in req["later"]
        _, seg, _ = request(path, "binary-search", gold=False)
        end = len(entries) - 1
        mid = end // 2
        assert "The answer to the problem is" not in seg
        assert f"from step 0 to step {end}:\n\n" + "\n".join(f"{s}: {c}" for s, c in entries) + "\n\n" in seg
        assert f"upper half (from step 0 to step {mid})" in seg
        assert f"lower half (from step {mid + 1} to step {end})" in seg


def test_hand_crafted_roles_keep_their_decoration(real_traces: Path) -> None:
    path = real_traces / "who-and-when" / "Who&When" / "Hand-Crafted" / "1.json"
    _, user, _ = request(path, "all-at-once")
    assert re.search(r"^Orchestrator \((thought|-> \w+)\): ", user, re.MULTILINE)


def _user_text(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def _run(trace: Any, protocol: str, llm_settings: Any) -> Any:
    async def go() -> Any:
        judge = make_judge("openai:gpt-4.1", settings=llm_settings(), use_cache=False)
        try:
            return await attribute(trace, preset_protocol("whowhen", protocol), judge=judge)
        finally:
            await judge.aclose()

    return asyncio.run(go())


def test_step_by_step_asks_every_speaker_and_stops_at_the_first_1_yes(
    real_traces: Path, llm_server: Any, llm_settings: Any
) -> None:
    path = real_traces / "who-and-when" / "Who&When" / "Hand-Crafted" / "1.json"
    entries = speakers_and_contents(path)
    target = next(i for i, (s, _) in enumerate(entries) if s.startswith("Orchestrator ("))

    def answer(body: dict) -> str:
        idx = int(re.search(r"The newest step \((\d+)\)", _user_text(body)).group(1))  # type: ignore[union-attr]
        if idx == target:
            return "1. Yes.\n2. Reason: the plan skips the schedule check"
        return "Yes, on reflection this is fine" if idx == 0 else "1. No.\n2. Reason: fine"

    llm_server.respond_with(answer)
    verdict = _run(load_trace(path), "step-by-step", llm_settings)
    assert len(llm_server.answered) == target + 1  # step 0 (the human) was asked too
    assert (verdict.agent, verdict.step) == (entries[target][0], str(target))
    assert verdict.reason == "the plan skips the schedule check"
    assert verdict.protocol == "whowhen:step-by-step"
    # "Yes, on reflection" does not start with "1. yes": the original reads it as no
    assert target >= 1 and any("step 0: the answer does not start with '1. Yes'" in w for w in verdict.warnings)
    assert all(r.body["max_completion_tokens"] == 1024 and "response_format" not in r.body for r in llm_server.answered)


def test_binary_search_halves_with_the_original_tie_breaking(
    real_traces: Path, llm_server: Any, llm_settings: Any
) -> None:
    path = real_traces / "who-and-when" / "Who&When" / "Algorithm-Generated" / "1.json"
    entries = speakers_and_contents(path)
    target = len(entries) - 2
    ranges = []

    def answer(body: dict) -> str:
        m = re.search(r"from step (\d+) to step (\d+):", _user_text(body))
        start, end = int(m.group(1)), int(m.group(2))  # type: ignore[union-attr]
        ranges.append((start, end))
        mid = start + (end - start) // 2
        if len(ranges) == 1:
            return "Not the upper half: the lower half."  # names both: the original goes up
        return "upper half" if target <= mid else "The LOWER HALF holds it"

    llm_server.respond_with(answer)
    verdict = _run(load_trace(path), "binary-search", llm_settings)
    end0 = len(entries) - 1
    assert ranges[0] == (0, end0) and ranges[1] == (0, end0 // 2)
    assert verdict.step is not None and int(verdict.step) <= end0 // 2
    assert verdict.agent == entries[int(verdict.step)][0] and verdict.mode is None


def test_binary_search_answer_naming_no_half_is_a_seeded_coin(
    real_traces: Path, llm_server: Any, llm_settings: Any
) -> None:
    path = real_traces / "who-and-when" / "Who&When" / "Algorithm-Generated" / "1.json"
    llm_server.respond_with(lambda body: "I cannot tell.")
    first = _run(load_trace(path), "binary-search", llm_settings)
    second = _run(load_trace(path), "binary-search", llm_settings)
    assert first.step == second.step and first.step is not None
    assert any("names neither half; chose the" in w for w in first.warnings)


def test_presets_refuse_what_they_do_not_have(real_traces: Path) -> None:
    with pytest.raises(ConfigError, match="no hybrid protocol"):
        preset_protocol("whowhen", "hybrid")
    with pytest.raises(ConfigError, match="no step-by-step protocol"):
        preset_protocol("whowhen-pro", "step-by-step")
    pro = real_traces / "who-when-pro-jsonl" / "data" / "text.jsonl"
    with pytest.raises(ConfigError, match="needs a Who&When trace"):
        preview(load_trace(f"{pro}#1"), "whowhen:all-at-once", "openai:gpt-4.1", SETTINGS)


def test_cli_dry_run_json(real_traces: Path) -> None:
    path = real_traces / "who-and-when" / "Who&When" / "Algorithm-Generated" / "1.json"
    result = CliRunner().invoke(
        app,
        [
            "attribute",
            str(path),
            "--preset",
            "whowhen",
            "--protocol",
            "binary-search",
            "-m",
            "openai:gpt-4.1",
            "--dry-run",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    (req,) = json.loads(result.output)["requests"]
    assert req["settings"]["max_tokens"] == 1024 and "upper half" in req["later"]


def test_bench_with_the_preset_keeps_the_gold_answer_and_both_protocols(
    real_traces: Path, llm_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.fixtures import TEST_KEY
    from whenpro_core.bench.records import read_records

    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    llm_server.respond_with(
        lambda body: (
            "upper half"
            if "segment" in _user_text(body)
            else "Agent Name: Verification_Expert\n Step Number: 1\n Reason for Mistake: x"
        )
    )
    out = tmp_path / "r.jsonl"
    data = real_traces / "who-and-when" / "Who&When" / "Algorithm-Generated"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            str(data),
            "--preset",
            "whowhen",
            "--protocol",
            "all-at-once,binary-search",
            "-m",
            "openai:gpt-4.1",
            "--limit",
            "2",
            "--out",
            str(out),
            "--no-report",
        ],
    )
    assert result.exit_code == 0, result.output
    records = read_records(out)[0]
    assert {r.protocol for r in records} == {"whowhen:all-at-once", "whowhen:binary-search"}
    assert len(records) == 4 and all(r.with_gold for r in records)
    assert {r.prediction.step for r in records if r.protocol == "whowhen:binary-search" and r.prediction} == {"0"}
    assert all(r.prediction and r.error is None for r in records)
