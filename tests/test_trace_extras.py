"""The typed records of ``Trace.extras`` (trace/extras.py): the injection provenance
(``Trace.injection``) and the built-in environment run (``Trace.env_run``). They read what
whenpro wrote before they existed, write back exactly what they read, and read odd or
foreign records without raising. (tests/test_samples_arith.py checks that the samples
written through them today are byte-identical to the committed ones.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from whenpro_core.envs import env_for_trace
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import dumps_trace
from whenpro_core.formats.otel import agent_spans
from whenpro_core.injection.provenance import injected_truth, seed_candidates, verdict_of
from whenpro_core.storage.jsonio import dumps
from whenpro_core.trace.extras import ControlRun, EnvRun, Injection
from whenpro_core.trace.model import Trace

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces" / "arith_team"
COUNTERFACTUALS = sorted(p for p in SAMPLES.glob("*__*.json"))
SEEDS = sorted(p for p in SAMPLES.glob("*.json") if "__" not in p.stem)


def test_the_bundled_counterfactuals_exist() -> None:
    assert len(COUNTERFACTUALS) >= 4, COUNTERFACTUALS


@pytest.mark.parametrize("path", COUNTERFACTUALS, ids=lambda p: p.stem)
def test_a_saved_counterfactual_reads_typed_and_writes_back_byte_identical(path: Path) -> None:
    cf = load_trace(str(path))
    before = dumps_trace(cf)
    raw = dict(cf.extras["injection"])
    inj = cf.injection
    assert inj is not None
    # typed reads agree with the saved JSON
    assert (inj.seed_trace, inj.step, inj.step_index, inj.mode) == (
        raw["seed_trace"],
        raw["step"],
        raw["step_index"],
        raw["mode"],
    )
    assert inj.replay is not None and inj.replay.prefix_len == raw["replay"]["prefix_len"]
    verdict = verdict_of(cf)
    assert verdict is not None and verdict.decisive == raw["verdict"]["decisive"]
    cf.set_injection(inj)
    assert dumps(cf.extras["injection"]) == dumps(raw)  # same keys, same order, same values
    assert dumps_trace(cf) == before


def test_a_record_written_by_an_older_or_other_version_keeps_what_it_can() -> None:
    saved = {
        "seed_trace": "run-1",
        "step": 3,  # a coordinate saved as a number
        "step_index": "three",  # wrong type: left out, the rest kept
        "agent": "Solver",
        "mode": "R.3",
        "future_field": {"kept": [1, 2]},
        "continuation": {"model": "m", "usage": {"calls": 2, "cost_usd": 0.25}, "speakers": "recorded"},
        "usage": {"calls": 1, "cost_usd": 0.5},
    }
    cf = Trace(id="cf", extras={"injection": saved})
    inj = cf.injection
    assert inj is not None
    assert (inj.step, inj.step_index, inj.agent) == ("3", None, "Solver")
    assert inj.model_extra == {"future_field": {"kept": [1, 2]}}
    assert inj.spent().calls == 3 and inj.spent().cost_usd == 0.75
    truth = injected_truth(cf)
    assert truth is not None and (truth.step, truth.agent, truth.mode) == ("3", "Solver", "R.3")
    cf.set_injection(inj)
    written = cf.extras["injection"]
    assert "step_index" not in written and written["future_field"] == {"kept": [1, 2]}
    assert written["continuation"] == {"model": "m", "usage": {"calls": 2, "cost_usd": 0.25}, "speakers": "recorded"}


@pytest.mark.parametrize(
    "extras",
    [{}, {"injection": None}, {"injection": ["x"]}, {"injection": {"step": "1"}}, {"injection": {"seed_trace": 7}}],
)
def test_a_trace_without_a_usable_record_has_none(extras: dict[str, object]) -> None:
    trace = Trace(id="t", extras=extras)
    assert trace.injection is None
    assert verdict_of(trace) is None and injected_truth(trace) is None and seed_candidates(trace) == []


def test_a_malformed_verdict_or_control_does_not_raise() -> None:
    cf = Trace(id="cf", extras={"injection": {"seed_trace": "s", "verdict": "yes", "control": {"success": "perhaps"}}})
    inj = cf.injection
    assert inj is not None and inj.verdict is None and inj.control is None
    assert verdict_of(cf) is None


def test_writing_adds_only_what_was_set_in_field_order() -> None:
    cf = Trace(id="cf", extras={"env": {"termination": "final_answer"}})
    cf.set_injection(Injection(seed_trace="s", mode="fix", step="2", step_index=2, agent=None))
    assert list(cf.extras["injection"]) == ["seed_trace", "step", "step_index", "agent", "mode"]
    inj = cf.injection
    assert inj is not None
    inj.control = ControlRun(success=True, detail="ok")
    cf.set_injection(inj)
    assert cf.extras["injection"]["control"] == {"success": True, "detail": "ok"}
    assert inj.replay is None and Injection.read(cf.extras["injection"]) == inj
    cf.set_injection(None)
    assert "injection" not in cf.extras and cf.extras["env"] == {"termination": "final_answer"}


@pytest.mark.parametrize("path", SEEDS + COUNTERFACTUALS, ids=lambda p: p.stem)
def test_the_env_run_of_a_saved_trace_reads_typed_and_writes_back_byte_identical(path: Path) -> None:
    trace = load_trace(str(path))
    before = dumps_trace(trace)
    raw = dict(trace.extras["env"])
    run = trace.env_run
    assert run is not None and (run.name, run.seed, run.task) == (raw["name"], raw["seed"], raw["task"])
    env = env_for_trace(trace)
    assert env is not None and env.task_from_trace(trace).seed == raw["seed"]
    # a counterfactual's env block has its own termination and no checker's word
    assert ("check" in raw) == (path in SEEDS)
    trace.set_env_run(run)
    assert dumps(trace.extras["env"]) == dumps(raw)
    assert dumps_trace(trace) == before


def test_an_env_block_that_is_not_a_run_is_none() -> None:
    for env in (None, "arith_team", {"seed": 1}, {"name": 3}):
        trace = Trace(id="t", extras={"env": env})
        assert trace.env_run is None and env_for_trace(trace) is None
    odd = Trace(id="t", extras={"env": {"name": "elsewhere", "seed": "x", "extra": 1}})
    run = odd.env_run
    assert run == EnvRun(name="elsewhere", extra=1) and env_for_trace(odd) is None


OTEL_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "otel"


def test_the_agent_spans_of_an_otel_trace_read_back_as_spans() -> None:
    framed = []
    for path in sorted(OTEL_FIXTURES.glob("*.json")):
        trace = load_trace(str(path))
        if trace.extras.get("agent_spans"):
            framed.append(trace)
            assert [s.raw() for s in agent_spans(trace)] == trace.extras["agent_spans"], path.name
    assert framed, "no fixture with agent spans"
    trace = framed[0]
    trace.extras["agent_spans"] = ["not a span", {"span_id": 3}, *trace.extras["agent_spans"]]
    assert len(agent_spans(trace)) == len(trace.extras["agent_spans"]) - 2
    assert agent_spans(Trace(id="t", extras={"agent_spans": {"span_id": "a"}})) == []
