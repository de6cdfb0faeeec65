"""Sub-agents as agents and the session-format variants of issue 31: Claude Code 1.0.x
inline sidechains and 2.1.x bookkeeping lines, Codex's older rollout format and
event-only prompts, ATIF sub-agent numbering and final answers.

Samples in tests/fixtures/ are written from each format's documentation (their README
says from what); the real files are in ../shared/real_traces (skipped when absent)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli import run_whenpro
from whenpro_core.formats import load_trace

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_1_0 = FIXTURES / "claude-code" / "sidechain-1.0.61.jsonl"
CODEX_LEGACY = FIXTURES / "codex-cli" / "rollout-2025-08-20T15-20-47-0198c1a2-7e3b-7d40-9a51-2f6c0e8b4d17.jsonl"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_lines(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- Claude Code


def test_claude_inline_sidechains_are_agents_named_from_their_task_call() -> None:
    trace = load_trace(CLAUDE_1_0)
    raw = _lines(CLAUDE_1_0)
    calls = [b for o in raw if o.get("type") == "assistant" for b in o["message"]["content"] if b.get("name") == "Task"]
    assert [a.id for a in trace.agents] == [
        "claude",
        "task-find-discount-code-handling",
        "task-find-checkout-total-tests",
    ]
    assert {a.role for a in trace.agents[1:]} == {"general-purpose"}
    task = next(s for s in trace.steps if any(c.name == "Task" for c in s.tool_calls))
    # each sub-agent's steps follow the Task step, in call order, though sub-agent B wrote first
    after = trace.steps[task.index + 1 :]
    owners = [s.meta.get("parent_tool_use_id") for s in after[:7]]
    assert owners == [calls[0]["id"]] * 4 + [calls[1]["id"]] * 3
    assert after[0].kind == "user" and after[0].content == calls[0]["input"]["prompt"]
    discount = [s for s in trace.steps if s.agent == "task-find-discount-code-handling"]
    assert [len(s.tool_calls) for s in discount] == [1, 1, 0]
    assert discount[1].error == "File does not exist."  # the sub-agent's own failed Read
    # no sidechain line is left under the main agent, no Task prompt as a main-line user turn
    side_text = {b.get("text") for o in raw if o.get("isSidechain") for b in o["message"]["content"] if "text" in b}
    assert not any(s.content in side_text for s in trace.steps if s.agent == "claude")
    assert [s.content for s in trace.steps if s.kind == "user" and "parent_tool_use_id" not in s.meta] == [
        trace.task.query
    ]
    assert trace.final_answer is not None and trace.final_answer.startswith("Fixed:")
    assert [s.coord for s in trace.steps] == [str(i) for i in range(len(trace.steps))]


def test_info_says_multi_agent_for_inline_sidechains() -> None:
    out = run_whenpro("info", str(CLAUDE_1_0), columns=200)
    assert out.returncode == 0, out.stderr
    assert "claude-code  (multi-agent)" in out.stdout
    assert "task-find-checkout-total-tests" in out.stdout


def test_a_sidechain_no_task_call_explains_is_its_own_agent(tmp_path: Path) -> None:
    """A sidechain whose Task call is not in the file (a resumed session) keeps its
    steps, as agent ``sidechain-1``, after the main step it followed."""
    raw = _lines(CLAUDE_1_0)
    prompt = next(o for o in raw if o.get("isSidechain"))["message"]["content"]  # sub-agent B's
    keep = ("msg_01SideB", "toolu_01GrepB", json.dumps(prompt))
    lines = raw[:2] + [o for o in raw if o.get("isSidechain") and any(k in json.dumps(o) for k in keep)]
    trace = load_trace(_write_lines(tmp_path / "resumed.jsonl", lines))
    assert [a.id for a in trace.agents] == ["claude", "sidechain-1"]
    assert [s.agent for s in trace.steps] == ["user", "user", "sidechain-1", "sidechain-1"]
    assert "multi-agent" not in run_whenpro("info", str(tmp_path / "resumed.jsonl"), columns=200).stdout


def test_claude_2_1_last_prompt_lines_are_no_bad_lines(real_traces: Path, tmp_path: Path) -> None:
    """Claude Code 2.1.x writes ``last-prompt`` (and title, mode) records: folded, counted,
    never a "skipped bad lines" warning."""
    src = real_traces / "claude-code" / "spotter" / "subagent.jsonl"
    lines = _lines(src)
    sid = lines[-1]["sessionId"]
    extra = [
        {"type": "last-prompt", "lastPrompt": "run the tests", "leafUuid": lines[-1]["uuid"], "sessionId": sid},
        {"type": "custom-title", "customTitle": "tests", "sessionId": sid},
    ]
    path = _write_lines(tmp_path / "s.jsonl", lines + extra)
    before, after = load_trace(src), load_trace(path)
    assert "whenpro_warnings" not in after.extras
    assert len(after.steps) == len(before.steps)
    assert after.extras["folded_lines"]["last-prompt"] == 1


# --------------------------------------------------------------------------- Codex


def test_codex_older_rollout_format() -> None:
    trace = load_trace(CODEX_LEGACY)
    raw = _lines(CODEX_LEGACY)
    assert trace.source.format == "codex-cli" and trace.id == f"codex-{raw[0]['id']}"
    assert trace.task.query == "Why does `make test` fail on a fresh checkout?"
    assert [s.kind for s in trace.steps] == ["system", "user", "action", "action", "assistant"]
    shell = trace.steps[2]
    assert shell.tool_calls[0].arguments["command"][-1] == "make test"
    assert shell.error == "exit code 2" and "ModuleNotFoundError" in (shell.observation or "")
    assert shell.meta["reasoning"].startswith("**Running the test target**")
    assert trace.final_answer == raw[-2]["content"][0]["text"]
    assert trace.extras["folded_lines"] == {"record_type/state": 5}
    assert trace.extras["session_meta"]["git"]["branch"] == "main"


def test_codex_prompts_kept_only_as_user_message_events(real_traces: Path, tmp_path: Path) -> None:
    """A rollout whose prompts are only ``event_msg``/``user_message`` lines: the task and
    the user steps come from the events; where a response item holds the prompt too it
    is one step, not two."""
    src = (
        real_traces
        / "codex-cli"
        / "codemie-code"
        / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
    )
    lines = _lines(src)
    prompts = [o["payload"]["message"] for o in lines if o["payload"].get("type") == "user_message"]
    full = load_trace(src)
    assert [s.content for s in full.steps if s.kind == "user"] == prompts  # each once
    only_events = [
        o
        for o in lines
        if not (
            o["type"] == "response_item"
            and o["payload"].get("role") == "user"
            and not o["payload"]["content"][0]["text"].startswith("#")
        )
    ]
    trace = load_trace(_write_lines(tmp_path / src.name, only_events))
    assert trace.task.query == prompts[0] == "show tools"
    assert [s.content for s in trace.steps if s.kind == "user"] == prompts
    assert len(trace.steps) == len(full.steps)


# --------------------------------------------------------------------------- ATIF

_SUMMARIZATION = "hello-world-context-summarization.trajectory"


def _sub_trajectory(name: str, steps: list[tuple[str, str]]) -> dict:
    return {
        "schema_version": "ATIF-v1.7",
        "session_id": f"sub-{name}",
        "agent": {"name": f"terminus-2-summarization-{name}", "version": "2.0.0", "extra": {"parent_session_id": "p"}},
        "steps": [{"step_id": i, "source": src, "message": text} for i, (src, text) in enumerate(steps, start=1)],
    }


def test_atif_sub_agent_steps_in_order_under_the_step(real_traces: Path, tmp_path: Path) -> None:
    """Harbor's summarisation step refers to three sub-trajectories (summary, questions,
    answers; the golden set keeps only the first: the other two are written here from the
    summary's shape): their steps follow the step as 5.1, 5.2, ... in reference order."""
    for f in (real_traces / "harbor-atif" / "harbor").glob(f"{_SUMMARIZATION}*.json"):
        shutil.copy(f, tmp_path / f.name)
    for name in ("questions", "answers"):
        doc = _sub_trajectory(name, [("user", f"{name} prompt"), ("agent", f"{name} reply"), ("agent", "done")])
        (tmp_path / f"{_SUMMARIZATION}.summarization-1-{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    trace = load_trace(tmp_path / f"{_SUMMARIZATION}.json")
    assert "whenpro_warnings" not in trace.extras
    under = [(s.coord, s.agent) for s in trace.steps if (s.coord or "").startswith("5.")]
    assert [c for c, _ in under] == [f"5.{i}" for i in range(1, 9)]
    assert [a for _, a in under] == [
        "user",
        "terminus-2-summarization-summary",
        "user",
        "terminus-2-summarization-questions",
        "terminus-2-summarization-questions",
        "user",
        "terminus-2-summarization-answers",
        "terminus-2-summarization-answers",
    ]
    coords = [s.coord for s in trace.steps]
    assert coords.index("5.8") + 1 == coords.index("6")
    assert trace.steps[coords.index("5.2")].meta["step_id"] == 5  # the child's own step id is kept


def test_atif_final_answer_written_as_a_finish_call_in_text(tmp_path: Path) -> None:
    doc = {
        "schema_version": "ATIF-v1.5",
        "session_id": "s1",
        "agent": {"name": "openhands", "version": "0.51"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "What is 2+2?"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "I computed it.\n\n<function=finish>\n<parameter=message>The answer is 4.</parameter>\n"
                "<parameter=task_completed>true</parameter>\n</function>",
            },
        ],
    }
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert load_trace(path).final_answer == "The answer is 4."
    doc["steps"][1]["message"] = "All files are in place.\n<function=finish>\n</function>"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert load_trace(path).final_answer == "All files are in place."


# --------------------------------------------------------------------------- mini-swe-agent

MINI = FIXTURES / "mini-swe-agent" / "textkit__textkit-17.traj.json"


def test_mini_swe_agent_keeps_reasoning_and_ends_with_the_fatal_provider_error() -> None:
    trace = load_trace(MINI)
    doc = json.loads(MINI.read_text(encoding="utf-8"))
    thinking = [m["reasoning_content"] for m in doc["messages"] if m["role"] == "assistant"]
    actions = [s for s in trace.steps if s.kind == "action"]
    assert [s.meta["reasoning"] for s in actions] == thinking
    last = trace.steps[-1]
    assert (last.agent, last.kind, last.coord) == ("environment", "error", "3")
    assert last.error is not None and last.error.startswith("BadRequestError: litellm.BadRequestError")
    assert "Traceback" in last.meta["traceback"]
    assert trace.outcome.value == "failure" and trace.final_answer is None
    out = run_whenpro("info", str(MINI), columns=200)
    assert out.returncode == 0, out.stderr
    assert "final answer  —" in out.stdout and "outcome       failure" in out.stdout


def test_mini_swe_agent_reasoning_on_the_saved_response_only(tmp_path: Path) -> None:
    doc = json.loads(MINI.read_text(encoding="utf-8"))
    for m in doc["messages"]:
        m.pop("reasoning_content", None)
        m.pop("provider_specific_fields", None)
    doc["info"] = {"mini_version": "2.2.7", "exit_status": "Submitted", "submission": "diff --git a/x b/x\n"}
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    trace = load_trace(path)
    assert [bool(s.meta.get("reasoning")) for s in trace.steps if s.kind == "action"] == [True, True]
    assert trace.steps[-1].kind == "action" and trace.final_answer == "diff --git a/x b/x\n"


# --------------------------------------------------------------------------- LangSmith


@pytest.mark.parametrize("name", ["langsmith_py_wrap_openai_reasoning.json", "langsmith_js_wrap_openai_default.json"])
def test_langsmith_batch_bodies_saved_as_a_json_list(real_traces: Path, tmp_path: Path, name: str) -> None:
    """The SDK sends creates and updates in separate requests; a capture saves the
    request bodies as a list: one trace, the same as the merged body."""
    src = real_traces / "langsmith" / "langsmith-sdk" / name
    body = json.loads(src.read_text(encoding="utf-8"))
    bodies = [{"post": body["post"]}, {"patch": body["patch"]}]
    path = tmp_path / "batches.json"
    path.write_text(json.dumps(bodies), encoding="utf-8")
    one, listed = load_trace(src), load_trace(path)
    assert listed.source.format == "langsmith"
    assert [(s.kind, s.agent, s.content, s.observation) for s in listed.steps] == [
        (s.kind, s.agent, s.content, s.observation) for s in one.steps
    ]
    assert listed.final_answer == one.final_answer and listed.final_answer
    assert [s.meta.get("usage") for s in listed.steps] == [s.meta.get("usage") for s in one.steps]


# --------------------------------------------------------------------------- convert --to atif


def test_convert_to_atif_keeps_cache_and_reasoning_token_counts(real_traces: Path, tmp_path: Path) -> None:
    """Claude Code usage (input tokens leave the cache reads and writes out): ATIF's
    prompt tokens hold all three, the cache reads are the cached tokens, the writes stay
    in ``extra``; Codex's cached input and reasoning tokens are kept the same way."""
    src = real_traces / "claude-code" / "VibeCodingTracker" / "claude_code.jsonl"
    usage = {o["message"]["id"]: o["message"]["usage"] for o in _lines(src) if o.get("type") == "assistant"}
    out = tmp_path / "claude.atif.json"
    assert run_whenpro("convert", str(src), str(out), "--to", "atif").returncode == 0
    final = json.loads(out.read_text(encoding="utf-8"))["final_metrics"]
    reads = sum(u["cache_read_input_tokens"] for u in usage.values())
    writes = sum(u["cache_creation_input_tokens"] for u in usage.values())
    assert final["total_cached_tokens"] == reads > 1_000_000
    assert final["extra"]["total_cache_creation_tokens"] == writes
    assert final["total_prompt_tokens"] == sum(u["input_tokens"] for u in usage.values()) + reads + writes
    assert final["total_completion_tokens"] == sum(u["output_tokens"] for u in usage.values())

    codex = real_traces / "codex-cli" / "VibeCodingTracker" / "codex.jsonl"
    trace = load_trace(codex)
    kept = [s.meta["usage"] for s in trace.steps if s.meta.get("usage")]
    out = tmp_path / "codex.atif.json"
    assert run_whenpro("convert", str(codex), str(out), "--to", "atif").returncode == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["final_metrics"]["total_cached_tokens"] == sum(u["cached_input_tokens"] for u in kept) > 0
    assert doc["final_metrics"]["extra"]["total_reasoning_tokens"] == sum(u["reasoning_output_tokens"] for u in kept)
    assert doc["final_metrics"]["total_prompt_tokens"] == sum(u["input_tokens"] for u in kept)  # cached included
    back = load_trace(out)  # and a round trip reads them again
    assert sum(s.meta["usage"]["cached_tokens"] for s in back.steps if s.meta.get("usage")) == sum(
        u["cached_input_tokens"] for u in kept
    )


# --------------------------------------------------------------------------- OpenHands

OPENHANDS_2024 = FIXTURES / "openhands" / "output-2024-history-pairs.jsonl"


def test_openhands_2024_output_with_history_as_action_observation_pairs(tmp_path: Path) -> None:
    line = json.loads(OPENHANDS_2024.read_text(encoding="utf-8"))
    trace = load_trace(OPENHANDS_2024)
    actions = [pair[0] for pair in line["history"]]
    assert [s.coord for s in trace.steps] == [str(a["id"]) for a in actions]
    assert [s.agent for s in trace.steps] == [a["source"] for a in actions]
    failing = trace.steps[3]
    assert failing.meta["exit_code"] == 1 and "AssertionError" in (failing.observation or "")
    assert trace.final_answer == "All done! What's next on the agenda?"
    assert trace.task.query == line["instruction"]
    assert trace.extras["git_patch"].startswith("diff --git")
    assert "******" not in json.dumps(trace.extras)
    # a bad event names its place in the pair
    line["history"][2][1]["observation"] = 7
    bad = tmp_path / "output.jsonl"
    bad.write_text(json.dumps(line) + "\n", encoding="utf-8")
    out = run_whenpro("info", str(bad))
    assert "$.history[2][1].observation" in out.stderr + out.stdout


def test_openhands_events_ending_with_an_agent_message_give_it_as_final_answer(
    real_traces: Path, tmp_path: Path
) -> None:
    src = real_traces / "openhands-trajectories" / "tests" / "runtime" / "trajs" / "basic_gui_mode.json"
    events = json.loads(src.read_text(encoding="utf-8"))
    last = [e for e in events if e.get("source") == "agent" and e.get("action") == "message"][-1]
    trace = load_trace(src)
    assert trace.final_answer == last["args"]["content"]
    assert trace.final_answer.startswith("I've created a complete Vue.js todo application")
    # an agent message followed by more agent actions is no final answer
    cut = tmp_path / "events.json"
    cut.write_text(json.dumps([e for e in events if e.get("id", 0) <= 13]), encoding="utf-8")
    assert load_trace(cut).final_answer is None


# --------------------------------------------------------------------------- Parquet rows (TracerTraj)


def _write_parquet(path: Path, docs: list[dict], *, history_as_json: bool) -> Path:
    """Who&When documents as a Parquet table, as the Hugging Face copies store them
    (``history`` a list of structs) or as JSON strings (TracerTraj-style exports)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = []
    for doc in docs:
        row = {k: doc.get(k) for k in ("question", "ground_truth", "question_ID", "mistake_agent", "mistake_reason")}
        row["mistake_step"] = str(doc["mistake_step"])
        history = [{"content": h.get("content"), "role": h.get("role"), "name": h.get("name")} for h in doc["history"]]
        row["history"] = json.dumps(history) if history_as_json else history
        rows.append(row)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize("history_as_json", [False, True])
def test_who_when_shaped_parquet_rows_read_as_the_json_files(
    real_traces: Path, tmp_path: Path, history_as_json: bool
) -> None:
    folder = real_traces / "who-and-when" / "Who&When" / "Algorithm-Generated"
    files = sorted(folder.glob("*.json"))[:3]
    docs = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    table = _write_parquet(tmp_path / "tracertraj.parquet", docs, history_as_json=history_as_json)
    for row, (src, doc) in enumerate(zip(files, docs, strict=True), start=1):
        want, got = load_trace(src), load_trace(f"{table}#{row}")
        assert got.id == f"tracertraj-{row}" and got.source.format == "whowhen-parquet"
        assert [(s.coord, s.agent, s.content) for s in got.steps] == [(s.coord, s.agent, s.content) for s in want.steps]
        assert got.ground_truth is not None and want.ground_truth is not None
        assert (got.ground_truth.agent, got.ground_truth.step) == (doc["mistake_agent"], str(doc["mistake_step"]))
        assert got.ground_truth.step == want.ground_truth.step
    out = run_whenpro("ls", str(table), "--labels", columns=200)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("tracertraj-") == 3


def test_bench_runs_on_a_parquet_table_offline(real_traces: Path, tmp_path: Path) -> None:
    folder = real_traces / "who-and-when" / "Who&When" / "Hand-Crafted"
    docs = [json.loads(f.read_text(encoding="utf-8")) for f in sorted(folder.glob("*.json"))[:4]]
    table = _write_parquet(tmp_path / "rows.parquet", docs, history_as_json=False)
    results = tmp_path / "results.jsonl"
    out = run_whenpro("bench", str(table), "--out", str(results), timeout=600)
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert sorted(r["trace"]["id"] for r in records) == [f"rows-{n}" for n in range(1, 5)]
    assert [r["trace"]["gt_step"] for r in sorted(records, key=lambda r: r["ref"])] == [
        str(d["mistake_step"]) for d in docs
    ]
    assert all(r["trace"]["labelled"] and r["prediction"]["step"] is not None for r in records)
    assert "Leaderboard" in out.stdout and (tmp_path / "report.json").is_file()


def test_a_parquet_table_of_other_rows_is_one_clear_line(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "other.parquet"
    pq.write_table(pa.Table.from_pylist([{"prompt": "hi", "answer": "ho"}]), path)
    out = run_whenpro("info", str(path))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "not Who&When-shaped rows (columns: prompt, answer)" in out.stderr


# --------------------------------------------------------------------------- Codex sub-agents

CODEX_TREE = FIXTURES / "codex-cli" / "sessions" / "2026" / "03" / "08"
CODEX_PARENT = next(CODEX_TREE.glob("rollout-*-019cc9d2-*.jsonl"))


def test_codex_spawned_agent_is_its_own_agent_after_the_spawn_step() -> None:
    trace = load_trace(CODEX_PARENT)
    assert [(a.id, a.role) for a in trace.agents] == [("codex", "main"), ("Hypatia", "explorer")]
    spawn = next(s for s in trace.steps if s.tool_calls and s.tool_calls[0].name == "spawn_agent")
    child = trace.steps[spawn.index + 1 : spawn.index + 4]
    assert [(s.agent, s.kind) for s in child] == [("user", "user"), ("Hypatia", "action"), ("Hypatia", "assistant")]
    assert all(s.meta["parent_call_id"] == spawn.tool_calls[0].id for s in child)
    assert child[0].content.startswith("Read ledger/dates.py")  # the child's prompt, not the parent's copy
    assert trace.steps[spawn.index + 4].tool_calls[0].name == "wait"
    assert sum(1 for s in trace.steps if s.kind == "user") == 2  # the forked copy of the parent's prompt is folded
    assert "multi-agent" in run_whenpro("info", str(CODEX_PARENT), columns=200).stdout


def test_codex_sub_agent_rollout_found_in_the_sessions_tree_or_warned(tmp_path: Path) -> None:
    tree = tmp_path / "sessions"
    (tree / "2026" / "03" / "08").mkdir(parents=True)
    (tree / "2026" / "03" / "09").mkdir(parents=True)
    parent = shutil.copy(CODEX_PARENT, tree / "2026" / "03" / "08" / CODEX_PARENT.name)
    alone = load_trace(parent)
    assert [a.id for a in alone.agents] == ["codex"]
    assert "no rollout of thread 019cc9d4-" in alone.extras["whenpro_warnings"][0]
    child = next(CODEX_TREE.glob("rollout-*-019cc9d4-*.jsonl"))
    shutil.copy(child, tree / "2026" / "03" / "09" / child.name)  # the child ran past midnight
    assert [a.id for a in load_trace(parent).agents] == ["codex", "Hypatia"]


# --------------------------------------------------------------------------- TRAIL

TRAIL = FIXTURES / "trail"
TRAIL_TRACE = next((TRAIL / "data" / "GAIA").glob("*.json"))


def test_trail_trace_with_its_annotation_file() -> None:
    trace = load_trace(TRAIL_TRACE)
    labels = json.loads(next((TRAIL / "processed_annotations_gaia").glob("*.json")).read_text(encoding="utf-8"))
    by_span = {s.meta["span_id"]: s for s in trace.steps}
    assert trace.source.format == "trail" and trace.outcome.value == "failure"
    assert [a.id for a in trace.agents] == ["CodeAgent.run", "ToolCallingAgent.run"]  # the search sub-agent
    gt = trace.ground_truth
    assert gt is not None
    # two HIGH errors: the earlier (the sub-agent's step, span c4) is the ground truth
    assert (gt.step, gt.agent, gt.mode) == (
        by_span["c4"].coord,
        "ToolCallingAgent.run",
        "Tool Output Misinterpretation",
    )
    assert set(gt.accepted.step) == {by_span[s].coord for s in ("c7", "c6", "c9")}
    assert len(trace.annotations) == len(labels["errors"]) and sum(a.decisive for a in trace.annotations) == 1


def test_trail_hugging_face_row_and_annotation_file_alone(tmp_path: Path) -> None:
    labels_file = next((TRAIL / "processed_annotations_gaia").glob("*.json"))
    row = {"trace": TRAIL_TRACE.read_text(encoding="utf-8"), "labels": labels_file.read_text(encoding="utf-8")}
    path = tmp_path / "row.json"
    path.write_text(json.dumps(row), encoding="utf-8")
    assert load_trace(path).ground_truth == load_trace(TRAIL_TRACE).ground_truth
    out = run_whenpro("info", str(labels_file))
    assert out.returncode == 2 and "a TRAIL annotation file" in out.stderr
    listed = run_whenpro("ls", str(TRAIL), columns=200)
    assert listed.returncode == 0 and listed.stdout.count("trail-") == 1 and "error" not in listed.stderr.lower()


def test_bench_and_report_rules_trail(tmp_path: Path) -> None:
    shutil.copytree(TRAIL, tmp_path / "trail")
    results = tmp_path / "r.jsonl"
    assert run_whenpro("bench", str(tmp_path / "trail"), "--out", str(results), timeout=600).returncode == 0
    record = json.loads(results.read_text(encoding="utf-8").splitlines()[0])
    errors = record["trace"]["gt_errors"]
    assert len(errors) == 4
    pred = record["prediction"]
    location = any(e["step"] == pred["step"] for e in errors)
    joint = any(e["step"] == pred["step"] and e["category"] == pred["mode"] for e in errors)
    out = run_whenpro("report", str(results), "--rules", "trail", columns=200)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.strip().startswith("heuristic") and "·" in line)
    cells = row.split()
    assert cells[-2:] == [f"{100.0 * location:.1f}", f"{100.0 * joint:.1f}"]


def test_trail_metrics_on_known_predictions() -> None:
    from whenpro_core.bench.records import Record, TraceMeta
    from whenpro_core.bench.trail_rules import trail_rows
    from whenpro_core.trace.model import Attribution

    def rec(n: int, errors: list[tuple[str, str]], step: str | None, mode: str | None) -> Record:
        meta = TraceMeta(id=f"t{n}", labelled=True, gt_errors=[{"step": s, "category": c} for s, c in errors])
        return Record(
            key=f"t{n}|heuristic|heuristic|gold",
            ref=f"t{n}",
            protocol="heuristic",
            model="heuristic",
            trace=meta,
            prediction=Attribution(step=step, mode=mode),
        )

    records = [
        rec(1, [("3", "A"), ("5", "B")], "5", "B"),  # location and joint
        rec(2, [("2", "A")], "2", "B"),  # location only; predicts B where gold has A
        rec(3, [("4", "B")], "1", "B"),  # category only
        rec(4, [("7", "A")], None, None),  # nothing
    ]
    (row,) = trail_rows(records)
    assert (row.records, row.location, row.joint) == (4, 0.5, 0.25)
    # A: support 3, tp 0 -> F1 0; B: support 2, tp 2 (t1, t3), fp 1 (t2) -> P 2/3, R 1, F1 0.8
    assert row.category_f1 == pytest.approx(2 * 0.8 / 5)


# --------------------------------------------------------------------------- MP-Bench


def _mp_bench(real_traces: Path, root: Path, flags: dict[str, list[int]]) -> tuple[dict, list[Path]]:
    """A real Who&When log as MP-Bench normalises it (its documented format), one file per
    annotator (``MP-Bench/<annotator>/manual/<file>.json``) flagging ``flags[annotator]``."""
    src = sorted((real_traces / "who-and-when" / "Who&When" / "Hand-Crafted").glob("*.json"))[0]
    doc = json.loads(src.read_text(encoding="utf-8"))
    paths = []
    for who, steps in flags.items():
        history = [
            {
                **h,
                "step": str(i),
                "fail_annotation": "1" if i in steps else "0",
                "fail_category": f"category-{who}" if i in steps else "",
                "fail_reason": f"{who} flags step {i}" if i in steps else "",
                "ideal_action": "",
            }
            for i, h in enumerate(doc["history"])
        ]
        out = {"is_correct": None, "question": doc["question"], "ground_truth": doc["ground_truth"]}
        out |= {"history": history, "system_prompt": {}}
        path = root / "MP-Bench" / who / "manual" / src.name
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(out), encoding="utf-8")
        paths.append(path)
    return doc, paths


def test_mp_bench_annotators_flags_are_accepted_alternatives(real_traces: Path, tmp_path: Path) -> None:
    doc, (a, b, c) = _mp_bench(real_traces, tmp_path, {"ann1": [7, 3], "ann2": [5], "ann3": []})
    trace = load_trace(a)
    gt = trace.ground_truth
    assert (
        gt is not None
        and trace.id == f"mpbench-ann1-manual-{a.stem}"
        and trace.benchmark in ("mp-bench", "gaia", "assistantbench")
    )
    assert (gt.step, gt.mode, gt.reason) == ("3", "category-ann1", "ann1 flags step 3")  # the earliest of its flags
    assert gt.agent == trace.steps[3].agent
    assert set(gt.accepted.step) == {"7", "5"}
    assert [(n.step, n.source) for n in trace.annotations] == [
        ("3", "mp-bench annotator ann1"),
        ("7", "mp-bench annotator ann1"),
        ("5", "mp-bench annotator ann2"),
    ]
    assert load_trace(b).ground_truth.step == "5"
    assert load_trace(c).ground_truth is None  # this annotator flagged nothing
    results = tmp_path / "r.jsonl"
    out = run_whenpro("bench", str(tmp_path / "MP-Bench"), "--out", str(results), timeout=600)
    assert out.returncode == 0, out.stderr
    records = [json.loads(x) for x in results.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert sorted(r["trace"]["gt_step"] for r in records if r["trace"]["labelled"]) == ["3", "5"]


# --------------------------------------------------------------------------- AgentErrorBench

AEB = FIXTURES / "agenterrorbench"


def test_agenterrorbench_label_marks_the_nth_assistant_step(tmp_path: Path) -> None:
    path = next((AEB / "Original_Failure_Trajectory").rglob("*.json"))
    label = json.loads((AEB / "Label" / "gaia_labels.json").read_text(encoding="utf-8"))[0]
    trace = load_trace(path)
    assistants = [s for s in trace.steps if s.kind == "assistant"]
    gt = trace.ground_truth
    assert gt is not None and trace.outcome.value == "failure" and trace.benchmark == "gaia"
    assert gt.step == assistants[label["critical_failure_step"] - 1].coord == "6"
    assert (gt.mode, gt.agent) == ("impossible_action", "assistant")
    listed = run_whenpro("ls", str(AEB), "--labels", columns=200)
    assert listed.returncode == 0 and listed.stdout.count("gt=6/impossible_action") == 1
    label_info = run_whenpro("info", str(AEB / "Label" / "gaia_labels.json"))
    assert "an AgentErrorBench label file" in label_info.stderr
    # a label past the assistant steps is a warning, not a wrong label
    copy = tmp_path / "aeb"
    shutil.copytree(AEB, copy)
    rows = json.loads((copy / "Label" / "gaia_labels.json").read_text(encoding="utf-8"))
    rows[0]["critical_failure_step"] = 9
    (copy / "Label" / "gaia_labels.json").write_text(json.dumps(rows), encoding="utf-8")
    bad = load_trace(next((copy / "Original_Failure_Trajectory").rglob("*.json")))
    assert bad.ground_truth is None and "not one of the 3 assistant steps" in bad.extras["whenpro_warnings"][0]
    results = tmp_path / "r.jsonl"
    assert run_whenpro("bench", str(AEB), "--out", str(results), timeout=600).returncode == 0
    (record,) = [json.loads(x) for x in results.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert record["trace"]["gt_step"] == "6" and record["prediction"]["step"] is not None


# --------------------------------------------------------------------------- the viewer


@pytest.mark.parametrize("path", [CLAUDE_1_0, CODEX_PARENT, TRAIL_TRACE])
async def test_tui_shows_each_sub_agent_in_the_step_list(path: Path) -> None:
    from tests.conftest import settle
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.trace import TraceScreen
    from whenpro_tui.widgets.step_list import StepList

    want = load_trace(path)
    sub = [a.id for a in want.agents][1]
    app = WhenproApp(str(path), cursor_blink=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        steps = app.screen.query_one(StepList)
        assert steps.row_count == len(want.steps)
        shown = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert sub[:12] in shown


def test_a_parquet_row_past_the_table_is_one_clear_line(real_traces: Path, tmp_path: Path) -> None:
    folder = real_traces / "who-and-when" / "Who&When" / "Algorithm-Generated"
    docs = [json.loads(f.read_text(encoding="utf-8")) for f in sorted(folder.glob("*.json"))[:2]]
    table = _write_parquet(tmp_path / "t.parquet", docs, history_as_json=True)
    out = run_whenpro("info", f"{table}#5")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "no row 5: the table has 2" in out.stderr
