"""The LLM two-stage error generator through the real openai/anthropic SDKs against the
local test server: both stages asked in order with the step in the prompt and never the
labels; the generated step replaces step t; structured and text answers; unusable
answers are clear errors; a rewrite that gives the construction away is asked again."""

from __future__ import annotations

import pytest

from conftest import REAL_TRACES
from test_replay import NOW, seed_run
from tests.support.inject_model import InjectModel
from tests.support.llm_server import WRONG_FORMAT_TEXT
from whenpro_core.errors import BackendError, ConfigError
from whenpro_core.formats import load_trace
from whenpro_core.injection.executors import BuiltinExecutor
from whenpro_core.injection.generate import InjectionRequest
from whenpro_core.injection.inject import inject
from whenpro_core.injection.llm_generate import LLMGenerator
from whenpro_core.injection.registry import get_generator
from whenpro_core.injection.replay import prefix_matches

PLAN = {
    "flaw": "Adds a 65-minute lunch instead of the 60 minutes the task states.",
    "wrong_result": "the total is 150 minutes and the workshop seems to end at 12:00",
}
REWRITE = {
    "content": "Computing total = sessions + breaks + 65 = 80 + 5 + 65.",
    "tool_calls": [{"name": "calculator", "arguments_json": '{"expression": "80 + 5 + 65"}'}],
}
MODELS = ["openai:gpt-4.1", "openai-responses:gpt-4.1", "anthropic:claude-sonnet-4-6"]


def _settings(llm_settings, model):
    if model.startswith("openai-responses:"):
        return model.replace("openai-responses:", "openai:"), llm_settings(
            model.replace("openai-responses:", "openai:"), api="responses"
        )
    return model, llm_settings(model)


def _labelled_seed():
    """arith_team seed 1 with label-leaking fields that must never reach a prompt."""
    seed = seed_run("arith_team", 1)
    for s in seed.steps:
        s.hidden = {"is_injected": "LEAK-HIDDEN-FIELD"}
    seed.extras["hidden"] = {"note": "LEAK-TRACE-EXTRAS"}
    return seed


@pytest.mark.parametrize("model", MODELS)
def test_two_stages_in_order_and_the_generated_step_replaces_step_t(llm_server, llm_settings, model):
    seed = _labelled_seed()
    oracle = InjectModel(plan=PLAN, rewrites=[REWRITE])
    llm_server.respond_with(oracle)
    name, settings = _settings(llm_settings, model)
    result = inject(seed, 4, "R.3", LLMGenerator(name, settings=settings), BuiltinExecutor(), now=NOW)

    assert oracle.kinds() == ["stage1", "stage2"]
    first, second = (a.prompt for a in oracle.asked)
    for prompt in (first, second):
        assert "Step 4 | Agent: solver" in prompt and "Computing total = sessions + breaks + 60" in prompt
        assert "LEAK-" not in prompt and "is_injected" not in prompt
        assert "11:55" not in prompt  # the gold answer (first seen after t) is never shown
        assert "Computing end" not in prompt and "Approved" not in prompt  # nothing after step t
    assert "Numerical/calculation error" in first and "Arithmetic, unit conversion" in first
    assert PLAN["flaw"] in second and PLAN["wrong_result"] in second

    cf, verdict = result.counterfactual, result.verdict
    step = cf.steps[4]
    assert step.content == REWRITE["content"]
    assert [(c.id, c.name, c.arguments) for c in step.tool_calls] == [
        ("call_4", "calculator", {"expression": "80 + 5 + 65"})
    ]
    assert step.observation == "150" and step.meta["tool_source"] == "live"  # the env ran the new call
    assert prefix_matches(seed, cf.steps, 4)
    assert verdict.decisive and verdict.kept and cf.final_answer == "12:00"
    assert cf.ground_truth.reason.startswith(PLAN["flaw"]) and PLAN["wrong_result"] in cf.ground_truth.reason
    inj = cf.extras["injection"]
    assert inj["generator"] == f"llm:{name}"
    gen = inj["generation"]
    assert (gen["flaw"], gen["wrong_result"], gen["stage2_attempts"]) == (PLAN["flaw"], PLAN["wrong_result"], 1)
    assert gen["read_as"] == ["schema", "schema"]  # native structured output on all three APIs
    assert inj["usage"]["calls"] == 2 and inj["usage"]["input_tokens"] > 0


def test_text_answers_when_the_server_has_no_structured_output(llm_server, llm_settings):
    llm_server.structured = False
    llm_server.tools = False
    llm_server.json_object = False
    oracle = InjectModel(plan=PLAN, rewrites=[REWRITE])
    llm_server.respond_with(oracle)
    gen = LLMGenerator("openai:gpt-4.1", settings=llm_settings())
    out = gen.generate(InjectionRequest(seed_run("arith_team", 1), 4, "R.3"))
    assert out.step.content == REWRITE["content"] and out.step.tool_calls[0].arguments == {"expression": "80 + 5 + 65"}
    assert out.details["read_as"] == ["labelled", "labelled"]
    assert any("structured output" in w for w in out.details["warnings"])


def test_tool_call_names_are_kept_and_null_keeps_the_recorded_calls(llm_server, llm_settings):
    seed = seed_run("arith_team", 1)
    renamed = {
        "content": "Computing end = clock(09:30 + total) with total = 150.",
        "tool_calls": [
            {"name": "add_minutes", "arguments_json": '{"start": "09:30", "minutes": 150}'},
            {"name": "calculator", "arguments_json": '{"expression": "1"}'},
        ],
    }
    llm_server.respond_with(InjectModel(plan=PLAN, rewrites=[renamed]))
    out = LLMGenerator("openai:gpt-4.1", settings=llm_settings()).generate(InjectionRequest(seed, 5, "R.3"))
    assert [(c.name, c.arguments) for c in out.step.tool_calls] == [("clock_add", {"start": "09:30", "minutes": 150})]
    assert any("replaced by the recorded 'clock_add'" in w for w in out.details["warnings"])
    assert any("1 extra tool call(s) ignored" in w for w in out.details["warnings"])

    llm_server.reset()
    keep = {"content": "Computing total = sessions + breaks + lunch = 80 + 5 + 60, rounding up.", "tool_calls": None}
    llm_server.respond_with(InjectModel(plan=PLAN, rewrites=[keep]))
    out = LLMGenerator("openai:gpt-4.1", settings=llm_settings()).generate(InjectionRequest(seed, 4, "R.3"))
    assert out.step.tool_calls == seed.steps[4].tool_calls and out.step.observation is None


def test_an_unusable_answer_is_a_clear_error(llm_server, llm_settings):
    seed = seed_run("arith_team", 1)
    gen = LLMGenerator("openai:gpt-4.1", settings=llm_settings(cache=False))
    llm_server.respond_with(
        InjectModel(plan=PLAN, rewrites=[REWRITE], raw=lambda kind: WRONG_FORMAT_TEXT if kind == "stage1" else None)
    )
    with pytest.raises(BackendError, match=r"unusable answer to the stage-1 question .*began 'I looked at the run"):
        gen.generate(InjectionRequest(seed, 4, "R.3"))

    llm_server.respond_with(InjectModel(plan=PLAN, rewrites=[{"content": seed.steps[4].content, "tool_calls": None}]))
    with pytest.raises(BackendError, match="returned step 4 unchanged"):
        gen.generate(InjectionRequest(seed, 4, "R.3"))

    bad_args = {"content": "Computing total.", "tool_calls": [{"name": "calculator", "arguments_json": "{80 + 5"}]}
    llm_server.respond_with(InjectModel(plan=PLAN, rewrites=[bad_args]))
    with pytest.raises(BackendError, match="not JSON for 'calculator'"):
        gen.generate(InjectionRequest(seed, 4, "R.3"))

    with pytest.raises(ConfigError, match="framing"):
        gen.generate(InjectionRequest(seed, 0, "R.3"))


def test_a_revealing_rewrite_is_asked_again_and_the_filter_still_runs(llm_server, llm_settings):
    seed = seed_run("arith_team", 1)
    telling = {
        "content": "Computing total = 80 + 5 + 65 (I deliberately use 65 here).",
        "tool_calls": [{"name": "calculator", "arguments_json": '{"expression": "80 + 5 + 65"}'}],
    }
    oracle = InjectModel(plan=PLAN, rewrites=[telling, REWRITE])
    llm_server.respond_with(oracle)
    gen = LLMGenerator("openai:gpt-4.1", settings=llm_settings())
    result = inject(seed, 4, "R.3", gen, BuiltinExecutor(), now=NOW)
    assert oracle.kinds() == ["stage1", "stage2", "stage2"]
    assert "'deliberately'" in oracle.asked[-1].prompt and telling["content"] in oracle.asked[-1].prompt
    assert result.counterfactual.steps[4].content == REWRITE["content"] and result.verdict.kept

    llm_server.reset()
    stubborn = InjectModel(plan=PLAN, rewrites=[telling])
    llm_server.respond_with(stubborn)
    result = inject(
        seed, 4, "R.3", LLMGenerator("openai:gpt-4.1", settings=llm_settings(cache=False)), BuiltinExecutor(), now=NOW
    )
    assert stubborn.kinds() == ["stage1", "stage2", "stage2"]
    assert result.verdict.revealing == ["deliberately"] and result.verdict.decisive and not result.verdict.kept


def test_a_real_who_and_when_step_is_rewritten_without_showing_the_labels(llm_server, llm_settings, real_traces):
    trace = load_trace(REAL_TRACES / "who-and-when/Who&When/Algorithm-Generated/1.json")
    original = trace.steps[4]
    oracle = InjectModel(
        plan={"flaw": "Confirms the count without re-reading the code output.", "wrong_result": "the team reports 5"},
        rewrites=[{"content": original.content.replace("is 4", "is 5"), "tool_calls": None}],
    )
    llm_server.respond_with(oracle)
    out = get_generator("llm", model="openai:gpt-4.1", settings=llm_settings()).generate(
        InjectionRequest(trace, 4, "V.2")
    )
    assert out.generator == "llm:openai:gpt-4.1" and "is 5" in out.step.content
    assert (out.step.index, out.step.coord, out.step.agent, out.step.kind) == (4, "4", original.agent, original.kind)
    for asked in oracle.asked:
        assert trace.ground_truth.reason not in asked.prompt and "mistake_agent" not in asked.prompt
        assert f"Step 4 | Agent: {original.agent}" in asked.prompt and "Step 5 |" not in asked.prompt
        assert "Inadequate or incorrect verification" in asked.prompt or "V.2" in asked.prompt
