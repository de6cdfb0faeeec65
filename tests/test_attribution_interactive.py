"""The core side of attribution from the TUI (``whenpro_core.attribution.interactive``):
model choices, request checks, progress mapped onto steps, a metered judge through the
real openai SDK against the local server, cancellation, and verdict files."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES, team_trace
from tests.support.fixtures import TEST_KEY
from tests.support.judge_oracle import oracle_for
from tests.support.waiting import TIMEOUT_S
from whenpro_core.attribution.interactive import (
    model_choices,
    progress_view,
    verdict_score,
    verdict_step_index,
)
from whenpro_core.attribution.judge import Progress
from whenpro_core.attribution.request import AttributionRequest, make_request, run_request
from whenpro_core.attribution.verdicts import load_verdicts, save_verdict, verdicts_path
from whenpro_core.config import load_settings
from whenpro_core.errors import ConfigError
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Attribution


@pytest.fixture
def sample(tmp_path: Path):
    copy = tmp_path / "trace.json"
    shutil.copy(SAMPLES / "team_text" / "trace.json", copy)
    return load_trace(copy)


def test_model_choices_order_and_sources():
    settings = load_settings(
        model="anthropic:claude-haiku-4-5",
        anthropic_api_key=TEST_KEY,
        openai_api_key=TEST_KEY,
        prices={"openai-compatible:qwen3": {"input": 0, "output": 0}, "gpt-4.1": {"input": 2, "output": 8}},
    )
    earlier = [
        Attribution(protocol="heuristic", model="heuristic"),
        Attribution(protocol="all-at-once", model="openai:gpt-4o"),
    ]
    names = [(c.name, c.note) for c in model_choices(settings, earlier)]
    assert names == [
        ("anthropic:claude-haiku-4-5", "configured default"),
        ("openai-compatible:qwen3", "from config prices"),
        ("openai:gpt-4o", "used on this trace"),
        ("openai:gpt-4.1", "OPENAI_API_KEY is set"),
        ("anthropic:claude-sonnet-4-6", "ANTHROPIC_API_KEY is set"),
    ]


def test_model_choices_offline_default_offers_nothing():
    assert model_choices(load_settings()) == []
    assert model_choices(None) == []


def test_make_request_heuristic_needs_nothing(sample):
    req = make_request(sample, "heuristic", "openai:gpt-4.1", True, None)
    assert req == AttributionRequest("heuristic", None, True) and req.label == "heuristic"


def test_make_request_llm_protocols_say_what_is_missing(sample):
    offline = load_settings()
    with pytest.raises(ConfigError, match="protocol step-by-step needs a model"):
        make_request(sample, "sbs", None, True, offline)
    with pytest.raises(ConfigError, match="no API key for openai:gpt-4.1") as err:
        make_request(sample, "binary-search", "openai:gpt-4.1", True, offline)
    assert "OPENAI_API_KEY" in err.value.one_line()
    with pytest.raises(ConfigError, match="has no provider"):
        make_request(sample, "all-at-once", "gpt4", True, offline)
    with pytest.raises(ConfigError, match="unknown protocol"):
        make_request(sample, "guess", None, True, offline)


def test_make_request_with_a_key_and_no_gold(sample):
    settings = load_settings(openai_api_key=TEST_KEY)
    req = make_request(sample, "binary", " openai:gpt-4.1 ", True, settings)
    assert req == AttributionRequest("binary-search", "openai:gpt-4.1", True)
    assert req.label == "binary-search · openai:gpt-4.1"
    no_gold = team_trace()
    no_gold.task.answer = None
    assert make_request(no_gold, "heuristic", None, True, None).with_gold is False


def test_progress_view_maps_events_onto_steps(sample):
    one = progress_view(sample, Progress("step-by-step", 2, ("2",), "asking about step 2"))
    assert one.focus == 2 and one.shaded == {2} and one.call == 2 and "step 2" in one.text
    rng = progress_view(sample, Progress("binary-search", 1, ("1", "2", "4", "5")))
    assert rng.focus is None and rng.shaded == {1, 2, 3, 4, 5}  # contiguous range
    whole = progress_view(sample, Progress("all-at-once", 1, ("0", "1", "2"), "reading the whole transcript"))
    assert whole.focus is None and not whole.shaded and whole.text == "reading the whole transcript"
    assert progress_view(sample, Progress("step-by-step", 1, ("99",))).focus is None


def test_verdict_step_and_score(sample):
    right = Attribution(agent="solver", step="3", mode="R.3", protocol="x", model="x")
    wrong = Attribution(agent="verifier", step="step 4", mode="V.2", protocol="x", model="x")
    assert verdict_step_index(sample, right) == 3 and verdict_step_index(sample, wrong) == 4
    assert verdict_step_index(sample, Attribution(step="42", protocol="x", model="x")) is None
    assert verdict_score(sample, right).joint and not verdict_score(sample, wrong).agent
    sample.ground_truth = None
    assert verdict_score(sample, right) is None


def test_run_request_meters_calls_and_closes_the_judge(llm_server, llm_settings, sample):
    llm_server.respond_with(oracle_for(sample))
    settings = llm_settings()
    judges, events = [], []

    async def go():
        return await run_request(
            sample,
            AttributionRequest("step-by-step", "openai:gpt-4.1"),
            settings=settings,
            progress=events.append,
            on_judge=judges.append,
        )

    verdict = asyncio.run(go())
    (judge,) = judges
    assert (verdict.agent, verdict.step, verdict.mode) == ("solver", "3", "R.3")
    assert judge.closed and judge.asked == verdict.usage.calls == len(llm_server.answered) == 3
    assert judge.usage.input_tokens == verdict.usage.input_tokens > 0
    assert [e.asking for e in events] == [("1",), ("2",), ("3",)]


def test_cancelling_a_run_closes_the_judge(llm_server, llm_settings, sample):
    llm_server.latency_s = 5.0
    llm_server.respond_with(oracle_for(sample))
    settings = llm_settings()
    judges = []

    async def go():
        asked = asyncio.Event()
        task = asyncio.create_task(
            run_request(
                sample,
                AttributionRequest("step-by-step", "openai:gpt-4.1"),
                settings=settings,
                progress=lambda _e: asked.set(),
                on_judge=judges.append,
            )
        )
        await asyncio.wait_for(asked.wait(), TIMEOUT_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert judges[0].closed and judges[0].usage.calls == 0


def test_load_verdicts_reports_unreadable_lines(sample):
    good = Attribution(agent="solver", step="3", mode="R.3", protocol="heuristic", model="heuristic")
    path = save_verdict(sample, good)
    with path.open("ab") as fh:
        fh.write(b'["not", "a", "record"]\n{"torn": \n')
    save_verdict(sample, good.model_copy(update={"step": "4"}))
    problems: list[str] = []
    loaded = load_verdicts(sample, problems)
    assert [v.step for v in loaded] == ["3", "4"]
    assert problems == [f"{path}:2: not a verdict record", f"{path}:3: not a verdict record"]
    assert verdicts_path(sample) == path and load_verdicts(sample) == loaded
