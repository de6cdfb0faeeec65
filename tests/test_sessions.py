"""``whenpro sessions`` and ``whenpro view --sessions`` (issue 17, item 2) on a made-up home
folder holding real Claude Code, Codex and Gemini files at the tools' default paths;
folders from config.toml and environment variables; nothing outside them is read; a
session still being written opens and follows (``--follow``)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REAL_TRACES, REPO, settle
from tests.support.live_writer import LineWriter
from whenpro_core.attribution.verdicts import load_verdicts
from whenpro_core.formats import load_trace
from whenpro_core.library.sessions import list_sessions
from whenpro_core.live.events import StepAdded, TraceReset
from whenpro_core.live.follow import FileFollower

pytestmark = pytest.mark.real_traces

SPOTTER = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
#: (real file, where it goes below the made-up home)
LAYOUT = [
    ("claude-code/VibeCodingTracker/claude_code.jsonl", ".claude/projects/-home-wei-repo/e9f146fa.jsonl"),
    (f"claude-code/spotter/{SPOTTER}.jsonl", f".claude/projects/-home-USER-spotter/{SPOTTER}.jsonl"),
    (
        f"claude-code/spotter/{SPOTTER}/subagents/agent-aac57f5.jsonl",
        f".claude/projects/-home-USER-spotter/{SPOTTER}/subagents/agent-aac57f5.jsonl",
    ),
    (
        "codex-cli/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
        ".codex/sessions/2026/05/11/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    ),
    ("codex-cli/VibeCodingTracker/codex.jsonl", ".codex/sessions/2025/09/19/rollout-2025-09-19T17-02-01996135.jsonl"),
    (
        "gemini-cli/codemie-code/session-2025-12-01T21-45-5b959dae.json",
        ".gemini/tmp/5b95hash/chats/session-2025-12-01T21-45-5b959dae.json",
    ),
    ("gemini-cli/codemie-code/logs.json", ".gemini/tmp/5b95hash/logs.json"),
    ("gemini-cli/VibeCodingTracker/gemini.jsonl", ".gemini/tmp/vibe/chats/session-2026-04-23T12-52-0ab84937.jsonl"),
]
SESSIONS = [dst for _, dst in LAYOUT if "subagents" not in dst and not dst.endswith("logs.json")]


def last_time(ref: str) -> str:
    """The latest timestamp written in a raw session file (what sorts it)."""
    path = REAL_TRACES / ref
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))["lastUpdated"]
    stamps = []
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        stamps += [v for v in (obj.get("timestamp"), (obj.get("$set") or {}).get("lastUpdated")) if v]
    return max(stamps)


@pytest.fixture
def home(real_traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with the real files at the default paths; HOME points at it."""
    root = tmp_path / "home"
    for src, dst in LAYOUT:
        target = root / dst
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(real_traces / src, target)
    (root / ".gemini/tmp/vibe/.project_root").write_text("/home/wei/VibeCodingTracker\n", encoding="utf-8")
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(root))
    return root


def whenpro(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_sessions_lists_every_session_newest_first(home: Path) -> None:
    out = whenpro("sessions", "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert sorted(Path(r["path"]).relative_to(home).as_posix() for r in rows) == sorted(SESSIONS)
    by_dst = {dst: src for src, dst in LAYOUT}
    want_order = sorted(SESSIONS, key=lambda dst: last_time(by_dst[dst]), reverse=True)
    assert [Path(r["path"]).relative_to(home).as_posix() for r in rows] == want_order
    for row in rows:
        trace = load_trace(row["path"])
        assert row["steps"] == len(trace.steps) and row["error"] is None
        assert row["errors"] == sum(1 for s in trace.steps if s.error)
        assert row["prompt"] and trace.task.query.split()[0] in row["prompt"]
    projects = {Path(r["path"]).name: r["project"] for r in rows}
    assert projects["e9f146fa.jsonl"] == "/home/wei/repo/claude-code"  # the session's cwd
    assert projects["session-2026-04-23T12-52-0ab84937.jsonl"] == "/home/wei/VibeCodingTracker"  # .project_root
    spotter = next(r for r in rows if r["path"].endswith(f"{SPOTTER}.jsonl"))
    assert spotter["errors"] == 12 and spotter["tool"] == "claude"


def test_sessions_of_one_tool_and_plain_lines(home: Path) -> None:
    out = whenpro("sessions", "codex")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and all("\tcodex\t" in line or " codex " in line for line in lines)
    assert "122 steps" in lines[0] and "4 errors" in lines[0] and "show tools" in lines[0]
    bad = whenpro("sessions", "cursor")
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "whenpro: error: unknown tool 'cursor' (expected claude, codex, gemini)"
    )


def test_folders_come_from_config_and_environment(home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "codex-home"
    shutil.move(str(home / ".codex"), str(elsewhere))
    out = whenpro("sessions", "codex")
    assert out.returncode == 0 and out.stdout == ""
    assert f"codex: {home / '.codex' / 'sessions'}" in out.stderr  # says where it looked
    out = whenpro("sessions", "codex", env={"CODEX_HOME": str(elsewhere)})  # Codex's own variable
    assert len(out.stdout.splitlines()) == 2, out.stderr
    config_dir = Path(os.environ["WHENPRO_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.toml").write_text(f'codex_sessions = "{elsewhere / "sessions"}"\n', encoding="utf-8")
    assert len(whenpro("sessions", "codex").stdout.splitlines()) == 2
    out = whenpro("sessions", "codex", env={"WHENPRO_CODEX_SESSIONS": str(tmp_path / "none")})
    assert out.stdout == ""  # the environment wins over config.toml


def test_nothing_outside_the_folders_is_read(home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copyfile(home / ".claude/projects/-home-wei-repo/e9f146fa.jsonl", outside / "secret.jsonl")
    (home / ".claude/projects/-home-wei-repo/link.jsonl").symlink_to(outside / "secret.jsonl")
    (home / ".claude/projects/linked-project").symlink_to(outside, target_is_directory=True)
    (home / ".claude/projects/notes.jsonl").write_text("{}\n", encoding="utf-8")  # not <project>/<session>
    shutil.copyfile(
        home / ".claude/projects/-home-wei-repo/e9f146fa.jsonl",  # an older sub-agent file
        home / ".claude/projects/-home-wei-repo/agent-1234.jsonl",
    )
    rows = list_sessions(("claude",))
    assert sorted(r.path.name for r in rows) == sorted(["e9f146fa.jsonl", f"{SPOTTER}.jsonl"])
    assert all(outside not in r.path.resolve().parents for r in rows)


async def test_view_sessions_opens_them_as_a_library(home: Path) -> None:
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.library import LibraryScreen
    from whenpro_tui.screens.trace import TraceScreen
    from whenpro_tui.starts import view_start

    start = view_start(None, sessions=True)
    assert start is not None
    app = WhenproApp("", cursor_blink=False, start=start)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, LibraryScreen)
        assert app.screen.table.row_count == len(SESSIONS)
        await pilot.press("enter")  # the newest session opens as its trace
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        assert app.screen.trace.id == "codex-019e1625-789d-76c0-80ab-3724b5ddb799"


def test_view_sessions_with_a_path_that_is_no_tool_is_one_line(home: Path) -> None:
    out = whenpro("view", "--sessions", "cursor")
    assert out.returncode == 2 and "unknown tool 'cursor'" in out.stderr and out.stderr.count("\n") == 1


@pytest.mark.parametrize("src", [LAYOUT[0][0], LAYOUT[4][0], LAYOUT[7][0]])
async def test_a_session_being_written_follows_to_the_same_trace(real_traces: Path, tmp_path: Path, src: str) -> None:
    """Lines arrive one by one (some torn); the announced steps, replayed with their
    resets, end as the trace the importer reads from the finished file."""
    lines = [line + b"\n" for line in (real_traces / src).read_bytes().splitlines() if line.strip()]
    want = [s.model_dump(exclude={"raw"}) for s in load_trace(real_traces / src).steps]
    path = tmp_path / Path(src).name
    writer = LineWriter(path, lines, delay=0.002, split=[1, 5])
    follower = FileFollower(path, poll_interval=0.01, use_watchfiles=False)
    writer.start()
    shown: list = []
    gen = follower.events()

    async def go() -> None:
        async for ev in gen:
            if isinstance(ev, TraceReset):
                del shown[ev.kept :]
            elif isinstance(ev, StepAdded):
                assert ev.step.index == len(shown)
                shown.append(ev.step)
            if (
                writer.done.is_set()
                and len(shown) == len(want)
                and [s.model_dump(exclude={"raw"}) for s in shown] == want
            ):
                return

    try:
        await asyncio.wait_for(go(), 120)
    finally:
        await gen.aclose()
        follower.close()
    writer.join()
    final = load_trace(path)
    assert follower.line_format in ("claude-code", "codex-cli", "gemini-cli")
    assert [s.model_dump(exclude={"raw"}) for s in final.steps] == want
    assert follower.trace().id == final.id


async def test_view_follow_shows_a_claude_session_as_it_is_written(real_traces: Path, tmp_path: Path) -> None:
    """``whenpro view --follow SESSION``: the live view grows with the file and ends as
    the trace the importer reads; a tool result written later fills in its call's step."""
    from tests.test_tui_live import first_screen, until
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.live_trace import LiveTraceScreen
    from whenpro_tui.starts import LiveOptions, view_start

    src = real_traces / LAYOUT[0][0]
    lines = [line + b"\n" for line in src.read_bytes().splitlines() if line.strip()]
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(lines[:3]))  # the prompt and the first assistant block, no result yet
    start = view_start(None, follow=str(path), live=LiveOptions(judge=False))
    assert start is not None
    app = WhenproApp("", cursor_blink=False, start=start)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await first_screen(pilot, LiveTraceScreen)
        await until(pilot, lambda: len(screen.trace.steps) == 2, "the first two steps")
        assert screen.trace.steps[1].observation is None
        with path.open("ab") as fh:
            fh.write(b"".join(lines[3:]))
        want = load_trace(src)
        await until(pilot, lambda: len(screen.trace.steps) == len(want.steps), "every step")
        await until(pilot, lambda: screen.trace.steps[1].observation is not None, "the first tool result")
        assert [s.content for s in screen.trace.steps] == [s.content for s in want.steps]
        assert [s.observation for s in screen.trace.steps] == [s.observation for s in want.steps]


def _tree_bytes(root: Path) -> dict[str, bytes | None]:
    """Every path below ``root`` with its bytes (``None`` for a folder)."""
    return {p.relative_to(root).as_posix(): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


async def test_attributing_sessions_leaves_the_tools_folders_untouched(home: Path, tmp_path: Path) -> None:
    """Issue 32, item 1: ``view --sessions`` + attribute (the app under Pilot) and the CLI
    write nothing into ``~/.claude`` or ``~/.codex`` (byte for byte); the verdicts go to
    whenpro's own data folder and reopen from there."""
    from tests.support.waiting import until
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.library import LibraryScreen
    from whenpro_tui.screens.trace import TraceScreen
    from whenpro_tui.starts import view_start

    before = {name: _tree_bytes(home / name) for name in (".claude", ".codex", ".gemini")}
    start = view_start(None, sessions=True)
    assert start is not None
    app = WhenproApp("", cursor_blink=False, start=start)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, LibraryScreen)
        for row in range(len(SESSIONS)):  # every session: codex, claude and gemini ones
            assert isinstance(app.screen, LibraryScreen)
            app.screen.table.move_cursor(row=row)
            await pilot.press("enter")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, TraceScreen)
            await pilot.press("a")
            await settle(pilot)
            await pilot.press("enter")  # the offline heuristic
            await settle(pilot)
            if screen.attribution.verdicts:
                await until(pilot, lambda s=screen: "saved in" in str(s.query_one("#d-verdict").content), "saved")
            await pilot.press("escape")
            await settle(pilot)
    spotter = home / f".claude/projects/-home-USER-spotter/{SPOTTER}.jsonl"
    for args in (("attribute", str(spotter)), ("sessions",), ("view", "--sessions", "--help")):
        out = whenpro(*args)
        assert out.returncode == 0, out.stderr
    assert {name: _tree_bytes(home / name) for name in (".claude", ".codex", ".gemini")} == before
    saved = load_verdicts(load_trace(spotter))
    assert saved and saved[0].protocol == "heuristic"  # kept in whenpro's folder
    assert all(p.is_relative_to(tmp_path / "whenpro-data") for p in (tmp_path / "whenpro-data").rglob("*.jsonl"))


async def test_the_sessions_library_shows_date_project_errors_and_usage(home: Path) -> None:
    """Issue 32, item 6: ``view --sessions`` lists what ``whenpro sessions`` prints: the
    last step's date in local time (its zone in the header), steps, errors, tokens, cost
    and project."""
    from whenpro_core.library.sessions import list_sessions, local_zone
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.library import LibraryScreen
    from whenpro_tui.starts import view_start

    start = view_start(None, sessions=True)
    assert start is not None
    app = WhenproApp("", cursor_blink=False, start=start)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LibraryScreen)
        header = screen.table.header_line()
        assert f"last step ({local_zone()})" in header and "project" in header and "err" in header
        rows = list_sessions()
        spotter = next(r for r in rows if r.path.name == f"{SPOTTER}.jsonl")
        line = "".join(seg.text for seg in screen.table.render_row(rows.index(spotter), 200))
        assert spotter.local_time in line and Path(spotter.project).name in line  # a long path's end
        assert " 12 " in line  # its errors
    out = whenpro("sessions", "claude")
    assert local_zone() in out.stdout.splitlines()[0]


async def test_find_searches_across_sessions_by_their_first_prompt(home: Path) -> None:
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.library import LibraryScreen
    from whenpro_tui.starts import view_start

    start = view_start(None, sessions=True)
    assert start is not None
    app = WhenproApp("", cursor_blink=False, start=start)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LibraryScreen)
        await pilot.press("slash", *"bead spotter", "enter")
        await settle(pilot)
        assert [screen.table.rows[i].path for i in screen.table.shown] == [
            str(home / f".claude/projects/-home-USER-spotter/{SPOTTER}.jsonl")
        ]


async def test_F_finds_the_sessions_whose_steps_say_a_text(home: Path) -> None:
    """Issue 32, item 6: search across sessions by what their steps say (a tool error here),
    not only by their first prompt: ``/`` finds nothing, ``F`` finds the session that holds
    it and says how many steps; ``c`` clears it."""
    from tests.support.waiting import until
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.library import LibraryScreen
    from whenpro_tui.starts import view_start

    needle = "Pre-commit validation failed"
    start = view_start(None, sessions=True)
    assert start is not None
    app = WhenproApp("", cursor_blink=False, start=start)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LibraryScreen)
        every = len(screen.table.shown)
        await pilot.press("slash", *needle, "enter")
        await settle(pilot)
        assert screen.table.shown == []  # not in any session's listing row
        await pilot.press("c", "F")
        await settle(pilot)
        await pilot.press(*needle, "enter")
        await until(pilot, lambda: "found in" in screen.inside_note(), "the search inside to finish")
        shown = [screen.table.rows[i].path for i in screen.table.shown]
        assert shown == [str(home / f".claude/projects/-home-USER-spotter/{SPOTTER}.jsonl")]
        spotter = load_trace(shown[0])
        holding = [s for s in spotter.steps if needle.lower() in (s.error or s.content or "").lower()]
        assert f"found in 1 trace, {len(holding)} steps ({every} searched)" in screen.inside_note()
        await pilot.press("c")
        await settle(pilot)
        assert len(screen.table.shown) == every and screen.inside_note() == ""
