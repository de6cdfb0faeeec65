"""Append-only JSON-lines logs that survive a kill (DESIGN §9): the build journal and
the validation log of a dataset.

Each record is one line written by a single ``write`` on a file opened with
``O_APPEND``, under an exclusive ``flock`` (so a TUI and a CLI appending at the same
time never interleave), then ``fsync``-ed. A kill can only leave a last line without its
newline; since every write ends with one, such a tail is a torn record: readers ignore
it and the next append cuts it off first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

try:  # POSIX; elsewhere appends are not locked (one writer at a time)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from whenpro_core.errors import TraceFormatError
from whenpro_core.storage import jsonio


@contextmanager
def locked(fd: int) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``fd`` (no-op without ``fcntl``)."""
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _cut_torn_tail(fd: int) -> int:
    """Truncate a last line that lacks its newline; returns the bytes removed."""
    size = os.lseek(fd, 0, os.SEEK_END)
    if size == 0:
        return 0
    os.lseek(fd, size - 1, os.SEEK_SET)
    if os.read(fd, 1) == b"\n":
        return 0
    back = min(size, 1 << 16)
    while True:
        os.lseek(fd, size - back, os.SEEK_SET)
        chunk = os.read(fd, back)
        cut = chunk.rfind(b"\n")
        if cut >= 0 or back == size:
            break
        back = min(size, back * 4)
    keep = size - back + cut + 1 if cut >= 0 else 0
    os.ftruncate(fd, keep)
    return size - keep


def append(path: str | Path, record: dict[str, Any]) -> None:
    """Append ``record`` as one JSON line (locked, torn tail cut first, fsync-ed).
    Creates the file and its folder. Raises OSError when the folder is not writable."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = jsonio.dumps(record) + b"\n"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        with locked(fd):
            _cut_torn_tail(fd)
            os.write(fd, line)
            os.fsync(fd)
    finally:
        os.close(fd)


def read(path: str | Path, fmt_prefix: str) -> tuple[list[dict[str, Any]], int]:
    """The records of a log (dicts whose ``format`` starts with ``fmt_prefix``) in file
    order, and how many lines were skipped (torn tail, foreign or broken lines). A missing
    file has no records. Raises TraceFormatError when the file cannot be read."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], 0
    except OSError as exc:
        raise TraceFormatError(f"cannot read log: {exc.strerror}", path=path) from None
    lines = data.split(b"\n")
    out, skipped = [], 0
    complete = lines[:-1]  # the part after the last newline is empty or a torn record
    if lines[-1].strip():
        skipped += 1
    for line in complete:
        if not line.strip():
            continue
        try:
            value = jsonio.loads(line)
        except orjson.JSONDecodeError:
            skipped += 1
            continue
        if isinstance(value, dict) and str(value.get("format", "")).startswith(fmt_prefix):
            out.append(value)
        else:
            skipped += 1
    return out, skipped


__all__ = ["append", "locked", "read"]
