"""``whenpro view`` from the command line: errors as one line, the TUI in a real
pseudo-terminal (with its startup-time log line), and ``--serve`` on 127.0.0.1."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import socket
import struct
import subprocess
import sys
import termios
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def whenpro(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "whenpro_core.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, **kw)


def test_missing_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = whenpro("view", str(tmp_path / "nope.json"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"whenpro: error: {tmp_path / 'nope.json'}: no such file or folder"]
    # `whenpro PATH` is routed to `view`
    short = whenpro(str(tmp_path / "nope.json"))
    assert short.returncode == 2 and "no such file or folder" in short.stderr


def test_bad_images_option_is_rejected(team_file: Path) -> None:
    proc = whenpro("view", str(team_file), "--images", "ascii-art")
    assert proc.returncode == 2


def test_view_runs_in_a_terminal_and_logs_startup(team_file: Path, tmp_path: Path) -> None:
    log = tmp_path / "tui.log"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = {**os.environ, "WHENPRO_TUI_LOG": str(log), "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-m", "whenpro_core.cli", "view", str(team_file)],
                            cwd=ROOT, stdin=slave, stdout=slave, stderr=slave, env=env,
                            close_fds=True)
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
                b"toyteam" in seen and log.exists() and "started in" in log.read_text()):
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        assert b"toyteam" in seen, seen[-500:]
        os.write(master, b"q")
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            # keep draining the terminal so the app never blocks on a full pty
            if select.select([master], [], [], 0.2)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    break
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = log.read_text()
    assert "whenpro started in" in text and " ms" in text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_answers_on_localhost(team_file: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "whenpro_core.cli", "view", str(team_file),
                             "--serve", "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        body = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as resp:
                    assert resp.status == 200
                    body = resp.read().decode()
                    break
            except OSError:
                time.sleep(0.3)
        assert "<html" in body.lower() and "whenpro" in body
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_serve_command_reruns_view_with_the_same_options(tmp_path: Path) -> None:
    from whenpro_tui.serve import serve_command

    cmd = serve_command("rel/path.json#2", show_labels=True, images="halfcell")
    assert "-m whenpro_core.cli view" in cmd
    assert os.path.abspath("rel/path.json#2") in cmd
    assert cmd.endswith("--labels --images halfcell")
