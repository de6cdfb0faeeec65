"""Builds and injections that use a model, through the real openai SDK against the local
LLM test server (tests/support): the LLM generator is shown the agent's own earlier
steps as format examples and its output goes through the build's filters;
``--executor simulate`` control runs (an item is kept only when the control succeeds,
both recorded); ``build --executor simulate --model M`` and ``inject --base-url``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from test_replay import NOW, seed_run
from tests.support.fixtures import TEST_KEY
from tests.support.inject_model import InjectModel, step_answer
from whenpro_core.formats.native import write_trace
from whenpro_core.injection.executors import BuiltinExecutor
from whenpro_core.injection.inject import inject
from whenpro_core.injection.llm_generate import FORMAT_HEADING, LLMGenerator

GOLD = "11:55"


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "WHENPRO_"))}
    return {**env, "OPENAI_API_KEY": TEST_KEY, **extra}


def _replaying_model(seed) -> InjectModel:
    """Plays arith_team as recorded; the reporter gives the gold answer only when every
    recorded step before it is in its prompt unchanged (a control run), else 12:00."""
    by_coord = {s.coord: s for s in seed.steps}
    before_final = [s.content for s in seed.steps[1:-1] if s.content]

    def turn(agent: str, coord: str, prompt: str) -> dict:
        rec = by_coord[coord]
        if rec.kind == "final_answer":
            final = GOLD if all(c in prompt for c in before_final) else "12:00"
            return step_answer(f"Final answer: {final}", final_answer=final, ends_run=True)
        calls = [{"name": c.name, "arguments": c.arguments} for c in rec.tool_calls]
        return step_answer(rec.content or "", calls)

    return InjectModel(
        plan={"flaw": "Adds 65 minutes of lunch.", "wrong_result": "ends at 12:00"},
        rewrites=[
            {
                "content": "Computing total = sessions + breaks + 65 = 80 + 5 + 65.",
                "tool_calls": [{"name": "calculator", "arguments_json": '{"expression": "80 + 5 + 65"}'}],
            }
        ],
        turns=turn,
        tool=lambda calls, prompt: "150",
    )


def test_stage2_shows_the_agents_own_earlier_steps_as_format_examples(llm_server, llm_settings):
    seed = seed_run("arith_team", 1)
    oracle = _replaying_model(seed)
    llm_server.respond_with(oracle)
    inject(
        seed,
        4,
        "R.3",
        LLMGenerator("openai:gpt-4.1", settings=llm_settings("openai:gpt-4.1")),
        BuiltinExecutor(),
        now=NOW,
    )
    assert oracle.kinds() == ["stage1", "stage2"]
    stage2 = oracle.asked[1].prompt
    section = stage2[stage2.index(FORMAT_HEADING.format(agent="solver")) :]
    # the solver's own earlier steps, nearest first, quoted verbatim; nothing after step 4
    assert section.index("Computing breaks = (2 - 1) * 5.") < section.index("Computing sessions = 2 * 40.")
    assert "Write the new step in exactly this format" in section and "Computing end" not in stage2
    assert "Plan:" not in section  # another agent's step is no format example
    # the request that reached the server is the one the SDK sent (the test server saw it)
    assert any(FORMAT_HEADING.format(agent="solver") in json.dumps(r.body) for r in llm_server.answered)


def test_build_with_the_llm_generator_filters_its_output_and_counts_calls(llm_server, tmp_path):
    """A rewrite that says how it was made is asked again once, then dropped by the same
    construction-leak filter as an offline item; the manifest counts the model's calls."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    write_trace(seed_run("arith_team", 1), seeds / "s1.json")
    model = _replaying_model(seed_run("arith_team", 1))
    model.rewrites = [{"content": "I introduced an error here: total = 80 + 5 + 65.", "tool_calls": None}]
    llm_server.respond_with(model)
    ds = tmp_path / "ds"
    out = _cli(
        "build",
        str(seeds),
        "--out",
        str(ds),
        "--generator",
        "llm",
        "--model",
        "openai:gpt-4.1",
        "--modes",
        "R.3",
        "--keep-detectable",
        "-j",
        "1",
        env=_env(OPENAI_BASE_URL=llm_server.openai_base_url),
    )
    manifest = json.loads((ds / "manifest.json").read_text())
    assert out.returncode in (0, 1), out.stderr
    dropped = manifest["dropped"] if "dropped" in manifest else manifest["counts"]
    assert "construction_leak" in json.dumps(dropped), manifest
    assert model.kinds()[:3] == ["stage1", "stage2", "stage2"]  # asked again once, then filtered
    assert TEST_KEY not in out.stdout + out.stderr + (ds / "manifest.json").read_text()


def test_build_simulate_with_model_flag_keeps_items_whose_control_succeeds(llm_server, tmp_path):
    seed = seed_run("arith_team", 1)
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    write_trace(seed, seeds / "s1.json")
    model = _replaying_model(seed)
    llm_server.respond_with(model)
    ds = tmp_path / "ds"
    out = _cli(
        "build",
        str(seeds),
        "--out",
        str(ds),
        "--executor",
        "simulate",
        "--model",
        "openai:gpt-4.1",
        "--per-seed",
        "3",
        "--keep-detectable",
        "-j",
        "1",
        env=_env(OPENAI_BASE_URL=llm_server.openai_base_url),
    )
    assert out.returncode == 0, out.stderr
    manifest = json.loads((ds / "manifest.json").read_text())
    text = json.dumps(manifest)
    # --model reached the executor (no WHENPRO_MODEL, no config): the model played the other agents
    assert (manifest["options"]["executor"], manifest["options"]["model"]) == ("simulate", "openai:gpt-4.1")
    assert "turn" in model.kinds()
    kept = manifest["traces"]
    assert kept and all(t["control"] is True for t in kept), manifest
    # every item that reached its control run is counted; kept ones are those whose control succeeded
    assert manifest["control"]["ran"] >= len(kept) and manifest["control"]["succeeded"] >= len(kept)
    spent = manifest["model_calls"]  # the simulated continuations' calls, per kept trace
    assert spent["calls"] >= 1 and spent["calls_per_kept"] == round(spent["calls"] / len(kept), 2)
    assert spent["calls"] <= len(llm_server.answered)
    prov = (ds / "provenance.json").read_text()
    assert '"control"' in prov
    assert TEST_KEY not in out.stdout + out.stderr + text + prov


def test_build_simulate_drops_an_item_whose_control_fails(llm_server, tmp_path):
    seed = seed_run("arith_team", 1)
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    write_trace(seed, seeds / "s1.json")
    model = _replaying_model(seed)
    model.turns = lambda agent, coord, prompt: step_answer(
        "Final answer: 12:00", final_answer="12:00", ends_run=True
    )  # fails with or without the error
    llm_server.respond_with(model)
    ds = tmp_path / "ds"
    out = _cli(
        "build",
        str(seeds),
        "--out",
        str(ds),
        "--executor",
        "simulate",
        "--model",
        "openai:gpt-4.1",
        "--per-seed",
        "2",
        "--keep-detectable",
        "-j",
        "1",
        env=_env(OPENAI_BASE_URL=llm_server.openai_base_url),
    )
    manifest = json.loads((ds / "manifest.json").read_text())
    assert manifest["counts"].get("kept", 0) == 0, (out.stdout, manifest)
    assert manifest["dropped"]["control_failed"] >= 1, manifest
    assert manifest["control"]["ran"] >= 1 and manifest["control"]["succeeded"] == 0


def test_inject_takes_base_url(llm_server, tmp_path):
    seed = seed_run("arith_team", 1)
    seed_file = tmp_path / "seed.json"
    write_trace(seed, seed_file)
    model = _replaying_model(seed)
    llm_server.respond_with(model)
    out_file = tmp_path / "cf.json"
    run = _cli(
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
        "--base-url",
        llm_server.openai_base_url,
        "--out",
        str(out_file),
        env=_env(),
    )  # no OPENAI_BASE_URL: only the flag names the server
    assert run.returncode == 0, run.stderr
    assert model.kinds()[:2] == ["stage1", "stage2"] and "turn" in model.kinds()
    data = json.loads(Path(out_file).read_text())
    assert data["ground_truth"]["step"] == "4" and data["final_answer"] == "12:00"
    assert TEST_KEY not in run.stdout + run.stderr
