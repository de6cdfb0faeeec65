"""``whenpro view --serve``: the same app in a browser, through textual-serve, bound to
127.0.0.1 only. Each browser session runs ``python -m whenpro_core.cli view ...`` in a
subprocess.

Only the page the server printed may use it (:class:`Gate`): the printed URL carries a
random token (as Jupyter's does) that the page (``/?token=``) and the WebSocket
(``/ws/<token>``) require; every request's ``Host`` must name the served address
(``127.0.0.1:PORT`` or ``localhost:PORT``: a page of another site whose name resolves to
127.0.0.1, DNS rebinding, is refused) and a WebSocket's ``Origin``, when a browser sends
one, must be the served page's own (a page of another origin, another local port among
them, cannot open a session). Refusals are ``403`` with a one-line reason.

Sessions never outlive their browser or the server. Each session's app runs without a
shell, as the leader of its own process group (so a stop reaches everything it
started, and a ctrl+c in the server's terminal reaches the server only). Ending a
session (the browser closed or dropped, or the server stopping): the app is asked to
quit (it saves what it must), then after :data:`QUIT_GRACE_S` seconds its process
group gets SIGTERM, then after :data:`TERM_GRACE_S` more SIGKILL; its output is drained
meanwhile, so an app blocked on a full pipe can still exit. The server stops every
live session before it exits. The app's own side (stdin closed, the server's death)
is :mod:`whenpro_tui.web_session`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import secrets
import shlex
import signal
import socket
import sys
from asyncio.subprocess import Process
from pathlib import Path
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

import whenpro_core
from whenpro_core.errors import ConfigError
from whenpro_tui.web_session import SERVER_PID_ENV

HOST = "127.0.0.1"
#: Seconds a session's app has to quit when asked, before SIGTERM.
QUIT_GRACE_S = 5.0
#: Seconds after SIGTERM before SIGKILL.
TERM_GRACE_S = 3.0

log = logging.getLogger("whenpro.serve")


def serve_argv(target: str, *, show_labels: bool, images: str, save: bool = True) -> list[str]:
    """The command each browser session runs, as argv (the target made absolute, so the
    server's working folder does not matter)."""
    absolute = os.path.abspath(target)
    return [
        sys.executable,
        "-m",
        "whenpro_core.cli",
        "view",
        absolute,
        "--labels" if show_labels else "--no-labels",
        "--images",
        images,
        "--save" if save else "--no-save",
    ]


def serve_command(target: str, *, show_labels: bool, images: str, save: bool = True) -> str:
    """:func:`serve_argv` as one shell-quoted line (what the server prints)."""
    return shlex.join(serve_argv(target, show_labels=show_labels, images=images, save=save))


def check_port(port: int) -> None:
    """Raise ConfigError ("cannot listen on 127.0.0.1:PORT: <reason>") when ``port`` cannot
    be bound on :data:`HOST` now (busy, or privileged), so the CLI says so in one line
    before announcing the URL. Binds with SO_REUSEADDR, as the server itself does."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {HOST}:{port}: {exc.strerror or exc}", expected="a free port (--port)"
            ) from None


def signal_group(process: Process, sig: signal.Signals) -> None:
    """Send ``sig`` to the process group led by ``process`` (gone already: nothing)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


async def exited(process: Process, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``process`` to exit; True when it has."""
    try:
        await asyncio.wait_for(process.wait(), timeout)
    except TimeoutError:
        return False
    return True


class Session(AppService):
    """One browser session's app process (see the module docstring)."""

    def __init__(self, argv: list[str], **kwargs: Any) -> None:
        super().__init__(shlex.join(argv), **kwargs)
        self.argv = argv
        self._stopped: asyncio.Future[None] | None = None

    @property
    def process(self) -> Process | None:
        """The app process (``None`` before :meth:`start`)."""
        return self._process

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        environment = super()._build_environment(width=width, height=height)
        environment[SERVER_PID_ENV] = str(os.getpid())
        return environment

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width, height),
            start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def on_data(self, payload: bytes) -> None:
        # A closed browser must not stop the reading: the app would block on a full pipe.
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.remote_write_bytes(payload)

    async def stop(self) -> None:
        """End the session (once; later calls wait for the first); see the module
        docstring. Survives the caller's cancellation."""
        if self._stopped is None:
            self._stopped = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopped)

    async def _stop(self) -> None:
        process = self._process
        if process is None:
            return
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        if process.returncode is None:
            await self.send_meta({"type": "quit"})
            if not await exited(process, QUIT_GRACE_S):
                log.warning("session %s did not quit: SIGTERM", process.pid)
                signal_group(process, signal.SIGTERM)
                if not await exited(process, TERM_GRACE_S):
                    log.warning("session %s ignored SIGTERM: SIGKILL", process.pid)
                    signal_group(process, signal.SIGKILL)
                    await process.wait()
        signal_group(process, signal.SIGKILL)  # anything the app started and left behind
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._task), TERM_GRACE_S)  # drained to EOF
            self._task.cancel()
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.remote_close()  # the browser shows "Session ended"

    def kill_now(self) -> None:
        """Last resort when the event loop is gone: SIGKILL the session's group."""
        if self._process is not None and self._process.returncode is None:
            signal_group(self._process, signal.SIGKILL)


class Gate:
    """Who may use the server on :data:`HOST`:``port`` (see the module docstring).

    ``token``: the secret the URL carries (default: 32 random bytes as 64 hex digits)."""

    def __init__(self, port: int, token: str | None = None) -> None:
        self.port = port
        self.token = token or secrets.token_hex(32)
        self.hosts = frozenset({f"{HOST}:{port}", f"localhost:{port}"})

    @property
    def url(self) -> str:
        """The URL to open (printed by ``whenpro view --serve``)."""
        return f"http://{HOST}:{self.port}/?token={self.token}"

    def _token_ok(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.token.encode())

    def refusal(self, path: str, headers: dict[str, str], query_token: str) -> str | None:
        """Why a request for ``path`` (its ``headers``, lower-cased names; the page's
        ``?token=``) is refused, or ``None`` when it may go on."""
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            return f"Host {host!r} is not the served address (open {self.url.split('?')[0]})"
        if path == "/":
            return None if self._token_ok(query_token) else "open the URL whenpro printed (with its token)"
        if path == "/ws" or path.startswith("/ws/"):
            if not self._token_ok(path.removeprefix("/ws").removeprefix("/")):
                return "the session needs the token of the URL whenpro printed"
            origin = headers.get("origin")
            if origin is not None and origin.lower() != f"http://{host}":
                return f"Origin {origin!r} is not the served page's"
        return None


class SessionServer(Server):
    """textual-serve's server with sessions that end (see the module docstring), behind
    ``gate``."""

    def __init__(self, argv: list[str], gate: Gate, **kwargs: Any) -> None:
        super().__init__(shlex.join(argv), **kwargs)
        self.argv = argv
        self.gate = gate
        self.sessions: set[Session] = set()

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.on_shutdown.append(self._stop_sessions)
        app.middlewares.append(self._guard)
        app.router.add_get("/ws/{token}", self.handle_websocket)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        headers = {name.lower(): value for name, value in request.headers.items()}
        refused = self.gate.refusal(request.path, headers, request.query.get("token", ""))
        if refused is not None:
            log.warning("refused %s %s: %s", request.method, request.path, refused)
            return web.Response(status=403, text=f"whenpro: {refused}\n")
        response: web.StreamResponse = await handler(request)
        if request.path == "/":  # the page's URL holds the token: never sent on, never cached
            response.headers["Referrer-Policy"] = "no-referrer"
            response.headers["Cache-Control"] = "no-store"
        return response

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        """textual-serve's page, its WebSocket URL carrying the token, on the host the
        browser asked for (so the socket's origin is the page's)."""
        return {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"ws://{request.host}/ws/{self.gate.token}",
            "config": {"static": {"url": f"http://{request.host}/static/"}},
            "application": {"name": self.title},
        }

    async def _stop_sessions(self, _app: web.Application) -> None:
        await asyncio.gather(*(session.stop() for session in list(self.sessions)), return_exceptions=True)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """A browser connected: run a session until its websocket closes, then end it."""
        websocket = web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        session: Session | None = None
        try:
            await websocket.prepare(request)
            session = Session(
                self.argv,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            self.sessions.add(session)
            await session.start(width, height)
            await self._process_messages(websocket, session)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # one session's failure is logged, the server goes on
            log.exception(error)
        finally:
            if session is not None:
                await session.stop()
                self.sessions.discard(session)
        return websocket

    def serve(self, debug: bool = False) -> None:
        try:
            super().serve(debug=debug)
        finally:
            for session in list(self.sessions):
                session.kill_now()


def serve(target: str, *, show_labels: bool, images: str, gate: Gate, save: bool = True) -> None:
    """Serve the app on http://127.0.0.1:``gate.port`` behind ``gate`` until interrupted
    (SIGINT or SIGTERM); every session ends with the server."""
    root = str(Path(whenpro_core.__file__).resolve().parent.parent)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])
    argv = serve_argv(target, show_labels=show_labels, images=images, save=save)
    SessionServer(argv, gate, host=HOST, port=gate.port, title="whenpro").serve()
