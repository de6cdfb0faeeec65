"""The four LLM protocols, through the real openai/anthropic SDKs, against the local
test server on 127.0.0.1 (scripted answers and faults)."""

from __future__ import annotations

import asyncio
import math

import pytest

from conftest import SAMPLES
from tests.support.judge_oracle import oracle_for
from tests.support.llm_server import Fault
from tests.support.waiting import ANSWER_S
from whenpro_core.attribution.binary_search import max_calls
from whenpro_core.attribution.llm_judge import make_judge
from whenpro_core.attribution.run import attribute
from whenpro_core.attribution.step_by_step import judged_blocks
from whenpro_core.errors import BackendError, ConfigError
from whenpro_core.formats import load_trace
from whenpro_core.trace.score import score_prediction
from whenpro_core.views.transcript import render_transcript

MODELS = ["openai:gpt-4.1", "openai-responses:gpt-4.1", "anthropic:claude-sonnet-4-6"]


def _run(trace, protocol, judge, **kw):
    async def go():
        try:
            return await attribute(trace, protocol, judge=judge, **kw)
        finally:
            await judge.aclose()

    return asyncio.run(go())


@pytest.fixture
def sample():
    return load_trace(SAMPLES / "team_text" / "trace.json")


def _api(model):
    if model.startswith("openai-responses:"):
        return model.replace("openai-responses:", "openai:"), {"api": "responses"}
    return model, {}


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("protocol", ["all-at-once", "step-by-step", "binary-search", "hybrid"])
def test_each_protocol_finds_the_step_the_judge_names(llm_server, llm_settings, sample, model, protocol):
    llm_server.respond_with(oracle_for(sample))
    name, extra = _api(model)
    judge = make_judge(name, settings=llm_settings(name, **extra))
    verdict = _run(sample, protocol, judge)
    assert score_prediction(sample, verdict).joint, verdict
    assert verdict.protocol == protocol and verdict.usage.calls == len(verdict.raw_outputs) > 0
    assert verdict.usage.input_tokens > 0 and not [w for w in verdict.warnings if "missing" in w]


def test_text_answers_when_the_server_has_no_structured_output(llm_server, llm_settings, sample):
    llm_server.structured = False
    llm_server.tools = False
    llm_server.respond_with(oracle_for(sample))
    judge = make_judge("openai:gpt-4.1", settings=llm_settings())
    verdict = _run(sample, "all-at-once", judge)
    assert (verdict.agent, verdict.step, verdict.mode) == ("solver", "3", "R.3")


def test_step_by_step_stops_at_the_first_yes_and_reuses_the_prefix(llm_server, llm_settings, sample):
    llm_server.respond_with(oracle_for(sample))
    judge = make_judge("openai:gpt-4.1", settings=llm_settings())
    verdict = _run(sample, "step-by-step", judge)
    asked = [b.coord for b in judged_blocks(sample, render_transcript(sample))]
    assert verdict.usage.calls == asked.index("3") + 1
    prompts = [r.prompt for r in llm_server.answered]
    assert all(later.startswith(earlier[:-40]) for earlier, later in zip(prompts, prompts[1:], strict=False))
    assert verdict.usage.cached_tokens > 0  # the server's emulated prefix cache served them


def test_binary_search_makes_at_most_log2_plus_one_calls(llm_server, llm_settings, real_traces):
    trace = load_trace(real_traces / "who-and-when/Who&When/Hand-Crafted/11.json")  # 130 steps
    llm_server.respond_with(oracle_for(trace))
    judge = make_judge("anthropic:claude-sonnet-4-6", settings=llm_settings("anthropic:claude-sonnet-4-6"))
    verdict = _run(trace, "binary-search", judge)
    n = len(judged_blocks(trace, render_transcript(trace)))
    assert verdict.usage.calls <= max_calls(n) == math.ceil(math.log2(n)) + 1
    assert verdict.step == trace.ground_truth.step and verdict.agent == trace.ground_truth.agent


def test_unclear_half_is_a_warning_and_a_deterministic_choice(llm_server, llm_settings, sample):
    llm_server.structured = False
    llm_server.tools = False
    llm_server.respond_with(
        lambda body: (
            "Hmm, hard to say."
            if "first half (" in __import__("tests.support.llm_wire", fromlist=["prompt_text"]).prompt_text(body)
            else "Error Mode: R.3\nReason: x"
        )
    )
    judge = make_judge("openai:gpt-4.1", settings=llm_settings())
    verdict = _run(sample, "binary-search", judge)
    first_candidate = judged_blocks(sample, render_transcript(sample))[0].coord
    assert verdict.step == first_candidate
    assert any("unclear half" in w for w in verdict.warnings)


def test_repeat_run_is_served_by_the_cache(llm_server, llm_settings, sample):
    llm_server.respond_with(oracle_for(sample))
    first = _run(sample, "binary-search", make_judge("openai:gpt-4.1", settings=llm_settings()))
    served = len(llm_server.answered)
    again = _run(sample, "binary-search", make_judge("openai:gpt-4.1", settings=llm_settings()))
    assert len(llm_server.answered) == served and again.spent.calls == 0 and again.spent.cost_usd == 0
    # the replayed verdict keeps the usage of the calls behind it (issue 15: honest accounting)
    assert again.usage.model_copy(update={"seconds": 0}) == first.usage.model_copy(update={"seconds": 0})
    assert first.spent.model_copy(update={"seconds": 0}) == first.usage.model_copy(update={"seconds": 0})
    assert (again.step, again.mode) == (first.step, first.mode)
    nocache = _run(sample, "binary-search", make_judge("openai:gpt-4.1", settings=llm_settings(), use_cache=False))
    assert len(llm_server.answered) > served and nocache.spent.calls == nocache.usage.calls > 0


def test_faults_are_retried_and_a_wrong_format_is_a_warning(llm_server, llm_settings, sample):
    llm_server.fail(Fault.http(429, retry_after="0"), Fault.http(500), Fault.wrong_format())
    llm_server.respond_with(oracle_for(sample))
    judge = make_judge("openai:gpt-4.1", settings=llm_settings())
    verdict = _run(sample, "all-at-once", judge)
    assert verdict.warnings  # the wrong-format answer could not be fully read
    assert verdict.usage.calls == 1


def test_a_hang_past_the_timeout_is_retried(llm_server, llm_settings, sample):
    llm_server.fail(Fault.hang(3600.0))  # answers only when the server stops (teardown)
    llm_server.respond_with(oracle_for(sample))
    judge = make_judge("openai:gpt-4.1", settings=llm_settings(timeout_s=ANSWER_S))
    verdict = _run(sample, "all-at-once", judge)
    assert verdict.step == "3"


def test_exhausted_retries_raise_backend_error_without_the_key(llm_server, llm_settings, sample):
    llm_server.fail(*[Fault.http(503)] * 10)
    judge = make_judge("openai:gpt-4.1", settings=llm_settings(max_retries=2))
    with pytest.raises(BackendError) as info:
        _run(sample, "all-at-once", judge)
    from tests.support.fixtures import TEST_KEY

    assert TEST_KEY not in str(info.value)


def test_llm_protocol_without_a_model_is_a_config_error(sample):
    with pytest.raises(ConfigError, match="needs a model"):
        asyncio.run(attribute(sample, "all-at-once"))


def test_progress_reports_each_call(llm_server, llm_settings, sample):
    llm_server.respond_with(oracle_for(sample))
    events = []
    judge = make_judge("openai:gpt-4.1", settings=llm_settings())
    verdict = _run(sample, "step-by-step", judge, progress=events.append)
    assert [e.call for e in events] == list(range(1, verdict.usage.calls + 1))
    assert events[-1].asking == ("3",)


def test_images_reach_a_multimodal_judge(llm_server, llm_settings):
    trace = load_trace(SAMPLES / "bar_chart" / "trace.json")
    llm_server.respond_with(oracle_for(trace))
    judge = make_judge("anthropic:claude-sonnet-4-6", settings=llm_settings("anthropic:claude-sonnet-4-6"))
    verdict = _run(trace, "all-at-once", judge)
    assert verdict.step == "1"
    body = llm_server.answered[-1].body
    assert "image" in str(body["messages"][0]["content"])


def test_cli_attribute_with_a_model_from_the_standard_env_vars(llm_server, sample, tmp_path):
    import json
    import os
    import subprocess
    import sys

    from conftest import REPO
    from tests.support.fixtures import TEST_KEY

    llm_server.respond_with(oracle_for(sample))
    env = {**os.environ, "OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": llm_server.openai_base_url}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "attribute",
            str(SAMPLES / "team_text" / "trace.json"),
            "-p",
            "hybrid",
            "-m",
            "openai:gpt-4.1",
            "--json",
            "--no-save",
            "--labels",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout)
    assert rec["score"]["joint"] and rec["attribution"]["usage"]["calls"] >= 2
    assert TEST_KEY not in out.stdout + out.stderr
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "attribute",
            str(SAMPLES / "team_text" / "trace.json"),
            "-m",
            "anthropic:claude-sonnet-4-6",
        ],
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if "ANTHROPIC" not in k},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "key" in missing.stderr.lower()


def test_a_successful_run_has_nothing_to_attribute():
    from whenpro_core.trace.model import Outcome

    trace = load_trace(SAMPLES / "arith_team" / "arith_team-s1.json")
    assert trace.outcome == Outcome.success
    for protocol in ("heuristic", "all-at-once"):
        verdict = asyncio.run(attribute(trace, protocol))  # no judge needed: nothing to ask
        assert verdict.step is None and verdict.agent is None
        assert any("succeeded" in w for w in verdict.warnings)


def test_cli_attribute_takes_base_url_timeout_and_retries(llm_server, sample):
    import json
    import os
    import subprocess
    import sys

    from conftest import REPO
    from tests.support.fixtures import TEST_KEY

    llm_server.respond_with(oracle_for(sample))
    env = {**os.environ, "OPENAI_API_KEY": TEST_KEY}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "attribute",
            str(SAMPLES / "team_text" / "trace.json"),
            "-m",
            "openai-compatible:qwen3",
            "--base-url",
            llm_server.openai_base_url,
            "--timeout",
            "5",
            "--max-retries",
            "1",
            "--json",
            "--no-save",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["attribution"]["step"] == "3"


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("protocol", ["binary-search", "hybrid"])
def test_every_call_after_the_first_is_served_from_the_prompt_cache(llm_server, llm_settings, sample, model, protocol):
    """Providers put the structured-output schema (or forced tool) in front of the cached
    prefix, and the server emulates that: a protocol whose questions changed schema
    (hybrid: verdict, then step questions; binary search: halves, then the mode) missed
    the cache on the first call after the change. One answer schema for every question:
    each later call reads at least the shared prefix (instructions, task, transcript)."""
    from tests.support.llm_wire import approx_tokens, output_constraint_key

    llm_server.respond_with(oracle_for(sample))
    name, extra = _api(model)
    judge = make_judge(name, settings=llm_settings(name, **extra), use_cache=False)
    verdict = _run(sample, protocol, judge)
    bodies = [r.body for r in llm_server.answered]
    assert verdict.usage.calls == len(bodies) >= 2
    assert len({output_constraint_key(b) for b in bodies}) == 1 and output_constraint_key(bodies[0])
    first = llm_server.answered[0].prompt
    shared = approx_tokens(first[: first.index("</transcript>")])
    assert verdict.usage.cached_tokens >= (len(bodies) - 1) * (shared - 2), (verdict.usage, shared)


@pytest.mark.parametrize("model", MODELS)
def test_a_traces_first_call_reads_the_instructions_cached_by_an_earlier_trace(llm_server, llm_settings, sample, model):
    """The system message (instructions and the whole taxonomy) is the same for every
    trace: long enough (past the providers' 1,024-token minimum cacheable prefix, which the
    server emulates) for a trace's first call to read it from the prompt cache an earlier
    trace's call wrote. With the taxonomy cut to one line per mode it was ~600 tokens and
    each trace's first call was served nothing."""
    from tests.support.llm_wire import approx_tokens

    llm_server.cache_min_tokens = 1024
    other = load_trace(SAMPLES / "arith_team" / "arith_team-s1__R.3__4.json")
    name, extra = _api(model)
    cached = []
    for trace in (sample, other):
        llm_server.respond_with(oracle_for(trace))
        judge = make_judge(name, settings=llm_settings(name, **extra), use_cache=False)
        cached.append(_run(trace, "all-at-once", judge).usage.cached_tokens)
    first, second = (r.prompt for r in llm_server.answered)
    assert first[: first.index("## Task given")] == second[: second.index("## Task given")]
    instructions = approx_tokens(first[: first.index("## Task given")])
    assert instructions >= 1024 + 256, instructions  # clear of the minimum, not by a hair
    assert cached[0] == 0 and cached[1] >= instructions - 8, (cached, instructions)
