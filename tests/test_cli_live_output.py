"""whenpro's own live displays (the ``build`` and ``bench`` progress bars, the ``attribute``
spinner) in a real terminal: their cursor and line-erase codes reach the terminal (not
``␛[?25l`` printed as text, one new line per refresh), while untrusted text shown during
or around them (a trace id with escape sequences) stays inert."""

from __future__ import annotations

import os
import pty
import sys
from pathlib import Path

import pytest
from rich.progress import Progress

from bench_data import team_trace, write_dataset
from tests.test_cli_view import run_in_pty
from whenpro_core.cli import output
from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env
from whenpro_core.formats.native import write_trace
from whenpro_core.safety.inert_output import InertStream, inert_streams

HOSTILE_ID = "evil\x1b]0;pwned\x07\x1b[2Jid"
VISIBLE_ESC = "␛".encode()
HIDE_CURSOR, SHOW_CURSOR = b"\x1b[?25l", b"\x1b[?25h"
CLOSED_BACKEND = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-x", "WHENPRO_MAX_RETRIES": "0"}


def whenpro_in_terminal(*args: str, env: dict[str, str] | None = None) -> tuple[int, bytes]:
    return run_in_pty([sys.executable, "-m", "whenpro_core.cli", *args], env=env)


def assert_live_display_works(seen: bytes) -> None:
    """The display's own codes went to the terminal and none was printed as text."""
    assert HIDE_CURSOR in seen and SHOW_CURSOR in seen, seen[-800:]
    assert VISIBLE_ESC not in seen, seen[-800:]


def hostile_team_trace(folder: Path) -> None:
    trace = team_trace(9, wrong="100", gt_step="2", gt_agent="solver", mode="R.3")
    write_trace(trace.model_copy(update={"id": HOSTILE_ID}), folder / "hostile.json")


def test_bench_progress_bar_draws_in_place(tmp_path: Path) -> None:
    data = write_dataset(tmp_path)
    hostile_team_trace(data)
    code, seen = whenpro_in_terminal("bench", str(data), "--out", str(tmp_path / "r.jsonl"), "--no-report")
    assert code == 0, seen[-800:]
    assert_live_display_works(seen)
    assert b"\x1b[2K" in seen and b"bench" in seen and b"ran " in seen
    assert b"\x1b]0;" not in seen and b"\x1b[2J" not in seen


def test_build_progress_bar_draws_in_place(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    env = get_env("arith_team")
    for s in range(2):
        write_trace(run_env(env, s), seeds / f"arith_team-s{s}.json")
    code, seen = whenpro_in_terminal("build", str(seeds), "--out", str(tmp_path / "ds"), "--max-mode-share", "1")
    assert code in (0, 1), seen[-800:]  # 1: no trace kept (the reasons said); the bar ran either way
    assert_live_display_works(seen)
    assert b"build" in seen and b"attempted " in seen


def test_attribute_spinner_shows_a_hostile_trace_id_inert(tmp_path: Path) -> None:
    hostile_team_trace(tmp_path)
    code, seen = whenpro_in_terminal(
        "attribute", str(tmp_path / "hostile.json"), "--model", "openai:gpt-4.1", "--no-cache", env=CLOSED_BACKEND
    )
    assert code != 0 and b"Traceback" not in seen, seen[-800:]
    assert b"\x1b]0;pwned" not in seen and b"\x1b[2J" not in seen
    assert HIDE_CURSOR in seen and SHOW_CURSOR in seen, seen[-800:]  # the spinner was drawn
    assert "attribution of evil␛]0;pwned␇␛[2Jid".encode() in seen  # the id, inert, in the spinner
    assert b"\xe2\x90\x9b[?25" not in seen and b"\xe2\x90\x9b[2K" not in seen  # no code of rich's as text


def read_to_the_end(master: int) -> bytes:
    """Everything written to a pseudo-terminal whose other side is closed (then closes it)."""
    seen = b""
    try:
        while chunk := os.read(master, 65536):
            seen += chunk
    except OSError:  # EIO: all read, the other side is closed
        pass
    finally:
        os.close(master)
    return seen


@pytest.mark.parametrize("stop_inside", [False, True], ids=["to-the-end", "stopped-in-the-body"])
def test_text_printed_while_a_live_display_runs_stays_inert(stop_inside: bool) -> None:
    """In a real terminal: what the body prints goes through the display's console to the
    terminal unfiltered by the display, so :func:`output.live` filters it first; afterwards
    the streams are the inert ones again (also when the body stops the display itself)."""
    master, slave = pty.openpty()
    terminal = os.fdopen(slave, "w", encoding="utf-8", closefd=True)
    saved = sys.stdout, sys.stderr
    try:
        sys.stdout, sys.stderr = terminal, terminal
        with inert_streams():
            before = sys.stdout, sys.stderr
            progress = Progress(console=output.live_console())
            assert progress.console.is_terminal
            with output.live(progress):
                progress.add_task("work", total=2)
                print(f"loaded {HOSTILE_ID}")
                sys.stderr.write(f"warning: {HOSTILE_ID}\n")
                if stop_inside:
                    progress.stop()
            assert (sys.stdout, sys.stderr) == before and isinstance(sys.stderr, InertStream)
            print(f"after {HOSTILE_ID}")
    finally:
        sys.stdout, sys.stderr = saved
        terminal.close()
    seen = read_to_the_end(master)
    inert_id = "evil␛]0;pwned␇␛[2Jid".encode()
    for line in (b"loaded ", b"warning: ", b"after "):
        assert line + inert_id in seen, seen
    assert b"\x1b]0;" not in seen and b"\x1b[2J" not in seen
    assert HIDE_CURSOR in seen and b"\xe2\x90\x9b[?25" not in seen
