"""Every command the documentation shows runs as shown (issue 34, item 7).

The convention (docs/development.md, 'Runnable commands in the docs'): each ```bash block of
README.md and docs/*.md follows an HTML comment, either ``<!-- docs-test: run -->`` (optionally
``<!-- docs-test: run, exit N -->``: the block's last command exits with N) or
``<!-- docs-test: skip (REASON) -->`` for a command that needs a model, the network, a terminal,
a cluster or minutes of CPU. Each command line of a run block runs with bash, in order, in a temp
copy of the bundled samples (``sample_traces/``, ``examples/``), with HOME, the XDG folders,
TMPDIR and whenpro's data, cache and config folders inside the temp dir, and under an audit hook
(tests/support/write_guard) that records any write outside it. A line ``#  TEXT`` right under a
command is what that command prints: its text up to a closing ``...`` must be in the output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_FENCE = re.compile(r"^```(?:bash|console|sh|shell)\s*$")
MARKER = re.compile(r"^<!-- docs-test: (?:(run)(?:, exit (\d+))?|skip \((.+)\)) -->$")
GUARD = REPO / "tests" / "support" / "write_guard"


@dataclass(frozen=True)
class Block:
    """One shell block of a page: where it is, its marker and its lines."""

    page: str
    line: int  # 1-based line of the opening fence
    marker: str  # the comment line before the fence, or "" when there is none
    lines: tuple[str, ...]

    @property
    def run(self) -> bool:
        found = MARKER.match(self.marker)
        return bool(found and found.group(1))

    @property
    def last_exit(self) -> int:
        found = MARKER.match(self.marker)
        return int(found.group(2)) if found and found.group(2) else 0


def shell_blocks() -> list[Block]:
    """Every shell block of README.md and docs/*.md, in page order."""
    blocks = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            if SHELL_FENCE.match(lines[i]):
                end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
                before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
                name = str(page.relative_to(REPO))
                blocks.append(Block(name, i + 1, before.strip(), tuple(lines[i + 1 : end])))
                i = end
            i += 1
    return blocks


def commands(block: Block) -> list[tuple[str, list[str]]]:
    """The block's commands (continuation lines joined, a leading ``$ `` dropped), each with the
    output lines (``#  TEXT``) shown under it."""
    found: list[tuple[str, list[str]]] = []
    pending: list[str] = []
    for raw in block.lines:
        line = raw.removeprefix("$ ")
        if pending or (line.strip() and not line.startswith("#")):
            pending.append(line.removesuffix("\\").strip())
            if not line.endswith("\\"):
                found.append((" ".join(pending), []))
                pending = []
        elif line.startswith("#  ") and found:
            found[-1][1].append(line[3:].strip())
    return found


def shown_prefix(output_line: str) -> str:
    """What a shown output line promises: its text before a closing ``...`` (and its ``; ``)."""
    return output_line.split("...", 1)[0].rstrip().rstrip(";").rstrip()


RUN_BLOCKS = {b.lines: b for b in shell_blocks() if b.run}  # a block repeated on two pages runs once


def test_every_shell_block_says_whether_a_test_runs_it():
    unmarked = [f"{b.page}:{b.line}: {b.marker or '(no marker)'}" for b in shell_blocks() if not MARKER.match(b.marker)]
    assert unmarked == []
    assert RUN_BLOCKS, "no runnable block found"


def test_a_command_line_keeps_its_continuations_and_shown_output():
    lines = ("$ whenpro a \\", "    --b c  # note", "#  prints: x; ...", "# not")
    block = Block("x.md", 1, "<!-- docs-test: run -->", lines)
    assert commands(block) == [("whenpro a --b c  # note", ["prints: x; ..."])]
    assert shown_prefix("prints: x; ...") == "prints: x"


def sandbox(tmp: Path) -> tuple[Path, dict[str, str], Path]:
    """A working folder with the bundled samples, the environment that keeps every write in
    ``tmp``, and the write guard's log."""
    work = tmp / "work"
    work.mkdir()
    for folder in ("sample_traces", "examples"):
        shutil.copytree(REPO / folder, work / folder, ignore=shutil.ignore_patterns("*.verdicts.jsonl", "__pycache__"))
    home = tmp / "home"
    bin_dir = tmp / "bin"
    for folder in (home, bin_dir, tmp / "tmp"):
        folder.mkdir()
    (bin_dir / "whenpro").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m whenpro_core.cli "$@"\n', encoding="utf-8")
    (bin_dir / "whenpro").chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    log = tmp / "writes-outside.log"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PYTHONPATH": f"{GUARD}{os.pathsep}{REPO}",
        "HOME": str(home),
        "TMPDIR": str(tmp / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "WHENPRO_DATA_DIR": str(home / "whenpro-data"),
        "WHENPRO_CACHE_DIR": str(home / "whenpro-cache"),
        "WHENPRO_CONFIG_DIR": str(home / "whenpro-config"),
        "WHENPRO_WRITE_GUARD_ROOTS": str(tmp),
        "WHENPRO_WRITE_GUARD_LOG": str(log),
        "LANG": "C.UTF-8",
    }
    return work, env, log


def test_the_write_guard_sees_a_write_outside_the_sandbox(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    inside = tmp_path / "in"
    inside.mkdir()
    work, env, log = sandbox(inside)
    script = f"open({str(outside / 'x')!r}, 'w').close(); open('fine.txt', 'w').close()"
    done = subprocess.run(["python", "-c", script], cwd=work, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert log.read_text(encoding="utf-8") == f"open {outside / 'x'}\n"
    assert (work / "fine.txt").exists()


@pytest.mark.parametrize("block", list(RUN_BLOCKS.values()), ids=lambda b: f"{b.page}:{b.line}")
def test_a_runnable_block_runs_as_shown(block, tmp_path):
    work, env, log = sandbox(tmp_path)
    steps = commands(block)
    assert steps, f"{block.page}:{block.line}: a run block without a command"
    for n, (command, shown) in enumerate(steps, 1):
        done = subprocess.run(
            ["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=900, check=False
        )
        expected = block.last_exit if n == len(steps) else 0
        assert done.returncode == expected, (command, done.stdout[-2000:], done.stderr[-2000:])
        for line in shown:
            assert shown_prefix(line) in done.stdout, (command, line, done.stdout)
    assert not log.exists() or log.read_text(encoding="utf-8") == "", log.read_text(encoding="utf-8")
