"""Records every write a Python process makes outside the allowed folders (tests/test_docs_commands.py).

Put this folder first on ``PYTHONPATH`` and set ``WHENPRO_WRITE_GUARD_ROOTS`` (folders where writes
are allowed, ``os.pathsep``-separated) and ``WHENPRO_WRITE_GUARD_LOG`` (a file): Python imports
``sitecustomize`` at start-up, and this one installs an audit hook (PEP 578) that appends one line,
``EVENT PATH``, to the log for each file opened for writing, created, renamed, replaced, linked or
removed outside those folders. Bytecode caches (``__pycache__`` folders) and ``/dev`` are allowed.
Child processes inherit the environment, so they are guarded too. Without the two variables it
does nothing.
"""

from __future__ import annotations

import os
import sys

_ROOTS = [os.path.realpath(r) for r in os.environ.get("WHENPRO_WRITE_GUARD_ROOTS", "").split(os.pathsep) if r]
_LOG = os.environ.get("WHENPRO_WRITE_GUARD_LOG", "")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
#: audit event -> the positions of its arguments that name a path written to
_PATH_EVENTS = {
    "os.rename": (0, 1),
    "os.replace": (0, 1),
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.mkdir": (0,),
    "os.symlink": (1,),
    "os.link": (1,),
    "os.truncate": (0,),
    "shutil.copyfile": (1,),
}


def _allowed(path: object) -> bool:
    if isinstance(path, int) or path is None:  # a file descriptor: its opening was checked
        return True
    text = os.fsdecode(os.fspath(path))  # type: ignore[arg-type]
    full = os.path.realpath(text)
    if full.startswith("/dev/") or "__pycache__" in full.split(os.sep):
        return True
    return any(full == root or full.startswith(root + os.sep) for root in _ROOTS)


def _opens_for_writing(args: tuple[object, ...]) -> bool:
    mode, flags = (args + (None, None))[1:3]
    if isinstance(flags, int) and flags & _WRITE_FLAGS:
        return True
    return isinstance(mode, str) and any(c in mode for c in "wax+")


def _install(log_fd: int) -> None:
    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "open":
            paths = [args[0]] if args and _opens_for_writing(args) else []
        elif event in _PATH_EVENTS:
            paths = [args[i] for i in _PATH_EVENTS[event] if i < len(args)]
        else:
            return
        for path in paths:
            if not _allowed(path):
                os.write(log_fd, f"{event} {os.fsdecode(os.fspath(path))}\n".encode())  # type: ignore[arg-type]

    sys.addaudithook(hook)


if _ROOTS and _LOG:
    _install(os.open(_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
