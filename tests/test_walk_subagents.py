"""A sub-agent file merged into a parent session found in the same folder walk is not
listed as a trace of its own (it is in the parent's steps); opened by itself it still reads."""

from __future__ import annotations

import shutil
from pathlib import Path

from whenpro_core.formats import load_trace, walk

FIXTURES = Path(__file__).parent / "fixtures"
CODEX_DAY = "sessions/2026/03/08"
CODEX_CHILD = "rollout-2026-03-08T05-10-03-019cc9d4-2b3c-7d4e-9f50-6b7c8d9e0f12.jsonl"


def test_codex_child_rollout_is_listed_once_inside_its_parent():
    rows = list(walk(FIXTURES / "codex-cli"))
    assert not [r for r in rows if r.error]
    assert [Path(r.path).name for r in rows if CODEX_CHILD in r.path] == []
    parent = next(r for r in rows if CODEX_DAY in r.path)
    assert any(s.meta.get("subagent_file") == CODEX_CHILD for s in load_trace(parent.path).steps)
    assert load_trace(FIXTURES / "codex-cli" / CODEX_DAY / CODEX_CHILD).steps  # by itself, still a trace


def test_claude_subagent_files_are_not_listed_beside_their_session(real_traces, tmp_path):
    rows = list(walk(real_traces / "claude-code"))
    assert not [r for r in rows if r.path.endswith("/subagents/agent-aac57f5.jsonl")]
    session = next(r for r in rows if r.path.endswith("ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"))
    assert session.error is None
    sub = real_traces / "claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl"
    assert load_trace(sub).steps  # opened directly: its own trace
    alone = tmp_path / "alone"  # without its session in the walk, a sub-agent file is listed
    alone.mkdir()
    shutil.copy(sub, alone / sub.name)
    assert [Path(r.path).name for r in walk(alone) if not r.error] == ["agent-aac57f5.jsonl"]
