"""Built-in environments: reference runs succeed, policies read the conversation, tasks
round-trip through the trace, and `whenpro run` writes the runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO
from whenpro_core.envs import env_for_trace, env_names, get_env
from whenpro_core.envs.arith_tasks import FAMILIES, calculate, clock_add, derive, family_kind
from whenpro_core.envs.arith_team import read_values
from whenpro_core.envs.base import EnvState, framing_step, run_loop
from whenpro_core.envs.code_pair import latest_code, undress
from whenpro_core.envs.code_tasks import TEMPLATES, read_spec
from whenpro_core.envs.run import env_policy, run_env
from whenpro_core.errors import ConfigError
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Step


def test_registry_lists_both_envs_and_rejects_unknown_names():
    assert {"arith_team", "code_pair"} <= set(env_names())
    from whenpro_core.trace.frameworks import WHENPRO_FRAMEWORKS

    assert set(env_names()) == WHENPRO_FRAMEWORKS  # their datasets read back without warnings
    with pytest.raises(ConfigError, match="arith_team"):
        get_env("nope")


@pytest.mark.parametrize("seed", range(12))
def test_arith_team_reference_runs_succeed(seed):
    trace = run_env(get_env("arith_team"), seed)
    assert trace.outcome.value == "success", trace.extras["env"]
    assert [s.coord for s in trace.steps] == [str(i) for i in range(len(trace.steps))]
    assert trace.steps[0].kind == "user" and trace.steps[-1].kind == "final_answer"
    assert {s.agent for s in trace.steps} >= {"user", "planner", "solver", "verifier", "reporter"}
    assert trace.task.answer and trace.final_answer
    # Every tool call got an observation.
    assert all(s.observation for s in trace.steps if s.tool_calls)


def test_arith_families_cover_twelve_tasks_of_money_schedule_and_table():
    env = get_env("arith_team")
    families = {env.make_task(seed).params["family"] for seed in range(12)}
    assert families == set(FAMILIES) and len(families) >= 12
    assert {family_kind(f) for f in families} == {"money", "schedule", "table"}
    for seed in range(24):  # every family's text is read back by the team's derivation
        task = env.make_task(seed)
        assert derive(task.query).items, task.query
    table_run = run_env(env, 2)
    assert any(c.name == "lookup" for s in table_run.steps for c in s.tool_calls)
    # The table itself is nowhere in what the agents see.
    hidden_price = next(iter(env.make_task(2).params["table"].values()))["price"]
    assert hidden_price not in table_run.steps[0].content


@pytest.mark.parametrize("seed", range(12))
def test_code_pair_reference_runs_succeed_with_the_fix_loop(seed):
    trace = run_env(get_env("code_pair"), seed)
    assert trace.outcome.value == "success", trace.extras["env"]["check"]
    assert "hidden tests passed" in trace.extras["env"]["check"]
    assert any(c.name == "run_tests" for s in trace.steps for c in s.tool_calls)
    edge = "Edge case:" in trace.task.query
    template, params = read_spec(trace.task.query)
    first = undress(next(latest_code([s]) for s in trace.steps if latest_code([s])))
    failed = any(s.agent == "tester" and not s.tool_calls and "Approved" not in s.content for s in trace.steps)
    # A draft that ignores the edge case goes through a failing test round and a fix.
    assert failed == (edge and first != template.full(params)) or (failed and first != template.draft(params))


def test_code_pair_has_twelve_templates():
    assert len(TEMPLATES) >= 12 and len({t.name for t in TEMPLATES}) == len(TEMPLATES)
    env = get_env("code_pair")
    assert {env.make_task(seed).params["template"] for seed in range(12)} == {t.name for t in TEMPLATES}


def _restyled(env_name: str, seed: int, style: int | None) -> list[str]:
    env = get_env(env_name)
    task = env.make_task(seed)
    task.params["style"] = style
    steps, _ = run_loop(env, task, env.reference_policy(), [framing_step(task.query)], env.live_tools(task))
    return [s.content for s in steps]


@pytest.mark.parametrize("env_name", ["arith_team", "code_pair"])
def test_the_same_task_is_told_differently_by_each_style_and_the_same_way_by_one(env_name):
    runs = [_restyled(env_name, 5, style) for style in range(8)]
    assert runs[3] == _restyled(env_name, 5, 3)  # a style reproduces its run exactly
    assert len({tuple(r) for r in runs}) >= 6  # the task text alone does not give the run
    assert len({r[1] for r in runs}) >= 3  # ... from the first agent step on
    assert len({len(r) for r in runs}) >= 2 or env_name == "code_pair"  # optional steps change the length


def test_slips_happen_and_the_team_catches_them():
    env = get_env("arith_team")
    caught = [
        t
        for t in (run_env(env, s) for s in range(60))
        if any(s.agent == "verifier" and "Mismatch on" in s.content for s in t.steps)
    ]
    assert caught and all(t.outcome.value == "success" for t in caught)
    pair = get_env("code_pair")
    fixed = [
        t
        for t in (run_env(pair, s) for s in range(40))
        if sum(1 for s in t.steps if s.agent == "tester" and not s.tool_calls and "Approved" not in s.content) >= 2
    ]
    assert fixed and sum(t.outcome.value == "success" for t in fixed) >= len(fixed) // 2


def test_run_without_seed_draws_a_fresh_one_each_time(tmp_path):
    first = _whenpro("run", "code_pair", "--n", "2", "--out", str(tmp_path / "a"))
    second = _whenpro("run", "code_pair", "--n", "2", "--out", str(tmp_path / "b"))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "first seed" in first.stdout and "--seed" in first.stdout
    a = [load_trace(f) for f in sorted((tmp_path / "a").glob("*.json"))]
    b = [load_trace(f) for f in sorted((tmp_path / "b").glob("*.json"))]
    assert {t.id for t in a}.isdisjoint({t.id for t in b})
    assert [[s.content for s in t.steps] for t in a] != [[s.content for s in t.steps] for t in b]


def test_solver_reads_values_from_the_conversation_not_hidden_state():
    env = get_env("arith_team")
    task = env.make_task(0)
    task.params["style"] = None  # the original wording and order
    steps, _ = run_loop(env, task, env.reference_policy(), [framing_step(task.query)], env.live_tools(task))
    steps = steps[:3]  # user, plan, first solver step
    first_var = next(iter(read_values(steps)))
    # Rewrite the recorded observation: the next solver step must use the new text.
    steps = [s.model_copy(deep=True) for s in steps]
    steps[2].observation = "1000"
    rest, _ = run_loop(env, task, env.reference_policy(), steps, env.live_tools(task))
    subtotal = next(s for s in rest if s.content.startswith("Computing subtotal"))
    assert "1000 +" in subtotal.tool_calls[0].arguments["expression"], subtotal.content
    # ... and the verifier, recomputing from the task, flags it.
    assert any(s.agent == "verifier" and f"Mismatch on {first_var}" in s.content for s in rest)
    assert rest[-1].kind == "final_answer" and env.check(task, env.extract_answer(rest[-1])).success


def test_policy_state_has_no_gold_answer():
    env = get_env("arith_team")
    task = env.make_task(5)
    state = EnvState(env=env.name, agent="planner", query=task.query, steps=(Step(index=0, content=task.query),))
    assert task.answer not in repr(state)


def test_task_rebuilds_from_the_trace_and_env_is_found():
    for name, seed in (("arith_team", 2), ("code_pair", 3)):
        env = get_env(name)
        trace = run_env(env, seed)
        assert env_for_trace(trace).name == name
        again = env.task_from_trace(trace)
        assert again.params == env.make_task(seed).params and again.answer == trace.task.answer


def test_tools_are_safe_and_report_errors():
    assert calculate("(2 - 1) * 15") == "15" and calculate("61 - 9.15") == "51.85"
    assert clock_add("23:50", 20) == "00:10"
    for bad in ("__import__('os')", "2 ** 99999", "1/0", 5):
        with pytest.raises(Exception) as info:
            calculate(bad)
        assert type(info.value).__name__ == "ToolFailure"


def test_llm_policy_is_a_clear_error():
    with pytest.raises(ConfigError, match="no API key for openai:gpt-4.1"):
        env_policy(get_env("arith_team"), "openai:gpt-4.1")
    assert env_policy(get_env("arith_team"), "heuristic").name == "reference"


def _whenpro(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_run_command_writes_native_traces_and_refuses_to_overwrite(tmp_path):
    out = _whenpro("run", "arith_team", "--n", "3", "--seed", "4", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    files = sorted(tmp_path.glob("*.json"))
    assert [f.name for f in files] == ["arith_team-s4.json", "arith_team-s5.json", "arith_team-s6.json"]
    assert "3 runs: 3 succeeded" in out.stdout
    trace = load_trace(files[0])
    assert trace.framework == "arith_team" and json.loads(files[0].read_text())["format"] == "whenpro.trace/1"
    again = _whenpro("run", "arith_team", "--n", "1", "--seed", "4", "--out", str(tmp_path))
    assert again.returncode == 2 and "--force" in again.stderr
    llm = _whenpro("run", "code_pair", "--n", "1", "--out", str(tmp_path / "x"), "--model", "openai:gpt-4.1")
    assert llm.returncode == 2 and "no API key" in llm.stderr and llm.stderr.count("\n") == 1


def test_an_llm_plays_the_agents_through_the_real_sdk(llm_server, monkeypatch):
    """``whenpro run --model``: every turn is one chat-completions call to the local server;
    the environment runs the tool calls with its live tools and checks the answer."""
    import re

    from tests.support.fixtures import TEST_KEY
    from tests.support.inject_model import step_answer
    from tests.support.llm_wire import prompt_text

    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    env = get_env("arith_team")
    task = env.make_task(3)
    seen: list[str] = []

    def model(body):
        prompt = prompt_text(body)
        agent = re.search(r"Write your next message as (\w+)", prompt).group(1)
        seen.append(agent)
        assert f"## How {agent} writes" in prompt  # the environment's conventions
        if agent == "planner":
            return step_answer("Plan:\n1. solver: total = 6 * 7\n2. verifier: check total\n3. reporter: report total")
        if agent == "solver":
            return step_answer("Computing total", [{"name": "calculator", "arguments": {"expression": "6 * 7"}}])
        if agent == "verifier":
            return step_answer("Approved.")
        return step_answer("Reporting total.", final_answer="42", ends_run=True)

    llm_server.respond_with(model)
    trace = run_env(env, 3, model="openai:gpt-4.1")
    assert [s.agent for s in trace.steps] == ["user", "planner", "solver", "verifier", "reporter"]
    assert trace.steps[-1].kind == "final_answer" and trace.final_answer == "42"
    assert trace.outcome.value == ("success" if task.answer == "42" else "failure")
    calc = next(s for s in trace.steps if s.tool_calls)
    assert calc.agent == "solver" and calc.observation.strip() == "42"  # the env's real calculator
    assert all(s.meta.get("generated_by") == "llm:openai:gpt-4.1" for s in trace.steps[1:])
    assert len(llm_server.requests) == len(trace.steps) - 1 == len(seen)
    assert all(TEST_KEY not in json.dumps(s.model_dump()) for s in trace.steps)


def test_an_llm_plays_code_pair_by_its_conventions(llm_server, monkeypatch):
    """code_pair through the real SDK: the prompts state the conventions (latest ```python
    block, run_tests printing PASS/FAIL, `Approved.`); a model that follows them has its
    tests run in the sandbox and its final code checked against the hidden tests."""
    import re

    from tests.support.fixtures import TEST_KEY
    from tests.support.inject_model import step_answer
    from tests.support.llm_wire import prompt_text
    from whenpro_core.envs.code_tasks import harness, spec_examples

    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    env = get_env("code_pair")
    task = env.make_task(1)
    block = f"```python\n{task.answer}```"
    prompts: list[str] = []

    def model(body):
        prompt = prompt_text(body)
        prompts.append(prompt)
        agent = re.search(r"Write your next message as (\w+)", prompt).group(1)
        assert f"## How {agent} writes" in prompt and "```python block" in prompt
        turn = len(prompts) - 1
        assert agent == ("coder", "tester", "tester", "coder")[turn]
        if turn == 0:
            return step_answer(f"First version:\n{block}")
        if turn == 1:
            tests = harness(spec_examples(task.query))
            return step_answer(
                "Running the examples.", [{"name": "run_tests", "arguments": {"code": task.answer, "tests": tests}}]
            )
        if turn == 2:
            assert prompt.count("PASS count_letters(") == 2  # it sees the sandbox's output
            return step_answer("All 2 tests passed. Approved.")
        return step_answer(f"Final code:\n{block}", final_answer=block, ends_run=True)

    llm_server.respond_with(model)
    trace = run_env(env, 1, model="openai:gpt-4.1")
    assert [(s.agent, s.kind) for s in trace.steps[1:]] == [
        ("coder", "assistant"),
        ("tester", "action"),
        ("tester", "assistant"),
        ("coder", "final_answer"),
    ]
    run = trace.steps[2]
    assert run.observation.count("PASS ") == 2 and not run.error  # the real sandbox ran them
    assert trace.outcome.value == "success" and trace.final_answer.strip() == task.answer.strip()
    assert "`Approved.`" in prompts[0] and "PASS <call> == <expected>" in prompts[1]
