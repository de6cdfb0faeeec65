"""The OTLP receiver's trace store: spans grouped into traces by trace id, converted to
steps with the OpenTelemetry importer's own code (GenAI or OpenInference conventions),
kept on disk as native traces while they grow, with events for subscribers (docs/architecture.md, 'Data flow',
``live/``).

Work is split so that an export request stays cheap: :meth:`LiveStore.ingest` only
validates and files the spans (under a lock); a flusher thread, every
``flush_interval`` seconds, rebuilds each changed trace, writes it atomically to
``<folder>/<trace_id>.json`` and publishes :class:`~whenpro_core.live.events.TraceStarted`
(first write of a trace id) and :class:`~whenpro_core.live.events.TraceUpdated`
(``kept`` unchanged steps, then the ``added`` ones). Bursts of exports to one trace thus
cost one rebuild and one write per interval.

Memory is bounded: at most ``max_traces`` traces and ``max_spans_in_memory`` spans stay
in memory (the least recently updated are evicted after they are written, with a
:class:`~whenpro_core.live.events.TraceEvicted` event), traces idle for
``idle_evict_s`` leave too, and a trace takes at most ``max_spans_per_trace`` spans (more
are rejected and reported as a partial success). An evicted trace that gets more spans
is read back from disk (each step's ``raw`` holds its span) and goes on growing.

Durability: :meth:`LiveStore.ingest` appends the accepted spans to the spool
(:mod:`whenpro_core.live.spool`) before it returns, so what the receiver acknowledges
survives the process dying; a store opened on a folder replays what the spool holds.
A trace file is therefore not rewritten on every flush: a trace over ``big_trace`` spans
is rewritten once it has twice the spans its file holds, or once it has
been quiet for ``settle_s`` seconds, or at :meth:`LiveStore.stop` (total bytes written
stay within a small multiple of the final size). Smaller traces are written first.

Bad values never stop the writer: attribute values nested deeper than
:data:`MAX_VALUE_DEPTH` levels are stored as their JSON text, with a warning in the
:class:`IngestResult`; a trace whose write fails is set aside (its spans saved under
``.spool/set-aside/``) and reported with a
:class:`~whenpro_core.live.events.TraceSetAside` event, and the other traces go on.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import TypeAdapter

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import LoadContext
from whenpro_core.formats.native import dumps_trace, load_native
from whenpro_core.formats.otlp import Span
from whenpro_core.live.builders import SpanSet, common_prefix, step_fingerprint
from whenpro_core.live.bus import EventBus, Subscription
from whenpro_core.live.events import TraceEvicted, TraceSetAside, TraceStarted, TraceUpdated
from whenpro_core.live.spool import Spool
from whenpro_core.storage.fsutil import atomic_write_bytes
from whenpro_core.storage.jsonio import JSONObject, cap_depth
from whenpro_core.trace.model import Trace

#: Trace ids accepted (hex; OTLP ids are 16 bytes = 32 hex digits). Anything else is
#: refused, so an id can never name a path outside the store.
TRACE_ID = re.compile(r"[0-9a-f]{16,64}")
#: Levels of nesting kept in an attribute value (``kvlistValue``/``arrayValue``); what
#: sits deeper is stored as its JSON text.
MAX_VALUE_DEPTH = 32


@dataclass
class IngestResult:
    """What one export did: spans ``accepted`` and ``rejected`` (over the per-trace
    cap), the trace ids it touched, and ``warnings`` (one line each: values changed to
    be storable, such as attributes nested too deep)."""

    accepted: int = 0
    rejected: int = 0
    trace_ids: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class LiveTraceInfo:
    """A row of the store's listing: ``step_count`` is ``None`` for a trace only on disk;
    ``updated`` is a wall-clock time (seconds since the epoch)."""

    trace_id: str
    path: str
    in_memory: bool
    step_count: int | None = None
    service: str | None = None
    updated: float = 0.0


@dataclass
class _Live:
    spans: SpanSet
    path: Path
    on_disk: bool
    #: Fingerprints of the steps announced so far (builders.step_fingerprint).
    announced: list[bytes] = field(default_factory=list)
    #: The last written trace, kept for traces up to ``big_trace`` spans (bigger ones are
    #: read back from disk when asked for, so their steps do not stay in memory).
    trace: Trace | None = None
    step_count: int = 0
    service: str | None = None
    version: int = 0
    flushed: int = 0
    written_spans: int = 0
    updated: float = field(default_factory=time.monotonic)
    wall: float = field(default_factory=time.time)


class LiveStore:
    """Traces received over OTLP, on disk under ``folder`` and bounded in memory.

    Args:
        folder: where ``<trace_id>.json`` files go (created when missing).
        max_traces: traces kept in memory at most (after a flush).
        max_spans_in_memory: spans kept in memory at most, over all traces.
        max_spans_per_trace: spans one trace may hold; more are rejected.
        flush_interval: seconds between rebuild-and-write rounds of the flusher thread.
        idle_evict_s: a trace without new spans for this long leaves memory.
        bus: the :class:`~whenpro_core.live.bus.EventBus` to publish on (a new one by
            default; :meth:`subscribe` reads it).
        fsync: fsync each spool line before an export is acknowledged (see
            :mod:`whenpro_core.live.spool`; default: flushed to the OS only).
        big_trace: spans above which a trace file is rewritten only once its spans double
            spans, ``settle_s`` seconds of quiet, or at stop.
        settle_s: seconds of quiet after which a big trace is written anyway.

    Use as a context manager, or call :meth:`start` / :meth:`stop` (which flushes).
    Opening a folder replays the spool a killed receiver left (see :meth:`recover`).
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        max_traces: int = 64,
        max_spans_in_memory: int = 100_000,
        max_spans_per_trace: int = 50_000,
        flush_interval: float = 0.2,
        idle_evict_s: float = 600.0,
        bus: EventBus | None = None,
        fsync: bool = False,
        big_trace: int = 5_000,
        settle_s: float = 1.0,
    ) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_traces = max(1, max_traces)
        self.max_spans_in_memory = max_spans_in_memory
        self.max_spans_per_trace = max_spans_per_trace
        self.flush_interval = flush_interval
        self.idle_evict_s = idle_evict_s
        self.big_trace = big_trace
        self.settle_s = settle_s
        self.bus = bus or EventBus()
        self.spool = Spool(self.folder, fsync=fsync)
        self._live: dict[str, _Live] = {}
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        #: spool segment -> {trace id: the trace's version once that segment's lines were in}
        self._segments: dict[int, dict[str, int]] = {}
        #: Traces whose write failed: trace id -> the reason (their spans are set aside).
        self.set_aside: dict[str, str] = {}
        #: Traces the disk refused at the last try (retried at each flush): id -> reason.
        self.write_errors: dict[str, str] = {}
        #: Counters since start: spans accepted and rejected, traces evicted, trace files
        #: written and their bytes, exports replayed from the spool.
        self.stats = {"spans": 0, "rejected": 0, "evicted": 0, "writes": 0, "bytes": 0, "replayed": 0}
        self.recover()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> LiveStore:
        """Start the flusher thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="whenpro-live-flusher", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the flusher and write everything still pending."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self.flush(everything=True)
        self.spool.close()

    def __enter__(self) -> LiveStore:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def subscribe(self) -> Subscription:
        """A subscription to this store's events."""
        return self.bus.subscribe()

    def recover(self) -> int:
        """Load what the spool holds (exports acknowledged by a receiver that died before
        writing them) back into memory; the next flush writes them. Returns the number
        of exports replayed."""
        n = 0
        with self._lock:
            for segment, spans in self.spool.replay():
                groups = self._group(spans)
                for tid, group in groups.items():
                    self._add(tid, group, segment)
                n += 1
        self.stats["replayed"] += n
        return n

    # ------------------------------------------------------------------ ingest

    def path_for(self, trace_id: str, where: str = "$") -> Path:
        """The native file of ``trace_id``; TraceFormatError for an id that is not hex
        (``where``: the span's JSON path, for the message)."""
        if not TRACE_ID.fullmatch(trace_id or ""):
            hex_digits = bool(trace_id) and set(trace_id) <= set("0123456789abcdef")
            raise TraceFormatError(
                f"trace id {trace_id[:40]!r} " + (f"has {len(trace_id)} hex digits" if hex_digits else "is not hex"),
                json_path=f"{where}.traceId",
                expected="16 to 64 lower-case hex digits",
            )
        return self.folder / f"{trace_id}.json"

    @staticmethod
    def _group(spans: Iterable[Span]) -> dict[str, list[Span]]:
        groups: dict[str, list[Span]] = {}
        for s in spans:
            groups.setdefault(s.trace_id, []).append(s)
        return groups

    def ingest(self, spans: Iterable[Span]) -> IngestResult:
        """File the spans of one export by trace id (all or nothing: TraceFormatError,
        and nothing stored, when a trace id is not hex). The accepted spans are in the
        spool when this returns (OSError, and nothing stored, when the spool cannot be
        written)."""
        groups = self._group(spans)
        for tid, group in groups.items():
            self.path_for(tid, group[0].where or "$")
        result = IngestResult(trace_ids=list(groups))
        for group in groups.values():
            for span in group:
                result.warnings.extend(_cap_span(span))
        with self._lock:
            accepted: dict[str, list[Span]] = {}
            for tid, group in groups.items():
                live = self._live.get(tid)
                if live is None:  # evicted or never seen: resume from its file, if any
                    live = self._live[tid] = self._resume(tid)
                room = self.max_spans_per_trace - len(live.spans)
                fresh = []
                for span in group:
                    seen = span.span_id in live.spans.spans
                    if seen or room > 0:
                        room -= not seen
                        fresh.append(span)
                accepted[tid] = fresh
                result.accepted += len(fresh)
                result.rejected += len(group) - len(fresh)
            segment = self.spool.append([s for group in accepted.values() for s in group]) if result.accepted else None
            for tid, fresh in accepted.items():
                self._add(tid, fresh, segment)
            self.stats["spans"] += result.accepted
            self.stats["rejected"] += result.rejected
            crowded = len(self._live) > 2 * self.max_traces
        if crowded:  # exports outrun the flusher: flush here (back-pressure)
            self.flush()
        else:
            self._wake.set()
        return result

    def _add(self, tid: str, spans: list[Span], segment: int | None) -> None:
        """Put spans in memory (under the lock) and note the spool segment holding them."""
        live = self._live.get(tid) or self._resume(tid)
        live.spans.add(spans)
        live.version += 1
        live.updated, live.wall = time.monotonic(), time.time()
        self._live.pop(tid, None)
        self._live[tid] = live  # most recently updated last
        if segment is not None:
            self._segments.setdefault(segment, {})[tid] = live.version

    def _resume(self, trace_id: str) -> _Live:
        path = self.path_for(trace_id)
        live = _Live(spans=SpanSet(trace_id), path=path, on_disk=path.exists())
        if live.on_disk:
            try:
                trace = load_native(path)
                live.spans = SpanSet.from_trace(trace)
                live.announced = [step_fingerprint(s) for s in trace.steps]
                live.step_count, live.service = len(trace.steps), trace.extras.get("service")
                live.trace = trace if len(trace.steps) <= self.big_trace else None
                live.written_spans = len(live.spans)
            except TraceFormatError:
                live.on_disk = False  # an unreadable file is replaced
        return live

    # ------------------------------------------------------------------ flush

    def flush(self, *, everything: bool = False) -> int:
        """Rebuild, write and announce the changed traces now (every one with
        ``everything``; otherwise big traces wait, see the module), drop the spool
        segments whose traces are all written, then evict what is over the caps.
        Returns how many traces were written. A trace whose write fails is set aside
        and reported; it never stops the others."""
        with self._flush_lock:
            now = time.monotonic()
            with self._lock:
                self.spool.rotate()
                dirty = [
                    (tid, live, live.version, list(live.spans.spans.values()))
                    for tid, live in self._live.items()
                    if live.version != live.flushed and (everything or self._due(live, now))
                ]
            dirty.sort(key=lambda d: len(d[3]))  # small traces are not kept waiting by a big one
            written = 0
            for tid, live, version, spans in dirty:
                outcome = self._write_or_set_aside(tid, live, spans)
                written += outcome == "written"
                if outcome != "pending":
                    with self._lock:
                        live.flushed = version
            self._compact()
            self._evict()
            return written

    def _due(self, live: _Live, now: float) -> bool:
        """Whether a changed trace should be written at this flush."""
        n = len(live.spans)
        return n <= self.big_trace or n >= 2 * live.written_spans or now - live.updated >= self.settle_s

    def _write_or_set_aside(self, tid: str, live: _Live, spans: list[Span]) -> str:
        """Write one trace: ``"written"``; ``"pending"`` when the disk refused (OSError:
        a full or read-only disk; tried again at the next flush, its spool lines kept);
        ``"set aside"`` when the trace itself could not be written (its spans saved
        under ``.spool/set-aside/``, a TraceSetAside event). Never raises."""
        try:
            self._write(tid, live, spans)
            self.write_errors.pop(tid, None)
            return "written"
        except OSError as exc:
            reason = f"cannot write {live.path.name}: {exc.strerror or exc}"
            if self.write_errors.get(tid) != reason:
                self.bus.publish(TraceSetAside(tid, "", f"{reason}; will retry"))
            self.write_errors[tid] = reason
            return "pending"
        except Exception as exc:  # noqa: BLE001 - one bad trace must not stop the writer
            reason = f"{type(exc).__name__}: {str(exc)[:300]}"
        where = ""
        try:
            where = str(self.spool.set_aside(tid, spans))
        except Exception as exc:  # noqa: BLE001 - the report below still goes out
            reason += f"; its spans could not be set aside ({type(exc).__name__})"
        self.set_aside[tid] = reason
        self.bus.publish(TraceSetAside(tid, where, reason))
        return "set aside"

    def _write(self, tid: str, live: _Live, spans: list[Span]) -> None:
        snapshot = SpanSet(tid)
        snapshot.spans = {s.span_id: s for s in spans}
        trace = snapshot.build(LoadContext(path=live.path, root=self.folder))
        if trace is None:
            return
        trace.source.format = "otlp-receiver"
        atomic_write_bytes(live.path, _trace_json(trace) + b"\n")
        self.stats["writes"] += 1
        self.stats["bytes"] += live.path.stat().st_size
        live.written_spans = len(spans)
        steps = trace.steps
        prints = [step_fingerprint(s) for s in steps]
        kept = common_prefix(live.announced, prints)
        before = len(live.announced)
        first = not live.on_disk
        live.announced, live.on_disk = prints, True
        live.step_count, live.service = len(steps), trace.extras.get("service")
        live.trace = trace if len(spans) <= self.big_trace else None
        if first:
            self.bus.publish(TraceStarted(tid, str(live.path), trace.extras.get("service"), len(steps)))
        if first or kept < len(steps) or kept < before:
            self.bus.publish(TraceUpdated(tid, str(live.path), len(steps), kept, tuple(steps[kept:])))

    def _compact(self) -> None:
        """Delete closed spool segments whose traces are all written (or set aside)."""
        with self._lock:
            done = [
                seg
                for seg, versions in self._segments.items()
                if seg != self.spool.current and all(self._written(tid, v) for tid, v in versions.items())
            ]
            for seg in done:
                del self._segments[seg]
        for seg in done:
            self.spool.drop(seg)

    def _written(self, tid: str, version: int) -> bool:
        live = self._live.get(tid)
        return live is None or live.flushed >= version  # evicted traces were written first

    def _evict(self) -> None:
        now = time.monotonic()
        gone: list[tuple[str, Path]] = []
        with self._lock:

            def clean(live: _Live) -> bool:
                return live.version == live.flushed

            total = sum(len(v.spans) for v in self._live.values())
            for tid, live in list(self._live.items()):  # least recently updated first
                over = len(self._live) > self.max_traces or total > self.max_spans_in_memory
                if not clean(live) or not (over or now - live.updated > self.idle_evict_s):
                    continue
                total -= len(live.spans)
                del self._live[tid]
                gone.append((tid, live.path))
            self.stats["evicted"] += len(gone)
        for tid, path in gone:
            self.bus.publish(TraceEvicted(tid, str(path)))

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(1.0)  # wakes on ingest; once a second for idle eviction
            self._wake.clear()
            if not self._stopping.is_set():
                time.sleep(self.flush_interval)  # let a burst of exports gather
            try:
                self.flush()
            except Exception:  # noqa: BLE001 - the flusher must outlive any one failure
                time.sleep(self.flush_interval)  # (a full disk at rotation...): the spans stay; retry

    # ------------------------------------------------------------------ reading

    @property
    def in_memory_count(self) -> int:
        """Traces held in memory now."""
        with self._lock:
            return len(self._live)

    def trace(self, trace_id: str) -> Trace | None:
        """The latest written version of a trace (from memory, else from disk), or
        ``None`` when the store has never seen it."""
        path = self.path_for(trace_id)
        with self._lock:
            live = self._live.get(trace_id)
            if live is not None and live.trace is not None:
                return live.trace
        if not path.exists():
            return None
        return load_native(path)

    def traces(self) -> list[LiveTraceInfo]:
        """Every trace of the store, most recently updated first: in-memory ones with
        their step counts, then those only on disk."""
        with self._lock:
            rows = [
                LiveTraceInfo(tid, str(v.path), True, v.step_count, v.service, v.wall)
                for tid, v in reversed(self._live.items())
            ]
        known = {r.trace_id for r in rows}
        disk = []
        for p in self.folder.glob("*.json"):
            if p.stem not in known and TRACE_ID.fullmatch(p.stem):
                try:
                    disk.append(LiveTraceInfo(p.stem, str(p), False, updated=p.stat().st_mtime))
                except OSError:
                    continue
        return rows + sorted(disk, key=lambda r: -r.updated)


_TRACE_JSON = TypeAdapter(Trace)


def _trace_json(trace: Trace) -> bytes:
    """A trace as compact native JSON, serialised straight to bytes (no dict of the whole
    trace in memory beside it, which for a 50,000-step trace is about 70 MB); the
    lossless :func:`~whenpro_core.formats.native.dumps_trace` for what pydantic will not
    write (lone surrogates, values nested too deep)."""
    try:
        return _TRACE_JSON.dump_json(trace)
    except (ValueError, TypeError):  # (PydanticSerializationError is a ValueError)
        return dumps_trace(trace, indent=False)


def _cap_span(span: Span) -> list[str]:
    """Cap the nesting of a span's attribute, event and resource values at
    :data:`MAX_VALUE_DEPTH` levels (deeper parts become their JSON text); one warning
    line per changed value, naming the span's JSON path and the attribute."""
    warnings: list[str] = []
    where = span.where or f"span {span.span_id}"

    def capped(value: JSONObject, label: str) -> JSONObject:
        out: JSONObject
        out, paths = cap_depth(value, MAX_VALUE_DEPTH + 1)  # +1: the attribute map itself
        if paths:
            more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
            warnings.append(
                f"{where}: {label} {paths[0][2:] or '$'} nested more than {MAX_VALUE_DEPTH} "
                f"levels; stored as JSON text{more}"
            )
        return out

    span.attributes = capped(span.attributes, "attribute")
    span.resource = capped(span.resource, "resource attribute")
    span.events = [{**ev, "attributes": capped(ev.get("attributes") or {}, "event attribute")} for ev in span.events]
    return warnings


__all__ = ["IngestResult", "LiveStore", "LiveTraceInfo", "MAX_VALUE_DEPTH", "TRACE_ID"]
