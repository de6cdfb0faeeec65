"""The app's side of a browser session (``whenpro view --serve``): a session ends when
its browser or its server goes, never lingers.

textual-serve runs one app process per browser tab and talks to it over the process's
stdin/stdout (Textual's :class:`~textual.drivers.web_driver.WebDriver`). Textual's
driver stops reading when stdin closes but leaves the app running, with nobody reading
what it draws; its SIGTERM handler only posts a message, which a wedged app never
handles. :class:`SessionDriver` closes those gaps:

* **stdin closed** (the server dropped the session, or died): the app is asked to exit;
* **SIGTERM / SIGINT**: the same;
* **asked but still running** :data:`EXIT_GRACE_S` seconds later: the process ends
  itself (``os._exit``; the app had that long to save what it must);
* **the server dies** (even ``kill -9``): on Linux the kernel sends SIGTERM
  (``PR_SET_PDEATHSIG``, armed by :func:`watch_parent` from ``$WHENPRO_SERVE_PID``,
  which :mod:`whenpro_tui.serve` sets); elsewhere the closed stdin does it.

The server side (session process groups, stop with escalation) is in
:mod:`whenpro_tui.serve`.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import signal
import sys
import threading
from collections.abc import Mapping
from typing import Any

from textual import messages
from textual.drivers.web_driver import WebDriver

#: Environment variable naming the server's pid (set by :mod:`whenpro_tui.serve`).
SERVER_PID_ENV = "WHENPRO_SERVE_PID"
#: Seconds an app asked to exit has before the process ends itself.
EXIT_GRACE_S = 10.0
#: ``prctl`` option: signal this process when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1

log = logging.getLogger("whenpro.tui")


def watch_parent(environ: Mapping[str, str] = os.environ) -> bool:
    """Arrange for SIGTERM when the server named by ``$WHENPRO_SERVE_PID`` dies (Linux;
    a no-op elsewhere and outside a served session). Returns ``False`` when the server
    is already gone (this process's parent is not it any more): the caller ends then."""
    expected = environ.get(SERVER_PID_ENV, "")
    if not expected.isdigit():
        return True
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError) as exc:  # no libc prctl: the closed stdin still ends us
            log.warning("parent-death signal not armed: %s", exc)
    return os.getppid() == int(expected)


class SessionDriver(WebDriver):
    """Textual's web driver, ending the session when the browser or server goes (see
    the module docstring). Chosen by :meth:`whenpro_tui.app.WhenproApp.get_driver_class`
    when the app runs under textual-serve."""

    def __init__(
        self, app: Any, *, debug: bool = False, mouse: bool = True, size: tuple[int, int] | None = None
    ) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self._ending = threading.Event()
        self._orphan = not watch_parent()

    def start_application_mode(self) -> None:
        super().start_application_mode()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):  # replaces the web driver's handlers
            loop.add_signal_handler(sig, self.end_session)
        if self._orphan:  # the server died while this session was starting
            self.end_session()

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():  # stdin closed: the server dropped us or died
            self.end_session()

    def end_session(self) -> None:
        """Ask the app to exit (thread-safe, once); end the process if it has not
        within :data:`EXIT_GRACE_S` seconds."""
        if self._ending.is_set():
            return
        self._ending.set()
        self._app.post_message(messages.ExitApp())
        timer = threading.Timer(EXIT_GRACE_S, os._exit, args=(0,))
        timer.daemon = True
        timer.start()
