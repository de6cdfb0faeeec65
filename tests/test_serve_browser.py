"""``whenpro view --serve`` in a real browser (issue 13, item 6): headless Chromium
(the system package, through Playwright) opens the Who&When Pro image trace, sees
the app draw it, steps through it with no "Session ended"; closing the tab ends the
session's app process; stopping the server (ctrl+c) or killing it (``kill -9``) ends
its sessions and leaves nothing running.

The page's terminal draws on a canvas, so the test reads what the server sent to it:
an init script taps the page's WebSocket and keeps the text (escape sequences
removed); waits are Playwright waits on that text, or :func:`wait_until` on processes.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psutil
import pytest

from tests.conftest import ROOT, wait_until

#: Milliseconds Playwright waits for text (a hang guard, as tests.support.waiting).
PAGE_WAIT_MS = 120_000

#: Keeps what the terminal's WebSocket receives as text: ``window.__since(n)`` is the
#: text after the first ``n`` characters, escape sequences removed.
TERMINAL_TAP = r"""
(() => {
  const Native = window.WebSocket;
  const decoder = new TextDecoder();
  window.__term = "";
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        if (typeof event.data !== "string") {
          window.__term += decoder.decode(event.data, {stream: true});
        }
      });
    }
  };
  window.__since = (n) => window.__term.slice(n)
    .replace(/\x1b\][^\x07\x1b]*(\x07|\x1b\\)/g, "")
    .replace(/\x1b\[[0-9;?<>=$]*[ -\/]*[@-~]/g, "");
})();
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def image_trace(real_traces: Path) -> Path:
    path = real_traces / "who-when-pro-samples" / "data" / "traces" / "mmsearch_car.json"
    if not path.is_file():
        pytest.skip(f"Who&When Pro image sample not present at {path}")
    return path


def gone(pid: int) -> bool:
    """True when process ``pid`` has ended (a zombie waiting for init counts as ended)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


class Served:
    """``whenpro view TRACE --serve --port PORT`` running as a subprocess; :attr:`url` is
    the URL it printed (with its token)."""

    def __init__(self, trace: Path, log: Path) -> None:
        self.port = free_port()
        self.log = log
        with log.open("wb") as out:  # --no-save: nothing is ever written beside the shared trace
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "whenpro_core.cli",
                    "view",
                    str(trace),
                    "--serve",
                    "--port",
                    str(self.port),
                    "--no-save",
                ],
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_until(self.listening, f"the server on port {self.port}", detail=self.output)
        printed = re.search(r"serving on (http://\S+)", self.output())
        assert printed, self.output()
        self.url = printed.group(1)
        self.token = parse_qs(urlsplit(self.url).query)["token"][0]

    def listening(self) -> bool:
        assert self.proc.poll() is None, f"the server exited:\n{self.output()}"
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def sessions(self) -> list[int]:
        """Pids of the session app processes (``whenpro_core.cli view`` below the server)."""
        try:
            below = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        found = []
        for child in below:
            try:
                if "view" in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                    found.append(child.pid)
            except psutil.NoSuchProcess:
                continue
        return found

    def descendants(self) -> list[int]:
        try:
            return [p.pid for p in psutil.Process(self.proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def stop(self) -> None:
        """Leave nothing behind, whatever the test did (its process group)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def served(real_traces: Path, tmp_path: Path) -> Iterator[Served]:
    server = Served(image_trace(real_traces), tmp_path / "server.log")
    try:
        yield server
    finally:
        server.stop()


def open_session(browser: Any, served: Served) -> tuple[Any, Any]:
    """A new browser tab on the server, once the app has drawn the first step's image
    strip; returns ``(context, page)``."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(TERMINAL_TAP)
    page = context.new_page()
    page.goto(served.url)
    wait_for_text(page, 0, "task: query #1")  # the first step's images: the strip made its tiles
    page.focus("textarea.xterm-helper-textarea")  # keys go to the terminal, as after a click
    return context, page


def wait_for_text(page: Any, since: int, text: str) -> None:
    """Wait until the terminal has received ``text`` after its first ``since`` characters."""
    page.wait_for_function("([n, t]) => window.__since(n).includes(t)", arg=[since, text], timeout=PAGE_WAIT_MS)


def press(page: Any, key: str, then: str) -> None:
    """Press ``key`` in the page and wait for ``then`` to be drawn."""
    since = page.evaluate("window.__term.length")
    page.keyboard.press(key)
    wait_for_text(page, since, then)


def session_ended(page: Any) -> bool:
    """True when the page shows textual-serve's "Session ended." dialog."""
    return bool(page.evaluate("document.body.classList.contains('-closed')"))


def test_a_browser_session_shows_the_image_trace_and_ends_with_its_tab(browser: Any, served: Served) -> None:
    context, page = open_session(browser, served)
    sessions = wait_until(served.sessions, "the session's app process")
    assert len(sessions) == 1
    press(page, "j", "Step 0")
    press(page, "j", "observation #1")  # step 1: five observation images
    press(page, "j", "Step 2")
    press(page, "k", "observation #1")
    assert not session_ended(page), served.output()
    assert page.locator(".closed-dialog").is_hidden()

    context.close()  # the tab goes: its session must end
    wait_until(lambda: gone(sessions[0]), "the closed tab's app process to end", detail=served.output)
    assert served.proc.poll() is None  # the server goes on

    # a second tab, then ctrl+c on the server: the session ends, the browser says so
    context, page = open_session(browser, served)
    sessions = wait_until(served.sessions, "the second session's app process")
    every = served.descendants()
    served.proc.send_signal(signal.SIGINT)
    page.wait_for_selector("body.-closed", timeout=PAGE_WAIT_MS)  # "Session ended."
    assert served.proc.wait(timeout=PAGE_WAIT_MS / 1000) == 0, served.output()
    wait_until(lambda: all(gone(pid) for pid in every), "every process of the server to end", detail=served.output)
    context.close()


def test_sessions_end_when_the_server_is_killed(browser: Any, served: Served) -> None:
    context, page = open_session(browser, served)
    sessions = wait_until(served.sessions, "the session's app process")
    every = served.descendants()
    os.kill(served.proc.pid, signal.SIGKILL)  # no clean-up at all: the sessions notice alone
    served.proc.wait()
    wait_until(lambda: all(gone(pid) for pid in every), "the orphaned session to end")
    assert sessions and all(gone(pid) for pid in sessions)
    context.close()
