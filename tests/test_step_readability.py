"""Each step shown the way its author meant it (issue 17, item 4), on the real traces
named in the issue: code in tool arguments shown as code (OpenHands ``run_ipython`` and
``str_replace_editor`` edits as diffs, Claude Code Edit/Write/Bash, Codex shell commands and
patches), prose never highlighted as Python (Who&When Pro smolagents ``Thought:``), final
answers the format states (Who&When ``FINAL ANSWER:``), Inspect scorer explanations,
single-agent runs called so, the agent legend, and the mmsearch task image shown once.

The block snapshots (``__snapshots__/test_step_readability.ambr``) record how each named
step is split and highlighted; update with ``--snapshot-update`` after checking the diff."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from tests.conftest import REPO
from whenpro_core.formats import load_trace, load_traces
from whenpro_core.media.preview import step_media
from whenpro_core.views.stepview import Block, call_blocks, content_blocks
from whenpro_core.views.traceview import trace_header
from whenpro_tui.widgets.blocks import render_block

pytestmark = pytest.mark.real_traces

OPENHANDS = "openhands-trajectories/evaluation/benchmarks/multi_swe_bench/examples/output__ponylang__ponyc-4595.jsonl"
IPYTHON = "openhands-trajectories/tests/unit/resolver/mock_output/output__issue5.jsonl"
GUI = "openhands-trajectories/tests/runtime/trajs/basic_gui_mode.json"
CLAUDE = "claude-code/VibeCodingTracker/claude_code.jsonl"
SPOTTER = "claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
CODEX = "codex-cli/VibeCodingTracker/codex.jsonl"
CODEX_PATCH = "codex-cli/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
MMSEARCH = "who-when-pro-samples/data/traces/mmsearch_car.json"
WHOWHEN = "who-and-when/Who&When"


def shown(blocks: list[Block]) -> str:
    """Blocks as a reviewable text: ``[kind language]`` then the (first 30 lines of) text."""
    out = []
    for b in blocks:
        lines = b.text.splitlines()
        out.append(f"[{b.kind} {b.language}]".replace(" ]", "]"))
        out += lines[:30] + ([f"... {len(lines) - 30} more lines"] if len(lines) > 30 else [])
    return "\n".join(out)


def call(real_traces: Path, ref: str, index: int, name: str):
    trace = load_traces(f"{real_traces}/{ref}")[0]
    return next(c for c in trace.steps[index].tool_calls if c.name == name)


@pytest.mark.parametrize(
    "ref, index, name",
    [
        (OPENHANDS, 14, "str_replace_editor"),  # old_str/new_str -> a diff
        (IPYTHON, 2, "run_ipython"),  # code -> Python
        (GUI, 7, "str_replace_editor"),  # a created file's content -> JavaScript
        (CLAUDE, 5, "Edit"),
        (CLAUDE, 19, "Bash"),
        (SPOTTER, 15, "Write"),
        (CODEX, 5, "shell"),
        (CODEX_PATCH, 81, "apply_patch"),
        (CODEX_PATCH, 3, "exec_command"),
    ],
)
def test_code_in_tool_arguments_is_shown_as_code(real_traces: Path, snapshot, ref: str, index: int, name: str) -> None:
    blocks = call_blocks(call(real_traces, ref, index, name).arguments)
    assert any(b.kind == "code" for b in blocks)
    code = [b.text for b in blocks if b.kind == "code"]
    assert all("\n" in t or len(t) < 200 for t in code)  # real lines, not one escaped JSON string
    assert not any(t.startswith('"') and t.endswith('"') for t in code)
    assert shown(blocks) == snapshot


def test_openhands_edit_is_a_diff_of_the_replaced_lines(real_traces: Path) -> None:
    args = call(real_traces, OPENHANDS, 14, "str_replace_editor").arguments
    diff = next(b for b in call_blocks(args) if b.kind == "code")
    assert diff.language == "diff"
    removed = {ln[1:] for ln in diff.text.splitlines() if ln.startswith("-") and not ln.startswith("---")}
    added = {ln[1:] for ln in diff.text.splitlines() if ln.startswith("+") and not ln.startswith("+++")}
    assert added - removed and added <= set(args["new_str"].splitlines())
    assert removed <= set(args["old_str"].splitlines())


def test_smolagents_thought_is_prose_and_only_the_code_is_highlighted(real_traces: Path, snapshot) -> None:
    step = load_trace(f"{real_traces}/{MMSEARCH}").steps[2]
    blocks = content_blocks(step.content)
    assert [(b.kind, b.language) for b in blocks] == [("text", ""), ("code", "python")]
    assert blocks[0].text.startswith("Thought:") and "image_search(" in blocks[1].text
    assert shown(blocks) == snapshot
    console = Console(width=100, color_system="truecolor", force_terminal=True, record=True)
    console.print(render_block(blocks[0]))
    prose = console.export_text(styles=True)
    assert "\x1b[" not in prose  # the quote in "Haval" starts no string colour
    console.print(render_block(blocks[1]))
    assert "\x1b[" in console.export_text(styles=True)


def test_every_smolagents_thought_in_the_samples_is_never_python(real_traces: Path) -> None:
    seen = 0
    for path in sorted((real_traces / "who-when-pro-samples/data/traces").glob("*.json")):
        for step in load_trace(path).steps:
            if step.content.lstrip().startswith("Thought:"):
                seen += 1
                assert content_blocks(step.content)[0].kind in ("text", "markdown"), (path.name, step.index)
    assert seen


def test_who_and_when_final_answers_the_runs_state(real_traces: Path) -> None:
    stated = 0
    for path in sorted((real_traces / WHOWHEN).glob("*/*.json")):
        history = json.loads(path.read_text(encoding="utf-8"))["history"]
        lines = [
            m.group(1).strip()
            for h in history
            for m in re.finditer(r"^FINAL ANSWER:[ \t]*(\S.*)$", h.get("content") or "", re.M)
        ]
        trace = load_trace(path)
        assert trace.final_answer == (lines[-1] if lines else None), path
        assert trace_header(trace).final == trace.final_answer
        stated += bool(lines)
    assert stated >= 30  # the Hand-Crafted (Magentic-One) runs that reached an answer


def _info(path: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "info", path],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={"COLUMNS": "200", "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_info_names_single_agent_runs_and_shows_scorer_explanations(real_traces: Path) -> None:
    inspect_log = f"{real_traces}/inspect-ai-logs/tests/log/test_eval_log/log_read_sample.json"
    out = _info(inspect_log)
    assert "(single-agent)" in out and "score" in out and "match: C — Yes" in out
    swe_agent = f"{real_traces}/swe-agent-traj/trajectories/demonstrations/ctf/misc/networking_1.traj"
    assert "(single-agent)" in _info(swe_agent)
    assert "(multi-agent)" in _info(f"{real_traces}/claude-code/spotter/subagent.jsonl")
    assert trace_header(load_trace(inspect_log)).scores == ["match: C — Yes"]


def test_the_legend_lists_only_agents_that_took_steps(real_traces: Path) -> None:
    for path in sorted((real_traces / WHOWHEN / "Algorithm-Generated").glob("*.json")):
        trace = load_trace(path)
        declared_only = set(trace.agent_ids()) - {s.agent for s in trace.steps}
        if declared_only:  # system prompts of agents that never spoke
            legend = dict(trace_header(trace).agents)
            assert not declared_only & set(legend) and all(n > 0 for n in legend.values())
            return
    pytest.fail("no Who&When run declares an agent that never speaks")


def test_the_mmsearch_task_step_shows_its_picture_once(real_traces: Path) -> None:
    trace = load_trace(f"{real_traces}/{MMSEARCH}")
    query, turn = trace.task.images[0].path, trace.steps[0].media[0].path
    root = real_traces / "who-when-pro-samples"
    assert query != turn and (root / query).read_bytes() == (root / turn).read_bytes()  # one picture, two names
    assert len(step_media(trace, 0).images) == 1
