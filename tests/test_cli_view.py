"""``whenpro view`` from the command line: errors as one line, the TUI in a real
pseudo-terminal (with its startup-time log line), and ``--serve`` on 127.0.0.1."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import socket
import struct
import subprocess
import sys
import termios
import urllib.request
from pathlib import Path

from tests.support.waiting import TIMEOUT_S, Deadline, wait_until

ROOT = Path(__file__).resolve().parent.parent


def whenpro(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        **kw,
    )


def test_missing_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = whenpro("view", str(tmp_path / "nope.json"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"whenpro: error: {tmp_path / 'nope.json'}: no such file or folder"]
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
    proc = subprocess.Popen(
        [sys.executable, "-m", "whenpro_core.cli", "view", str(team_file)],
        cwd=ROOT,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    seen = b""
    try:
        deadline = Deadline(TIMEOUT_S)
        while not deadline.expired and not (b"toyteam" in seen and log.exists() and "started in" in log.read_text()):
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        assert b"toyteam" in seen, seen[-500:]
        os.write(master, b"q")
        deadline = Deadline(TIMEOUT_S)
        while proc.poll() is None and not deadline.expired:
            # keep draining the terminal so the app never blocks on a full pty
            if select.select([master], [], [], 0.2)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    break
        assert proc.wait(timeout=TIMEOUT_S) == 0
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


def test_serve_answers_on_localhost(team_file: Path, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "whenpro_core.cli", "view", str(team_file), "--serve", "--port", str(port)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:

        def printed() -> str:
            found = re.search(r"serving on (http://\S+)", log.read_text())
            return found.group(1) if found else ""

        url = wait_until(printed, "the URL the server prints")
        assert url.startswith(f"http://127.0.0.1:{port}/?token=")

        def page() -> str:
            try:
                with urllib.request.urlopen(url, timeout=10) as resp:
                    assert resp.status == 200
                    return resp.read().decode()
            except OSError:
                return ""

        body = wait_until(page, "the server's page")
        assert "<html" in body.lower() and "whenpro" in body
    finally:
        proc.terminate()
        proc.wait(timeout=TIMEOUT_S)


def test_serve_command_reruns_view_with_the_same_options(tmp_path: Path) -> None:
    from whenpro_tui.serve import serve_command

    cmd = serve_command("rel/path.json#2", show_labels=True, images="halfcell")
    assert "-m whenpro_core.cli view" in cmd
    assert os.path.abspath("rel/path.json#2") in cmd
    assert cmd.endswith("--labels --images halfcell --save")
    assert serve_command("t.json", show_labels=False, images="off", save=False).endswith(
        "--no-labels --images off --no-save"
    )


# --------------------------------------------------------------------------- failures before the TUI


def run_in_pty(
    argv: list[str], *, keys: bytes = b"", until: bytes = b"", timeout: float = TIMEOUT_S, env: dict | None = None
) -> tuple[int, bytes]:
    """Run ``argv`` in a pseudo-terminal of 100×30; once ``until`` shows (if given),
    type ``keys``. Returns the exit status and everything written to the terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "TERM": "xterm-256color", **(env or {})},
        close_fds=True,
    )
    os.close(slave)
    seen = b""
    typed = not keys
    try:
        deadline = Deadline(timeout)
        while proc.poll() is None and not deadline.expired:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
            if not typed and until in seen:
                os.write(master, keys)
                typed = True
        code = proc.wait(timeout=TIMEOUT_S)
        while select.select([master], [], [], 0.1)[0]:  # what was written last
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        return code, seen
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_a_single_file_that_fails_to_import_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Like ``whenpro info``: no TUI for one broken file (or ``path#key``), one line, 2."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"history": [')
    info = whenpro("info", str(bad))
    code, seen = run_in_pty([sys.executable, "-m", "whenpro_core.cli", "view", str(bad)])
    assert code == 2 and info.returncode == 2
    lines = [ln for ln in seen.decode(errors="replace").replace("\r", "").splitlines() if ln.strip()]
    assert lines == [info.stderr.strip()], lines  # the same one line as info, nothing else
    assert b"\x1b[?1049h" not in seen  # the TUI never took the screen
    # also without a terminal (the error is about the file, not the terminal)
    piped = whenpro("view", str(bad))
    assert piped.returncode == 2 and piped.stderr.strip() == info.stderr.strip()
    keyed = whenpro("view", str(bad) + "#3")
    assert keyed.returncode == 2 and keyed.stderr.startswith("whenpro: error: ")
    assert len(keyed.stderr.strip().splitlines()) == 1


def test_a_file_with_no_traces_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text("")
    proc = whenpro("view", str(tmp_path / "empty.json"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    (tmp_path / "list.json").write_text("[]")
    proc = whenpro("view", str(tmp_path / "list.json"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_view_without_a_terminal_refuses_in_one_line(team_file: Path, tmp_path: Path) -> None:
    proc = whenpro("view", str(team_file))  # stdin and stdout are pipes
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "whenpro: error: whenpro view needs a terminal (--serve opens it in a browser instead)"
    )
    assert proc.stdout == ""
    folder = whenpro(str(tmp_path))  # the short form too, and for a folder
    assert folder.returncode == 2 and "needs a terminal" in folder.stderr


def test_a_folder_with_a_broken_file_still_opens_the_library(dataset_dir: Path) -> None:
    code, seen = run_in_pty(
        [sys.executable, "-m", "whenpro_core.cli", "view", str(dataset_dir)], keys=b"q", until=b"failed to import"
    )
    assert code == 0 and b"failed to import" in seen


def test_an_uncaught_exception_in_the_tui_gives_a_non_zero_status(tmp_path: Path) -> None:
    """A bug in a screen must not look like success to the shell."""
    script = tmp_path / "boom.py"
    script.write_text(
        "from whenpro_tui.app import run\n"
        "def boom():\n"
        "    raise RuntimeError('a bug in a screen')\n"
        "run('', start=boom)\n"
    )
    code, seen = run_in_pty([sys.executable, str(script)], env={"PYTHONPATH": str(ROOT)})
    assert code == 1
    assert b"RuntimeError" in seen and b"a bug in a screen" in seen
