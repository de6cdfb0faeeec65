"""Keeping Python's cyclic garbage collector out of trace loading.

Parsing and validating a trace allocates about a hundred objects per step (a
10,000-step, 10 MB trace: ~10^6). Every 700 allocations CPython runs a young-generation
collection, and every so often a full one that re-scans everything alive, the
half-built trace included; none of it is garbage (pydantic models hold no reference
cycles; they are freed by reference counting). Measured on a 10,000-step trace
(``benchmarks/tui_open.py``'s): parse + validate 0.33 s with the collector running,
0.08 s with it paused.

* :func:`paused_gc` pauses the collector while a block runs (re-entrant and
  thread-safe: a worker thread loading a trace while another does the same keeps it
  paused until both are done; a collector the caller had disabled stays disabled).
* ``paused_gc(keep=True)`` also moves everything alive into CPython's permanent
  generation (``gc.freeze``) before the collector resumes, so no later collection
  scans a trace a viewer keeps open. Without it the first young collection after the
  load walks the whole new trace (~50 ms on 10,000 steps, a stall before the first
  paint), and each full collection later does again. Frozen objects are still freed
  by reference counting when dropped; only reference *cycles* among them wait for
  :func:`release_long_lived` (``gc.unfreeze``), which a viewer calls when it closes
  the trace.

Source: the ``gc`` module documentation (``gc.disable``, ``gc.freeze``).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = True


@contextmanager
def paused_gc(*, keep: bool = False) -> Iterator[None]:
    """Pause cyclic garbage collection for the ``with`` block (see module docstring);
    with ``keep``, freeze what is alive at its end (the loaded trace stays open).

    Nested and concurrent uses are counted: the collector is re-enabled when the last
    one exits, and only if it was enabled when the first one entered."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            if keep:
                gc.freeze()
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def release_long_lived() -> None:
    """Give everything frozen by ``paused_gc(keep=True)`` back to the collector
    (``gc.unfreeze``): call when the kept trace is closed."""
    gc.unfreeze()
