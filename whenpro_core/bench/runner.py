"""The evaluation runner of ``whenpro bench`` (docs/architecture.md, 'Scoring' and 'Files whenpro writes'):
attribute every trace of
a dataset with every requested protocol × model × gold setting, score each prediction,
and append one :class:`~whenpro_core.bench.records.Record` per item to a resumable
results file.

Design: pure functions over work items, so the work can be sharded later.

* :func:`plan` (:mod:`whenpro_core.bench.plan`, re-exported here) turns a dataset (any
  path whenpro reads: a folder, a glob, a JSONL release, a file) into a list of
  :class:`WorkItem` s. An item is plain data (the trace reference, protocol, model name,
  gold setting, tolerance and the trace's cheap listing row): picklable and
  JSON-serialisable, no open files, no clients.
* :func:`pending` drops the items whose key is already in a results file.
* :func:`run_item` runs one item to a Record. It loads the trace itself, so it needs
  nothing but the item and, for LLM protocols, a judge made from the item's model name
  (:func:`make_judges`). It never raises for a bad trace or a failed attribution (the
  record carries ``error``); it raises only :class:`~whenpro_core.errors.ConfigError`,
  which concerns the whole run.
* :func:`run_items` is the local scheduler: asyncio, at most ``concurrency`` items in
  flight (an ``asyncio.Semaphore`` admits each item before its task is created, so
  neither running items nor waiting tasks exceed the bound), records appended as they
  finish (those finished in one loop iteration in one write, :class:`RecordBatches`).

A distributed engine replaces only the scheduler: e.g. Ray would ``plan`` on the driver,
split the items into shards, and run ``asyncio.run(run_items(shard, ResultsFile(
f"part-{i}.jsonl"), ...))`` in each task (each worker making its own judges, writing its
own file); ``whenpro report part-*.jsonl`` then scores the union.

Failures: a trace that cannot be read or attributed is recorded with its error and the
run goes on (error kinds: ``trace``, ``internal``). A backend failure after retries is
recorded too (kind ``backend``) and retried automatically on the next run; when one model
fails :data:`MAX_BACKEND_STREAK` items in a row the backend is taken to be down (wrong
model name, no network) and the run stops with a BackendError. A ConfigError (no model
for an LLM protocol, missing API key) stops the run at once. Finished records are never
lost: rerunning the same command skips them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from whenpro_core.attribution.judge import Judge
from whenpro_core.attribution.official_harness import require_for
from whenpro_core.attribution.request import MeteredJudge
from whenpro_core.attribution.run import attribute
from whenpro_core.attribution.template import base_protocol, load_template
from whenpro_core.bench.plan import (
    GOLD_SETTINGS,
    HEURISTIC_MODEL,
    OFFLINE_MODEL,
    Selection,
    WorkItem,
    pending,
    plan,
    select,
    settings,
)
from whenpro_core.bench.records import ErrorKind, Record, ResultsFile, build_record
from whenpro_core.config import load_settings
from whenpro_core.errors import BackendError, ConfigError, WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.library.listing import parse_where, split_list
from whenpro_core.trace.model import Attribution, Trace, Usage
from whenpro_core.trace.taxonomy import Taxonomy, taxonomy_for
from whenpro_core.views.transcript import CHARS_PER_TOKEN, block_text, context_text, render_transcript

__all__ = [
    "GOLD_SETTINGS",
    "HEURISTIC_MODEL",
    "OFFLINE_MODEL",
    "MAX_BACKEND_STREAK",
    "RunStats",
    "Selection",
    "WorkItem",
    "make_judges",
    "parse_where",
    "pending",
    "plan",
    "run_item",
    "run_items",
    "select",
    "settings",
    "split_list",
    "transcript_tokens",
]

#: Consecutive backend failures of one model after which the run stops.
MAX_BACKEND_STREAK = 3


def make_judges(
    models: Iterable[str],
    *,
    use_cache: bool = True,
    concurrency: int | None = None,
    images: str | None = None,
    base_url: str | None = None,
) -> dict[str, Judge]:
    """One judge per LLM model name (``provider:model``), made by
    ``whenpro_core.attribution.llm_judge.make_judge``; the heuristic needs none.
    ``concurrency`` raises each backend's limit of calls in flight (``concurrency`` in
    config.toml) to at least that many, so ``bench --concurrency N`` really has N calls in
    flight. ``images`` (``"on"``/``"off"``) overrides the ``images`` setting, ``base_url``
    (``--base-url``) the base URL. Chat-completions
    calls run in threads (``threaded``, :func:`whenpro_core.llm.open_backend`): with many calls
    in flight that keeps up where one event loop does not. ConfigError when a model is
    unusable or the LLM layer is not available."""
    names = [m for m in dict.fromkeys(models) if m not in (HEURISTIC_MODEL, OFFLINE_MODEL)]
    if not names:
        return {}
    try:
        # lazy and guarded: a build without the LLM layer still runs the heuristic
        from whenpro_core.attribution.llm_judge import make_judge
    except ModuleNotFoundError as exc:
        what = (
            "LLM protocols are not available in this build"
            if exc.name == "whenpro_core.attribution.llm_judge"
            else f"LLM protocols need the missing package {exc.name!r}"
        )
        raise ConfigError(what, expected="--protocol heuristic, or install whenpro fully") from None

    settings = load_settings(images=images, base_url=base_url)
    if concurrency is not None and concurrency > settings.concurrency:
        settings = settings.model_copy(update={"concurrency": concurrency})
    return {name: make_judge(name, settings=settings, use_cache=use_cache, threaded=True) for name in names}


# --------------------------------------------------------------------------- one item


def transcript_tokens(trace: Trace) -> int:
    """Estimated tokens of the transcript a judge sees (characters / 4, whole
    transcript, images as their text markers): the length used for length buckets."""
    transcript = render_transcript(trace, budget_tokens=1 << 40)
    chars = len(context_text(transcript)) + sum(len(block_text(b)) + 1 for b in transcript.blocks)
    return chars // CHARS_PER_TOKEN


class Loaded(NamedTuple):
    """A loaded trace with what its items need besides it: the transcript length in
    tokens (``None`` when it could not be estimated) and the dataset's taxonomy (``None``
    when it could not be read: the attribution then reads it and reports why)."""

    trace: Trace
    tokens: int | None
    taxonomy: Taxonomy | None


def _load(ref: str) -> Loaded:
    """Load the trace ``ref`` (blocking: run it in a worker thread). Raises as
    ``load_trace`` does."""
    trace = load_trace(ref)
    try:
        tokens = transcript_tokens(trace)
    except Exception:  # noqa: BLE001 - a length estimate never fails an item
        tokens = None
    try:
        taxonomy = taxonomy_for(trace.source.root)  # a file look-up: here, not in the event loop
    except WhenproError:
        taxonomy = None
    return Loaded(trace, tokens, taxonomy)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, WhenproError):
        return exc.one_line()
    return f"{type(exc).__name__}: {exc}"


async def run_item(item: WorkItem, *, judge: Judge | None = None, loaded: Awaitable[Loaded] | None = None) -> Record:
    """Run one work item: load the trace, attribute it, score it.

    ``loaded`` gives the trace already being loaded (by :class:`TraceLoads`; it raises as
    the load would); without it the trace is loaded here, in a worker thread.

    Returns a Record; a trace that cannot be loaded or attributed gives a record with
    ``error`` (kind ``trace``, ``backend`` or ``internal``). Raises ConfigError (a
    non-heuristic protocol without a judge, a bad setting), which concerns every item.
    """
    started = time.perf_counter()
    common: dict[str, Any] = dict(
        ref=item.ref,
        protocol=item.protocol,
        model=item.model,
        with_gold=item.with_gold,
        tolerance=item.tolerance,
        summary=item.summary,
    )
    try:
        trace, tokens, taxonomy = await (loaded if loaded is not None else asyncio.to_thread(_load, item.ref))
    except WhenproError as exc:
        return build_record(
            **common,
            trace=None,
            prediction=None,
            error=_describe(exc),
            error_kind="trace",
            seconds=time.perf_counter() - started,
        )
    except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
        return build_record(
            **common,
            trace=None,
            prediction=None,
            error=_describe(exc),
            error_kind="internal",
            seconds=time.perf_counter() - started,
        )
    prediction: Attribution | None = None
    error: str | None = None
    kind: ErrorKind | None = None
    meter = MeteredJudge(judge) if judge is not None else None  # what this item's calls cost, even if it fails
    try:
        template = load_template(item.template) if item.template else None
        require_for(item.protocol)
        prediction = await attribute(
            trace,
            base_protocol(item.protocol),
            judge=meter,
            with_gold=item.with_gold,
            template=template,
            taxonomy=taxonomy,
        )
        if item.protocol != "heuristic":
            prediction.model = item.model
    except ConfigError:
        raise
    except BackendError as exc:
        error, kind = _describe(exc), "backend"
    except WhenproError as exc:
        error, kind = _describe(exc), "trace"
    except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
        error, kind = _describe(exc), "internal"
    return build_record(
        **common,
        trace=trace,
        prediction=prediction,
        tokens=tokens,
        error=error,
        error_kind=kind,
        seconds=time.perf_counter() - started,
        usage=meter.usage if meter else None,
        spent=meter.spent if meter else None,
    )


# --------------------------------------------------------------------------- scheduler


class TraceLoads:
    """Each trace of a run loaded once, in a worker thread, ahead of need.

    ``items`` is the run's order (trace-major, :func:`plan`): all the items of one trace
    share one load, and the loads of the next ``ahead`` items start while earlier items
    wait on their LLM calls, so an item admitted by the scheduler finds its trace ready.
    A load is dropped when the last item of its trace has taken it, so at most the
    traces of the items in flight and ``ahead`` more are held in memory.
    """

    def __init__(self, items: Sequence[WorkItem], ahead: int) -> None:
        self._items = items
        self._ahead = ahead
        self._users = Counter(item.ref for item in items)
        self._loads: dict[str, asyncio.Task[Loaded]] = {}
        self._started = 0  # items[:_started] have their load started or taken
        # One loader thread: loads run ahead, so one keeps up, and the event loop (which
        # needs the GIL back after every socket call) competes with one thread, not a pool.
        self._loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="whenpro-load")

    def take(self, index: int) -> Awaitable[Loaded]:
        """The load of ``items[index]``'s trace (awaiting it gives a :class:`Loaded` or
        raises as :func:`_load` does), starting the loads up to ``ahead`` items on."""
        stop = min(len(self._items), index + 1 + self._ahead)
        while self._started < stop:
            ref = self._items[self._started].ref
            if ref not in self._loads:
                future = asyncio.get_running_loop().run_in_executor(self._loader, _load, ref)
                self._loads[ref] = asyncio.ensure_future(future)
            self._started += 1
        ref = self._items[index].ref
        task = self._loads[ref]
        self._users[ref] -= 1
        if self._users[ref] == 0:
            del self._loads[ref]
        return asyncio.shield(task)  # one item's cancellation does not cancel its neighbours' load

    def cancel(self) -> None:
        """Stop the loads no item has taken yet (a run that stops early)."""
        for task in self._loads.values():
            task.cancel()
        self._loads.clear()
        self._loader.shutdown(wait=False, cancel_futures=True)


@dataclass
class RunStats:
    """What a run did: records ``written``, of which ``errors`` failed (by ``kinds``),
    the wall-clock ``seconds``, the ``usage`` behind the written records (response-cache
    hits at their original cost) and what this run ``spent``; ``read`` LLM verdicts that
    name an agent or a step, of ``judged`` LLM records without an error (the parse rate)."""

    written: int = 0
    errors: int = 0
    read: int = 0
    judged: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    usage: Usage = field(default_factory=Usage)
    spent: Usage = field(default_factory=Usage)


class RecordBatches:
    """The records finished in one event-loop iteration, appended to ``results`` together:
    one write and flush per iteration instead of one per record (on a busy machine each
    flush gives up the GIL and waits to get it back, with the loop holding every item in
    flight). :meth:`write` returns once its record is flushed, so nothing is reported
    done before it is in the file: a killed run loses at most the records of the current
    iteration, which rerun. A failed write raises in every item of its batch. An item
    cancelled while its batch waits (the run is stopping) still has its record written
    (the write does not depend on the item), but the run does not report it."""

    def __init__(self, results: ResultsFile) -> None:
        self._results = results
        self._batch: list[Record] = []
        self._written: asyncio.Future[None] | None = None

    async def write(self, record: Record) -> None:
        """Append ``record`` with the others finished in this iteration; return when flushed."""
        if self._written is None:
            self._written = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_soon(self.flush)
        self._batch.append(record)
        await asyncio.shield(self._written)  # a cancelled item does not cancel its batch's write

    def flush(self) -> None:
        """Write the pending batch now (also called when a run stops)."""
        batch, written = self._batch, self._written
        self._batch, self._written = [], None
        if written is None:
            return
        try:
            self._results.append_many(batch)
        except Exception as exc:  # noqa: BLE001 - raised in the items that wait for it
            written.set_exception(exc)
        else:
            written.set_result(None)


#: Test and tracing hook: an async context manager entered around each item's run,
#: inside the concurrency bound.
AroundHook = Callable[[WorkItem], AbstractAsyncContextManager[object]]


async def run_items(
    items: Sequence[WorkItem],
    results: ResultsFile,
    *,
    concurrency: int = 8,
    judges: dict[str, Judge] | None = None,
    on_record: Callable[[Record], None] | None = None,
    around: AroundHook | None = None,
    max_backend_streak: int = MAX_BACKEND_STREAK,
) -> RunStats:
    """Run ``items`` with at most ``concurrency`` in flight, appending each record to
    ``results`` as it finishes and passing it to ``on_record``.

    Raises ConfigError (from an item) or BackendError (one model failed
    ``max_backend_streak`` items in a row) after cancelling the items in flight; every
    record finished before that is in ``results``.
    """
    if concurrency < 1:
        raise ConfigError(f"--concurrency {concurrency} is not a positive number", expected="1 or more")
    judges = judges or {}
    stats = RunStats()
    streak: dict[str, int] = {}
    started = time.perf_counter()
    gate = asyncio.Semaphore(concurrency)
    loads = TraceLoads(items, ahead=concurrency)
    batches = RecordBatches(results)

    async def one(item: WorkItem, loaded: Awaitable[Loaded]) -> None:
        try:
            ctx = around(item) if around else contextlib.nullcontext()
            async with ctx:
                rec = await run_item(item, judge=judges.get(item.model), loaded=loaded)
            await batches.write(rec)
            stats.written += 1
            stats.usage, stats.spent = stats.usage.add(rec.usage), stats.spent.add(rec.spent)
            if rec.error:
                stats.errors += 1
                stats.kinds[rec.error_kind or "?"] = stats.kinds.get(rec.error_kind or "?", 0) + 1
            elif rec.prediction is not None and item.model in judges:
                stats.judged += 1
                stats.read += bool(rec.prediction.agent or rec.prediction.step)
            if on_record:
                on_record(rec)
            streak[item.model] = streak.get(item.model, 0) + 1 if rec.error_kind == "backend" else 0
            if streak[item.model] >= max_backend_streak:
                raise BackendError(
                    f"model {item.model} failed {streak[item.model]} items in a row, last: "
                    f"{rec.error}; stopping (finished records are kept; rerun to resume)"
                )
        finally:
            gate.release()

    try:
        async with asyncio.TaskGroup() as group:
            for index, item in enumerate(items):
                await gate.acquire()
                group.create_task(one(item, loads.take(index)))
    except BaseExceptionGroup as eg:
        fatal = _first_whenpro_error(eg)
        if fatal is not None:
            raise fatal from None
        raise
    finally:
        batches.flush()
        loads.cancel()
        stats.seconds = time.perf_counter() - started
    return stats


def _first_whenpro_error(eg: BaseExceptionGroup) -> WhenproError | None:
    for exc in eg.exceptions:
        if isinstance(exc, WhenproError):
            return exc
        if isinstance(exc, BaseExceptionGroup) and (inner := _first_whenpro_error(exc)):
            return inner
    return None
