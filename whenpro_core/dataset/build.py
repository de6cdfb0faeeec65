"""``whenpro build SEEDS --out DATASET``: batch error injection over successful
trajectories, written as a benchmark dataset (docs/architecture.md, 'Injection and warm-start replay' and
'Formats and step coordinates' and 'Files whenpro writes').

For every usable seed trajectory the planner (:mod:`.build_plan`) picks up to
``--per-seed`` (step, failure mode) attempts; each attempt is run by
:func:`run_attempt`: generate the flawed step (offline mutators, or the injection
package's other generators), warm-start replay through the chosen executor (``builtin``
for ``whenpro run`` traces, ``cmd:...`` or a plugin for imported ones), verify, and
filter. A trace is kept when the injection is decisive (the seed succeeded, the
counterfactual fails), the injected text does not reveal the construction, the gold
answer was not visible before the injected step, and the trace writes faithfully in the
Who&When Pro shape. Kept traces go to the dataset (:mod:`.build_store`, ``files`` or
``jsonl`` layout) labelled by construction: the agent and coordinate of the injected step
and the mode.

Concurrency: attempts run as asyncio tasks, at most ``concurrency`` at a time; each
attempt's generation, replay and verification run in a worker thread
(``asyncio.to_thread``). The built-in environments replay in milliseconds, and
``cmd:`` executors and LLM calls spend their time in subprocesses and sockets, which
release the GIL, so threads suffice; a process pool would add more in pickling traces
than it saves. Dataset files are written (atomically) in a worker thread, and the
journal line in the event loop after that, so the journal only names files that exist.
Files are reproducible: the same seeds and options give the same bytes (the injection
timestamp is the build's creation time; replay timings stay in the journal).

Resuming: the journal holds every finished attempt; a rerun of the same command skips
them (a larger ``--per-seed`` or more ``--modes`` only add attempts). An interrupted
attempt leaves nothing in the journal and runs again. See :mod:`.build_store`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whenpro_core.audit.detect import DetectabilityCheck, filter_items
from whenpro_core.audit.view import audit_view
from whenpro_core.dataset.build_adapt import in_pool, next_round
from whenpro_core.dataset.build_plan import (
    MIN_AGENT_STEPS,
    Attempt,
    Plan,
    Seed,
    candidate_steps,
    form_picks,
    judge_position,
    parse_modes,
    plan_build,
    scan_seeds,
    step_class,
)
from whenpro_core.dataset.build_store import LAYOUTS, MAX_MODE_SHARE, BuildStore, seeded_order
from whenpro_core.dataset.journal import Entry, read_entries
from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.formats.whowhen_pro_write import check_round_trip, to_document
from whenpro_core.injection.inject import inject
from whenpro_core.injection.registry import get_executor, get_generator
from whenpro_core.injection.replay import warm_start
from whenpro_core.injection.verify import check_trace
from whenpro_core.safety.redact import redact
from whenpro_core.scale.ratelimit import RateLimiter, gate_tools, local_wait
from whenpro_core.scale.shards import deal, shard_of
from whenpro_core.trace.extras import ControlRun, Injection, ModelUsage
from whenpro_core.trace.model import Trace

if TYPE_CHECKING:  # the injection stack is imported when a build runs
    from whenpro_core.injection.executors import Executor
    from whenpro_core.injection.generate import GeneratedStep, Generator, InjectionRequest
from whenpro_core.injection.textedit import is_agent_step


@dataclass(frozen=True)
class BuildOptions:
    """Settings of a build.

    Attributes:
        modes: failure-mode codes to inject (default: every mode with an offline mutator).
        per_seed: attempts per seed trajectory.
        generator: ``offline`` or ``llm[:MODEL]`` (the injection package's generators).
        executor: ``builtin``, ``cmd:COMMAND`` or a plugin name.
        layout: ``files`` (per-file release) or ``jsonl``.
        seed: seeds the choice of steps and modes and the mutators' choices.
        model: ``provider:model`` of ``--generator llm`` and ``--executor simulate``
            (unless their spec names one).
        max_mode_share: largest share of one failure mode among the released traces
            (``build_store.balance``; 1 turns mode balancing off).
        concurrency: attempts in flight at once.
        timeout: seconds for one continuation; message_timeout: per message of a
            ``cmd:`` executor.
        detect: run the detectability filter (:mod:`whenpro_core.audit.detect`) when
            the attempts are done; ``False`` is ``--keep-detectable``.
        adversarial: run the adversarial filter (:mod:`.build_adversarial`) before the
            release is selected; ``False`` is ``--keep-learnable``.
    """

    modes: tuple[str, ...] = ()
    per_seed: int = 1
    generator: str = "offline"
    executor: str = "builtin"
    layout: str = "files"
    seed: int = 0
    concurrency: int = 4
    timeout: float = 600.0
    message_timeout: float = 60.0
    model: str | None = None
    max_mode_share: float = MAX_MODE_SHARE
    detect: bool = True
    adversarial: bool = True

    def fingerprint(self) -> dict[str, Any]:
        """The options a resumed build must share with the run that started it."""
        out: dict[str, Any] = {
            "generator": self.generator,
            "executor": self.executor,
            "layout": self.layout,
            "seed": self.seed,
        }
        if self.model and (self.executor == "simulate" or self.generator == "llm"):
            out["model"] = self.model
        return out

    @property
    def needs_control(self) -> bool:
        """Whether kept items need a control run: a continuation that is not an exact
        replay (an LLM plays the other agents) may fail without the injected error."""
        return self.executor == "simulate" or self.executor.startswith("simulate:")


@dataclass
class Outcome:
    """What one attempt gave: the journal ``entry`` and, when kept, the Who&When Pro
    ``doc`` to write."""

    entry: Entry
    doc: dict[str, Any] | None = None


class _Tracked:
    """A generator wrapper that remembers whether generation finished (so a failure is
    put on the right stage)."""

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.name = inner.name
        self.done = False

    def generate(self, request: InjectionRequest) -> GeneratedStep:
        out = self.inner.generate(request)
        self.done = True
        return out


def _describe(exc: BaseException) -> str:
    text = exc.one_line() if isinstance(exc, WhenproError) else f"{type(exc).__name__}: {exc}"
    return redact(text)[:500]


def run_attempt(
    trace: Trace,
    attempt: Attempt,
    generator: Generator,
    executor: Executor,
    opts: BuildOptions,
    *,
    now: str,
    cancel: threading.Event | None = None,
    trace_id: str | None = None,
) -> Outcome:
    """Generate, replay, verify and filter one attempt (blocking; run it in a thread).
    Never raises for a failed attempt: the entry says which stage dropped it.
    ``trace_id`` is the id the kept trace gets (the build's opaque id; default: the
    counterfactual's own)."""
    started = time.perf_counter()
    step = trace.steps[attempt.index]
    base: dict[str, Any] = dict(
        key=attempt.key,
        seed=attempt.seed_id,
        seed_ref=attempt.seed_ref,
        step=attempt.coord,
        step_index=attempt.index,
        mode=attempt.mode,
        agent=step.agent,
        modality=trace.modality.value,
        framework=trace.framework,
        benchmark=trace.benchmark,
        step_class=step_class(step),
        steps=len(trace.steps),
    )

    def done(status: str, reason: str | None = None, detail: str = "", **kw: Any) -> Entry:
        return Entry(
            **base, status=status, reason=reason, detail=detail, seconds=round(time.perf_counter() - started, 4), **kw
        )

    tracked = _Tracked(generator)
    try:
        result = inject(
            trace,
            attempt.index,
            attempt.mode,
            tracked,
            executor,
            seed=opts.seed,
            timeout=opts.timeout,
            cancel=cancel,
            now=now,
        )
    except Exception as exc:  # noqa: BLE001 - a failed attempt is recorded, the build goes on
        stage = "replay_failed" if tracked.done else "generate_failed"
        return Outcome(done("dropped", stage, _describe(exc)))
    v, cf = result.verdict, result.counterfactual
    base.update(_spent(cf.injection))
    if not v.decisive:
        why = {True: "the counterfactual still succeeds", None: "the counterfactual's outcome is unknown"}.get(
            v.counterfactual_success, "the seed run did not succeed"
        )
        return Outcome(done("dropped", "not_decisive", f"{why} ({v.detail})", id=cf.id))
    if v.revealing:
        return Outcome(
            done(
                "dropped",
                "construction_leak",
                "the injected text says: " + ", ".join(repr(p) for p in v.revealing),
                id=cf.id,
            )
        )
    if v.gold_visible_before_t:
        return Outcome(
            done(
                "dropped",
                "gold_visible_before_t",
                "the gold answer appears in an agent step before the injected one",
                id=cf.id,
            )
        )
    agent_steps = sum(1 for st in cf.steps if is_agent_step(st))
    if agent_steps < MIN_AGENT_STEPS:  # e.g. a first step that hands in the answer: attributing it is no test
        return Outcome(
            done(
                "dropped",
                "trivial",
                f"the counterfactual has {agent_steps} agent steps (at least {MIN_AGENT_STEPS} needed)",
                id=cf.id,
            )
        )
    control = control_run(trace, attempt.index, executor, opts, cancel) if opts.needs_control else None
    if control is not None:
        _record_injection(cf, control=ControlRun.model_validate(control))
        if control["success"] is not True:
            return Outcome(
                done(
                    "dropped",
                    "control_failed",
                    "the unmodified step replayed through the same "
                    f"executor does not succeed either ({control['detail']})",
                    id=cf.id,
                    control=control["success"],
                )
            )
    if trace_id:
        cf.id = trace_id
    _record_injection(cf, seed_rel=attempt.seed_rel)
    doc = to_document(cf, eval_status="fail")
    diffs = check_round_trip(cf, doc)
    if diffs:
        return Outcome(done("dropped", "not_representable", "; ".join(diffs[:3]), id=cf.id))
    released = cf.steps[attempt.index]
    if released.kind != "final_answer":  # a final answer is never a candidate step: the position cap balances it
        base["step_class"] = step_class(released)  # the class a reader sees (R.1 turns a check into a report)
    view = audit_view(cf)  # what a judge sees of the built trace: read once for the caps
    picked_by, chance = form_picks(cf, attempt.coord, view)
    return Outcome(
        done(
            "kept",
            detail=result.generated.description[:500],
            id=cf.id,
            control=control["success"] if control else None,
            position=judge_position(cf, attempt.coord, view),
            form_picks=picked_by,
            chance=chance,
        ),
        doc,
    )


def _spent(inj: Injection | None) -> dict[str, Any]:
    """``calls`` and ``cost_usd`` of an injection record (:meth:`Injection.spent`); 0 without one."""
    spent = inj.spent() if inj is not None else ModelUsage()
    return {"calls": spent.calls, "cost_usd": spent.cost_usd}


def _record_injection(cf: Trace, *, control: ControlRun | None = None, seed_rel: str | None = None) -> None:
    """Add the build's ``control`` to ``cf``'s injection record, or (with ``seed_rel``) make
    the record reproducible: no replay timing (it is in the journal), the seed named
    relative to the dataset rather than by the builder's own path."""
    inj = cf.injection
    if inj is None:
        return
    if control is not None:
        inj.control = control
    else:
        if inj.replay is not None:
            inj.replay = inj.replay.without("seconds")
        inj.seed_ref = seed_rel or inj.seed_ref
    cf.set_injection(inj)


def class_shares(plan: Plan) -> dict[str, float]:
    """Share of each step class (``agent/kind``) among the candidate steps of the used
    seeds: what the released labels are balanced against (``build_store.balance``)."""
    counts: dict[str, int] = {}
    for s in plan.used:
        if s.trace is None:
            continue
        for i in candidate_steps(s.trace):
            c = step_class(s.trace.steps[i])
            counts[c] = counts.get(c, 0) + 1
    total = sum(counts.values()) or 1
    return {c: round(n / total, 4) for c, n in sorted(counts.items())}


def control_run(
    trace: Trace, index: int, executor: Executor, opts: BuildOptions, cancel: threading.Event | None = None
) -> dict[str, Any]:
    """Replay the *unmodified* step ``index`` of ``trace`` through ``executor`` and check
    the outcome: ``{"success": bool | None, "detail": str, "final_answer": str | None,
    "termination": str}``. An executor error gives ``success: None`` (never raises for
    it): an item whose control cannot be run is not kept."""
    try:
        result = warm_start(
            trace, index, trace.steps[index].model_copy(deep=True), executor, timeout=opts.timeout, cancel=cancel
        )
    except Exception as exc:  # noqa: BLE001 - recorded as a failed control
        return {"success": None, "detail": _describe(exc), "final_answer": None, "termination": "error"}
    check = check_trace(trace, result.final_answer) if result.final_answer is not None else None
    return {
        "success": check.success if check else None,
        "detail": check.detail if check else f"no final answer ({result.termination})",
        "final_answer": result.final_answer,
        "termination": result.termination,
    }


# ---------------------------------------------------------------------- the build


@dataclass
class BuildResult:
    """A finished run: the ``manifest`` (empty for a ``--shard`` job), the attempts
    ``ran`` now, ``skipped`` (already in the journal or, for a ``--shard`` job, not its
    share) and the plan."""

    manifest: dict[str, Any]
    ran: int = 0
    skipped: int = 0
    plan: Plan = field(default_factory=Plan)
    #: A ``--shard`` job stopped at a round that waits for other jobs' parts.
    waiting: bool = False
    #: The attempts each adaptive round planned, in order (0: the last, when none was left).
    rounds: list[int] = field(default_factory=list)


def _seeds_section(seeds: list[Seed]) -> dict[str, Any]:
    skipped = [s for s in seeds if s.skip]
    reasons: dict[str, int] = {}
    for reason in (s.skip for s in skipped if s.skip):
        reasons[reason] = reasons.get(reason, 0) + 1
    return {
        "found": len(seeds),
        "used": len(seeds) - len(skipped),
        "skipped": reasons,
        "skipped_list": [{"ref": s.rel or s.ref, "id": s.id, "reason": s.skip, "detail": s.detail} for s in skipped],
    }


def _tools(opts: BuildOptions) -> tuple[Generator, Executor]:
    if opts.generator.startswith("text:"):
        raise ConfigError(
            "a build writes many different steps; a fixed replacement text does not fit",
            expected="--generator offline or llm",
        )
    generator = get_generator(opts.generator, model=opts.model)
    executor = get_executor(opts.executor, message_timeout=opts.message_timeout, model=opts.model)
    return generator, executor


def check_options(opts: BuildOptions) -> None:
    """ConfigError for a bad layout, concurrency, per-seed count or timeout."""
    if opts.layout not in LAYOUTS:
        raise ConfigError(f"unknown layout {opts.layout!r}", expected=" or ".join(LAYOUTS))
    if opts.concurrency < 1:
        raise ConfigError(f"--concurrency {opts.concurrency} is not a positive number", expected="1 or more")
    if opts.per_seed < 1:
        raise ConfigError(f"--per-seed {opts.per_seed} is not a positive number", expected="1 or more")
    if opts.timeout <= 0:
        raise ConfigError("--timeout must be positive", expected="seconds, e.g. 600")
    if not 0 < opts.max_mode_share <= 1:
        raise ConfigError(f"--max-mode-share {opts.max_mode_share} is not a share", expected="a number in (0, 1]")


#: Progress callback: (finished attempts this run, attempts to run this run, the entry).
ProgressFn = Callable[[int, int, Entry], None]


@dataclass(frozen=True)
class Spread:
    """Where a build's attempts run (issue 18; default: all in this process).

    Attributes:
        ray: run each round's attempts as Ray tasks (:mod:`.ray_backend`), one journal
            part per task; ``address`` an existing cluster, ``None`` a local Ray started for
            the run.
        shards: Ray tasks per round (default: one per cluster CPU).
        shard: ``(K, N)``: a ``--shard K/N`` job (no Ray): only the seed runs whose id
            hashes to K, into journal part K; the release is left to a build without it.
        max_calls_per_s: cap on the model requests of an LLM generator or executor
            (cluster-wide on Ray, per process otherwise).
    """

    ray: bool = False
    address: str | None = None
    shards: int | None = None
    shard: tuple[int, int] | None = None
    max_calls_per_s: float | None = None

    def mine(self, chain: list[Attempt]) -> bool:
        """Whether a seed run's chain of attempts is this job's to run."""
        return self.shard is None or shard_of(chain[0].seed_id, self.shard[1]) == self.shard[0]


@dataclass
class _Runner:
    """Runs chains of attempts (a seed run's attempts in order until it has enough decisive
    items) into ``store``, ``opts.concurrency`` attempts in flight: the driver's own
    attempts, or one Ray shard's in its worker."""

    traces: dict[str, Trace]
    generator: Generator
    executor: Executor
    opts: BuildOptions
    store: BuildStore
    cancel: threading.Event = field(default_factory=threading.Event)
    on_entry: ProgressFn | None = None
    #: Where the build says which stage it is in between attempts (planning a round,
    #: selecting the release), one line each.
    on_stage: Callable[[str], None] | None = None
    after_record: Callable[[int], None] | None = None
    ran: int = 0
    todo: int = 0

    def noted(self, entry: Entry) -> None:
        """Count a journalled attempt and say so (progress, the test hook)."""
        self.ran += 1
        if self.on_entry:
            self.on_entry(self.ran, self.todo, entry)
        if self.after_record:
            self.after_record(self.ran)

    async def one(self, attempt: Attempt) -> Entry | None:
        """Run and journal one attempt; ``None`` when the build was cancelled meanwhile."""
        store = self.store
        outcome = await asyncio.to_thread(
            run_attempt,
            self.traces[attempt.seed_id],
            attempt,
            self.generator,
            self.executor,
            self.opts,
            now=store.created,
            cancel=self.cancel,
            trace_id=store.trace_id(attempt.key),
        )
        if self.cancel.is_set():
            return None  # a cut-short replay proves nothing: not journalled, runs again
        entry = outcome.entry
        if outcome.doc is not None:
            entry = await asyncio.to_thread(store.write_kept, outcome.doc, entry)
        store.record(entry)
        self.noted(entry)
        return entry

    async def chains(self, chains: list[list[Attempt]], wanted: int) -> None:
        """Run ``chains``, each until it has ``wanted`` more decisive items (a kept item the
        detectability filter drops later counts: the next round's plan does not depend on
        that filter); journalled attempts are not run again."""
        gate = asyncio.Semaphore(self.opts.concurrency)

        async def chain(attempts: list[Attempt]) -> None:
            try:
                found = 0
                for attempt in attempts:
                    if found >= wanted or self.cancel.is_set():
                        return
                    found += in_pool(self.store.entries.get(attempt.key) or await self.one(attempt))
            finally:
                gate.release()

        try:
            async with asyncio.TaskGroup() as group:
                for attempts in chains:
                    await gate.acquire()
                    group.create_task(chain(attempts))
        except BaseException:
            self.cancel.set()
            raise


def check_apart(seeds: str | Path, out: str | Path) -> None:
    """ConfigError when the dataset folder ``out`` is the seed runs' folder, inside it
    or holds it: the release would be read as seed runs by the next build (and the seed
    runs listed as traces of the dataset)."""
    a, b = Path(seeds).resolve(), Path(out).resolve()
    if a == b or a in b.parents or b in a.parents:
        where = "is" if a == b else "is inside" if a in b.parents else "holds"
        raise ConfigError(
            f"--out {out} {where} the seed runs' folder {seeds}: the next build would read the release as seed runs",
            expected="an --out folder apart from SEEDS",
        )


def _reachable(attempts: list[Attempt], wanted: int, entries: dict[str, Entry]) -> int:
    """The most of ``attempts`` the first round can still run: the unjournalled attempts
    of each seed run whose chain is not complete (:func:`walk`); a seed run with its
    ``wanted`` decisive items runs nothing more (a finished build said "85 to run")."""
    chains: dict[str, list[Attempt]] = {}
    for a in attempts:
        chains.setdefault(a.seed_id, []).append(a)
    open_chains = [c for c in chains.values() if not walk(c, wanted, entries)[1]]
    return sum(1 for c in open_chains for a in c if a.key not in entries)


def walk(chain: list[Attempt], wanted: int, entries: dict[str, Entry]) -> tuple[list[str], bool]:
    """The keys of ``chain`` its run reaches given the journalled ``entries`` (in order,
    until ``wanted`` decisive items), and whether the chain is complete (no attempt it
    reaches is missing from the journal)."""
    found, walked = 0, list[str]()
    for attempt in chain:
        if found >= wanted:
            break
        entry = entries.get(attempt.key)
        if entry is None:
            return walked, False
        walked.append(attempt.key)
        found += in_pool(entry)
    return walked, True


async def run_build(
    seeds_path: str | Path,
    out: str | Path,
    opts: BuildOptions,
    *,
    force: bool = False,
    spread: Spread | None = None,
    on_plan: Callable[[BuildResult, int], None] | None = None,
    on_entry: ProgressFn | None = None,
    after_record: Callable[[int], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
    now: str | None = None,
    salt: str | None = None,
    warn: Callable[[str], None] | None = None,
) -> BuildResult:
    """Build (or resume building) the dataset ``out`` from the seeds at ``seeds_path``.

    ``on_plan(result, todo)`` is called once the plan is known; ``on_entry`` after each
    attempt is journalled (on Ray: for each attempt of a shard when the shard ends);
    ``on_stage`` hears one line as each adaptive round is planned and as the release is
    selected (the stages between attempts, which take time of their own);
    ``after_record(n)`` with the number journalled so far in this run by this process (a
    test hook: raising there, or killing the process, interrupts the build between two
    attempts). ``now`` and ``salt`` fix a new journal's creation time and id salt
    (tests; the salt is otherwise random, so ids reveal nothing). ``warn`` hears, one
    line each, the journal lines skipped because they are not attempts (they run again).

    ``spread`` (:class:`Spread`) runs the attempts on Ray or as one ``--shard K/N`` job.
    The unit of a shard is a seed run's chain of attempts, whose outcome does not depend
    on where it runs, so a sharded build journals the same attempts as a local one; the
    adaptive rounds are planned in the driver between rounds from the merged journal, and
    the detectability filter and the release run once, in a build without ``--shard``,
    over every part. A ``--shard`` job runs its share of each round whose earlier rounds
    are complete in every part, and stops at the first that is not (rerun the jobs, or a
    build without ``--shard``, to go on); its result has no manifest.

    Raises ConfigError for bad options (before anything is written; ``--ray`` without
    Ray installed among them, and an ``out`` that is, holds or sits in ``seeds_path``),
    TraceFormatError when the seeds path does not exist, WhenproError for an output
    folder that is not a build (without ``force``)."""
    spread = spread or Spread()
    check_options(opts)
    check_apart(seeds_path, out)
    modes = parse_modes(list(opts.modes) or None, opts.generator)
    opts = dataclasses.replace(opts, modes=modes)
    generator, executor = _tools(opts)
    if spread.ray:
        from whenpro_core.scale.ray_backend import import_ray  # deliberate lazy import: Ray is optional

        import_ray()
    elif spread.max_calls_per_s is not None:
        gate_tools((generator, executor), local_wait(RateLimiter(spread.max_calls_per_s)))
    seeds = await asyncio.to_thread(scan_seeds, seeds_path)
    if not seeds:
        raise ConfigError(
            f"no traces found in {seeds_path}", expected="successful runs, e.g. the output of whenpro run"
        )
    plan = plan_build(seeds, modes, opts.per_seed, seed=opts.seed, offline=opts.generator == "offline")
    shard = spread.shard[0] if spread.shard else None
    store = BuildStore.open(out, opts.fingerprint(), force=force, now=now, salt=salt, shard=shard, warn=warn)
    traces = {s.id: s.trace for s in seeds if s.trace is not None}
    result = BuildResult(manifest={}, plan=plan)
    runner = _Runner(traces, generator, executor, opts, store, on_entry=on_entry, after_record=after_record)
    runner.on_stage = on_stage
    try:
        mine = [a for a in plan.attempts if spread.shard is None or spread.mine([a])]
        todo = [a for a in mine if a.key not in store.entries]
        result.skipped, runner.todo = len(plan.attempts) - len(todo), _reachable(mine, opts.per_seed, store.entries)
        if on_plan:
            on_plan(result, runner.todo)
        with ExitStack() as stack:
            rounds = _Rounds(runner, spread, stack)
            await _walk_rounds(rounds, result, seeds)
    except BaseExceptionGroup as eg:
        raise _first_error(eg) from None
    finally:
        store.close()
    return result


class _Rounds:
    """How a build's rounds run: in this process, as Ray tasks, or this job's share."""

    def __init__(self, runner: _Runner, spread: Spread, stack: ExitStack) -> None:
        self.runner, self.spread = runner, spread
        self.done: set[str] = set()
        self.tried: dict[str, int] = {}
        self.ray: Any = None
        self.limiter: Any = None
        if spread.ray:
            from whenpro_core.scale import ray_backend  # deliberate lazy import: Ray is heavy

            self.ray = stack.enter_context(ray_backend.ray_session(spread.address))
            self.limiter = ray_backend.rate_limiter(self.ray, spread.max_calls_per_s)

    async def run(self, chains: list[list[Attempt]], wanted: int) -> bool:
        """Run a round's ``chains`` (this job's share of those not complete) and say
        whether every chain of the round is complete now; the keys reached go to ``done``."""
        store = self.runner.store
        todo = [c for c in chains if self.spread.mine(c) and not walk(c, wanted, store.entries)[1]]
        if self.ray is not None and todo:
            await asyncio.to_thread(self._on_ray, todo, wanted)
        elif todo:
            await self.runner.chains(todo, wanted)
        if self.spread.shard is not None:
            store.reload()  # the other jobs' parts
        complete = True
        for chain in chains:
            walked, whole = walk(chain, wanted, store.entries)
            self.done.update(walked)
            complete = complete and whole
        return complete

    def _on_ray(self, chains: list[list[Attempt]], wanted: int) -> None:
        """``chains`` as Ray tasks (:func:`run_build_shard`), each into its own journal
        part, merged into the journal when every task has ended (also after a failure)."""
        from whenpro_core.scale import ray_backend  # deliberate lazy import: Ray is heavy

        runner, store = self.runner, self.runner.store
        count = self.spread.shards or ray_backend.cluster_cpus(self.ray)
        task = self.ray.remote(num_cpus=1, max_retries=0)(run_build_shard)
        payloads = []
        for i, share in enumerate(deal(chains, count)):
            keys = {a.key for c in share for a in c}
            payloads.append(
                (
                    share,
                    wanted,
                    {c[0].seed_id: runner.traces[c[0].seed_id] for c in share},
                    runner.opts,
                    str(store.root),
                    store.header,
                    {k: e for k in keys if (e := store.entries.get(k)) is not None},
                    i,
                    self.limiter,
                )
            )

        def on_done(index: int, ran: int) -> None:
            part = store.parts.part(index)
            for entry in _part_entries(part):
                runner.noted(entry)

        try:
            ray_backend.run_tasks(self.ray, task, payloads, store.parts.part, on_done)
        finally:
            store.merge_parts()


def _part_entries(part: Path) -> list[Entry]:
    return list(read_entries(part).values())


async def _walk_rounds(rounds: _Rounds, result: BuildResult, seeds: list[Seed]) -> None:
    """The build's rounds (the plan's first, then the adaptive ones while the earlier are
    complete), the detectability filter and the release (not in a ``--shard`` job)."""
    runner, store, plan, opts = rounds.runner, rounds.runner.store, result.plan, rounds.runner.opts
    sharded = rounds.spread.shard is not None
    chains: dict[str, list[Attempt]] = {}
    for a in plan.attempts:
        chains.setdefault(a.seed_id, []).append(a)
    detectable: dict[str, Any] = {"filter": opts.detect}
    complete = False
    say = runner.on_stage or (lambda line: None)
    try:
        complete = await rounds.run(list(chains.values()), opts.per_seed)
        while complete and not runner.cancel.is_set():
            say(f"planning round {len(result.rounds) + 2} from {_pool_size(store, rounds.done)} decisive items")
            more = await asyncio.to_thread(adapt, store, plan, rounds.done, rounds.tried, opts)
            result.rounds.append(sum(len(c) for c in more))
            if not more:
                break
            say(f"round {len(result.rounds) + 1}: {result.rounds[-1]} attempts at {len(more)} seed runs")
            plan.attempts.extend(a for c in more for a in c)
            complete = await rounds.run(more, 1)
        result.ran, result.waiting = runner.ran, not complete
        if opts.detect and not sharded:
            detectable.update(await asyncio.to_thread(drop_detectable, store, seeds))
        complete = complete and not runner.cancel.is_set()
    except BaseException:
        complete = False
        runner.cancel.set()
        raise
    finally:
        result.ran = runner.ran
        if not sharded:
            say(f"selecting the release from {len(store.kept())} candidates")
            run = {
                "modes": _modes_held(opts.modes, store),
                "per_seed": opts.per_seed,
                "concurrency": opts.concurrency,
                "max_mode_share": opts.max_mode_share,
                "step_classes": class_shares(plan),
                "detectable": detectable,
                "adversarial": {"filter": opts.adversarial},
                "complete": complete,
            }
            result.manifest = await asyncio.to_thread(
                store.finish,
                _seeds_section(seeds),
                planned=len({a.key for a in plan.attempts} | set(store.entries)),
                run=run,
                say=say,
            )


def _pool_size(store: BuildStore, done: set[str]) -> int:
    """The decisive items among the attempts ``done`` so far (what a round plans from)."""
    return sum(1 for k in done if in_pool(store.entries.get(k)))


def _modes_held(modes: Sequence[str], store: BuildStore) -> list[str]:
    """This run's ``modes``, then the other modes the journal holds attempts of: a build
    resumed with other ``--modes`` keeps the earlier attempts, and its release selects
    from all of them."""
    return [*modes, *sorted({e.mode for e in store.entries.values()} - set(modes))]


def run_build_shard(
    chains: list[list[Attempt]],
    wanted: int,
    traces: dict[str, Trace],
    opts: BuildOptions,
    root: str,
    header: dict[str, Any],
    entries: dict[str, Entry],
    part: int,
    limiter: Any = None,
) -> int:
    """One Ray shard of a build round, in a worker: ``chains`` run as the driver runs them
    (:class:`_Runner`), journalled to part ``part`` of the dataset at ``root``; the
    model requests wait for ``limiter`` (a rate limiter actor) when given. Returns the
    attempts journalled. Raises the first WhenproError of a failed attempt."""
    generator, executor = _tools(opts)
    if limiter is not None:
        from whenpro_core.scale.ray_backend import actor_wait  # deliberate lazy import: Ray is heavy

        gate_tools((generator, executor), actor_wait(limiter))
    runner = _Runner(traces, generator, executor, opts, BuildStore.for_part(root, header, part, entries))
    try:
        asyncio.run(runner.chains(chains, wanted))
    except BaseExceptionGroup as eg:
        raise _first_error(eg) from None
    return runner.ran


def _first_error(eg: BaseExceptionGroup[BaseException]) -> BaseException:
    """The exception to raise for a task group's failure: its first WhenproError, else its first."""
    leaves = list(_leaves(eg))
    return next((e for e in leaves if isinstance(e, WhenproError)), leaves[0] if leaves else eg)


def adapt(
    store: BuildStore, plan: Plan, done: set[str], tried: dict[str, int], opts: BuildOptions
) -> list[list[Attempt]]:
    """The attempts of the next adaptive round (:mod:`.build_adapt`), one list per open
    seed run, planned from the decisive items among the attempts ``done`` so far; none
    when the caps are off (``--max-mode-share 1``: nothing is left out to make up for)."""
    if opts.max_mode_share >= 1:
        return []
    pool = [e for k in done if (e := store.entries.get(k)) is not None and in_pool(e)]
    # ordered by --seed, not by the build's random id salt: the rounds depend only on the seed runs and --seed
    pool = seeded_order(pool, opts.seed)
    return next_round(
        plan.used,
        pool,
        done,
        tried,
        modes=opts.modes,
        share=opts.max_mode_share,
        classes=class_shares(plan),
        per_seed=opts.per_seed,
        seed=opts.seed,
        offline=opts.generator == "offline",
    )


def drop_detectable(store: BuildStore, seeds: list[Seed]) -> dict[str, int]:
    """The detectability filter over the build's kept items, in key order (the same
    result whatever order attempts finished in): each is checked against the other
    successful seed runs and the items accepted before it; an item a form-only
    baseline pins to its step is journalled again as dropped, reason ``detectable``
    (its file goes at the finish). Returns ``{"checked": n, "dropped": k}``."""
    kept = sorted((e for e in store.kept() if e.file), key=lambda e: e.key)
    check = DetectabilityCheck((s.id, s.trace) for s in seeds if s.trace is not None and not s.skip)
    pinned = filter_items(check, ((e.key, e.seed, load_trace(str(store.root / str(e.file)))) for e in kept))
    for key, pins in pinned.items():
        store.record(
            store.entries[key].model_copy(
                update={
                    "status": "dropped",
                    "reason": "detectable",
                    "file": None,
                    "ref": None,
                    "detail": "a form-only baseline pins it to its step: " + ", ".join(p.describe() for p in pins),
                }
            )
        )
    return {"checked": len(kept), "dropped": len(pinned)}


def _leaves(eg: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in eg.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


# ---------------------------------------------------------------------- the command


__all__ = [
    "BuildOptions",
    "BuildResult",
    "Outcome",
    "Spread",
    "check_options",
    "drop_detectable",
    "run_attempt",
    "run_build",
    "run_build_shard",
    "walk",
]
