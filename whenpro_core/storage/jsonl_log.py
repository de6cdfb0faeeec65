"""Append-only JSON-lines logs that survive a kill: the one home of how whenpro appends
records to a file (docs/architecture.md, 'Files whenpro writes'). Used by the build
journal and the validation log of a dataset (:mod:`whenpro_core.dataset.build_store`,
:mod:`whenpro_core.dataset.validate`), bench results (:mod:`whenpro_core.bench.records`)
and verdict sidecars (:mod:`whenpro_core.attribution.verdicts`).

Each record is one line written by a single ``write`` on a file opened with
``O_APPEND``, under an exclusive ``flock`` (so a TUI and a CLI appending at the same
time never interleave). A kill can only leave a last line without its newline; since
every write ends with one, such a tail is a torn record: readers ignore it, and the next
writer repairs it first (:func:`repair_tail`: cut off, or ended with a newline when the
caller says the tail is a whole record or not ours to cut).

Durability policy: :func:`append` ``fsync``-s every record (journals, validation
records, verdicts: few, precious writes); an :class:`Appender` flushes every record to
the operating system and ``fsync``-s when it is closed (bench results: many records,
each cheap to redo; a killed run loses at most the records in flight).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import orjson

try:  # POSIX; elsewhere appends are not locked (one writer at a time)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from whenpro_core.errors import TraceFormatError
from whenpro_core.storage import jsonio

#: What :func:`repair_tail` did: nothing, cut a torn record off, or ended a whole last
#: line (or one not ours) with the missing newline.
REPAIR_NONE, REPAIR_CUT, REPAIR_NEWLINE = "", "cut", "newline"


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


def _last_line(fd: int, size: int) -> bytes:
    """The bytes after the last newline of a file of ``size`` bytes (all of it when it
    has none), read backwards in growing chunks."""
    back = min(size, 1 << 16)
    while True:
        os.lseek(fd, size - back, os.SEEK_SET)
        chunk = os.read(fd, back)
        cut = chunk.rfind(b"\n")
        if cut >= 0 or back == size:
            return chunk[cut + 1 :]
        back = min(size, back * 4)


def repair_tail(fd: int, keep: Callable[[bytes], bool] | None = None) -> tuple[str, int]:
    """Repair a last line that lacks its newline, on a file descriptor opened for
    reading and writing. ``keep(tail)`` True (a whole record, or bytes that are not a
    fragment of ours) ends it with a newline so readers see or skip it; otherwise (and
    always without ``keep``) it is cut off. Returns (:data:`REPAIR_NONE` /
    :data:`REPAIR_CUT` / :data:`REPAIR_NEWLINE`, bytes removed)."""
    size = os.lseek(fd, 0, os.SEEK_END)
    if size == 0:
        return REPAIR_NONE, 0
    os.lseek(fd, size - 1, os.SEEK_SET)
    if os.read(fd, 1) == b"\n":
        return REPAIR_NONE, 0
    tail = _last_line(fd, size)
    if keep is not None and keep(tail):
        os.lseek(fd, 0, os.SEEK_END)
        os.write(fd, b"\n")
        return REPAIR_NEWLINE, 0
    os.ftruncate(fd, size - len(tail))
    return REPAIR_CUT, len(tail)


def _open_for_append(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)


def repair(path: str | Path, keep: Callable[[bytes], bool] | None = None) -> tuple[str, int]:
    """:func:`repair_tail` on the file at ``path`` (under its lock), then close it.
    Raises OSError when the file cannot be opened for writing."""
    fd = os.open(path, os.O_RDWR)
    try:
        with locked(fd):
            return repair_tail(fd, keep)
    finally:
        os.close(fd)


def append(path: str | Path, record: dict[str, Any]) -> None:
    """Append ``record`` as one JSON line: locked, a torn tail cut first, ``fsync``-ed.
    Creates the file and its folder. Raises OSError when the folder or file is not
    writable."""
    line = jsonio.dumps(record) + b"\n"
    fd = _open_for_append(Path(path))
    try:
        with locked(fd):
            repair_tail(fd)
            os.write(fd, line)
            os.fsync(fd)
    finally:
        os.close(fd)


def append_first(path: str | Path, record: dict[str, Any]) -> dict[str, Any]:
    """Append ``record`` only when the log holds no whole line yet (locked, a torn tail
    cut first, ``fsync``-ed), and return the log's first record: ``record``, or the one
    another process wrote first (the header of a log that several jobs may start at
    once). Raises OSError when the folder or file is not writable, TraceFormatError when
    the first line is not a JSON object."""
    fd = _open_for_append(Path(path))
    try:
        with locked(fd):
            repair_tail(fd)
            size = os.lseek(fd, 0, os.SEEK_END)
            if size == 0:
                os.write(fd, jsonio.dumps(record) + b"\n")
                os.fsync(fd)
                return record
            os.lseek(fd, 0, os.SEEK_SET)
            first = _first_line(fd)
    finally:
        os.close(fd)
    try:
        value = jsonio.loads(first)
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise TraceFormatError("the log's first line is not a JSON object", path=Path(path))
    return value


def _first_line(fd: int) -> bytes:
    """The first line of the file at ``fd`` (read from its current offset), without the newline."""
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        cut = chunk.find(b"\n")
        if cut >= 0:
            chunks.append(chunk[:cut])
            break
        chunks.append(chunk)
    return b"".join(chunks)


class Appender:
    """A log kept open for many appends by one writer (bench results): each
    :meth:`append` writes one line and flushes it; :meth:`close` ``fsync``-s. Opening
    repairs a torn tail under the lock (``keep``: see :func:`repair_tail`) and records
    what was done in ``repaired`` / ``removed`` (bytes). Raises OSError when the file
    cannot be opened."""

    def __init__(self, path: str | Path, keep: Callable[[bytes], bool] | None = None) -> None:
        self.path = Path(path)
        fd = _open_for_append(self.path)
        try:
            with locked(fd):
                self.repaired, self.removed = repair_tail(fd, keep)
        except BaseException:
            os.close(fd)
            raise
        self._fh: BinaryIO | None = os.fdopen(fd, "ab")

    def append(self, record: dict[str, Any]) -> None:
        """Write ``record`` as one JSON line and flush it."""
        if self._fh is None:
            raise ValueError(f"append to a closed log: {self.path}")
        self._fh.write(jsonio.dumps(record) + b"\n")
        self._fh.flush()

    def append_many(self, records: Iterable[dict[str, Any]]) -> None:
        """Write ``records`` as JSON lines in one write and flush them (one system call
        for a batch; each line whole, as :meth:`append` writes it)."""
        if self._fh is None:
            raise ValueError(f"append to a closed log: {self.path}")
        self._fh.write(b"".join(jsonio.dumps(r) + b"\n" for r in records))
        self._fh.flush()

    def close(self) -> None:
        """``fsync`` and close (again: nothing)."""
        if self._fh is not None:
            try:
                os.fsync(self._fh.fileno())
            finally:
                self._fh.close()
                self._fh = None


def read(path: str | Path, fmt_prefix: str) -> tuple[list[dict[str, Any]], int]:
    """The records of a log (dicts whose ``format`` starts with ``fmt_prefix``) in file
    order, and how many lines were skipped (torn tail, foreign or broken lines). A missing
    file has no records. Raises TraceFormatError when the file cannot be read."""
    numbered, skipped = read_numbered(path, fmt_prefix)
    return [record for _, record in numbered], skipped


def read_numbered(path: str | Path, fmt_prefix: str) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """As :func:`read`, each record with its 1-based line number in the file (for a
    message that points at the line)."""
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
    for number, line in enumerate(complete, 1):
        if not line.strip():
            continue
        try:
            value = jsonio.loads(line)
        except orjson.JSONDecodeError:
            skipped += 1
            continue
        if isinstance(value, dict) and str(value.get("format", "")).startswith(fmt_prefix):
            out.append((number, value))
        else:
            skipped += 1
    return out, skipped


__all__ = ["Appender", "append", "append_first", "locked", "read", "read_numbered", "repair", "repair_tail"]
