"""Copying text where the user can paste it, and saying how it was sent.

Terminals receive a copy as an OSC 52 escape sequence, which many set-ups drop without
a word (tmux's default ``set-clipboard external``, terminals that disable it). So a copy
also goes through a system clipboard tool when one fits the session (``wl-copy`` under
Wayland, ``xclip``/``xsel`` under X11, ``pbcopy`` on macOS); with none, the text is also
written to a file under the cache folder (``~/.cache/whenpro/copies``) and the message
says where. :func:`copy_text` returns a :class:`CopyReport` whose ``message`` is the one
line to show.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from textual.app import App

from whenpro_core.safety.textsafe import shown_path
from whenpro_core.storage.fsutil import atomic_write_text
from whenpro_core.storage.paths import cache_dir

#: Seconds a clipboard tool may take to read the text.
TOOL_TIMEOUT = 5.0


@dataclass(frozen=True)
class CopyReport:
    """How a copy was sent: ``tool`` (e.g. ``"xclip"``, or ``None`` when only OSC 52
    was sent), ``saved_to`` (the fallback file, or ``None``), ``in_tmux``."""

    tool: str | None
    saved_to: Path | None
    in_tmux: bool

    def message(self, what: str) -> str:
        """One line for the user: ``what`` (e.g. ``"step 3 (243 B)"``) and how it went."""
        if self.tool:
            return f"Copied {what} with {self.tool}."
        via = f"Sent {what} by OSC 52 (" + (
            "tmux drops it unless `set -g set-clipboard on`)" if self.in_tmux else "some terminals ignore it)"
        )
        if self.saved_to is not None:
            # the whole path (up to 240 characters): the user needs it to open the saved file
            return f"{via}; saved to {shown_path(self.saved_to, 240)}"
        return via + "; no clipboard tool (wl-copy, xclip, xsel, pbcopy) found."


def clipboard_tool(env: Mapping[str, str] | None = None) -> list[str] | None:
    """The command line of a clipboard tool that fits this session, or ``None``."""
    env = os.environ if env is None else env
    path = env.get("PATH")
    candidates: list[list[str]] = []
    if env.get("WAYLAND_DISPLAY"):
        candidates.append(["wl-copy"])
    if env.get("DISPLAY"):
        candidates += [["xclip", "-selection", "clipboard"], ["xsel", "--clipboard", "--input"]]
    if sys.platform == "darwin":
        candidates.append(["pbcopy"])
    for argv in candidates:
        found = shutil.which(argv[0], path=path)
        if found:
            return [found, *argv[1:]]
    return None


def _run_tool(argv: list[str], text: str) -> bool:
    try:
        done = subprocess.run(
            argv,
            input=text.encode("utf-8"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=TOOL_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _file_name(name: str) -> str:
    return (re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "copy")[:80] + ".txt"


def copy_text(app: App, text: str, *, name: str) -> CopyReport:
    """Copy ``text`` by OSC 52 and a clipboard tool; without a tool, also write it to
    ``<cache>/copies/<name>.txt``. Never raises (a failed tool counts as none)."""
    app.copy_to_clipboard(text)
    in_tmux = bool(os.environ.get("TMUX"))
    argv = clipboard_tool()
    if argv and _run_tool(argv, text):
        return CopyReport(Path(argv[0]).name, None, in_tmux)
    try:
        saved: Path | None = atomic_write_text(cache_dir() / "copies" / _file_name(name), text)
    except OSError:
        saved = None
    return CopyReport(None, saved, in_tmux)
