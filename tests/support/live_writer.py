"""A background writer that appends JSON lines to a file the way a running agent does:
one line at a time with small pauses, some lines in two halves (the first half flushed,
then a pause, then the rest), so followers see a growing file with a torn last line."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path

import orjson


def dump_lines(objs: Iterable[object]) -> list[bytes]:
    """Each object as one JSON line (newline included)."""
    return [orjson.dumps(o) + b"\n" for o in objs]


class LineWriter(threading.Thread):
    """Appends ``lines`` to ``path`` with ``delay`` seconds between them; the lines at
    positions in ``split`` are written in two halves with ``delay * 3`` between. ``start``
    waits ``start_delay`` first (the follower may start before the file exists)."""

    def __init__(
        self,
        path: Path,
        lines: list[bytes],
        *,
        delay: float = 0.03,
        split: Iterable[int] = (),
        start_delay: float = 0.05,
    ) -> None:
        super().__init__(daemon=True)
        self.path, self.lines, self.delay = Path(path), lines, delay
        self.split, self.start_delay = set(split), start_delay
        self.done = threading.Event()

    def run(self) -> None:
        time.sleep(self.start_delay)
        with self.path.open("ab") as fh:
            for i, line in enumerate(self.lines):
                if i in self.split:
                    half = max(1, len(line) // 2)
                    fh.write(line[:half])
                    fh.flush()
                    time.sleep(self.delay * 3)
                    fh.write(line[half:])
                else:
                    fh.write(line)
                fh.flush()
                time.sleep(self.delay)
        self.done.set()
