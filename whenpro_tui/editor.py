"""Open text in the user's editor (``$VISUAL``, else ``$EDITOR``, else ``vi``) with the
app suspended, as mini-swe-agent's inspector does. The text goes to a private temp file
(mode 0600) that is removed afterwards."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import tempfile

from textual.app import App, SuspendNotSupported


def editor_command() -> list[str]:
    """The editor command line from ``$VISUAL`` / ``$EDITOR`` (``["vi"]`` if unset)."""
    raw = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        return shlex.split(raw)
    except ValueError:
        return [raw]


def open_in_editor(app: App, text: str, *, prefix: str = "whenpro-step-") -> str | None:
    """Show ``text`` in the editor; returns ``None`` on success or a one-line reason
    why no editor could be run (missing editor, no terminal to hand over)."""
    argv = editor_command()
    if not argv or shutil.which(argv[0]) is None:
        name = argv[0] if argv else "(empty)"
        return f"Editor not found: {name!r}. Set $EDITOR to an installed editor."
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=".md", text=True)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            with app.suspend():
                subprocess.run([*argv, path], check=False)
        except SuspendNotSupported:
            return "Cannot hand the terminal to an editor here (no terminal, e.g. in a browser)."
        except OSError as exc:
            return f"Could not run the editor {argv[0]!r}: {exc.strerror or exc}"
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return None
