"""Every LLM path of whenpro against a real OpenAI-compatible server and a real model:
llama-cpp-python's server with SmolLM2-135M-Instruct (``tests/support/real_model.py``;
skipped with the reason when ``whenpro[local]`` is not installed).

A 135M model rarely answers well; these tests hold whenpro to what it promises whatever
the model says: each run ends with verdicts or records (empty fields allowed) or a
per-item error that names its cause, never a crash, a hang or an untouched retry loop,
and no request ever overflows the server's window (the server would answer HTTP 400).
The exact checks stay with the test server (``tests/support/llm_server.py``). Few and
small: short traces, a 1,024-token window, 32 answer tokens, one server for the session,
the protocols of a bench in one run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, team_trace
from tests.support.cli import run_whenpro
from tests.support.live_writer import dump_lines
from tests.support.real_model import REAL_WINDOW, pid_alive, whenpro_env
from whenpro_core.formats.native import write_trace

pytestmark = [pytest.mark.xdist_group("real_model"), pytest.mark.slow, pytest.mark.timeout(3600)]

RUN_S = 3000.0  # bounds a hang only; a loaded 2-core machine takes minutes for a few calls
SAMPLES = REPO / "sample_traces"


def small_trace(path: Path) -> Path:
    """The made-up team trace cut to its first four steps (three agent steps to judge)."""
    trace = team_trace("team-small")
    trace.steps = trace.steps[:4]
    return write_trace(trace, path)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def parse_rate(rows: list[dict]) -> str:
    """``read/total``: records whose verdict names an agent or a step."""
    read = sum(1 for r in rows if (r.get("prediction") or {}).get("agent") or (r.get("prediction") or {}).get("step"))
    return f"{read}/{len(rows)}"


def who_and_when_trace(real_traces: Path, folder: Path) -> Path:
    """Who&When Algorithm-Generated 93.json (6 entries, about 1,000 tokens: longer than the
    window) copied into ``folder``; skips when the real traces are absent."""
    source = real_traces / "who-and-when" / "Who&When" / "Algorithm-Generated" / "93.json"
    if not source.is_file():
        pytest.skip(f"not present: {source}")
    folder.mkdir(exist_ok=True)
    return Path(shutil.copy(source, folder / source.name))


def _bench(real_model, dataset: Path, out: Path, *options: str):
    return run_whenpro(
        "bench",
        str(dataset),
        *options,
        "--model",
        real_model.model,
        "--base-url",
        real_model.base_url,
        "--out",
        str(out),
        "-j",
        "1",
        env=whenpro_env(real_model),
        timeout=RUN_S,
    )


def test_every_protocol_in_a_bench_then_its_resume(real_model, real_traces, tmp_path):
    """The four protocols on a made-up trace and a Who&When trace longer than the window:
    eight records, each a verdict (fields may be empty); the rerun resumes (no call)."""
    folder = tmp_path / "ds"
    who_and_when_trace(real_traces, folder)
    small_trace(folder / "team-small.json")
    out = tmp_path / "results.jsonl"
    protocols = ("--protocol", "all-at-once,step-by-step,binary-search,hybrid")
    first = _bench(real_model, folder, out, *protocols)
    assert first.returncode == 0, first.stderr
    rows = records(out)
    assert sorted(r["protocol"] for r in rows) == sorted(["all-at-once", "binary-search", "hybrid", "step-by-step"] * 2)
    # a verdict, or (all-at-once only) the one line saying the trace does not fit and which protocol would
    failed = [r for r in rows if r["error"] is not None]
    assert all(
        r["protocol"] == "all-at-once" and "does not fit the model's context window" in r["error"] for r in failed
    )
    assert all("binary-search" in r["error"] and "\n" not in r["error"] for r in failed), failed
    assert all(r["prediction"]["usage"]["calls"] >= 1 for r in rows if r["error"] is None)
    long = [r["prediction"] for r in rows if r["trace"]["id"] != "team-small" and r["error"] is None]
    assert all(any("context window" in w for w in p["warnings"]) for p in long), [p["warnings"] for p in long]
    # the parse rate counts the records that were judged: a record failed before any call is not one
    judged = [r for r in rows if r["error"] is None]
    assert f"verdicts read: {parse_rate(judged).replace('/', ' of ')} name an agent or a step" in first.stderr
    again = _bench(real_model, folder, out, *protocols)
    assert again.returncode == 0, again.stderr
    assert "8 already in" in again.stderr and "0 to run" in again.stderr
    assert len(records(out)) == 8


def test_the_whowhen_preset_on_a_trace_longer_than_the_window(real_model, real_traces, tmp_path):
    """--preset whowhen, its three protocols in one bench, on the Who&When trace longer
    than the window: a verdict each (fields may be empty), every request cut to fit."""
    trace = who_and_when_trace(real_traces, tmp_path / "ds")
    out = tmp_path / "results.jsonl"
    result = _bench(
        real_model, trace, out, "--preset", "whowhen", "--protocol", "all-at-once,step-by-step,binary-search"
    )
    assert result.returncode == 0, result.stderr
    rows = records(out)
    assert sorted(r["protocol"] for r in rows) == [
        "whowhen:all-at-once",
        "whowhen:binary-search",
        "whowhen:step-by-step",
    ]
    assert all(r["error"] is None and r["prediction"]["usage"]["calls"] >= 1 for r in rows), [r["error"] for r in rows]


def _attribute_json(real_model, path: Path, *options: str) -> dict:
    """``attribute PATH OPTIONS --json`` on the real server: the verdict (status 0 asserted)."""
    result = run_whenpro(
        "attribute",
        str(path),
        *options,
        "--model",
        real_model.model,
        "--base-url",
        real_model.base_url,
        "--json",
        env=whenpro_env(real_model),
        timeout=RUN_S,
    )
    assert result.returncode == 0, (options, result.stderr)
    verdict = json.loads(result.stdout)["attribution"]
    assert verdict["usage"]["calls"] >= 1 and verdict["model"] == real_model.model
    return verdict


def test_the_whowhen_pro_preset(real_model, real_traces, tmp_path):
    """--preset whowhen-pro on a Who&When Pro sample laid out as its release (taxonomy.yaml
    beside data/): a verdict (fields may be empty)."""
    samples, release = real_traces / "who-when-pro-samples", real_traces / "who-when-pro-jsonl"
    if not (samples / "data").is_dir() or not (release / "taxonomy.yaml").is_file():
        pytest.skip(f"Who&When Pro samples not present at {samples}")
    root = tmp_path / "samples"
    shutil.copytree(samples / "data", root / "data")
    shutil.copy(release / "taxonomy.yaml", root / "taxonomy.yaml")
    _attribute_json(real_model, root / "data" / "traces" / "macnet_triangle.json", "--preset", "whowhen-pro")


def test_a_trace_longer_than_the_window(real_model, tmp_path):
    """all-at-once says in one line that it does not fit and which protocol would;
    binary search then answers it, each call showing only the steps it asks about."""
    trace = team_trace("team-long", n_extra=12)
    for step in trace.steps[7:]:
        step.content = f"Step {step.index}: checked the arithmetic again; " + "nothing new to report. " * 40
    path = write_trace(trace, tmp_path / "long.json")
    common = ("--model", real_model.model, "--base-url", real_model.base_url, "--json")
    whole = run_whenpro("attribute", str(path), "--protocol", "all-at-once", *common, env=whenpro_env(real_model))
    assert whole.returncode == 2
    assert "does not fit the model's context window" in whole.stderr and "binary-search" in whole.stderr
    assert whole.stderr.strip().count("\n") == 0
    halves = run_whenpro(
        "attribute",
        str(path),
        "--protocol",
        "binary-search",
        *common,
        env=whenpro_env(real_model),
        timeout=RUN_S,
    )
    assert halves.returncode == 0, halves.stderr
    verdict = json.loads(halves.stdout)["attribution"]
    assert verdict["step"] is not None and any("context window" in w for w in verdict["warnings"])


def test_inject_with_the_llm_generator_and_simulate(real_model, tmp_path):
    seed = SAMPLES / "arith_team" / "arith_team-s1.json"
    out = tmp_path / "cf.json"
    result = run_whenpro(
        "inject",
        str(seed),
        "--step",
        "2",
        "--mode",
        "R.3",
        "--generator",
        "llm",
        "--executor",
        "simulate",
        "--max-calls",
        "3",
        "--max-steps",
        "6",
        "--model",
        real_model.model,
        "--base-url",
        real_model.base_url,
        "--out",
        str(out),
        env=whenpro_env(real_model),
        timeout=RUN_S,
    )
    # the injected run is verified or refused with its reason; either way one clear ending
    assert result.returncode in (0, 1, 2), result.stderr
    if result.returncode == 0:
        assert out.is_file() and json.loads(out.read_text())["extras"]["injection"]["generator"].startswith("llm:")
    else:
        assert result.stderr.strip() and "Traceback" not in result.stderr


def test_build_with_the_llm_generator_completes_its_attempts(real_model, tmp_path):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    shutil.copy(SAMPLES / "arith_team" / "arith_team-s1.json", seeds)
    ds = tmp_path / "ds"
    result = run_whenpro(
        "build",
        str(seeds),
        "--out",
        str(ds),
        "--generator",
        "llm",
        "--model",
        real_model.model,
        "--base-url",
        real_model.base_url,
        "--modes",
        "R.3",
        "--keep-detectable",
        "-j",
        "1",
        env=whenpro_env(real_model),
        timeout=RUN_S,
    )
    assert result.returncode in (0, 1), result.stderr  # 1: none kept, with the reasons
    manifest = json.loads((ds / "manifest.json").read_text())
    assert manifest and "Traceback" not in result.stderr


def test_counterfactual_with_a_model(real_model, tmp_path):
    path = tmp_path / "trace.json"
    shutil.copy(SAMPLES / "arith_team" / "arith_team-s0__R.3__2.json", path)
    result = run_whenpro(
        "attribute",
        str(path),
        "--protocol",
        "counterfactual",
        "--model",
        real_model.model,
        "--base-url",
        real_model.base_url,
        "--max-replays",
        "2",
        "--json",
        env=whenpro_env(real_model),
        timeout=RUN_S,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["attribution"]["protocol"] == "counterfactual"


def test_the_live_judge_follows_a_run(real_model, tmp_path):
    trace = team_trace("team-live")
    trace.steps = trace.steps[:4]
    header = {"format": "whenpro.trace/1", "id": trace.id, "framework": trace.framework}
    header |= {"task": trace.task.model_dump(mode="json"), "agents": [a.model_dump() for a in trace.agents]}
    steps = [s.model_dump(mode="json", exclude={"index", "raw"}) for s in trace.steps]
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(dump_lines([header, *steps])))
    result = run_whenpro(
        "watch",
        str(path),
        "--model",
        real_model.model,
        "--base-url",
        real_model.base_url,
        "--budget-calls",
        "2",
        "--idle-timeout",
        "2",
        env=whenpro_env(real_model),
        timeout=RUN_S,
    )
    # 1: it flagged a decisive error; 3: nothing flagged and the run (no outcome in its header) ended without one
    assert result.returncode in (0, 1, 3), result.stderr
    assert "judged step" in result.stdout or "DECISIVE" in result.stdout or "budget exhausted" in result.stdout


def test_a_local_model_reuses_the_running_server(real_model, tmp_path):
    """``--model local:smollm2`` finds the session's server (listed in the cache folder)
    instead of starting another, and leaves it running."""
    path = small_trace(tmp_path / "t.json")
    result = run_whenpro(
        "attribute",
        str(path),
        "--model",
        "local:smollm2",
        "--json",
        "--no-save",
        env=whenpro_env(real_model, WHENPRO_CACHE_DIR=str(real_model.cache_dir)),
        timeout=RUN_S,
    )
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)["attribution"]
    assert verdict["model"] == "local:smollm2" and verdict["usage"]["calls"] == 1
    assert pid_alive(real_model.server.pid)
    assert len(list(real_model.cache_dir.glob("local-server-*.log"))) <= 2  # the session's (and a restart's) only


def test_models_probe_of_the_real_server(real_model):
    result = run_whenpro(
        "models",
        "--probe",
        "--model",
        real_model.model,
        "--base-url",
        real_model.base_url,
        env={k: v for k, v in real_model.env.items() if k != "WHENPRO_CONTEXT_WINDOW"},
    )
    assert result.returncode == 0, result.stderr
    assert "models        smollm2" in result.stdout
    assert "structured    json_object (json_schema refused)" in result.stdout
    # llama-cpp-python's server reports no window; whenpro knows it only for servers it started
    assert "context       not reported" in result.stdout
    assert real_model.server.context_window == REAL_WINDOW
