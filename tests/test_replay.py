"""Warm-start replay with the built-in environments, end to end: inject, replay, verify,
label; the prefix is exact, tool results come from the cache, decisive and caught
injections are told apart."""

from __future__ import annotations

import threading
from functools import cache

import orjson
import pytest

from conftest import SAMPLES
from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env
from whenpro_core.errors import ConfigError, ReplayError
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import dumps_trace, write_trace
from whenpro_core.injection.diff import diff_traces
from whenpro_core.injection.executors import BuiltinExecutor
from whenpro_core.injection.generate import InjectionRequest, OfflineGenerator, TextGenerator
from whenpro_core.injection.inject import inject, resolve_step
from whenpro_core.injection.registry import get_executor, plugin_names
from whenpro_core.injection.replay import prefix_matches, replay_stream, warm_start
from whenpro_core.injection.toolcache import ToolCache, call_key
from whenpro_core.trace.model import Step, ToolCall

NOW = "2026-01-01T00:00:00+00:00"


@cache
def _seed_json(env: str, seed: int) -> bytes:
    return dumps_trace(run_env(get_env(env), seed, plain=True))


def seed_run(env: str, seed: int):
    from whenpro_core.trace.model import Trace

    return Trace.model_validate(orjson.loads(_seed_json(env, seed)))


def run_inject(trace, index, mode, seed=0, **kw):
    return inject(trace, index, mode, OfflineGenerator(), BuiltinExecutor(), seed=seed, now=NOW, **kw)


def test_decisive_injection_yields_a_labelled_failure():
    seed = seed_run("arith_team", 1)  # schedule task; the verifier checks sessions and breaks only
    result = run_inject(seed, 4, "R.3")  # the solver's total, which nobody re-checks
    cf, v = result.counterfactual, result.verdict
    assert v.original_success is True and v.counterfactual_success is False and v.decisive and v.kept
    assert cf.outcome.value == "failure" and cf.final_answer != seed.task.answer
    gt = cf.ground_truth
    assert (gt.agent, gt.step, gt.step_index, gt.mode) == ("solver", "4", 4, "R.3") and gt.reason
    inj = cf.extras["injection"]
    assert inj["seed_trace"] == seed.id and inj["generator"] == "offline" and inj["executor"] == "builtin"
    assert inj["timestamp"] == NOW and inj["verdict"]["decisive"] is True
    # Who&When Pro markers, hidden from judges.
    assert all(s.hidden == {"is_injected": False, "is_replayed": True} for s in cf.steps[:4])
    assert cf.steps[4].hidden == {"is_injected": True, "is_replayed": False}
    assert all(s.hidden == {"is_injected": False, "is_replayed": False} for s in cf.steps[5:])
    assert all("inject" not in s.content.lower() for s in cf.steps)


def test_prefix_is_byte_identical_to_the_seed():
    seed = seed_run("arith_team", 0)
    cf = run_inject(seed, 5, "R.2").counterfactual
    assert prefix_matches(seed, cf.steps, 5)
    a = orjson.loads(dumps_trace(seed))["steps"][:5]
    b = orjson.loads(dumps_trace(cf))["steps"][:5]
    for x, y in zip(a, b, strict=False):
        y.pop("hidden"), x.pop("hidden")
        assert orjson.dumps(x) == orjson.dumps(y)


def test_injection_caught_by_the_verifier_is_not_decisive():
    seed = seed_run("arith_team", 0)  # shop task; the verifier re-derives each line item from the task
    result = run_inject(seed, 2, "R.3")
    cf, v = result.counterfactual, result.verdict
    assert v.decisive is False and v.counterfactual_success is True and not v.kept
    flag = next(s for s in cf.steps[3:] if s.agent == "verifier")
    assert flag.content.startswith("Mismatch on")
    assert cf.final_answer == seed.final_answer
    # A run that still succeeds has no decisive error: the injection is an annotation.
    assert cf.ground_truth is None
    [note] = cf.annotations
    assert (note.label, note.agent, note.step, note.decisive) == ("R.3", "solver", "2", False)
    assert cf.steps[2].hidden["is_injected"] is True


def test_tool_results_are_served_from_the_cache_when_calls_match():
    seed = seed_run("arith_team", 0)
    result = run_inject(seed, 2, "R.3")
    sources = {s.index: s.meta.get("tool_source") for s in result.replay.steps[2:] if s.tool_calls}
    assert sources[2] == "live"  # the perturbed call has no recording
    assert sources[3] == "cache"  # the next call is the recorded one
    assert "cache" in sources.values() and result.replay.cache_hits >= 1 and result.replay.cache_misses >= 1
    hit = next(s for s in result.replay.steps[3:] if s.meta.get("tool_source") == "cache")
    recorded = next(s for s in seed.steps if s.tool_calls and call_key(s.tool_calls) == call_key(hit.tool_calls))
    assert hit.observation == recorded.observation


def test_cache_key_ignores_call_ids_and_key_order():
    a = [ToolCall(id="x", name="lookup", arguments={"item": "fig", "column": "price"})]
    b = [ToolCall(id="y", name="lookup", arguments='{"column": "price", "item": "fig"}')]
    c = [ToolCall(id="x", name="lookup", arguments={"item": "fig", "column": "stock"})]
    assert call_key(a) == call_key(b) != call_key(c)
    cache = ToolCache.from_steps([Step(index=0, tool_calls=a, observation="1.25")])
    assert cache.get(b) == ("1.25", None) and cache.get(c) is None and (cache.hits, cache.misses) == (1, 1)


def test_code_pair_tester_approving_a_failing_version_is_decisive():
    seed = seed_run("code_pair", 0)  # clamp_scale: the first version ignores the edge case
    assert "fail" in seed.steps[3].content  # the tester's report of the failing example
    result = run_inject(seed, 3, "V.2")
    assert "Approved" in result.counterfactual.steps[3].content
    assert result.verdict.decisive and result.verdict.kept
    assert "hidden tests passed" in result.verdict.detail
    assert result.counterfactual.steps[-1].kind == "final_answer"


def test_code_pair_slip_caught_by_the_tester_and_one_that_escapes():
    seed = seed_run("code_pair", 112)  # grade, all three examples shown; hidden tests at the boundaries
    caught = run_inject(seed, 1, "R.3", seed=3)  # 90 -> 180: grade(93) fails, the coder rewrites
    assert not caught.verdict.decisive and caught.verdict.counterfactual_success
    assert any("fail" in s.content for s in caught.counterfactual.steps if s.agent == "tester")
    escaped = run_inject(seed, 1, "R.3", seed=0)  # 65 -> 66: every example still passes
    assert escaped.verdict.decisive and escaped.counterfactual.outcome.value == "failure"


def test_sandbox_timeout_in_agent_code_becomes_an_observation(monkeypatch):
    monkeypatch.setenv("WHENPRO_SANDBOX_TIMEOUT", "1")
    seed = seed_run("code_pair", 4)
    looping = "First version of `grade`:\n```python\nwhile True:\n    pass\n```"
    result = inject(seed, 1, "R.2", TextGenerator(looping), BuiltinExecutor(), now=NOW)
    tests = result.counterfactual.steps[2]
    assert "timed out" in tests.observation and tests.error.startswith("ToolError")
    assert result.verdict.counterfactual_success  # the tester reports it, the coder rewrites


def test_steps_stream_through_the_callback_in_order():
    seed = seed_run("arith_team", 3)
    seen: list[int] = []
    result = run_inject(seed, 3, "A.1", on_step=lambda s: seen.append(s.index))
    assert seen == list(range(3, len(result.counterfactual.steps)))


async def test_replay_stream_yields_steps_then_the_result():
    seed = seed_run("arith_team", 1)
    replacement = OfflineGenerator().generate(InjectionRequest(seed, 4, "R.3")).step
    events = [e async for e in replay_stream(seed, 4, replacement, BuiltinExecutor())]
    assert [e.step.index for e in events[:-1]] == list(range(4, len(events[-1].result.steps)))
    assert events[-1].result.final_answer != seed.final_answer


def test_cancel_stops_the_builtin_executor():
    seed = seed_run("arith_team", 0)
    cancel = threading.Event()
    cancel.set()
    result = warm_start(seed, 2, None, BuiltinExecutor(), cancel=cancel)
    assert result.termination == "stopped" and len(result.steps) == 2


def test_plain_continuation_reproduces_the_run():
    seed = seed_run("arith_team", 2)
    result = warm_start(seed, 1, None, BuiltinExecutor())
    assert [s.content for s in result.steps] == [s.content for s in seed.steps]
    assert result.cache_misses == 0 and result.final_answer == seed.final_answer


def test_diff_of_a_counterfactual():
    seed = seed_run("arith_team", 0)
    cf = run_inject(seed, 2, "R.3").counterfactual
    d = diff_traces(seed, cf)
    assert d.shared_prefix == 2 and d.rows[2].op == "changed" and "tool_calls" in d.rows[2].fields
    assert d.added and not d.removed  # the verifier's flag and the redo are new steps
    assert len([r for r in d.rows if r.b is not None]) == len(cf.steps)
    assert len([r for r in d.rows if r.a is not None]) == len(seed.steps)
    same = diff_traces(seed, seed)
    assert same.shared_prefix == len(seed.steps) and not same.final_answer_changed
    early = diff_traces(seed, run_inject(seed, 1, "PL.1").counterfactual)  # a plan line left out
    assert early.shared_prefix == 1 and early.final_answer_changed


def test_builtin_executor_refuses_traces_it_did_not_make():
    sample = load_trace(SAMPLES / "team_text" / "trace.json")
    with pytest.raises(ReplayError, match="built-in environments"):
        run_inject(sample, 3, "R.3")


def test_bad_indexes_and_steps():
    seed = seed_run("arith_team", 0)
    with pytest.raises(ReplayError, match="1.."):
        warm_start(seed, 0, None, BuiltinExecutor())
    with pytest.raises(ConfigError, match="no step '99'"):
        resolve_step(seed, "99")
    assert resolve_step(seed, "Step 3") == 3 and resolve_step(seed, "#2") == 2
    with pytest.raises(ConfigError, match="unknown failure mode"):
        run_inject(seed, 2, "Z.9")


def test_executor_specs():
    assert get_executor("builtin").name == "builtin"
    assert get_executor("cmd:python -c 'pass'").name == "cmd:python -c pass"
    with pytest.raises(ConfigError, match="simulate executor needs a model"):
        get_executor("simulate")
    with pytest.raises(ConfigError, match="no API key for anthropic:claude-sonnet-4-6"):
        get_executor("simulate:anthropic:claude-sonnet-4-6")
    with pytest.raises(ConfigError, match="unknown executor"):
        get_executor("nosuch")


PLUGIN = """
from whenpro_core.injection.executors import Continuation
from whenpro_core.trace.model import Step


class Fixed:
    def __init__(self, answer):
        self.name = "fixed:" + str(answer)
        self.answer = answer

    def live_tools(self, trace):
        return None

    def continue_run(self, ctx):
        ctx.emit(Step(index=0, agent="reporter", kind="final_answer", content="Final answer: " + self.answer))
        return Continuation(self.answer)


def make(arg):
    return Fixed(arg or "0")
"""


def test_entry_point_plugin_executor(tmp_path, monkeypatch):
    dist = tmp_path / "whenpro_fixed-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: whenpro-fixed\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[whenpro.executors]\nfixed = whenpro_fixed_plugin:make\n")
    (tmp_path / "whenpro_fixed_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "fixed" in plugin_names()
    seed = seed_run("arith_team", 1)
    ex = get_executor(f"fixed:{seed.task.answer}")
    result = inject(seed, 5, "R.3", OfflineGenerator(), ex, now=NOW)
    assert result.counterfactual.extras["injection"]["executor"] == f"fixed:{seed.task.answer}"
    assert result.verdict.counterfactual_success and not result.verdict.decisive
    assert result.counterfactual.steps[-1].content == f"Final answer: {seed.task.answer}"


def test_counterfactual_round_trips_through_the_native_format(tmp_path):
    cf = run_inject(seed_run("arith_team", 1), 4, "R.3").counterfactual
    again = load_trace(write_trace(cf, tmp_path / "cf.json"))
    assert again.ground_truth == cf.ground_truth and again.steps == cf.steps
    assert again.extras["injection"] == cf.extras["injection"]
