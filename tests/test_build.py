"""``whenpro build``: seeds from ``whenpro run`` -> a Who&When Pro dataset (both layouts)
-> ``whenpro ls``/walk -> ``whenpro bench`` -> report; resuming after a kill; the
manifest's stage counts; imported traces through a ``cmd:`` executor."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from statistics import mean

import pytest

from conftest import REPO
from tests.support.cli import one_line_error, run_whenpro
from whenpro_core.bench.records import read_records
from whenpro_core.dataset.build import BuildOptions, run_attempt, run_build
from whenpro_core.dataset.build_plan import Attempt, attempt_order, candidate_steps, fitting_modes, scan_seeds
from whenpro_core.dataset.build_store import BUILD_DIR, PUBLIC_FIELDS, read_manifest
from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env
from whenpro_core.formats import load_trace, walk
from whenpro_core.formats.native import write_trace
from whenpro_core.formats.whowhen_pro_write import check_round_trip, to_document
from whenpro_core.injection.cmd_executor import CommandExecutor
from whenpro_core.injection.executors import BuiltinExecutor
from whenpro_core.injection.generate import OfflineGenerator, TextGenerator
from whenpro_core.injection.replay import continued_trace, warm_start
from whenpro_core.trace.model import Agent, Step, Task, ToolCall, Trace

NOW = "2026-01-02T03:04:05+00:00"
SALT = "test-salt"
MODE_CODE = re.compile(r"(?<![\w.])(?:P|PL|R|A|V|C)\.\d(?![\d])")


def whenpro(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=180, env=env
    )


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> Path:
    """Three arith_team and two code_pair reference runs (all successful)."""
    folder = tmp_path_factory.mktemp("seeds")
    for name, n in (("arith_team", 3), ("code_pair", 2)):
        env = get_env(name)
        for s in range(n):
            write_trace(run_env(env, s), folder / f"{name}-s{s}.json")
    return folder


def build(seeds: Path, out: Path, **kw) -> dict:
    opts = BuildOptions(**{"per_seed": 3, "concurrency": 2, "detect": False, **kw})  # the filter: test_build_detect
    return asyncio.run(run_build(seeds, out, opts, now=NOW, salt=SALT)).manifest


def tree(root: Path) -> dict[str, bytes]:
    """Every dataset file (not the build's own folder) -> its bytes (manifest without
    its update time)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not rel.startswith(BUILD_DIR):
            data = p.read_bytes()
            if p.name == "manifest.json":
                doc = json.loads(data)
                doc.pop("updated")
                data = json.dumps(doc, sort_keys=True).encode()
            out[rel] = data
    return out


# ---------------------------------------------------------------------- planning


def test_step_sampling_skips_framing_errored_and_final_steps_and_respects_fitting_modes(seeds):
    trace = load_trace(seeds / "arith_team-s0.json")
    trace.steps[3].error = "ToolError: division by zero"
    cands = candidate_steps(trace)
    assert 0 not in cands and 3 not in cands and len(trace.steps) - 1 not in cands  # not the final answer
    assert cands == [s.index for s in trace.steps[1:-1] if s.index != 3]
    fits = fitting_modes(trace, ("R.3", "A.1", "PL.1"))
    plans = [s.index for s in trace.steps if s.kind == "plan" and "1." in s.content]
    assert all(("PL.1" in m) == (i in plans) for i, m in fits.items())
    order = attempt_order(trace, fits, seed=0)
    assert order == attempt_order(trace, fits, seed=0) != attempt_order(trace, fits, seed=1)
    assert len(order) == sum(len(m) for m in fits.values()) == len(set(order))
    first = order[: len(fits)]
    assert len({i for i, _ in first}) == len(fits)  # every step once before any step twice
    tried = Counter(m for _, m in first)
    assert max(tried.values()) - min(tried.values()) <= len(fits)  # the least-tried mode first


def test_unsuccessful_and_unreadable_seeds_are_skipped_with_reasons(tmp_path, seeds):
    failed = load_trace(seeds / "arith_team-s0.json").model_copy(update={"id": "bad-run"})
    failed.final_answer, failed.outcome = "0", failed.outcome.failure
    write_trace(failed, tmp_path / "bad-run.json")
    (tmp_path / "junk.json").write_text("{not json")
    short = load_trace(seeds / "arith_team-s0.json").model_copy(update={"id": "short-run"}, deep=True)
    short.steps = short.steps[:2] + short.steps[-1:]  # the plan and the answer: 2 agent steps
    for n, st in enumerate(short.steps):
        st.index, st.coord = n, str(n)
    write_trace(short, tmp_path / "short-run.json")
    found = {s.id: s.skip for s in scan_seeds(tmp_path)}
    assert found == {"bad-run": "not_success", "junk": "unreadable", "short-run": "trivial"}


# ---------------------------------------------------------------------- end to end


def test_run_build_ls_bench_report_end_to_end(tmp_path):
    """The user's path, as subprocesses: run -> build -> ls -> bench -> report, with the
    report's numbers computed again by hand from the predictions and the labels."""
    assert whenpro("run", "arith_team", "--n", "3", "--seed", "0", "--out", str(tmp_path / "seeds")).returncode == 0
    assert whenpro("run", "code_pair", "--n", "4", "--seed", "0", "--out", str(tmp_path / "seeds")).returncode == 0
    ds = tmp_path / "ds"
    done = whenpro(
        "build", str(tmp_path / "seeds"), "--out", str(ds), "-j", "2", "--max-mode-share", "1", "--keep-detectable"
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"7 seed traces, 7 used; \d+ attempts planned, 0 already done, up to \d+ to run", done.stdout)
    again = whenpro(
        "build", str(tmp_path / "seeds"), "--out", str(ds), "-j", "2", "--max-mode-share", "1", "--keep-detectable"
    )
    assert again.returncode == 0 and "up to 0 to run" in again.stdout, again.stdout  # it said "85 to run"
    manifest = json.loads((ds / "manifest.json").read_text())
    kept = manifest["traces"]
    # at most one per seed run; a first step that hands in its answer is dropped as trivial (issue 14)
    assert len(kept) == manifest["counts"]["kept"] >= 3 and len(kept) <= 7
    assert len({t["seed"] for t in kept}) == len(kept) and manifest["warnings"] == []
    assert f"kept {len(kept)}" in done.stdout
    provenance = json.loads((ds / "provenance.json").read_text())["traces"]
    assert set(provenance) == {t["id"] for t in kept}
    for command in ("info", "ls"):  # named by itself it said "0 traces", status 0, as if an empty dataset
        alone = whenpro(command, str(ds / "provenance.json"))
        assert alone.returncode == 2 and "provenance sidecar holds no traces" in alone.stderr, alone.stderr

    hidden = whenpro("ls", str(ds), "--json")
    assert hidden.returncode == 0 and '"gt_' not in hidden.stdout  # labels hidden by default
    listed = whenpro("ls", str(ds), "--json", "--labels")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert not [r for r in rows if r.get("error")]  # manifest.json and provenance.json are not bad trace files
    assert "warning" not in listed.stderr  # whenpro's own frameworks read back without notes
    assert sorted((r["id"], r["gt_step"], r["gt_mode"]) for r in rows) == sorted(
        (t["id"], t["step"], t["mode"]) for t in kept
    )
    for t in kept:
        path = ds / t["ref"]
        assert re.fullmatch(r"[0-9a-f]{16}", t["id"]) and path.name == f"{t['id']}.json"  # opaque
        assert path.parts[-5:-1] == ("data_release", "text", f"whenpro-{t['framework'].split('_')[0]}", t["framework"])
        doc = json.loads(path.read_text())
        assert set(doc) <= set(PUBLIC_FIELDS) and "injection" not in doc and "env" not in doc
        visible = json.dumps({k: v for k, v in doc.items() if k != "ground_truth"})
        assert not MODE_CODE.search(visible) and not MODE_CODE.search(t["ref"]), t  # the label only in ground_truth
        assert not any(k in e for e in doc["trajectory"] for k in ("is_injected", "is_replayed"))
        trace = load_trace(path)
        gt = trace.ground_truth
        assert (gt.agent, gt.step, gt.mode) == (t["agent"], t["step"], t["mode"]) and gt.reason
        assert set(trace.extras) <= {"eval_status"} and not any(s.hidden for s in trace.steps)
        step = trace.steps[gt.step_index]
        assert step.coord == gt.step and step.agent == gt.agent
        record = provenance[t["id"]]
        assert record["mode"] == t["mode"] and record["injection"]["step"] == t["step"]
        assert record["markers"][str(gt.step_index)]["is_injected"] is True
        seed = load_trace(tmp_path / "seeds" / f"{t['seed']}.json")
        assert seed.step_by_coord(t["step"]).agent == t["agent"]  # labelled at the seed's own step
        assert record["injection"]["seed_ref"] == f"{t['seed']}.json"  # no local absolute paths
        assert str(tmp_path) not in path.read_text() and str(tmp_path) not in (ds / "provenance.json").read_text()

    res = tmp_path / "res.jsonl"
    bench = whenpro("bench", str(ds), "--protocol", "heuristic", "--out", str(res))
    assert bench.returncode == 0, bench.stderr
    assert f"{len(kept)} traces × 1 setting = {len(kept)} items" in bench.stderr
    assert "unknown framework" not in bench.stderr
    records, _ = read_records(res)
    report = json.loads((tmp_path / "res.report.json").read_text())["groups"][0]["overall"]
    # by hand: per-framework means for Agent/Step/Joint, macro-F1 over gold modes
    by_fw: dict[str, list] = {}
    pairs = []
    for rec in records:
        pred, gt = rec.prediction, load_trace(rec.ref).ground_truth
        agent = (pred.agent or "").lower() == gt.agent.lower()
        step = pred.step == gt.step
        mode = pred.mode == gt.mode
        by_fw.setdefault(rec.trace.framework, []).append((agent, step, agent and step and mode))
        pairs.append((gt.mode, pred.mode or "-"))
    f1 = []
    for c in sorted({g for g, _ in pairs}):
        tp = sum(g == c and p == c for g, p in pairs)
        fp = sum(g != c and p == c for g, p in pairs)
        fn = sum(g == c and p != c for g, p in pairs)
        f1.append(2 * tp / (2 * tp + fp + fn))
    assert report["n"] == len(kept) and report["frameworks"] == len(by_fw) == 2
    assert report["agent"] == pytest.approx(mean(mean(a for a, _, _ in v) for v in by_fw.values()))
    assert report["step"] == pytest.approx(mean(mean(s for _, s, _ in v) for v in by_fw.values()))
    assert report["joint"] == pytest.approx(mean(mean(j for _, _, j in v) for v in by_fw.values()))
    assert report["error"] == pytest.approx(mean(f1))
    assert report["agent_acc"] == pytest.approx(mean(a for v in by_fw.values() for a, _, _ in v))


def test_both_layouts_read_back_the_same_traces(tmp_path, seeds):
    files = build(seeds, tmp_path / "files")
    rows = build(seeds, tmp_path / "rows", layout="jsonl")  # the same salt: the same ids
    assert files["traces"] and [t["id"] for t in files["traces"]] == [t["id"] for t in rows["traces"]]
    for line in (tmp_path / "rows" / "data" / "text.jsonl").read_text().splitlines():
        row = json.loads(line)
        assert set(json.loads(row["extras"])) <= {"agents", "final_answer", "eval_status"}  # no injection record
    assert sorted(p.name for p in (tmp_path / "rows" / "data").iterdir()) == ["text.jsonl"]
    assert (tmp_path / "rows" / "taxonomy.yaml").is_file() and (tmp_path / "files" / "taxonomy.yaml").is_file()
    listed = {r.id: r for r in walk(tmp_path / "rows")}
    assert not [r for r in listed.values() if r.error]
    for a, b in zip(files["traces"], rows["traces"], strict=False):
        assert b["ref"] == f"data/text.jsonl#{a['id']}"
        assert (listed[a["id"]].gt_step, listed[a["id"]].gt_mode) == (a["step"], a["mode"])
        ta, tb = load_trace(tmp_path / "files" / a["ref"]), load_trace(tmp_path / "rows" / b["ref"])
        assert tb.source.format == "whowhen-pro-jsonl" and ta.source.format == "whowhen-pro"
        assert ta.model_dump(exclude={"source"}) == tb.model_dump(exclude={"source"})


def test_manifest_counts_add_up_and_name_every_drop(tmp_path, seeds):
    m = build(seeds, tmp_path / "ds", per_seed=40)  # every fitting (step, mode) pair
    c, d = m["counts"], m["dropped"]
    assert c["planned"] == c["attempted"] == len(m["dropped_traces"]) + c["kept"]
    assert c["attempted"] == c["generated"] + d["generate_failed"]
    assert c["generated"] == c["replayed"] + d["replay_failed"]
    assert c["replayed"] == c["decisive"] + d["not_decisive"]
    assert c["decisive"] == c["kept"] + sum(
        d[r]
        for r in (
            "construction_leak",
            "gold_visible_before_t",
            "trivial",
            "not_representable",
            "control_failed",
            "adversarial",
            "step_class",
            "mode_share",
            "position",
            "form_pick",
            "per_seed",
        )
    )
    assert d["not_decisive"] > 0 and c["kept"] > 0
    assert d["mode_share"] + d["step_class"] + d["position"] > 0  # balancing left some out
    assert max(m["kept_by_mode"].values()) <= max(1, 0.25 * c["kept"])
    assert m["warnings"] and "twins" in m["warnings"][0]
    assert Counter(t["reason"] for t in m["dropped_traces"]) == +Counter(d)
    assert sum(m["kept_by_mode"].values()) == c["kept"] == sum(m["kept_by_framework"].values())
    assert m["seeds"] == {"found": 5, "used": 5, "skipped": {}, "skipped_list": []}
    on_disk = sorted((tmp_path / "ds" / "data_release").rglob("*.json"))
    assert sorted(p.stem for p in on_disk) == sorted(t["id"] for t in m["traces"])


def test_a_failing_executor_is_a_replay_drop_and_the_build_goes_on(tmp_path, seeds):
    crash = f"cmd:{sys.executable} -c 'import sys; sys.exit(3)'"
    m = build(seeds, tmp_path / "ds", executor=crash, per_seed=1, modes=("R.3",))
    assert m["counts"]["attempted"] == m["counts"]["planned"] == m["dropped"]["replay_failed"] >= 5
    assert m["counts"]["kept"] == 0
    assert all("exited" in t["detail"] or "before" in t["detail"] for t in m["dropped_traces"])


def test_generation_failure_and_construction_leak_are_dropped_by_stage(seeds):
    trace = load_trace(seeds / "arith_team-s0.json")
    last = trace.steps[-1]
    assert last.agent == "reporter"
    attempt = Attempt(str(seeds / "arith_team-s0.json"), trace.id, last.index, last.coord, "R.3")
    opts = BuildOptions()
    leak = run_attempt(
        trace,
        attempt,
        TextGenerator("Final answer: 1 (I deliberately used a wrong value)"),
        BuiltinExecutor(),
        opts,
        now=NOW,
    )
    assert (leak.entry.status, leak.entry.reason) == ("dropped", "construction_leak") and leak.doc is None
    assert "deliberately" in leak.entry.detail
    framing = Attempt(attempt.seed_ref, trace.id, 0, "0", "R.3")
    refused = run_attempt(trace, framing, OfflineGenerator(), BuiltinExecutor(), opts, now=NOW)
    assert refused.entry.reason == "generate_failed" and "not an agent's step" in refused.entry.detail


def test_round_trip_check_refuses_coordinates_the_shape_cannot_hold():
    steps = [
        Step(index=0, coord=None, agent="user", kind="user", content="q"),
        Step(index=1, coord="a1", agent="x", content="hello"),
        Step(index=2, coord="a2", agent="y", content="bye"),
    ]
    trace = Trace(id="odd", framework="mine", task=Task(query="q", answer="1"), steps=steps)
    assert check_round_trip(trace, to_document(trace)) == ["step coordinates are neither all integers nor all R.P"]
    plan = trace.model_copy(deep=True)
    for s, c in zip(plan.steps[1:], ("1", "2"), strict=False):
        s.coord = c
    plan.steps[1].kind = "plan"
    plan.steps[1].tool_calls = [ToolCall(name="search", arguments={"q": "x"})]
    assert check_round_trip(plan, to_document(plan)) == ["step 1: tool_calls differs"]


def test_imported_traces_through_a_cmd_executor(tmp_path):
    """A run of the shipped example system (not a built-in env) as the seed; the build
    replays it through ``--executor cmd:...``."""
    example = [sys.executable, str(REPO / "examples" / "replay_executor.py")]
    query = "Add up these expenses: rent 1200, food 340, travel 85, books 42. What is the total?"
    task_only = Trace(
        id="tally",
        framework="example-tally",
        agents=[Agent(id="user"), Agent(id="adder"), Agent(id="checker")],
        task=Task(query=query, answer="1667"),
        steps=[Step(index=0, coord="0", agent="user", kind="user", content=query)],
    )
    run = continued_trace(task_only, warm_start(task_only, 1, None, CommandExecutor(example, message_timeout=20)))
    write_trace(run, tmp_path / "seeds" / "tally.json")
    m = build(tmp_path / "seeds", tmp_path / "ds", executor="cmd:" + " ".join(example), per_seed=1, max_mode_share=1.0)
    # The checker recomputes the task's sum and has the adder start over, so every error an
    # offline mutator can make in this system's own way is caught (and the adder, which
    # never answers, is not offered a premature final answer): replayed, none decisive.
    assert m["counts"]["replayed"] == m["counts"]["attempted"] >= 4 and m["counts"]["kept"] == 0
    assert m["dropped"]["not_decisive"] == m["counts"]["attempted"]
    assert all("still succeeds" in t["detail"] for t in m["dropped_traces"])
    assert not (tmp_path / "ds" / "data_release").exists() or not list((tmp_path / "ds" / "data_release").rglob("*"))


# ---------------------------------------------------------------------- resuming


KILLER = textwrap.dedent("""
    import asyncio, os, sys
    from whenpro_core.dataset.build import BuildOptions, run_build

    seeds, out, stop, layout = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

    def hook(n):
        if n >= stop:
            os._exit(137)          # as hard as a kill: no cleanup, no manifest

    asyncio.run(run_build(seeds, out, BuildOptions(per_seed=3, layout=layout, concurrency=2),
                          after_record=hook, now=sys.argv[5], salt=sys.argv[6]))
""")


@pytest.mark.parametrize("layout", ["files", "jsonl"])
def test_killed_build_resumes_without_duplicates_or_losses(tmp_path, seeds, layout):
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ds = tmp_path / "ds"
    killed = subprocess.run(
        [sys.executable, str(script), str(seeds), str(ds), "4", layout, NOW, SALT],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert killed.returncode == 137, killed.stderr
    journal = [json.loads(line) for line in (ds / BUILD_DIR / "journal.jsonl").read_text().splitlines()]
    assert len(journal) == 1 + 4 and not (ds / "manifest.json").exists()
    if layout == "files":  # a file written by an attempt whose journal line never came
        stray = ds / "data_release" / "text" / "whenpro-arith" / "arith_team" / "0123456789abcdef.json"
        stray.parent.mkdir(parents=True, exist_ok=True)
        stray.write_text("{}")
    resumed = whenpro(
        "build", str(seeds), "--out", str(ds), "--per-seed", "3", "--layout", layout, "-j", "2", "--keep-detectable"
    )  # one journal line per attempt; the filter's own lines: test_build_detect
    assert resumed.returncode == 0, resumed.stderr
    assert re.search(r"(\d+) attempts planned, 4 already done", resumed.stdout)
    planned = read_manifest(ds)["counts"]["planned"]  # the first round's plan and the adaptive rounds'
    keys = [json.loads(line).get("key") for line in (ds / BUILD_DIR / "journal.jsonl").read_text().splitlines()[1:]]
    assert len(keys) == len(set(keys)) <= planned
    fresh = tmp_path / "fresh"
    build(seeds, fresh, layout=layout)
    assert tree(ds) == tree(fresh)  # same files, byte for byte: nothing lost, nothing twice
    again = whenpro(
        "build", str(seeds), "--out", str(ds), "--per-seed", "3", "--layout", layout, "-j", "2", "--keep-detectable"
    )
    assert again.returncode == 0, again.stderr
    after = (ds / BUILD_DIR / "journal.jsonl").read_text().splitlines()[1:]
    assert len(after) == len(keys) and tree(ds) == tree(fresh)  # every round's attempts were done: none ran


def test_interrupted_in_process_run_keeps_its_manifest_consistent(tmp_path, seeds):
    def stop(n):
        if n == 30:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        asyncio.run(
            run_build(
                seeds, tmp_path / "ds", BuildOptions(per_seed=3, concurrency=1), after_record=stop, now=NOW, salt=SALT
            )
        )
    partial = read_manifest(tmp_path / "ds")
    assert partial["counts"]["attempted"] == 30 and partial["counts"]["planned"] > 30 and partial["traces"]
    # the stopped build's release looked finished (a user benched and audited it unawares)
    assert partial["run"]["complete"] is False and "stopped before it finished" in partial["warnings"][0]
    for command in (("info", str(tmp_path / "ds")), ("audit", str(tmp_path / "ds"))):
        said = run_whenpro(*command).stderr
        assert "this build stopped before it finished" in said, (command, said)
    whole = build(seeds, tmp_path / "ds")
    fresh = build(seeds, tmp_path / "fresh")
    assert whole["counts"]["attempted"] == fresh["counts"]["attempted"] and whole["traces"] == fresh["traces"]
    assert whole["run"]["complete"] is True and not any("stopped" in w for w in whole["warnings"])
    assert "stopped before" not in run_whenpro("info", str(tmp_path / "ds")).stderr


def test_larger_per_seed_only_adds_attempts(tmp_path, seeds):
    journal = tmp_path / "ds" / BUILD_DIR / "journal.jsonl"
    small = build(seeds, tmp_path / "ds", per_seed=1)
    before = {json.loads(line).get("key") for line in journal.read_text().splitlines()[1:]}
    bigger = build(seeds, tmp_path / "ds", per_seed=3)
    after = {json.loads(line).get("key") for line in journal.read_text().splitlines()[1:]}
    assert before < after and bigger["counts"]["attempted"] == len(after) > small["counts"]["attempted"]
    assert len({t["seed"] for t in small["traces"]}) == len(small["traces"])  # one per seed run by default


def test_a_build_resumed_with_other_modes_describes_every_mode_it_holds(tmp_path, seeds):
    """The journal keeps the first run's attempts and the release selects from all of them,
    but the manifest said ``run.modes`` were the second run's alone, and ``planned`` (the
    second run's plan) was below ``attempted`` (both runs)."""
    journal = tmp_path / "ds" / BUILD_DIR / "journal.jsonl"
    build(seeds, tmp_path / "ds", modes=("R.1", "R.2"), per_seed=2)
    again = build(seeds, tmp_path / "ds", modes=("A.1", "A.2"), per_seed=2)
    attempted = {json.loads(line)["key"].rsplit("|", 1)[1] for line in journal.read_text().splitlines()[1:]}
    assert {"R.1", "R.2"} <= attempted <= {"R.1", "R.2", "A.1", "A.2"}  # the first run's attempts are still there
    assert again["run"]["modes"][:2] == ["A.1", "A.2"] and set(again["run"]["modes"]) >= attempted
    assert again["counts"]["planned"] >= again["counts"]["attempted"]


# ---------------------------------------------------------------------- the command


def test_command_line_errors_are_one_line(tmp_path, seeds):
    ds = tmp_path / "ds"
    assert one_line_error(out := whenpro("build", str(seeds), "--out", str(ds), "--modes", "P.1"))
    assert "no offline mutator for mode P.1" in out.stderr
    llm = whenpro("build", str(seeds), "--out", str(ds), "--generator", "llm", "--model", "openai:gpt-4.1")
    assert one_line_error(llm) and "no API key for openai:gpt-4.1" in llm.stderr
    assert one_line_error(whenpro("build", str(seeds), "--out", str(ds), "--layout", "parquet"))
    assert one_line_error(whenpro("build", str(tmp_path / "nowhere"), "--out", str(ds)))
    (tmp_path / "empty").mkdir()
    empty = whenpro("build", str(tmp_path / "empty"), "--out", str(ds))
    assert one_line_error(empty) and "no traces found" in empty.stderr
    assert not ds.exists()  # nothing written by a refused build
    for inside in (seeds / "sub", seeds, seeds.parent):  # the next build read the release as seed runs
        refused = whenpro("build", str(seeds), "--out", str(inside), "--force")
        assert one_line_error(refused) and "the seed runs' folder" in refused.stderr, refused.stderr
    assert not (seeds / "sub").exists()
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    refused = whenpro("build", str(seeds), "--out", str(other))
    assert one_line_error(refused) and "not a whenpro build" in refused.stderr
    build(seeds, ds, per_seed=1)
    old = {p.name for p in (ds / "data_release").rglob("*.json")}
    changed = whenpro("build", str(seeds), "--out", str(ds), "--per-seed", "1", "--seed", "7")
    assert one_line_error(changed) and "seed 0 -> 7" in changed.stderr
    over = whenpro("build", str(seeds), "--out", str(ds), "--per-seed", "1", "--seed", "7", "--force")
    assert over.returncode == 0, over.stderr
    assert read_manifest(ds)["options"]["seed"] == 7
    assert old and not old & {p.name for p in (ds / "data_release").rglob("*.json")}  # old build removed


def test_no_tenth_of_the_runs_holds_more_than_its_share_of_the_labels():
    """The position balance: labels crowded at one relative position (here 6 of 10 at
    the first tenth) are cut to POSITION_SHARE of the release (at least 2); entries of an
    old journal without a step count are never cut for position."""
    from whenpro_core.dataset.build_store import POSITION_SHARE, balance, position_tenth
    from whenpro_core.dataset.journal import Entry

    def entry(i: int, index: int, steps: int | None = 10) -> Entry:
        return Entry(
            key=f"k{i}",
            seed=f"s{i}",
            seed_ref="r",
            step=str(index),
            step_index=index,
            mode="R.1",
            status="kept",
            id=f"id{i:02d}",
            steps=steps,
        )

    kept = [entry(i, 0) for i in range(6)] + [entry(6 + i, 2 + 2 * i) for i in range(4)]
    chosen, out = balance(kept, 0.99, {})
    tenths = [position_tenth(e) for e in chosen]
    assert tenths.count("0") == max(2, -(-POSITION_SHARE * len(chosen) // 1)) < 6
    assert set(out.values()) == {"position"} and len(out) == len(kept) - len(chosen)
    assert balance([entry(i, 0, steps=None) for i in range(6)], 0.99, {})[1] == {}
    assert balance(kept, 1.0, {})[1] == {}  # --max-mode-share 1 turns the caps off
