"""Issue 29, item 1: under a preset the answer is read by that harness's own parsing rules.

For each answer style below (clean, bold, JSON, short labels, markdown bullets, quotes and
commas in values, a lower-case mode code, mode "unclear" with the code in the reason, a
later stray ``Step Number:`` line, draft-then-final, "Step N", zero-padded, prose, ...):

* the ``whowhen-pro`` preset's verdict, run for real (the openai SDK against the local
  LLM test server, on a Who&When Pro release row), equals what the official parser
  (``whowhen_eval.parse.parse_all_at_once``, called directly) reads, after the official
  scorer's normalisation (``whowhen_eval.score``);
* the ``whowhen`` preset's all-at-once verdict equals the original ``evaluate.py`` regex
  reading (first ``Agent Name:`` word, first ``Step Number:`` digits, both or nothing),
  written out by hand below from that script's rules;
* without a preset, whenpro's lenient parser still reads the answers it always read.
"""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

import pytest

from whenpro_core.attribution.harness_parse import (
    PARSER_WHOWHEN,
    PARSER_WHOWHEN_PRO,
    read_whowhen,
    read_whowhen_pro,
)
from whenpro_core.attribution.llm_judge import make_judge
from whenpro_core.attribution.parse import parse_answer
from whenpro_core.attribution.protocols import preset_protocol
from whenpro_core.attribution.run import attribute
from whenpro_core.formats import load_trace
from whenpro_core.trace.taxonomy import taxonomy_for

R = "Reason: The mean was computed over the wrong column."

#: style -> (answer text, the original Who&When reading (agent, step) or None)
STYLES: dict[str, tuple[str, tuple[str, str] | None]] = {
    "clean": ("Agent Name: agent\nStep Number: 3\nError Mode: R.2\n" + R, ("agent", "3")),
    "bold labels": (
        "**Agent Name:** agent\n**Step Number:** 3\n**Error Mode:** R.3\n**Reason:** wrong sum.",
        None,  # the original regex needs the value right after "Agent Name:" (here '** agent')
    ),
    "bold values": ("Agent Name: **agent**\nStep Number: **4**\nError Mode: **R.2**\n" + R, None),
    "json answer": (
        '```json\n{"agent_name": "agent", "step_number": 3, "error_mode": "R.2", "reason": "bad mean"}\n```',
        None,
    ),
    "json with label keys": ('{"Agent Name": "agent", "Step Number": "3", "Error Mode": "R.3"}', None),
    "short labels": ("Agent: agent\nStep: 3\nMode: R.2\n" + R, None),
    "markdown bullets": ("- Agent Name: agent\n- Step Number: 3\n- Error Mode: R.2\n- " + R, ("agent", "3")),
    "quotes and commas": (
        'Agent Name: "agent", the coder\nStep Number: "5",\nError Mode: R.2\n' + R,
        None,  # '"agent"' starts with a quote, not a word character
    ),
    "lower-case mode code": ("Agent Name: agent\nStep Number: 2\nError Mode: r.3\n" + R, ("agent", "2")),
    "mode unclear, code in reason": (
        "Agent Name: agent\nStep Number: 6\nError Mode: unclear\nReason: most likely R.3, a wrong total.",
        ("agent", "6"),
    ),
    "later stray Step Number line": (
        "Agent Name: agent\nStep Number: 3\nError Mode: R.2\n" + R + "\nStep Number: 7 is where it shows.",
        ("agent", "3"),
    ),
    "draft then final": (
        "Draft:\nAgent Name: agent\nStep Number: 2\nError Mode: R.3\nReason: first look.\n\n"
        "Final answer:\nAgent Name: agent\nStep Number: 4\nError Mode: R.2\n" + R,
        ("agent", "2"),
    ),
    "Step N": ("Agent Name: agent\nStep Number: Step 4\nError Mode: R.2\n" + R, None),
    "zero-padded": ("Agent Name: agent\nStep Number: 03\nError Mode: R.2\n" + R, ("agent", "03")),
    "prose": ("I think the agent went wrong at step 3 with a reasoning error (R.2): the mean is off.", None),
    "placeholder copied": (
        "Agent Name: (the agent ID whose turn first introduces the error)\nStep Number: 3\nError Mode: R.2\n" + R,
        None,
    ),
    "value on the next line": ("Agent Name:\nagent\nStep Number:\n5\nError Mode: R.2\n" + R, ("agent", "5")),
    "decorated speaker": (
        "Agent Name: Orchestrator (thought)\nStep Number: 12\nError Mode: C.1\n" + R,
        ("Orchestrator", "12"),
    ),
    "mid-line label": ("The verdict. Agent Name: agent\nStep Number: 8\nError Mode: A.3\n" + R, ("agent", "8")),
}
assert len(STYLES) >= 14


def official_reading(text: str, codes: list[str]) -> tuple[str, str, str]:
    """What the official parser reads, normalised as the official scorer compares it."""
    parse = importlib.import_module("whowhen_eval.parse")
    score = importlib.import_module("whowhen_eval.score")
    got = parse.parse_all_at_once(text, codes)
    return score._norm_str(got.agent_name), score._norm_step(got.step_coord), score._norm_mode(got.error_mode)


def release_row(real_traces: Path) -> tuple[str, list[str]]:
    folder = real_traces / "who-when-pro-jsonl"
    return f"{folder / 'data' / 'text.jsonl'}#1", [m.code for m in taxonomy_for(folder)]


@pytest.mark.parametrize("style", list(STYLES))
def test_whowhen_pro_reader_equals_the_official_parser(style: str, official_harness: Path) -> None:
    text, _ = STYLES[style]
    codes = ["R.2", "R.3", "C.1", "A.3", "PL.1"]
    score = importlib.import_module("whowhen_eval.score")
    mine = read_whowhen_pro(text, codes)
    said = (score._norm_str(mine.agent), score._norm_step(mine.step), score._norm_mode(mine.mode))
    assert said == official_reading(text, codes)
    parse = importlib.import_module("whowhen_eval.parse")
    theirs = parse.parse_all_at_once(text, codes)
    assert (mine.agent, mine.step, mine.mode, mine.reason) == (
        theirs.agent_name,
        theirs.step_coord,
        theirs.error_mode,
        theirs.reason,
    )


@pytest.mark.parametrize("style", list(STYLES))
def test_whowhen_reader_follows_the_original_regex(style: str) -> None:
    text, expected = STYLES[style]
    got = read_whowhen(text)
    assert (None if got.agent is None else (got.agent, got.step)) == expected


def test_the_original_block_ends_at_the_next_prediction() -> None:
    """evaluate.py cuts the log at 'Prediction for': a later block's fields are not read."""
    assert read_whowhen("Agent Name: coder\nPrediction for 2.json:\nStep Number: 4").agent is None


def _run(trace_ref: str, protocol: str, llm_server: Any, llm_settings: Any, answer: str) -> Any:
    llm_server.reset()
    llm_server.respond_with(lambda body: answer)
    judge = make_judge("openai:gpt-4.1", settings=llm_settings(), use_cache=False)
    return asyncio.run(attribute(load_trace(trace_ref), protocol, judge=judge, with_gold=False))


def test_the_whowhen_pro_preset_verdict_is_the_official_reading(
    real_traces: Path, official_harness: Path, llm_server: Any, llm_settings: Any
) -> None:
    ref, codes = release_row(real_traces)
    score = importlib.import_module("whowhen_eval.score")
    for style, (text, _) in STYLES.items():
        verdict = _run(ref, preset_protocol("whowhen-pro", None), llm_server, llm_settings, text)
        assert verdict.parser == PARSER_WHOWHEN_PRO
        said = (score._norm_str(verdict.agent), score._norm_step(verdict.step_text), score._norm_mode(verdict.mode))
        assert said == official_reading(text, codes), style


def test_the_whowhen_preset_verdict_is_the_original_reading(whowhen: Path, llm_server: Any, llm_settings: Any) -> None:
    ref = str(sorted((whowhen / "Algorithm-Generated").glob("*.json"))[0])
    for style, (text, expected) in STYLES.items():
        verdict = _run(ref, preset_protocol("whowhen", None), llm_server, llm_settings, text)
        assert verdict.parser == PARSER_WHOWHEN
        got = None if verdict.agent is None else (verdict.agent, verdict.step_text)
        assert got == expected, style


def test_without_a_preset_the_lenient_parser_reads_what_it_always_read(real_traces: Path) -> None:
    """JSON, short labels, bold values and 'Step 03' are read by whenpro's own parser."""
    _, codes = release_row(real_traces)
    taxonomy = taxonomy_for(real_traces / "who-when-pro-jsonl")
    for style in ("json answer", "short labels", "bold values", "Step N"):
        parsed = parse_answer(STYLES[style][0], taxonomy)
        assert parsed.agent == "agent" and parsed.step in ("3", "4"), style
    for style in ("json answer", "short labels"):  # the official rules read no agent from these
        assert read_whowhen_pro(STYLES[style][0], codes).agent is None, style
