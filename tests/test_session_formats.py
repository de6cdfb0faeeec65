"""Claude Code, Codex CLI, Gemini CLI, Harbor ATIF and LangSmith files (issue 17, item 1):
every real file in those folders opens in ``info``, ``ls``, ``convert`` (CLI subprocesses)
and the TUI with the steps, agents, tool calls, observations and errors counted here
straight from the raw files, by rules written independently of the importers (SOURCE.md
of each folder). Small made-up files cover what the real ones lack (nested LangSmith run
trees, Gemini tool errors and sub-agents, bad lines)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REAL_TRACES, REPO, settle
from whenpro_core.attribution.heuristic import attribute_heuristic
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, walk
from whenpro_core.trace.model import Outcome, Trace

pytestmark = pytest.mark.real_traces


@dataclass
class Counts:
    """What a trace must hold, read from the raw file."""

    steps: int = 0
    calls: int = 0
    observed: int = 0  # steps with an observation
    errors: int = 0  # steps with an error
    agents: set[str] = field(default_factory=set)

    def add(self, other: Counts) -> None:
        self.steps += other.steps
        self.calls += other.calls
        self.observed += other.observed
        self.errors += other.errors
        self.agents |= other.agents


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --------------------------------------------------------------------------- raw counts


def _claude_user(
    o: dict, c: Counts, owner: dict[str, str], observed: set[str], failed: set[str], tasks: dict[str, str | None]
) -> None:
    content = o["message"]["content"]
    if isinstance(content, str) or any(b.get("type") != "tool_result" for b in content):
        c.steps += 1
    for b in content if isinstance(content, list) else []:
        if b.get("type") != "tool_result":
            continue
        observed.add(owner[b["tool_use_id"]])
        if b.get("is_error"):
            failed.add(owner[b["tool_use_id"]])
        if b["tool_use_id"] in tasks and isinstance(o.get("toolUseResult"), dict):
            tasks[b["tool_use_id"]] = o["toolUseResult"].get("agentId")


def _task_agent(args: dict) -> str:
    """A sub-agent's name: ``task-`` and the words of its Task call's description."""
    words = re.findall(r"[a-z0-9]+", str(args.get("description") or args.get("subagent_type")).lower())
    return "task-" + "-".join(words)[:40].rstrip("-")


def claude_counts(lines: list[dict], session: Path | None, agent: str = "claude") -> Counts:
    """One step per assistant message id, per human prompt (string content or non-result
    blocks, not isMeta) and per compact_boundary; sub-agents from their file beside the
    session, else from agent_progress lines."""
    c = Counts(agents={agent})
    owner: dict[str, str] = {}  # tool_use id -> message id
    messages: set[str] = set()
    observed: set[str] = set()
    failed: set[str] = set()
    tasks: dict[str, str | None] = {}
    names: dict[str, str] = {}  # Task call id -> the sub-agent's name
    inline: dict[str, list[dict]] = {}
    for o in lines:
        kind, msg = o.get("type"), o.get("message")
        if kind == "assistant":
            messages.add(msg["id"])
            for b in (b for b in msg["content"] if b.get("type") == "tool_use"):
                c.calls += 1
                owner[b["id"]] = msg["id"]
                if b["name"] == "Task":
                    tasks[b["id"]] = None
                    names[b["id"]] = _task_agent(b["input"])
        elif kind == "user" and not o.get("isMeta"):
            _claude_user(o, c, owner, observed, failed, tasks)
        elif kind == "system" and o.get("subtype") == "compact_boundary":
            c.steps += 1
        elif kind == "progress" and o["data"].get("type") == "agent_progress":
            inline.setdefault(o["parentToolUseID"], []).append(o["data"]["message"])
    c.steps += len(messages)
    c.observed += len(observed)
    c.errors += len(failed)
    for task_id, agent_id in tasks.items():
        agent_id = agent_id or next((m.get("agentId") for m in inline.get(task_id, []) if m.get("agentId")), None)
        child_file = session.with_suffix("") / "subagents" / f"agent-{agent_id}.jsonl" if session else None
        if child_file is not None and child_file.is_file():
            c.add(claude_counts(_lines(child_file), None, names[task_id]))
        elif inline.get(task_id):
            c.add(claude_counts(inline[task_id], None, names[task_id]))
    return c


def codex_counts(lines: list[dict]) -> Counts:
    """One step per response_item message and per call item; outputs are observations of
    their call; non-zero exec exit codes are errors."""
    c = Counts(agents={"codex"})
    calls: set[str] = set()
    failed: set[str] = set()
    for o in lines:
        p = o["payload"]
        if o["type"] == "response_item":
            if p["type"] == "message":
                c.steps += 1
            elif p["type"] in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
                c.steps += 1
                c.calls += 1
                calls.add(p.get("call_id") or p.get("id"))
            elif p["type"] in ("function_call_output", "custom_tool_call_output"):
                assert p["call_id"] in calls
                c.observed += 1
        elif o["type"] == "event_msg" and p["type"] == "exec_command_end" and p["exit_code"] != 0:
            failed.add(p["call_id"])
    c.errors = len(failed & calls)
    return c


def gemini_counts(header: dict | None, records: list[dict]) -> Counts:
    """One step per message id (the last record wins), plus one per delegate_to_agent
    report; every tool call with a result makes its step observed."""
    c = Counts(agents={"gemini"})
    last: dict[str, dict] = {}
    for r in records:
        if "$set" in r:
            continue
        last[r["id"]] = r
    for m in last.values():
        c.steps += 1
        calls = m.get("toolCalls") or []
        c.calls += len(calls)
        c.observed += bool(calls)
        c.errors += m["type"] in ("error", "warning") or any(t.get("status") != "success" for t in calls)
        for t in calls:
            if t["name"] == "delegate_to_agent":
                c.steps += 1
                c.agents.add(t["args"]["agent_name"])
    return c


def atif_counts(path: Path, prefix_copied: bool = False) -> Counts:
    """Every step; sub-trajectories found beside the file, minus their copied context."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    c = Counts(agents={doc["agent"]["name"]})
    for s in doc["steps"]:
        if prefix_copied and s.get("is_copied_context"):
            continue
        c.steps += 1
        c.calls += len(s.get("tool_calls") or [])
        results = (s.get("observation") or {}).get("results") or []
        c.observed += bool(results)
        for r in results:
            for ref in r.get("subagent_trajectory_ref") or []:
                stem = path.name.removesuffix("trajectory.json")
                child = path.parent / (stem + ref["trajectory_path"])
                if child.is_file():
                    c.add(atif_counts(child, True))
    return c


def langsmith_counts(doc: dict) -> Counts:
    """Each llm run: its input messages, then the reply (one step each)."""
    c = Counts()
    for run in doc["post"]:
        c.agents.add(run["name"])
        c.steps += len(run["inputs"]["messages"]) + 1
    return c


CLAUDE = [
    "claude-code/VibeCodingTracker/claude_code.jsonl",
    "claude-code/spotter/subagent.jsonl",
    "claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl",
    "claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-acompact-946d2b.jsonl",
]
CODEX = [
    "codex-cli/VibeCodingTracker/codex.jsonl",
    "codex-cli/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
]
GEMINI = [
    "gemini-cli/VibeCodingTracker/gemini.jsonl",
    "gemini-cli/VibeCodingTracker/test_conversation_gemini.json",
    "gemini-cli/codemie-code/session-2025-12-01T21-45-5b959dae.json",
]
ATIF = [
    "harbor-atif/harbor/hello-world.trajectory.json",
    "harbor-atif/harbor/hello-world-timeout.trajectory.json",
    "harbor-atif/harbor/hello-world-context-summarization.trajectory.json",
    "harbor-atif/harbor/hello-world-context-summarization.trajectory.summarization-1-summary.json",
]
LANGSMITH = [
    f"langsmith/langsmith-sdk/langsmith_{n}.json"
    for n in ("py_wrap_openai_", "py_wrap_openai_reasoning", "js_wrap_openai_default", "js_wrap_openai_reasoning")
]
ALL = CLAUDE + CODEX + GEMINI + ATIF + LANGSMITH


def raw_counts(ref: str) -> Counts:
    path = REAL_TRACES / ref
    folder = ref.split("/", 1)[0]
    if folder == "claude-code":
        lines = _lines(path)
        sidechain = next((o.get("agentId") for o in lines if o.get("isSidechain") and o.get("agentId")), None)
        return claude_counts(lines, path, f"agent-{sidechain}" if sidechain else "claude")
    if folder == "codex-cli":
        return codex_counts(_lines(path))
    if folder == "gemini-cli":
        if path.suffix == ".jsonl":
            lines = _lines(path)
            return gemini_counts(lines[0], lines[1:])
        doc = json.loads(path.read_text(encoding="utf-8"))
        return gemini_counts(doc, doc["messages"])
    if folder == "harbor-atif":
        return atif_counts(path)
    return langsmith_counts(json.loads(path.read_text(encoding="utf-8")))


def trace_counts(steps: list[dict]) -> Counts:
    """The same counts from a trace's steps (a native JSON dump)."""
    return Counts(
        steps=len(steps),
        calls=sum(len(s.get("tool_calls") or []) for s in steps),
        observed=sum(1 for s in steps if s.get("observation") is not None),
        errors=sum(1 for s in steps if s.get("error")),
        agents={s["agent"] for s in steps} - {"user", "system", "environment"},
    )


def whenpro(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


# --------------------------------------------------------------------------- every real file


@pytest.mark.parametrize("ref", ALL)
def test_every_real_file_loads_with_the_raw_counts(real_traces: Path, ref: str) -> None:
    want = raw_counts(ref)
    trace = load_trace(real_traces / ref)
    got = trace_counts([s.model_dump() for s in trace.steps])
    assert got == want, ref
    assert [s.index for s in trace.steps] == list(range(len(trace.steps)))
    assert trace.outcome == Outcome.unknown  # none of these files states an outcome
    assert {a.id for a in trace.agents} >= want.agents


@pytest.mark.parametrize("folder", ["claude-code", "codex-cli", "gemini-cli", "harbor-atif", "langsmith"])
def test_ls_info_and_convert_on_each_folder(real_traces: Path, folder: str, tmp_path: Path) -> None:
    """``ls`` lists each file with its step count and no error row; ``info`` on each file
    names its step count; ``convert`` writes native traces with the same counts."""
    refs = [r for r in ALL if r.startswith(folder + "/")]
    out = whenpro("ls", str(real_traces / folder))
    assert out.returncode == 0, out.stderr
    rows = {Path(line.split()[0]).resolve(): line.split() for line in out.stdout.splitlines() if line.strip()}
    merged = {Path(m).resolve() for r in walk(real_traces / folder) for m in r.merged}  # listed in their parent
    for ref in refs:
        want = raw_counts(ref)
        path = (real_traces / ref).resolve()
        assert (path in rows) != (path in merged), ref  # a merged sub-agent file: not listed again
        if path in rows:
            row = rows[path]
            assert "steps" in row and row[row.index("steps") - 1] == str(want.steps), row
        info = whenpro("info", str(real_traces / ref))
        assert info.returncode == 0, info.stderr
        assert any(line.split()[:2] == ["steps", str(want.steps)] for line in info.stdout.splitlines()), info.stdout
        target = tmp_path / (Path(ref).stem + ".native.json")
        conv = whenpro("convert", str(real_traces / ref), str(target))
        assert conv.returncode == 0, conv.stderr
        native = json.loads(target.read_text(encoding="utf-8"))
        assert trace_counts(native["steps"]) == want, ref
    assert len(rows) + len(merged) == len(refs)  # logs.json (a prompt log) lists no row


def test_gemini_prompt_log_says_what_it_is(real_traces: Path) -> None:
    out = whenpro("info", str(real_traces / "gemini-cli/codemie-code/logs.json"))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Gemini CLI prompt log" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("ref", [CLAUDE[2], CODEX[1], GEMINI[0], ATIF[2], LANGSMITH[1]])
async def test_tui_opens_each_format_and_lists_every_step(real_traces: Path, ref: str) -> None:
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.trace import TraceScreen
    from whenpro_tui.widgets.step_list import StepList

    want = raw_counts(ref)
    app = WhenproApp(str(real_traces / ref), cursor_blink=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        steps = app.screen.query_one(StepList)
        assert steps.row_count == want.steps
        assert steps.trace is not None and steps.trace.steps[0].content[:20] in "\n".join(
            strip.text for strip in app.screen._compositor.render_strips()
        )


# --------------------------------------------------------------------------- format details


def test_claude_code_merges_blocks_and_keeps_thinking_and_subagents(real_traces: Path) -> None:
    trace = load_trace(real_traces / CLAUDE[0])
    lines = _lines(real_traces / CLAUDE[0])
    thinking = [
        b["thinking"]
        for o in lines
        if o["type"] == "assistant"
        for b in o["message"]["content"]
        if b["type"] == "thinking"
    ]
    reasoning = [s.meta["reasoning"] for s in trace.steps if s.meta.get("reasoning")]
    assert reasoning == thinking  # 5 blocks, each with its own message
    assert all(s.meta.get("usage") for s in trace.steps if s.agent == "claude")
    # two Read calls of one message share a step and each result is named
    both = next(s for s in trace.steps if [c.name for c in s.tool_calls] == ["Read", "Read"])
    assert both.observation.count("[Read]") == 2
    main = load_trace(real_traces / CLAUDE[2])
    sub = [s for s in main.steps if s.agent == "task-check-otel-hex-package-versions"]
    task = next(s for s in main.steps if any(c.name == "Task" for c in s.tool_calls))
    assert main.steps[task.index + 1].meta["parent_tool_use_id"] == task.tool_calls[0].id
    assert sub and sub[0].index == task.index + 2 and all(s.meta["subagent_file"] == "agent-aac57f5.jsonl" for s in sub)
    assert any(s.kind == "compaction" and "142431" in s.content for s in main.steps)
    assert any(s.kind == "summary" for s in main.steps)
    assert main.extras["folded_lines"]["progress/hook_progress"] == 1447


def test_codex_final_answer_and_errors(real_traces: Path) -> None:
    trace = load_trace(real_traces / CODEX[1])
    done = [
        o["payload"]["last_agent_message"]
        for o in _lines(real_traces / CODEX[1])
        if o["type"] == "event_msg" and o["payload"]["type"] == "task_complete"
    ]
    assert trace.final_answer == done[-1]
    patch = next(s for s in trace.steps if s.tool_calls and s.tool_calls[0].name == "apply_patch")
    patch_text = patch.tool_calls[0].arguments
    assert isinstance(patch_text, str) and patch_text.startswith("*** Begin Patch")
    assert all(s.error.startswith("exit code") for s in trace.steps if s.error)
    assert [s.kind for s in trace.steps[:2]] == ["system", "system"] and trace.steps[0].coord is None


def test_atif_final_answer_subagent_and_usage(real_traces: Path) -> None:
    openhands = load_trace(real_traces / ATIF[0])
    assert openhands.final_answer == "Task complete. Created /app/hello.txt with 'Hello, world!'"
    summ = load_trace(real_traces / ATIF[2])
    assert [s.coord for s in summ.steps if s.agent == "terminus-2-summarization-summary"] == ["5.2"]
    assert len(summ.extras["whenpro_warnings"]) == 2  # the questions/answers files are not beside it
    assert all("prompt_token_ids" not in (s.meta.get("usage") or {}) for s in summ.steps)


def test_unknown_outcome_is_attributed_as_possibly_failed(real_traces: Path) -> None:
    """A session states no outcome: the heuristic treats it as possibly failed and says so."""
    trace = load_trace(real_traces / CODEX[1])
    verdict = attribute_heuristic(trace)
    assert verdict.step is not None
    assert any("outcome is unknown" in w for w in verdict.warnings), verdict.warnings


# --------------------------------------------------------------------------- made-up files


def test_langsmith_nested_run_tree_with_tools_and_error(tmp_path: Path) -> None:
    tree = {
        "id": "r1",
        "name": "AgentExecutor",
        "run_type": "chain",
        "inputs": {"input": "2+2?"},
        "outputs": None,
        "error": "ValueError: gave up",
        "start_time": "2025-01-01T00:00:00+00:00",
        "child_runs": [
            {
                "id": "r2",
                "name": "ChatOpenAI",
                "run_type": "llm",
                "start_time": "2025-01-01T00:00:01+00:00",
                "inputs": {
                    "messages": [
                        [{"lc": 1, "type": "constructor", "id": ["x", "HumanMessage"], "kwargs": {"content": "2+2?"}}]
                    ]
                },
                "outputs": {
                    "generations": [
                        [
                            {
                                "text": "",
                                "message": {
                                    "lc": 1,
                                    "type": "constructor",
                                    "id": ["x", "AIMessage"],
                                    "kwargs": {
                                        "content": "",
                                        "tool_calls": [
                                            {"id": "c1", "function": {"name": "calc", "arguments": '{"e": "2+2"}'}}
                                        ],
                                    },
                                },
                            }
                        ]
                    ]
                },
                "child_runs": [],
            },
            {
                "id": "r3",
                "name": "calc",
                "run_type": "tool",
                "start_time": "2025-01-01T00:00:02+00:00",
                "inputs": {"e": "2+2"},
                "outputs": {"output": "5"},
                "child_runs": [],
            },
        ],
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(tree), encoding="utf-8")
    trace = load_trace(path)
    assert [(s.agent, s.kind) for s in trace.steps] == [
        ("AgentExecutor", "run"),
        ("user", "user"),
        ("AgentExecutor", "action"),
        ("AgentExecutor", "action"),
    ]
    assert trace.steps[2].tool_calls[0].arguments == {"e": "2+2"}
    assert trace.steps[3].observation == "5" and trace.steps[3].meta["depth"] == 1
    assert trace.outcome == Outcome.failure and trace.steps[0].error == "ValueError: gave up"


def test_gemini_tool_error_and_subagent(tmp_path: Path) -> None:
    lines = [
        {"sessionId": "s", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z", "kind": "main"},
        {"id": "u", "type": "user", "content": [{"text": "look"}]},
        {
            "id": "g",
            "type": "gemini",
            "content": "",
            "toolCalls": [
                {
                    "id": "t1",
                    "name": "delegate_to_agent",
                    "args": {"agent_name": "codebase_investigator"},
                    "status": "success",
                    "result": [{"functionResponse": {"response": {"output": "report"}}}],
                },
                {
                    "id": "t2",
                    "name": "read_file",
                    "args": {},
                    "status": "error",
                    "result": [{"functionResponse": {"response": {"error": "no such file"}}}],
                },
            ],
        },
        {"$set": {"lastUpdated": "2026-01-01T00:01:00Z"}},
        {"id": "g", "type": "gemini", "content": "done", "toolCalls": []},
        {"id": "g2", "type": "gemini", "content": "x"},
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines[:3]) + "\n{not json\n", encoding="utf-8")
    trace = load_trace(path)
    assert [s.agent for s in trace.steps] == ["user", "gemini", "codebase_investigator"]
    assert trace.steps[1].error == "read_file: error: no such file" and trace.steps[2].content == "report"
    assert "skipped 1 bad line (line 4" in trace.extras["whenpro_warnings"][0]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    trace = load_trace(path)  # the re-emitted message replaces the first, in its place
    assert [s.content for s in trace.steps] == ["look", "done", "x"]
    assert trace.extras["header"]["lastUpdated"] == "2026-01-01T00:01:00Z"


@pytest.mark.parametrize(
    "body, where",
    [
        ('{"timestamp": "t", "type": "session_meta", "payload": []}', "$.payload"),
        ('{"type": "user", "sessionId": "s", "uuid": "u", "message": {"content": 3}}', "$.message.content"),
    ],
)
def test_a_session_whose_only_line_is_bad_is_one_line_error(tmp_path: Path, body: str, where: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(body + "\n", encoding="utf-8")
    with pytest.raises(TraceFormatError) as err:
        load_trace(path)
    assert where in err.value.one_line() and str(path) in err.value.one_line()


def test_atif_reference_never_leaves_the_folder(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    secret = tmp_path / "secret.json"
    child = {
        "schema_version": "ATIF-v1.6",
        "session_id": "c",
        "agent": {"name": "evil"},
        "steps": [{"step_id": 1, "source": "agent", "message": "leak"}],
    }
    secret.write_text(json.dumps(child), encoding="utf-8")
    doc = {
        "schema_version": "ATIF-v1.6",
        "session_id": "p",
        "agent": {"name": "main"},
        "steps": [
            {
                "step_id": 1,
                "source": "system",
                "message": "x",
                "observation": {
                    "results": [{"subagent_trajectory_ref": [{"session_id": "c", "trajectory_path": "../secret.json"}]}]
                },
            }
        ],
    }
    path = tmp_path / "in" / "trajectory.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    trace: Trace = load_trace(path)
    assert [s.agent for s in trace.steps] == ["system"]
    assert "not found beside the file" in trace.extras["whenpro_warnings"][0]


def test_thinking_goes_to_the_judge_and_shows_folded(real_traces: Path) -> None:
    from whenpro_core.views.transcript import block_text, render_transcript

    trace = load_trace(real_traces / CLAUDE[0])
    thinking = next(s for s in trace.steps if s.meta.get("reasoning"))
    block = render_transcript(trace).block(str(thinking.coord))
    assert block is not None
    text = block_text(block)
    assert text.index("[reasoning]") < text.index(thinking.content[:10])
    assert thinking.meta["reasoning"].splitlines()[0] in text


async def test_tui_shows_reasoning_above_the_step(real_traces: Path) -> None:
    from tests.conftest import screen_text
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.widgets.step_list import StepList

    trace = load_trace(real_traces / CLAUDE[0])
    first = next(s.index for s in trace.steps if s.meta.get("reasoning"))
    app = WhenproApp(str(real_traces / CLAUDE[0]), cursor_blink=False)
    async with app.run_test(size=(140, 50)) as pilot:
        await settle(pilot)
        for _ in range(first):
            await pilot.press("j")
        await settle(pilot)
        assert app.screen.query_one(StepList).step_index == first
        shown = screen_text(app)
        assert "Reasoning" in shown and trace.steps[first].meta["reasoning"].splitlines()[0][:20] in shown


def test_gemini_checkpoint_and_rewind(tmp_path: Path) -> None:
    """A ``$set`` of ``messages`` replaces the messages so far; ``$rewindTo`` drops a
    message and every later one (Gemini CLI's JSONL recording)."""
    lines = [
        {"sessionId": "s", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z"},
        {"id": "a", "type": "user", "content": "one"},
        {"id": "b", "type": "gemini", "content": "two"},
        {
            "$set": {
                "messages": [
                    {"id": "a", "type": "user", "content": "ONE"},
                    {"id": "c", "type": "gemini", "content": "three"},
                ]
            }
        },
        {"id": "d", "type": "user", "content": "four"},
        {"$rewindTo": "d"},
        {"id": "e", "type": "user", "content": "five"},
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    assert [s.content for s in load_trace(path).steps] == ["ONE", "three", "five"]


def test_claude_images_in_prompts_and_tool_results(tmp_path: Path) -> None:
    from tests.conftest import tiny_png

    png = tiny_png()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    env = {"sessionId": "s1", "cwd": "/w", "version": "2.1.0", "timestamp": "2026-01-01T00:00:00.000Z"}
    lines = [
        {
            **env,
            "type": "user",
            "uuid": "u1",
            "message": {"role": "user", "content": [{"type": "text", "text": "what is on this screen?"}, image]},
        },
        {
            **env,
            "type": "assistant",
            "uuid": "a1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Screenshot", "input": {}}],
            },
        },
        {
            **env,
            "type": "user",
            "uuid": "u2",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [image], "is_error": False}],
            },
        },
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    trace = load_trace(path)
    assert [len(s.media) for s in trace.steps] == [1, 1]
    assert trace.steps[0].media[0].data == png and trace.steps[1].media[0].mime == "image/png"
    assert trace.steps[1].observation == "" and trace.steps[1].error is None
