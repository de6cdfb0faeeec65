"""``--protocol counterfactual``: rank, correct, replay, check; the earliest fixing step is
the verdict. End to end offline on built-in traces (reference policy + builtin replay),
through a ``cmd:`` executor and through ``simulate``, the last two with the model behind
the local LLM test server asked to fix the step."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from conftest import REPO
from test_replay import run_inject, seed_run
from test_replay_cmd import example, tally_run  # noqa: F401  (fixture)
from tests.support.inject_model import InjectModel, step_answer
from tests.support.judge_oracle import wants_structured
from tests.support.llm_wire import prompt_text
from whenpro_core.attribution.counterfactual import (
    FIX_ASK,
    Correction,
    LLMFixCorrector,
    ReferenceCorrector,
    attribute_counterfactual,
)
from whenpro_core.attribution.verdicts import verdicts_path
from whenpro_core.errors import ConfigError
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.injection.generate import OfflineGenerator
from whenpro_core.injection.inject import inject
from whenpro_core.injection.registry import get_executor
from whenpro_core.injection.simulate import SimulateExecutor
from whenpro_core.trace.model import Trace
from whenpro_core.trace.score import score_prediction


def _decisive(env: str, seed: int, index: int, mode: str) -> Trace:
    result = run_inject(seed_run(env, seed), index, mode)
    assert result.verdict.decisive, result.verdict.detail
    return result.counterfactual


@pytest.mark.parametrize(
    ("env", "seed", "index", "mode"),
    [
        ("arith_team", 1, 4, "R.3"),
        ("arith_team", 3, 1, "PL.1"),
        ("arith_team", 2, 10, "R.3"),  # seed 8 step 11 until R.3 changed constants (issue 28 round 3)
        ("code_pair", 7, 1, "A.3"),
    ],
)
def test_offline_on_built_in_traces_finds_the_injected_step(env: str, seed: int, index: int, mode: str) -> None:
    cf = _decisive(env, seed, index, mode)
    seen: list[str] = []
    verdict, run = attribute_counterfactual(
        cf, get_executor("builtin"), ReferenceCorrector(), on_try=lambda t: seen.append(f"{t.coord}:{t.outcome}")
    )
    assert score_prediction(cf, verdict).step and verdict.step == cf.steps[index].coord
    assert verdict.protocol == "counterfactual" and verdict.confidence == 0.9
    assert run.fixed_index == index and run.fixing_trace is not None and run.fixing_trace.outcome.value == "success"
    assert f"{cf.steps[index].coord}:fixed" in seen
    assert seen == [f"{e['coord']}:{e['outcome']}" for e in verdict.evidence]
    # every earlier step was tested and needed no correction; exactly one replay ran before the fix was confirmed
    assert all(e["outcome"] == "unchanged" for e in verdict.evidence if e["index"] < index)
    assert all(e["executor"] == "builtin" for e in verdict.evidence)


class _WrongFirst:
    """Corrects every step but ``right`` with a step that is still wrong (to exercise the bounds)."""

    name = "wrong-first"

    def __init__(self, right: int) -> None:
        self.right = right

    def correct(self, trace: Trace, index: int) -> Correction:
        if index == self.right:
            return ReferenceCorrector().correct(trace, index)
        step = trace.steps[index].model_copy(
            update={"content": "Final answer: 7", "kind": "final_answer", "tool_calls": []}
        )
        return Correction(step, note="a wrong correction")


def test_max_replays_bounds_the_search_and_says_the_verdict_is_unverified() -> None:
    cf = _decisive("arith_team", 1, 4, "R.3")
    verdict, run = attribute_counterfactual(
        cf, get_executor("builtin"), _WrongFirst(4), ranking=[2, 3, 4], max_replays=2
    )
    assert [t.outcome for t in run.tries] == ["still failing", "still failing"] and run.fixed_index is None
    assert verdict.step == "2" and verdict.confidence == 0.1 and any("not verified" in w for w in verdict.warnings)
    verdict, run = attribute_counterfactual(
        cf, get_executor("builtin"), _WrongFirst(4), ranking=[2, 3, 4], max_replays=3
    )
    assert verdict.step == "4" and run.fixed_index == 4


def test_a_trace_without_gold_is_refused_in_one_line() -> None:
    cf = _decisive("arith_team", 1, 4, "R.3")
    no_answer = cf.task.model_copy(update={"answer": None})
    bare = cf.model_copy(update={"framework": "other", "extras": {}, "task": no_answer})
    with pytest.raises(ConfigError, match="no gold answer"):
        attribute_counterfactual(bare, get_executor("builtin"), ReferenceCorrector())


def test_cli_end_to_end_offline(tmp_path) -> None:
    cf = _decisive("arith_team", 3, 1, "PL.1")
    path = tmp_path / "cf.json"
    write_trace(cf, path)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "attribute",
            str(path),
            "--protocol",
            "counterfactual",
            "--json",
            "--labels",
            "--max-replays",
            "4",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout)
    assert rec["attribution"]["step"] == "1" and rec["score"]["step"] is True
    assert rec["attribution"]["evidence"][-1]["outcome"] == "fixed"
    assert "step 1 (planner): corrected and replayed: fixed" in out.stderr
    saved = verdicts_path(load_trace(path))
    assert saved is not None
    assert json.loads(saved.read_text().splitlines()[0])["attribution"]["protocol"] == "counterfactual"


# ---------------------------------------------------------------- with a model that fixes steps


def _fixer(seed: Trace, model: InjectModel | None = None) -> Any:
    """A test-server responder: a fix question is answered with the seed run's own step at
    that coordinate (the correct one); anything else goes to ``model``."""
    asked: list[str] = []

    def respond(body: dict[str, Any]) -> Any:
        prompt = prompt_text(body)
        m = re.search(re.escape(FIX_ASK) + r" (\S+) \(agent", prompt)
        if m:
            asked.append(m.group(1))
            step = seed.step_by_coord(m.group(1))
            assert step is not None
            ans = {
                "content": step.content or "",
                "tool_calls": [{"name": c.name, "arguments_json": json.dumps(c.arguments)} for c in step.tool_calls],
            }
            if wants_structured(body):
                return ans
            return InjectModel._rewrite_text({**ans, "tool_calls": ans["tool_calls"]})
        assert model is not None, prompt[:200]
        return model(body)

    respond.asked = asked  # type: ignore[attr-defined]
    return respond


def test_through_a_cmd_executor_with_the_model_fixing_the_step(llm_server, llm_settings, tally_run) -> None:  # noqa: F811
    result = inject(tally_run, 5, "C.2", OfflineGenerator(), example())  # a premature final answer
    cf = result.counterfactual
    assert result.verdict.decisive
    fixer = _fixer(tally_run)
    llm_server.respond_with(fixer)
    verdict, run = attribute_counterfactual(
        cf, example(), LLMFixCorrector("openai:gpt-4.1", settings=llm_settings()), ranking=[5, 1, 2]
    )
    assert verdict.step == "5" and run.fixed_index == 5 and score_prediction(cf, verdict).step
    assert run.fixing_trace is not None and run.fixing_trace.final_answer == "1667"
    # 5 fixed first; then the earlier candidates were checked: the model kept them as they were
    assert fixer.asked == ["5", "1", "2"] and [t.outcome for t in run.tries] == ["fixed", "unchanged", "unchanged"]
    assert verdict.usage.calls == 3 and verdict.evidence[0]["executor"].startswith("cmd:")


def test_through_simulate_with_the_local_test_server(llm_server, llm_settings) -> None:
    seed = seed_run("arith_team", 1)
    cf = _decisive("arith_team", 1, 4, "R.3")

    def turn(agent: str, coord: str, prompt: str) -> dict[str, Any]:
        step = seed.step_by_coord(coord)
        assert step is not None and step.agent == agent
        final = step.content.split(":", 1)[1].strip() if step.kind == "final_answer" else None
        return step_answer(
            step.content or "",
            [{"name": c.name, "arguments": c.arguments} for c in step.tool_calls],
            final_answer=final,
            ends_run=step.kind == "final_answer",
        )

    model = InjectModel(turns=turn)
    llm_server.respond_with(_fixer(seed, model))
    settings = llm_settings()
    verdict, run = attribute_counterfactual(
        cf,
        SimulateExecutor("openai:gpt-4.1", settings=settings),
        LLMFixCorrector("openai:gpt-4.1", settings=settings),
        ranking=[4],
    )
    assert verdict.step == "4" and run.fixed_index == 4 and score_prediction(cf, verdict).step
    assert run.fixing_trace is not None and run.fixing_trace.final_answer == seed.final_answer
    tried = run.tries[0]
    assert tried.outcome == "fixed" and tried.calls >= 1 + len([k for k in model.kinds() if k == "turn"])
    assert verdict.evidence[0]["executor"] == "simulate:openai:gpt-4.1"


def test_cli_ranks_with_an_llm_protocol_and_fixes_with_the_model(llm_server, monkeypatch, tmp_path, capsys) -> None:
    """``--rank all-at-once --model M``: the judge's step is tried first; the model fixes
    steps, the builtin executor replays; everything over the real SDK to the test server."""
    from tests.support.fixtures import TEST_KEY
    from tests.support.judge_oracle import oracle_for
    from whenpro_core.cli.attribute import AttributeOptions, counterfactual_command

    seed = seed_run("arith_team", 1)
    cf = _decisive("arith_team", 1, 4, "R.3")
    oracle = oracle_for(cf)
    llm_server.respond_with(_fixer(seed, oracle))  # fix questions to the fixer, the judge's to the oracle
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    path = tmp_path / "cf.json"
    write_trace(cf, path)
    counterfactual_command(
        str(path),
        AttributeOptions(
            model="openai:gpt-4.1",
            executor="builtin",
            rank="all-at-once",
            max_replays=4,
            budget_usd=None,
            as_json=True,
            save=False,
            no_cache=True,
        ),
    )
    out = capsys.readouterr()
    rec = json.loads(out.out)
    tries = rec["attribution"]["evidence"]
    assert rec["attribution"]["step"] == "4" and tries[0]["coord"] == "4" and tries[0]["outcome"] == "fixed"
    assert all(t["outcome"] == "unchanged" for t in tries[1:]) and [t["coord"] for t in tries[1:]] == ["1", "2", "3"]
    assert rec["attribution"]["model"] == "llm-fix:openai:gpt-4.1" and rec["attribution"]["usage"]["calls"] == 5
    assert "Ranked by all-at-once first (step 4)" in rec["attribution"]["reason"]
    assert "step 4 (solver): corrected and replayed: fixed" in out.err


def _first_decisive_of_a_styled_run() -> tuple[Trace, int]:
    """A decisive injection into a run with its own wording style (as `whenpro run` makes
    them): the first (step, mode) of seed runs 0.. whose injection fails the run."""
    from whenpro_core.envs import get_env
    from whenpro_core.envs.run import run_env
    from whenpro_core.injection.mutators import applicable_modes

    for seed in range(6):
        run = run_env(get_env("arith_team"), seed)
        assert isinstance(run.extras["env"]["task"].get("style"), int)  # not a plain run
        for index in range(3, len(run.steps) - 1):  # late enough for earlier steps to be tried
            for mode in applicable_modes(run, index):
                result = run_inject(run, index, mode)
                if result.verdict.decisive:
                    return result.counterfactual, index
    raise AssertionError("no decisive injection in six styled runs")


def test_a_styled_run_is_corrected_in_its_own_wording() -> None:
    """Regression (fresh-user report): on runs with a wording style, the reference policy
    redid every earlier step in the plain wording, so step 1 always 'fixed' the run (the
    replay from it regenerated the injected step too). It must redo in the run's style:
    earlier steps need no correction and the injected step is found."""
    cf, index = _first_decisive_of_a_styled_run()
    verdict, run = attribute_counterfactual(cf, get_executor("builtin"), ReferenceCorrector())
    assert run.fixed_index == index and verdict.step == cf.steps[index].coord
    assert all(e["outcome"] == "unchanged" for e in verdict.evidence if e["index"] < index)
    assert {e["index"] for e in verdict.evidence} >= set(range(1, index))  # every earlier step was tried


def test_a_run_that_succeeded_has_nothing_to_attribute(tmp_path) -> None:
    path = tmp_path / "ok.json"
    write_trace(seed_run("arith_team", 1), path)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "whenpro_core.cli",
            "attribute",
            str(path),
            "--protocol",
            "counterfactual",
            "--json",
            "--no-save",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    verdict = json.loads(out.stdout)["attribution"]
    assert verdict["step"] is None and any("no decisive error" in w for w in verdict["warnings"])
