"""The list of traces an OTLP receiver is getting, kept up to date from the store's and
the live judges' events (the TUI's incoming-traces screen shows it; UI-free).

One :class:`LiveRow` per trace id, in order of first appearance: service, step count,
last update (wall-clock), whether it is still in memory, the current suspect and the
decisive error of its live judge, and why its run ended.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from whenpro_core.live.events import DecisiveError, LiveMarks, Suspect, TraceEvicted, TraceStarted, TraceUpdated


@dataclass
class LiveRow:
    """One received trace (see module docstring). ``steps`` is ``None`` for a trace
    only on disk; ``updated`` is seconds since the epoch."""

    trace_id: str
    path: str = ""
    service: str | None = None
    steps: int | None = None
    updated: float = 0.0
    in_memory: bool = True
    #: the live judge's suspect, decisive error and run end (:class:`LiveMarks`)
    marks: LiveMarks = field(default_factory=LiveMarks)

    @property
    def suspect(self) -> Suspect | None:
        return self.marks.suspect

    @property
    def decisive(self) -> DecisiveError | None:
        return self.marks.decisive

    @property
    def ended(self) -> str | None:
        """Why the run ended (``None``: not yet)."""
        return self.marks.ended.reason if self.marks.ended is not None else None


class LiveListing:
    """Rows by trace id, updated by :meth:`apply` (see module docstring)."""

    def __init__(self) -> None:
        self.rows: dict[str, LiveRow] = {}

    def seed(self, infos: Iterable[Any]) -> None:
        """Add the store's traces already known (:meth:`LiveStore.traces` rows), oldest
        first, so a new trace goes to the end."""
        for info in sorted(infos, key=lambda i: i.updated):
            if info.trace_id not in self.rows:
                self.rows[info.trace_id] = LiveRow(
                    info.trace_id, info.path, info.service, info.step_count, info.updated, info.in_memory
                )

    def apply(self, ev: Any, now: float | None = None) -> str | None:
        """Take one store or judge event; returns the trace id it changed (``None`` for
        events that change no row, such as a refused export)."""
        tid = getattr(ev, "trace_id", "")
        if not tid:
            return None
        row = self.rows.get(tid)
        if row is None:
            if not isinstance(ev, (TraceStarted, TraceUpdated)):
                return None
            row = self.rows[tid] = LiveRow(tid, ev.path)
        if isinstance(ev, TraceStarted):
            row.service = ev.service or row.service
            row.steps = ev.step_count
            row.updated = time.time() if now is None else now
        elif isinstance(ev, TraceUpdated):
            row.steps = ev.step_count
            row.path = ev.path
            row.in_memory = True
            row.updated = time.time() if now is None else now
        elif isinstance(ev, TraceEvicted):
            row.in_memory = False
        elif not row.marks.apply(ev):
            return None
        return tid

    def ordered(self) -> list[LiveRow]:
        """The rows in order of first appearance."""
        return list(self.rows.values())

    def judge_state(self, trace_id: str) -> list[Any]:
        """The latest suspect and decisive events of a trace and its end (to hand to a
        view that opens it later)."""
        row = self.rows.get(trace_id)
        return row.marks.events() if row is not None else []


def age(seconds: float) -> str:
    """``4`` -> ``"4s"``, ``75`` -> ``"1m"``, ``7300`` -> ``"2h"``, ``200000`` -> ``"2d"``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


__all__ = ["LiveListing", "LiveRow", "age"]
