"""Claude Code 2.x sub-agents kept in their own ``<session>/subagents/agent-<id>.jsonl`` files
are agents named from the Task call that spawned them (``task-<description>``, role the
``subagent_type``), their steps nested under that Task step, as 1.0.x inline sidechains are.

The real session is marot/spotter's (MIT; SOURCE.md of real_traces/claude-code), skipped
when absent; the small case is written here from the same line shapes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import run_whenpro
from whenpro_core.formats import load_trace

SPOTTER = "claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
SID = "5f0c2a9e-1111-4222-8333-944455556666"


def test_real_2_1_sub_agent_file_is_named_from_its_task_call(real_traces: Path) -> None:
    trace = load_trace(real_traces / SPOTTER)
    task = next(s for s in trace.steps if any(c.name == "Task" for c in s.tool_calls))
    call = task.tool_calls[0]
    assert call.arguments["description"] == "Check OTEL hex package versions"
    name = "task-check-otel-hex-package-versions"
    assert (name, "general-purpose") in {(a.id, a.role) for a in trace.agents}
    assert not any(a.id.startswith("agent-") for a in trace.agents)
    sub = [s for s in trace.steps if s.meta.get("parent_tool_use_id") == call.id]
    # the Task prompt, then the sub-agent's 3 messages, right after the Task step
    assert [s.index for s in sub] == list(range(task.index + 1, task.index + 1 + len(sub)))
    assert [s.agent for s in sub] == ["user", name, name, name]
    assert {s.meta["subagent_id"] for s in sub} == {"aac57f5"}
    out = run_whenpro("info", str(real_traces / SPOTTER))
    assert out.returncode == 0 and "(multi-agent)" in out.stdout and f"{name} (3)" in out.stdout


def _line(kind: str, content: object, n: int, **extra: object) -> dict:
    message: dict = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"id": f"msg_{n}", "model": "claude-sonnet-4-5", "type": "message"}
    return {
        "type": kind,
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n else None,
        "sessionId": SID,
        "timestamp": f"2026-01-05T10:00:{n:02d}.000Z",
        "version": "2.1.40",
        "isSidechain": False,
        "message": message,
        **extra,
    }


def _task(n: int, call: str, description: str) -> dict:
    block = {
        "type": "tool_use",
        "id": call,
        "name": "Task",
        "input": {"description": description, "prompt": f"Please {description.lower()}.", "subagent_type": "Explore"},
    }
    return _line("assistant", [block], n)


def _result(n: int, call: str, agent_id: str) -> dict:
    block = {"type": "tool_result", "tool_use_id": call, "content": [{"type": "text", "text": "done"}]}
    return _line("user", [block], n, toolUseResult={"status": "completed", "agentId": agent_id})


def _write(path: Path, lines: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")


def test_two_sub_agent_files_of_the_same_description_are_two_agents(tmp_path: Path) -> None:
    session = tmp_path / "proj" / f"{SID}.jsonl"
    main = [
        _line("user", "Find why the login test fails.", 0),
        _task(1, "toolu_A", "Search the auth module"),
        _result(2, "toolu_A", "a1b2c3"),
        _task(3, "toolu_B", "Search the auth module"),
        _result(4, "toolu_B", "d4e5f6"),
        _line("assistant", [{"type": "text", "text": "The token check is inverted."}], 5),
    ]
    _write(session, main)
    for agent_id, answer in (("a1b2c3", "auth.py line 40 compares with !="), ("d4e5f6", "tests pass once fixed")):
        child = [
            _line("user", "Please search the auth module.", 0, isSidechain=True, agentId=agent_id),
            _line("assistant", [{"type": "text", "text": answer}], 1, isSidechain=True, agentId=agent_id),
        ]
        _write(session.with_suffix("") / "subagents" / f"agent-{agent_id}.jsonl", child)
    trace = load_trace(session)
    agents = {a.id: a.role for a in trace.agents}
    name = "task-search-the-auth-module"
    assert agents == {"claude": "main", name: "Explore", f"{name}-2": "Explore"}
    rows = [(s.agent, s.meta.get("parent_tool_use_id"), s.content) for s in trace.steps]
    assert rows == [
        ("user", None, "Find why the login test fails."),
        ("claude", None, ""),
        ("user", "toolu_A", "Please search the auth module."),
        ("task-search-the-auth-module", "toolu_A", "auth.py line 40 compares with !="),
        ("claude", None, ""),
        ("user", "toolu_B", "Please search the auth module."),
        ("task-search-the-auth-module-2", "toolu_B", "tests pass once fixed"),
        ("claude", None, "The token check is inverted."),
    ]
    assert trace.final_answer == "The token check is inverted."
    out = run_whenpro("info", str(session))
    assert out.returncode == 0 and "(multi-agent)" in out.stdout
