"""The LLM-simulated continuation (``--executor simulate``) through the real SDKs against
the local test server, on a built-in env seed trace and on real Who&When traces: exact
prefix, recorded tool results reused without a model call, unmatched ones simulated and
marked, speakers in the recorded order, stops at a final answer or a budget, outcome
verified, backend faults retried without duplicated steps, and the CLI end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from conftest import REAL_TRACES, REPO
from test_replay import NOW, seed_run
from tests.support.fixtures import TEST_KEY
from tests.support.inject_model import InjectModel, step_answer
from tests.support.llm_server import Fault
from tests.support.waiting import ANSWER_S
from whenpro_core.errors import BackendError, ReplayError
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.injection.generate import InjectionRequest, TextGenerator
from whenpro_core.injection.inject import inject
from whenpro_core.injection.llm_generate import LLMGenerator
from whenpro_core.injection.registry import get_executor
from whenpro_core.injection.replay import prefix_matches, replay_stream, warm_start
from whenpro_core.injection.simulate import SimulateExecutor
from whenpro_core.trace.model import Step, ToolCall

# Excel_Expert, terminal, BusinessLogic, terminal, DataVerification x2
WW_1 = "who-and-when/Who&When/Algorithm-Generated/1.json"


def _arith_model(minutes: int = 150, final: str = "12:00") -> InjectModel:
    """Plays arith_team's solver, verifier and reporter after a changed total."""
    return InjectModel(
        turns={
            "solver": [
                step_answer(
                    f"Computing end = clock(09:30 + total) with total = {minutes}.",
                    [{"name": "clock_add", "arguments": {"minutes": minutes, "start": "09:30"}}],
                )
            ],
            "verifier": [step_answer("Checked sessions = 80, breaks = 5 against the task: correct. Approved.")],
            "reporter": [step_answer(f"Final answer: {final}", final_answer=final, ends_run=True)],
        },
        tool=lambda calls, prompt: "150" if calls[0]["name"] == "calculator" else "12:00",
    )


def _flawed_total() -> Step:
    return Step(
        index=4,
        agent="solver",
        kind="action",
        content="Computing total = sessions + breaks + 65 = 80 + 5 + 65.",
        tool_calls=[ToolCall(id="call_4", name="calculator", arguments={"expression": "80 + 5 + 65"})],
    )


def test_builtin_seed_continued_with_simulated_tools_and_a_decisive_verdict(llm_server, llm_settings):
    seed = seed_run("arith_team", 1)
    model = _arith_model()
    llm_server.respond_with(model)
    streamed: list[Step] = []
    result = inject(
        seed,
        4,
        "R.3",
        _Fixed(_flawed_total()),
        SimulateExecutor("openai:gpt-4.1", settings=llm_settings()),
        on_step=lambda s: streamed.append(s.model_copy(deep=True)),
        now=NOW,
    )
    cf, v = result.counterfactual, result.verdict
    assert prefix_matches(seed, cf.steps, 4)
    # the replaced step's unmatched call and the solver's next one are simulated; speakers follow the record
    assert model.kinds() == ["tool", "turn", "tool", "turn", "turn"]
    assert [a.agent for a in model.asked if a.kind == "turn"] == ["solver", "verifier", "reporter"]
    assert [s.agent for s in cf.steps] == [s.agent for s in seed.steps]
    assert (cf.steps[4].observation, cf.steps[4].meta["simulated"]) == ("150", True)
    assert cf.steps[5].tool_calls[0].arguments == {"minutes": 150, "start": "09:30"}
    assert cf.steps[5].observation == "12:00" and cf.steps[5].meta["simulated"] is True
    assert "simulated" not in cf.steps[6].meta and cf.steps[7].kind == "final_answer"
    assert all(s.meta["generated_by"] == "simulate:openai:gpt-4.1" for s in cf.steps[5:])
    assert [s.index for s in streamed] == [4, 5, 6, 7] and streamed[1].observation == "12:00"
    assert result.replay.termination == "final_answer" and cf.final_answer == "12:00"
    assert v.original_success and v.counterfactual_success is False and v.decisive and v.kept
    cont = cf.extras["injection"]["continuation"]
    assert (cont["calls"], cont["simulated_steps"], cont["max_steps"]) == (5, 2, len(seed.steps) + 5)
    assert cont["usage"]["calls"] == 5 and cf.extras["injection"]["executor"] == "simulate:openai:gpt-4.1"
    assert all("11:55" not in a.prompt for a in model.asked)  # the gold answer is never shown


@pytest.mark.parametrize("name", ["openai:gpt-4.1", "anthropic:claude-sonnet-4-6"])
def test_text_answers_without_structured_output_and_an_unusable_one(llm_server, llm_settings, name):
    llm_server.structured = False
    llm_server.tools = False
    seed = seed_run("arith_team", 1)
    llm_server.respond_with(_arith_model())
    result = warm_start(seed, 4, _flawed_total(), SimulateExecutor(name, settings=llm_settings(name)))
    assert result.final_answer == "12:00" and [s.agent for s in result.steps] == [s.agent for s in seed.steps]
    assert result.steps[5].observation == "12:00" and result.steps[5].tool_calls[0].name == "clock_add"
    assert any("structured output" in w for w in result.details["warnings"])

    llm_server.reset()
    model = _arith_model()
    model.raw = lambda kind: "Sure! The solver would probably compute the end time next." if kind == "turn" else None
    llm_server.respond_with(model)
    with pytest.raises(BackendError, match=r"unusable answer to the simulated turn of solver"):
        warm_start(seed, 4, _flawed_total(), SimulateExecutor(name, settings=llm_settings(name, cache=False)))


def test_a_matching_call_is_served_from_the_record_not_the_model(llm_server, llm_settings):
    seed = seed_run("arith_team", 1)
    same_call = Step(
        index=4,
        agent="solver",
        kind="action",
        content="Computing total = 80 + 5 + 60 minutes.",
        tool_calls=seed.steps[4].tool_calls,
    )
    model = _arith_model(minutes=145, final="11:55")
    llm_server.respond_with(model)
    result = warm_start(seed, 4, same_call, SimulateExecutor("openai:gpt-4.1", settings=llm_settings()))
    assert "tool" not in model.kinds() and model.kinds() == ["turn", "turn", "turn"]
    assert result.steps[4].meta["tool_source"] == "cache" and result.steps[4].observation == "145"
    assert result.steps[5].meta["tool_source"] == "cache" and result.steps[5].observation == "11:55"
    assert "simulated" not in result.steps[5].meta and result.cache_hits == 2 and result.cache_misses == 0
    assert result.final_answer == "11:55" and result.details["tool_results_from_record"] == 1


def test_a_final_replaced_step_ends_the_run_without_a_call(llm_server, llm_settings):
    seed = seed_run("arith_team", 1)
    early = Step(index=4, agent="solver", kind="final_answer", content="Final answer: 11:25")
    result = warm_start(seed, 4, early, SimulateExecutor("openai:gpt-4.1", settings=llm_settings()))
    assert llm_server.requests == [] and result.termination == "final_answer" and result.final_answer == "11:25"
    assert len(result.steps) == 5


def test_real_who_and_when_trace_reuses_the_recorded_execution(llm_server, llm_settings, real_traces):
    trace = load_trace(REAL_TRACES / WW_1)
    original = trace.steps[2]
    prose_only = original.content.replace("We have verified", "I have double-checked")  # same code block
    model = InjectModel(
        turns={
            "DataVerification_Expert": [
                step_answer(
                    "The code ran and printed 4. The number of clients receiving the sunset awning design is **4**.",
                    final_answer="4",
                ),
                step_answer("TERMINATE"),
            ]
        }
    )
    llm_server.respond_with(model)
    result = inject(
        trace, 2, "R.2", TextGenerator(prose_only), SimulateExecutor("openai:gpt-4.1", settings=llm_settings()), now=NOW
    )
    cf = result.counterfactual
    assert prefix_matches(trace, cf.steps, 2)
    assert model.kinds() == ["turn", "turn"]  # the terminal's output came from the record
    assert cf.steps[3].agent == "Computer_terminal" and cf.steps[3].content == trace.steps[3].content
    assert cf.steps[3].meta["tool_source"] == "cache" and not cf.steps[3].meta.get("simulated")
    assert [s.agent for s in cf.steps] == [s.agent for s in trace.steps]
    assert cf.steps[5].content == "TERMINATE" and result.replay.termination == "final_answer"
    # the answer is verified against the gold answer (8); the seed run failed as well
    assert cf.final_answer == "4" and result.verdict.counterfactual_success is False and not result.verdict.decisive
    assert "answer '4', gold '8'" in result.verdict.detail
    turn = model.asked[0].prompt
    assert "DataVerification_Expert's instructions" in turn and trace.ground_truth.reason not in turn
    assert (
        "Step 3 | Agent: Computer_terminal" in turn
        and "Write the next step: Step 4 | Agent: DataVerification_Expert" in turn
    )


def test_real_who_and_when_trace_simulates_an_unrecorded_execution(llm_server, llm_settings, real_traces):
    trace = load_trace(REAL_TRACES / WW_1)
    changed = trace.steps[2].content.replace("% 2 == 0", "% 2 == 1")
    model = InjectModel(
        turns={"DataVerification_Expert": [step_answer("The count is 5. TERMINATE", final_answer="5", ends_run=True)]},
        exec_output=lambda prompt: "exitcode: 0 (execution succeeded)\nCode output: 5",
    )
    llm_server.respond_with(model)
    result = warm_start(
        trace,
        2,
        trace.steps[2].model_copy(update={"content": changed}),
        SimulateExecutor("openai:gpt-4.1", settings=llm_settings()),
    )
    assert model.kinds() == ["exec", "turn"]
    assert "% 2 == 1" in model.asked[0].prompt and model.asked[0].agent == "Computer_terminal"
    step = result.steps[3]
    assert step.agent == "Computer_terminal" and step.kind == "observation" and step.content.endswith("Code output: 5")
    assert step.meta["simulated"] is True and step.meta["tool_source"] == "simulated"
    assert result.final_answer == "5" and len(result.steps) == 5 and result.termination == "final_answer"


def test_magentic_one_run_ends_at_its_final_answer_line(llm_server, llm_settings, real_traces):
    trace = load_trace(REAL_TRACES / "who-and-when/Who&When/Hand-Crafted/18.json")  # gold 45, recorded -201
    ledger = trace.steps[28].content.replace("Family Fun Membership - $300", "Family Fun Membership - $255")
    model = InjectModel(
        turns={
            "Orchestrator": [
                step_answer("Request satisfied."),
                step_answer("Daily tickets: 4 people x $8.25 x 4 visits = $132; passes cost $255.\nFINAL ANSWER: -123"),
            ]
        }
    )
    llm_server.respond_with(model)
    result = inject(
        trace, 28, "R.1", TextGenerator(ledger), SimulateExecutor("openai:gpt-4.1", settings=llm_settings()), now=NOW
    )
    cf = result.counterfactual
    assert prefix_matches(trace, cf.steps, 28) and len(cf.steps) == len(trace.steps)
    assert [a.agent for a in model.asked] == ["Orchestrator", "Orchestrator"]
    assert cf.steps[30].kind == "final_answer" and cf.final_answer == "-123"
    assert result.replay.termination == "final_answer" and result.verdict.counterfactual_success is False
    assert (
        "Family Fun Membership - $255" in model.asked[0].prompt
        and "human" not in model.asked[0].prompt.split("## Agents")[1].split("## The run so far")[0]
    )


def test_a_single_agent_trace_keeps_its_numbering(llm_server, llm_settings):
    """A smolagents-style run: an unnumbered task, then steps numbered from 1."""
    from whenpro_core.trace.model import Agent, Task, Trace

    steps = [Step(index=0, agent="user", kind="user", content="What is 17 * 23 + 4?")]
    for i, (code, out) in enumerate([("17 * 23", "391"), ("391 + 4", "395")], start=1):
        steps.append(
            Step(
                index=i,
                coord=str(i),
                agent="agent",
                kind="action",
                content=f"Computing {code}.",
                tool_calls=[ToolCall(id=f"c{i}", name="python", arguments={"code": code})],
                observation=out,
            )
        )
    steps.append(Step(index=3, coord="3", agent="agent", kind="final_answer", content="Final answer: 395"))
    trace = Trace(
        id="mini",
        framework="smolagents",
        agents=[Agent(id="agent")],
        steps=steps,
        task=Task(query="What is 17 * 23 + 4?", answer="395"),
    )
    model = InjectModel(
        turns={
            "agent": [
                step_answer("Computing 391 + 4.", [{"name": "python", "arguments": {"code": "391 + 4"}}]),
                step_answer("Final answer: 395", final_answer="395", ends_run=True),
            ]
        }
    )
    llm_server.respond_with(model)
    wrong = steps[1].model_copy(
        update={
            "content": "Computing 17 * 32.",
            "tool_calls": [ToolCall(id="c1", name="python", arguments={"code": "17 * 32"})],
            "observation": None,
        }
    )
    result = warm_start(trace, 1, wrong, SimulateExecutor("openai:gpt-4.1", settings=llm_settings()))
    assert [s.coord for s in result.steps] == [None, "1", "2", "3"] and result.final_answer == "395"
    assert result.steps[1].meta["simulated"] and result.steps[2].meta["tool_source"] == "cache"
    assert model.kinds() == ["tool", "turn", "turn"] and result.steps[3].kind == "final_answer"


def test_step_and_call_budgets_are_respected(llm_server, llm_settings, real_traces):
    trace = load_trace(REAL_TRACES / WW_1)
    chatter = InjectModel(turns=lambda agent, coord, prompt: step_answer(f"{agent} here, still thinking ({coord})."))
    llm_server.respond_with(chatter)
    result = warm_start(trace, 2, trace.steps[2], SimulateExecutor("openai:gpt-4.1", settings=llm_settings()))
    assert result.termination == "max_steps" and len(result.steps) == len(trace.steps) + 5
    assert result.final_answer is None and result.details["calls"] == len(chatter.asked)
    # after the recorded order: the recorded successor (another agent), never a loop of one agent
    assert [s.agent for s in result.steps[6:8]] == ["Excel_Expert", "BusinessLogic_Expert"]

    llm_server.reset()
    llm_server.respond_with(chatter)
    seed = seed_run("arith_team", 1)
    result = inject(
        seed,
        4,
        "R.3",
        _Fixed(_flawed_total()),
        SimulateExecutor("openai:gpt-4.1", settings=llm_settings(cache=False), max_calls=2),
        now=NOW,
    )
    assert len(llm_server.answered) == 2 and result.replay.termination == "max_calls"
    assert result.verdict.counterfactual_success is None and not result.verdict.decisive
    assert "cut (max_calls)" in result.verdict.detail and result.counterfactual.outcome.value == "unknown"


async def test_from_a_running_event_loop_generation_and_streamed_replay(llm_server, llm_settings):
    """The TUI path: a generator called on the event loop's thread, then replay_stream."""
    seed = seed_run("arith_team", 1)
    model = _arith_model()
    model.plan = {"flaw": "Adds a 65-minute lunch.", "wrong_result": "ends at 12:00"}
    model.rewrites = [
        {
            "content": _flawed_total().content,
            "tool_calls": [{"name": "calculator", "arguments_json": '{"expression": "80 + 5 + 65"}'}],
        }
    ]
    llm_server.respond_with(model)
    generated = LLMGenerator("openai:gpt-4.1", settings=llm_settings()).generate(InjectionRequest(seed, 4, "R.3"))
    events = [
        e
        async for e in replay_stream(
            seed, 4, generated.step, SimulateExecutor("openai:gpt-4.1", settings=llm_settings())
        )
    ]
    assert [e.step.index for e in events[:-1]] == [4, 5, 6, 7] and events[-1].result.final_answer == "12:00"
    assert model.kinds() == ["stage1", "stage2", "tool", "turn", "tool", "turn", "turn"]

    cancel = threading.Event()
    cancel.set()
    stopped = warm_start(
        seed, 4, generated.step, SimulateExecutor("openai:gpt-4.1", settings=llm_settings()), cancel=cancel
    )
    assert stopped.termination == "stopped" and len(stopped.steps) == 5 and len(model.asked) == 7


@pytest.mark.parametrize("fault", ["429", "hang"])
def test_backend_faults_are_retried_without_duplicating_steps(llm_server, llm_settings, fault):
    seed = seed_run("arith_team", 1)
    llm_server.respond_with(_arith_model())
    if fault == "429":
        llm_server.fail(Fault.http(429, retry_after="0"), Fault.http(429, retry_after="0"))
        settings = llm_settings()
    else:
        llm_server.fail(Fault.hang(3600.0))  # answers only when the server stops (teardown)
        settings = llm_settings(timeout_s=ANSWER_S)
    result = warm_start(seed, 4, _flawed_total(), SimulateExecutor("openai:gpt-4.1", settings=settings))
    assert [s.index for s in result.steps] == list(range(8))
    assert [s.agent for s in result.steps] == [s.agent for s in seed.steps] and result.final_answer == "12:00"
    assert len(llm_server.answered) == 5 == result.details["calls"]
    assert len(llm_server.requests) == 5 + (2 if fault == "429" else 1)


def test_the_replay_timeout_ends_a_hanging_continuation(llm_server, llm_settings):
    seed = seed_run("arith_team", 1)
    llm_server.respond_with(_arith_model())
    llm_server.fail(Fault.hang(5))
    with pytest.raises(ReplayError, match="did not finish before the replay timeout"):
        warm_start(seed, 4, _flawed_total(), SimulateExecutor("openai:gpt-4.1", settings=llm_settings()), timeout=0.3)


def test_executor_specs_and_models(llm_settings):
    settings = llm_settings()
    assert get_executor("simulate", model="openai:gpt-4.1", settings=settings).name == "simulate:openai:gpt-4.1"
    assert (
        get_executor("simulate:anthropic:claude-sonnet-4-6", model="openai:gpt-4.1", settings=settings).name
        == "simulate:anthropic:claude-sonnet-4-6"
    )
    configured = get_executor("simulate", settings=llm_settings("openai:gpt-4.1-mini"))
    assert (
        configured.name == "simulate:openai:gpt-4.1-mini" and configured.live_tools(seed_run("arith_team", 1)) is None
    )


def test_cli_inject_with_the_llm_generator_and_simulate(llm_server, tmp_path):
    seed_file = tmp_path / "seed.json"
    write_trace(seed_run("arith_team", 1), seed_file)
    model = _arith_model()
    model.plan = {"flaw": "Adds a 65-minute lunch.", "wrong_result": "ends at 12:00"}
    model.rewrites = [
        {
            "content": "Computing total = sessions + breaks + 65 = 80 + 5 + 65.",
            "tool_calls": [{"name": "calculator", "arguments_json": '{"expression": "80 + 5 + 65"}'}],
        }
    ]
    llm_server.respond_with(model)
    env = {**os.environ, "OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": llm_server.openai_base_url}
    out_file = tmp_path / "cf.json"
    args = [
        sys.executable,
        "-m",
        "whenpro_core.cli",
        "inject",
        str(seed_file),
        "--step",
        "4",
        "--mode",
        "R.3",
        "--generator",
        "llm",
        "--executor",
        "simulate",
        "--model",
        "openai:gpt-4.1",
        "--out",
        str(out_file),
    ]
    run = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "now fails — decisive" in run.stdout and "simulation model: 5 calls" in run.stdout
    assert "generator model: 2 calls" in run.stdout and f"wrote {out_file}" in run.stdout
    assert model.kinds() == ["stage1", "stage2", "tool", "turn", "tool", "turn", "turn"]
    saved = out_file.read_text(encoding="utf-8")
    data = json.loads(saved)
    inj = data["extras"]["injection"]
    assert inj["generator"] == "llm:openai:gpt-4.1" and inj["executor"] == "simulate:openai:gpt-4.1"
    assert data["ground_truth"]["step"] == "4" and data["final_answer"] == "12:00"
    assert TEST_KEY not in run.stdout + run.stderr + saved

    no_model = subprocess.run(
        args[:-4] + ["--out", str(tmp_path / "x.json")], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert no_model.returncode == 2 and "needs a model" in no_model.stderr and no_model.stderr.count("\n") == 1


class _Fixed:
    """A generator returning a given replacement step (the executor is under test)."""

    name = "fixed"

    def __init__(self, step: Step) -> None:
        self.step = step

    def generate(self, request):
        from whenpro_core.injection.generate import GeneratedStep

        return GeneratedStep(self.step.model_copy(deep=True), "Uses 65 minutes of lunch.", self.name)
