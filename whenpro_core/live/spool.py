"""The OTLP receiver's write-ahead spool: every accepted export is appended here before
the receiver answers 200, so an acknowledged span survives the receiver being killed
(``kill -9``) before its trace file is written (docs/architecture.md, 'Data flow', ``live/``).

Layout: ``<store>/.spool/<n>.jsonl``, segments numbered from 1; one JSON line per
accepted export, ``{"spans": [<span record>, ...]}`` where a span record is
:meth:`~whenpro_core.formats.otlp.Span.raw` (secrets redacted, as in the trace files)
plus its ``resource``. A line is written with one ``write`` and flushed to the operating
system before the export is acknowledged.

Durability policy (``fsync``): by default a line is handed to the OS (it survives the
receiver process dying, ``kill -9`` included, but not a power cut or kernel crash in the
next few seconds); with ``fsync=True`` (``--fsync``) each line is also ``fsync``-ed
before the 200 (it survives a power cut; each export then waits for the disk).

The store rotates to a new segment at each flush and deletes a closed segment once every
trace it touched is written to its trace file (compaction); on start it replays the
segments left by a process that died (a torn last line, never acknowledged, is skipped).
A trace that cannot be written is set aside: its span records go to
``<store>/.spool/set-aside/<trace_id>.jsonl``.

One store folder serves one receiver at a time: the spool holds an exclusive lock
(``.spool/lock``, ``flock``) from :class:`Spool` until :meth:`Spool.close`; a second
receiver on the same folder is a ConfigError (it would replay, and then delete, the
first one's segments while they are being written).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

import orjson

from whenpro_core.errors import ConfigError
from whenpro_core.formats.base import dict_or_empty
from whenpro_core.formats.otlp import Span
from whenpro_core.storage import jsonio

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock (one receiver per folder is then up to the user)
    fcntl = None  # type: ignore[assignment]

SPOOL_DIR = ".spool"
SET_ASIDE_DIR = "set-aside"


def span_record(span: Span) -> dict[str, Any]:
    """A span as a spool record: its ``raw`` form (redacted) plus its resource."""
    return {**span.raw(), "resource": span.resource}


def span_from_record(record: Any) -> Span | None:
    """The span of a spool record, or ``None`` when the record is not one."""
    if not isinstance(record, dict):
        return None
    resource = dict_or_empty(record.get("resource"))
    return Span.from_raw(record, resource)


class Spool:
    """Append-only segments of accepted exports under ``<folder>/.spool``.

    Args:
        folder: the store folder.
        fsync: ``fsync`` each appended line (see the module's durability policy).

    Not thread-safe on its own: the store calls it under its lock.
    """

    def __init__(self, folder: Path, *, fsync: bool = False) -> None:
        self.dir = folder / SPOOL_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = self._take_lock(folder)
        self.fsync = fsync
        found = self.segments()
        self.current = (found[-1] + 1) if found else 1
        self._fh: IO[bytes] | None = None
        self._size = 0
        self._lock = threading.Lock()

    def _take_lock(self, folder: Path) -> int | None:
        fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        if fcntl is None:
            return fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ConfigError(
                f"the store {folder} is in use by another whenpro receiver",
                expected="another --store folder, or stop the other receiver",
            ) from None
        return fd

    def segments(self) -> list[int]:
        """Numbers of the segment files on disk, oldest first."""
        return sorted(int(p.stem) for p in self.dir.glob("*.jsonl") if p.stem.isdigit())

    def path(self, segment: int) -> Path:
        """The file of segment ``segment``."""
        return self.dir / f"{segment}.jsonl"

    def append(self, spans: Iterable[Span]) -> int:
        """Write one export's spans as one line of the current segment, flushed to the OS
        (and fsync-ed with ``fsync``) before returning; returns the segment number.
        OSError (a full disk...) when it could not be written: nothing is acknowledged."""
        line = jsonio.dumps({"spans": [span_record(s) for s in spans]}) + b"\n"
        with self._lock:
            if self._fh is None:
                self._fh = open(self.path(self.current), "ab")  # noqa: SIM115 - kept open across calls
            self._fh.write(line)
            self._fh.flush()
            if self.fsync:
                os.fsync(self._fh.fileno())
            self._size += len(line)
            return self.current

    def rotate(self) -> int | None:
        """Close the current segment (if anything was written to it) and start the next;
        returns the closed segment's number, or ``None`` when it was empty."""
        with self._lock:
            if self._fh is None:
                return None
            self._fh.close()
            self._fh = None
            closed, self.current, self._size = self.current, self.current + 1, 0
            return closed

    def drop(self, segment: int) -> None:
        """Delete a closed segment (its traces are all written)."""
        self.path(segment).unlink(missing_ok=True)

    def close(self) -> None:
        """Close the current segment's file and release the folder's lock."""
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
            if self._lock_fd is not None:
                with suppress(OSError):
                    os.close(self._lock_fd)  # (closing the descriptor releases the flock)
                self._lock_fd = None

    def __del__(self) -> None:
        with suppress(Exception):  # a store dropped without stop() frees its folder
            if self._lock_fd is not None:
                os.close(self._lock_fd)

    def replay(self) -> Iterator[tuple[int, list[Span]]]:
        """(segment, spans of one export) for every line of the segments on disk, oldest
        first; a line that is not a whole record (cut when the process died) is skipped."""
        for segment in self.segments():
            try:
                data = self.path(segment).read_bytes()
            except OSError:
                continue
            for line in data.split(b"\n"):
                try:
                    doc = jsonio.loads(line) if line.strip() else None
                except orjson.JSONDecodeError:
                    continue
                records = doc.get("spans") if isinstance(doc, dict) else None
                spans = [
                    s for s in map(span_from_record, records if isinstance(records, list) else []) if s is not None
                ]
                if spans:
                    yield segment, spans

    def set_aside(self, trace_id: str, spans: Iterable[Span]) -> Path:
        """Write a trace's spans (spool records, one a line) to the set-aside folder,
        appending; returns the file."""
        folder = self.dir / SET_ASIDE_DIR
        folder.mkdir(exist_ok=True)
        path = folder / f"{trace_id}.jsonl"
        with open(path, "ab") as fh:
            for span in spans:
                fh.write(jsonio.dumps({"spans": [span_record(span)]}) + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        return path


__all__ = ["SET_ASIDE_DIR", "SPOOL_DIR", "Spool", "span_from_record", "span_record"]
