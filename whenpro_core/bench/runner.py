"""The evaluation runner of ``whenpro bench`` (DESIGN §7, §9): attribute every trace of
a dataset with every requested protocol × model × gold setting, score each prediction,
and append one :class:`~whenpro_core.bench.records.Record` per item to a resumable
results file.

Design: pure functions over work items, so the work can be sharded later.

* :func:`plan` turns a dataset (any path whenpro reads: a folder, a glob, a JSONL
  release, a file) into a list of :class:`WorkItem` s. An item is plain data (the trace
  reference, protocol, model name, gold setting, tolerance and the trace's cheap listing
  row): picklable and JSON-serialisable, no open files, no clients.
* :func:`pending` drops the items whose key is already in a results file.
* :func:`run_item` runs one item to a Record. It loads the trace itself, so it needs
  nothing but the item and, for LLM protocols, a judge made from the item's model name
  (:func:`make_judges`). It never raises for a bad trace or a failed attribution (the
  record carries ``error``); it raises only :class:`~whenpro_core.errors.ConfigError`,
  which concerns the whole run.
* :func:`run_items` is the local scheduler: asyncio, at most ``concurrency`` items in
  flight (an ``asyncio.Semaphore`` admits each item before its task is created, so
  neither running items nor waiting tasks exceed the bound), records appended as they
  finish.

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
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncContextManager, Callable, Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from whenpro_core.attribution.judge import Judge
from whenpro_core.attribution.run import attribute, protocol_name
from whenpro_core.bench.records import (Record, ResultsFile, absolute_ref, build_record,
                                        record_key)
from whenpro_core.errors import BackendError, ConfigError, WhenproError
from whenpro_core.model import Trace, TraceSummary

#: ``--gold`` / ``--no-gold`` / ``--both``: which settings of "the judge sees the gold
#: answer" to run.
GOLD_SETTINGS = {"gold": (True,), "no-gold": (False,), "both": (True, False)}

#: Keys ``--where`` understands, and the listing-row field each one reads.
WHERE_KEYS = {"modality": "modality", "framework": "framework", "benchmark": "benchmark",
              "mode": "gt_mode", "id": "id", "format": "format"}

#: Consecutive backend failures of one model after which the run stops.
MAX_BACKEND_STREAK = 3

#: The model name recorded for the offline heuristic protocol.
HEURISTIC_MODEL = "heuristic"


class WorkItem(BaseModel):
    """One unit of work: attribute the trace at ``ref`` with ``protocol`` and ``model``,
    the gold answer shown or not, and score it with step tolerance ``tolerance``.

    ``ref`` is absolute (``path`` or ``path#key``); ``summary`` is the trace's listing
    row (cheap metadata, used for ``--where`` and when the trace fails to load).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str
    protocol: str
    model: str
    with_gold: bool = True
    tolerance: int = 0
    summary: TraceSummary

    @property
    def key(self) -> str:
        """The resume key (:func:`~whenpro_core.bench.records.record_key`)."""
        return record_key(self.ref, self.protocol, self.model, self.with_gold)


# --------------------------------------------------------------------------- planning


def split_list(text: str | Sequence[str] | None) -> list[str]:
    """``"a,b"`` or ``["a,b", "c"]`` -> ``["a", "b", "c"]`` (blanks dropped, order kept,
    duplicates removed)."""
    if text is None:
        return []
    parts = [text] if isinstance(text, str) else list(text)
    out: dict[str, None] = {}
    for part in parts:
        for tok in str(part).split(","):
            if tok.strip():
                out[tok.strip()] = None
    return list(out)


def parse_where(specs: str | Sequence[str] | None) -> dict[str, set[str]]:
    """``--where`` filters: ``"modality=image,framework=smolagents|debate"`` (or several
    options) -> ``{"modality": {"image"}, "framework": {"smolagents", "debate"}}``.
    Values compare case-insensitively; ``|`` separates alternatives. ConfigError for an
    unknown key or a term without ``=``."""
    where: dict[str, set[str]] = {}
    for term in split_list(specs):
        key, eq, value = term.partition("=")
        key = key.strip().lower()
        if not eq or not value.strip():
            raise ConfigError(f"bad --where term {term!r}", expected="KEY=VALUE[|VALUE...]")
        if key not in WHERE_KEYS:
            raise ConfigError(f"unknown --where key {key!r}", expected=", ".join(WHERE_KEYS))
        where.setdefault(key, set()).update(v.strip().lower() for v in value.split("|") if v.strip())
    return where


def matches(row: TraceSummary, where: dict[str, set[str]]) -> bool:
    """True when the listing row passes every ``--where`` filter."""
    for key, values in where.items():
        if str(getattr(row, WHERE_KEYS[key]) or "").lower() not in values:
            return False
    return True


@dataclass
class Selection:
    """The traces chosen from a dataset: listing ``rows`` in dataset order, plus how many
    ``unlabelled`` traces were left out (nothing to score) and how many ``bad`` files
    are included (they become error records)."""

    rows: list[TraceSummary]
    unlabelled: int = 0
    bad: int = 0
    total: int = 0


def select(dataset: str | Path, *, where: dict[str, set[str]] | None = None,
           limit: int | None = None, sample: int | None = None, seed: int = 0) -> Selection:
    """Walk ``dataset`` and choose the traces to run: labelled ones (a ground-truth step
    or mode in the listing) that pass ``where``; then a random ``sample`` of that many
    (reproducible with ``seed``, dataset order kept); then the first ``limit``.

    Files that fail to import are kept as rows (they become error records) unless a
    ``where`` filter is given. Raises TraceFormatError when the dataset path does not
    exist, ConfigError when nothing is left to run.
    """
    from whenpro_core.formats import walk

    where = where or {}
    sel = Selection(rows=[])
    for row in walk(dataset):
        sel.total += 1
        if row.error:
            if not where:
                sel.rows.append(row)
                sel.bad += 1
            continue
        if row.gt_step is None and row.gt_mode is None:
            sel.unlabelled += 1
            continue
        if matches(row, where):
            sel.rows.append(row)
    if sample is not None and sample < len(sel.rows):
        picked = sorted(random.Random(seed).sample(range(len(sel.rows)), max(sample, 0)))
        sel.rows = [sel.rows[i] for i in picked]
    if limit is not None:
        sel.rows = sel.rows[: max(limit, 0)]
    if not sel.rows:
        detail = f"{sel.total} traces found, {sel.unlabelled} without a ground truth"
        raise ConfigError(f"nothing to run in {dataset} ({detail})",
                          expected="labelled traces matching --where")
    return sel


def settings(protocols: Sequence[str], models: Sequence[str]) -> list[tuple[str, str]]:
    """The (protocol, model) pairs to run. ``heuristic`` runs once, with model
    ``heuristic``; every other protocol runs with every non-heuristic model.

    ConfigError when an LLM protocol has no model, or a model is used by no protocol.
    """
    protos = [protocol_name(p) for p in protocols] or ["heuristic"]
    llm_models = [m for m in models if m.strip().lower() != HEURISTIC_MODEL]
    pairs: list[tuple[str, str]] = []
    for proto in dict.fromkeys(protos):
        if proto == "heuristic":
            pairs.append((proto, HEURISTIC_MODEL))
            continue
        if not llm_models:
            raise ConfigError(f"protocol {proto} needs a model",
                              expected="--model provider:model (or --protocol heuristic offline)")
        pairs.extend((proto, m) for m in llm_models)
    if llm_models and all(p == "heuristic" for p, _ in pairs):
        raise ConfigError(f"model {llm_models[0]} is used by no protocol",
                          expected="an LLM protocol, e.g. --protocol all-at-once")
    return pairs


def plan(dataset: str | Path | Sequence[TraceSummary], protocols: Sequence[str],
         models: Sequence[str], gold: str = "gold", *, where: dict[str, set[str]] | None = None,
         limit: int | None = None, sample: int | None = None, seed: int = 0,
         tolerance: int = 0) -> list[WorkItem]:
    """Every work item of a benchmark run, trace-major (all settings of a trace
    together): traces × (protocol, model) pairs (:func:`settings`) × gold settings
    (``"gold"``, ``"no-gold"`` or ``"both"``, :data:`GOLD_SETTINGS`).

    ``dataset`` is a path (walked with :func:`select`) or listing rows already chosen.
    Raises ConfigError for bad protocols, models or gold setting.
    """
    if gold not in GOLD_SETTINGS:
        raise ConfigError(f"unknown gold setting {gold!r}", expected=", ".join(GOLD_SETTINGS))
    pairs = settings(protocols, models)
    if isinstance(dataset, (str, Path)):
        rows = select(dataset, where=where, limit=limit, sample=sample, seed=seed).rows
    else:
        rows = list(dataset)
    items = []
    for row in rows:
        ref = absolute_ref(row.ref())
        for proto, model in pairs:
            for with_gold in GOLD_SETTINGS[gold]:
                items.append(WorkItem(ref=ref, protocol=proto, model=model, with_gold=with_gold,
                                      tolerance=tolerance, summary=row))
    return items


def pending(items: Iterable[WorkItem], done: dict[str, Record], *,
            retry_errors: bool = False) -> list[WorkItem]:
    """The items still to run: those with no record yet, those whose record failed on
    the backend (transient), and with ``retry_errors`` every failed one."""
    out = []
    for item in items:
        rec = done.get(item.key)
        if rec is None or (rec.error and (retry_errors or rec.error_kind == "backend")):
            out.append(item)
    return out


def make_judges(models: Iterable[str], *, use_cache: bool = True) -> dict[str, Judge]:
    """One judge per LLM model name (``provider:model``), made by
    ``whenpro_core.attribution.llm_judge.make_judge``; the heuristic needs none.
    ConfigError when a model is unusable or the LLM layer is not available."""
    names = [m for m in dict.fromkeys(models) if m != HEURISTIC_MODEL]
    if not names:
        return {}
    try:
        from whenpro_core.attribution.llm_judge import make_judge
    except ImportError:
        raise ConfigError("LLM protocols are not available in this build",
                          expected="--protocol heuristic") from None
    return {name: make_judge(name, use_cache=use_cache) for name in names}


# --------------------------------------------------------------------------- one item


def transcript_tokens(trace: Trace) -> int:
    """Estimated tokens of the transcript a judge sees (characters / 4, whole
    transcript, images as their text markers): the length used for length buckets."""
    from whenpro_core.attribution.render import (CHARS_PER_TOKEN, block_text, context_text,
                                                 render_transcript)

    transcript = render_transcript(trace, budget_tokens=1 << 40)
    chars = len(context_text(transcript)) + sum(len(block_text(b)) + 1 for b in transcript.blocks)
    return chars // CHARS_PER_TOKEN


def _load(ref: str) -> tuple[Trace, int | None]:
    from whenpro_core.formats import load_trace

    trace = load_trace(ref)
    try:
        tokens = transcript_tokens(trace)
    except Exception:  # noqa: BLE001 - a length estimate never fails an item
        tokens = None
    return trace, tokens


def _describe(exc: BaseException) -> str:
    if isinstance(exc, WhenproError):
        return exc.one_line()
    return f"{type(exc).__name__}: {exc}"


async def run_item(item: WorkItem, *, judge: Judge | None = None) -> Record:
    """Run one work item: load the trace, attribute it, score it.

    Returns a Record; a trace that cannot be loaded or attributed gives a record with
    ``error`` (kind ``trace``, ``backend`` or ``internal``). Raises ConfigError (a
    non-heuristic protocol without a judge, a bad setting), which concerns every item.
    """
    started = time.perf_counter()
    common = dict(ref=item.ref, protocol=item.protocol, model=item.model,
                  with_gold=item.with_gold, tolerance=item.tolerance, summary=item.summary)
    try:
        trace, tokens = await asyncio.to_thread(_load, item.ref)
    except WhenproError as exc:
        return build_record(**common, trace=None, prediction=None, error=_describe(exc),
                            error_kind="trace", seconds=time.perf_counter() - started)
    except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
        return build_record(**common, trace=None, prediction=None, error=_describe(exc),
                            error_kind="internal", seconds=time.perf_counter() - started)
    prediction, error, kind = None, None, None
    try:
        prediction = await attribute(trace, item.protocol, judge=judge, with_gold=item.with_gold)
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
    return build_record(**common, trace=trace, prediction=prediction, tokens=tokens,
                        error=error, error_kind=kind, seconds=time.perf_counter() - started)


# --------------------------------------------------------------------------- scheduler


@dataclass
class RunStats:
    """What a run did: records ``written``, of which ``errors`` failed (by ``kinds``),
    and the wall-clock ``seconds``."""

    written: int = 0
    errors: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


#: Test and tracing hook: an async context manager entered around each item's run,
#: inside the concurrency bound.
AroundHook = Callable[[WorkItem], AsyncContextManager[object]]


async def run_items(items: Sequence[WorkItem], results: ResultsFile, *, concurrency: int = 8,
                    judges: dict[str, Judge] | None = None,
                    on_record: Callable[[Record], None] | None = None,
                    around: AroundHook | None = None,
                    max_backend_streak: int = MAX_BACKEND_STREAK) -> RunStats:
    """Run ``items`` with at most ``concurrency`` in flight, appending each record to
    ``results`` as it finishes and passing it to ``on_record``.

    Raises ConfigError (from an item) or BackendError (one model failed
    ``max_backend_streak`` items in a row) after cancelling the items in flight; every
    record finished before that is in ``results``.
    """
    if concurrency < 1:
        raise ConfigError(f"--concurrency {concurrency} is not a positive number",
                          expected="1 or more")
    judges = judges or {}
    stats = RunStats()
    streak: dict[str, int] = {}
    started = time.perf_counter()
    gate = asyncio.Semaphore(concurrency)

    async def one(item: WorkItem) -> None:
        try:
            ctx = around(item) if around else contextlib.nullcontext()
            async with ctx:
                rec = await run_item(item, judge=judges.get(item.model))
            results.append(rec)
            stats.written += 1
            if rec.error:
                stats.errors += 1
                stats.kinds[rec.error_kind or "?"] = stats.kinds.get(rec.error_kind or "?", 0) + 1
            if on_record:
                on_record(rec)
            streak[item.model] = streak.get(item.model, 0) + 1 if rec.error_kind == "backend" else 0
            if streak[item.model] >= max_backend_streak:
                raise BackendError(
                    f"model {item.model} failed {streak[item.model]} items in a row, last: "
                    f"{rec.error}; stopping (finished records are kept; rerun to resume)")
        finally:
            gate.release()

    try:
        async with asyncio.TaskGroup() as group:
            for item in items:
                await gate.acquire()
                group.create_task(one(item))
    except BaseExceptionGroup as eg:
        fatal = _first_whenpro_error(eg)
        if fatal is not None:
            raise fatal from None
        raise
    finally:
        stats.seconds = time.perf_counter() - started
    return stats


def _first_whenpro_error(eg: BaseExceptionGroup) -> WhenproError | None:
    for exc in eg.exceptions:
        if isinstance(exc, WhenproError):
            return exc
        if isinstance(exc, BaseExceptionGroup) and (inner := _first_whenpro_error(exc)):
            return inner
    return None
