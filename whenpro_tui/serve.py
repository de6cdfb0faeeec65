"""``whenpro view --serve``: the same app in a browser, through textual-serve, bound to
127.0.0.1 only. Each browser session runs ``python -m whenpro_core.cli view ...`` in a
subprocess."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import whenpro_core

HOST = "127.0.0.1"


def serve_command(target: str, *, show_labels: bool, images: str, save: bool = True) -> str:
    """The shell command each browser session runs (the target made absolute, so the
    server's working folder does not matter)."""
    absolute = os.path.abspath(target)
    return shlex.join([sys.executable, "-m", "whenpro_core.cli", "view", absolute,
                       "--labels" if show_labels else "--no-labels", "--images", images,
                       "--save" if save else "--no-save"])


def check_port(port: int) -> None:
    """Raise ConfigError ("cannot listen on 127.0.0.1:PORT: <reason>") when ``port`` cannot
    be bound on :data:`HOST` now (busy, or privileged), so the CLI says so in one line
    before announcing the URL. Binds with SO_REUSEADDR, as the server itself does."""
    import socket

    from whenpro_core.errors import ConfigError

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as exc:
            raise ConfigError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}",
                              expected="a free port (--port)") from None


def serve(target: str, *, show_labels: bool, images: str, port: int, save: bool = True) -> None:
    """Serve the app on http://127.0.0.1:``port`` until interrupted."""
    from textual_serve.server import Server

    root = str(Path(whenpro_core.__file__).resolve().parent.parent)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])
    Server(serve_command(target, show_labels=show_labels, images=images, save=save), host=HOST,
           port=port, title="whenpro").serve()
