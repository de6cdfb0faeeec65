"""The core helpers behind the TUI's injection dialog and diff screen: which modes fit a
step (with reasons), which executors apply, an edited preview replayed as shown, the
headline of a verdict, finding a counterfactual's seed, and checking an attribution
against the injected step."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES, team_trace
from whenpro_core.attribution.heuristic import attribute_heuristic
from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.injection.choices import (
    NO_MUTATOR,
    default_executor,
    executor_choices,
    injectable_reason,
    mode_choices,
)
from whenpro_core.injection.diff import changed_lines
from whenpro_core.injection.executors import BuiltinExecutor
from whenpro_core.injection.generate import (
    InjectionRequest,
    OfflineGenerator,
    PreparedGenerator,
    edit_generated,
    parse_tool_calls,
    tool_calls_text,
)
from whenpro_core.injection.inject import inject
from whenpro_core.injection.provenance import (
    check_attribution,
    headline,
    injected_truth,
    load_seed,
    seed_candidates,
    verdict_of,
)
from whenpro_core.injection.verify import Verdict
from whenpro_core.trace.model import Attribution

ARITH = SAMPLES / "arith_team"


def seed(name: str = "arith_team-s1"):
    return load_trace(str(ARITH / f"{name}.json"))


def test_modes_offered_for_a_solver_step():
    trace = seed()
    modes = {m.code: m for m in mode_choices(trace, 4)}
    assert len(modes) == 17
    assert modes["R.3"].available and modes["R.3"].offline and modes["R.3"].reason is None
    assert modes["R.3"].meaning.startswith("Arithmetic, unit conversion")
    # a mutator that does not fit says what it needs
    assert not modes["A.2"].available and "fenced code block" in modes["A.2"].reason
    assert not modes["PL.1"].available and "numbered plan" in modes["PL.1"].reason
    # a mode without a mutator says to type text or use an llm
    assert not modes["P.1"].available and modes["P.1"].reason == NO_MUTATOR
    # with the user's own text or an llm every mode is available
    assert all(m.available for m in mode_choices(trace, 4, "text"))
    assert all(m.available for m in mode_choices(trace, 4, "llm:openai:gpt-4.1"))
    assert not mode_choices(trace, 4, "llm")[modes_index("A.2")].offline


def modes_index(code: str) -> int:
    return [m.code for m in mode_choices(seed(), 4)].index(code)


def test_framing_and_first_steps_cannot_be_replaced():
    trace = seed()
    assert "user's task" in injectable_reason(trace, 0)
    assert not any(m.available for m in mode_choices(trace, 0, "text"))
    assert injectable_reason(trace, 4) is None
    assert "no step #99" in injectable_reason(trace, 99)
    solo = team_trace()
    solo.steps = solo.steps[1:]  # the planner speaks first: nothing to replay before it
    for i, s in enumerate(solo.steps):
        s.index = i
    assert "first step" in injectable_reason(solo, 0)


def test_executor_choices_follow_the_trace():
    env_run = executor_choices(seed())
    assert env_run[0].kind == "builtin" and env_run[0].available and "arith_team" in env_run[0].label
    assert default_executor(seed()) == "builtin"
    foreign = executor_choices(team_trace())
    assert not foreign[0].available and "built-in environments" in foreign[0].reason
    assert default_executor(team_trace()) == "simulate"
    cmd = next(c for c in foreign if c.kind == "cmd")
    assert cmd.spec("python x.py --fast") == "cmd:python x.py --fast"
    sim = next(c for c in foreign if c.kind == "simulate")
    assert sim.spec("") == "simulate" and sim.spec("openai:gpt-4.1") == "simulate:openai:gpt-4.1"


def test_an_edited_preview_is_replayed_as_shown():
    trace = seed()
    gen = OfflineGenerator().generate(InjectionRequest(trace, 4, "R.3"))
    assert edit_generated(gen, gen.step.content) is gen  # untouched: the generator's own step
    text = tool_calls_text(gen.step.tool_calls)
    generated = gen.step.tool_calls[0].arguments["expression"]  # R.3's own change (a constant)
    assert generated != "80 + 5 + 70"
    calls = parse_tool_calls(text.replace(generated, "80 + 5 + 70"))
    edited = edit_generated(gen, "Computing total = sessions + breaks + 70 = 80 + 5 + 70.", calls)
    assert edited.generator == "offline+edited" and "edited by hand" in edited.description
    result = inject(trace, 4, "R.3", PreparedGenerator(edited, 4, "R.3"), BuiltinExecutor())
    step = result.counterfactual.steps[4]
    assert step.content.endswith("80 + 5 + 70.") and step.tool_calls[0].arguments == {"expression": "80 + 5 + 70"}
    assert step.observation == "155"  # the env ran the edited call
    assert result.verdict.decisive and result.counterfactual.extras["injection"]["generator"] == "offline+edited"
    with pytest.raises(ConfigError, match="prepared for step #4"):
        PreparedGenerator(edited, 4, "R.3").generate(InjectionRequest(trace, 5, "R.3"))


@pytest.mark.parametrize(
    "text, message",
    [
        ("[{", "not valid JSON: .* at line 1 column 3"),
        ('{"name": "x"}', "must be a JSON list"),
        ('[{"arguments": {}}]', r"at \$\[0\]: bad tool call"),
        ('[{"name": "x", "bogus": 1}]', r"at \$\[0\]: bad tool call"),
    ],
)
def test_bad_tool_call_edits_are_clear_errors(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_tool_calls(text)
    assert parse_tool_calls("  ") == []


def test_headlines():
    assert headline(Verdict(True, False, True, "", kept=True)).text == "now fails — decisive"
    assert headline(Verdict(True, True, False, "")).kind == "succeeds"
    assert headline(Verdict(True, True, False, "")).text == "still succeeds — not decisive"
    leak = headline(Verdict(True, False, True, "", revealing=["deliberately"], kept=False))
    assert (
        leak.kind == "not_kept" and "not kept: the injected text reveals" in leak.text and "'deliberately'" in leak.text
    )
    gold = headline(Verdict(True, False, True, "", gold_visible_before_t=True, kept=False))
    assert "not kept: the gold answer was visible" in gold.text
    assert headline(Verdict(False, False, False, "")).kind == "seed_failed"
    assert headline(Verdict(True, None, False, "")).kind == "unknown"


def test_seed_of_a_sample_counterfactual_and_attribution_check(tmp_path: Path):
    cf = load_trace(str(ARITH / "arith_team-s1__R.3__4.json"))
    assert seed_candidates(cf)[-1] == ARITH / "arith_team-s1.json"
    assert load_seed(cf).id == "arith_team-s1"
    assert verdict_of(cf).decisive and headline(verdict_of(cf)).text == "now fails — decisive"
    # the offline heuristic misses this one (a baseline): it blames the first calculation
    miss = check_attribution(cf, attribute_heuristic(cf))
    assert not miss.found and miss.text.startswith("heuristic named step 2 ✗") and "injected: step 4" in miss.text
    hit = check_attribution(cf, Attribution(agent="solver", step="4", mode="R.3", protocol="all-at-once"))
    assert hit.found and hit.agent_ok and hit.mode_ok and hit.text == "all-at-once found step 4 ✓ (solver, R.3)"
    wrong = check_attribution(cf, Attribution(agent="verifier", step="6", mode="V.2", protocol="all-at-once"))
    assert not wrong.found and wrong.text == "all-at-once named step 6 ✗ (verifier, V.2; injected: step 4)"
    # a counterfactual moved away from its seed: the error names the places tried
    shutil.copy(ARITH / "arith_team-s1__R.3__4.json", tmp_path / "cf.json")
    with pytest.raises(WhenproError, match="seed run 'arith_team-s1' not found"):
        load_seed(load_trace(str(tmp_path / "cf.json")))
    # a seed_ref relative to the counterfactual's folder is followed
    moved = load_trace(str(tmp_path / "cf.json"))
    (tmp_path / "seeds").mkdir()
    shutil.copy(ARITH / "arith_team-s1.json", tmp_path / "seeds" / "run.json")
    moved.extras["injection"]["seed_ref"] = "seeds/run.json"
    write_trace(moved, tmp_path / "cf.json")
    assert load_seed(load_trace(str(tmp_path / "cf.json"))).id == "arith_team-s1"
    with pytest.raises(WhenproError, match="no injection provenance"):
        load_seed(seed())


def test_injected_truth_of_a_caught_injection():
    cf = load_trace(str(ARITH / "arith_team-s0__R.3__2.json"))
    assert cf.ground_truth is None
    truth = injected_truth(cf)
    assert (truth.agent, truth.step, truth.mode) == ("solver", "2", "R.3")
    assert injected_truth(seed()) is None


def test_changed_lines():
    a = "Step 4\ncontent: 80 + 5 + 60\nobservation: 145"
    b = "Step 4\ncontent: 80 + 6 + 60\nobservation: 146\nextra"
    assert changed_lines(a, b) == ({1, 2}, {1, 2, 3})
    assert changed_lines("same", "same") == (set(), set())
