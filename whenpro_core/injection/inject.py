"""Error injection end to end (docs/architecture.md, 'Injection and warm-start replay'): generate a flawed step
``t``, warm-start replay,
verify, and label the counterfactual.

The counterfactual is a native :class:`~whenpro_core.trace.model.Trace`. When the injection is
decisive (the seed succeeded, the counterfactual fails) its ``ground_truth`` names the agent
and coordinate of ``t``, the mode and the generator's description of the flaw (labelled by
construction); otherwise the same facts are an :class:`~whenpro_core.trace.model.Annotation`
(``decisive=False``) and ``ground_truth`` stays empty, since the run has no decisive
error. Its steps carry the Who&When Pro markers in ``hidden`` (``is_replayed`` on the
prefix, ``is_injected`` on ``t``), and its ``extras["injection"]`` records provenance
(seed trace, step, mode, generator, executor, seed, timestamp), the replay statistics and
the verification verdict.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from whenpro_core.config import load_settings
from whenpro_core.errors import ConfigError, WhenproError, errors_located_in
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.injection.executors import Executor
from whenpro_core.injection.generate import GeneratedStep, Generator, InjectionRequest
from whenpro_core.injection.registry import get_executor, get_generator
from whenpro_core.injection.replay import ReplayResult, warm_start
from whenpro_core.injection.verify import Verdict, check_trace, verify
from whenpro_core.safety.textsafe import plural
from whenpro_core.storage.fsutil import safe_name
from whenpro_core.trace.coords import small_int
from whenpro_core.trace.extras import INJECTION_KEY, ContinuationRecord, Injection, ModelUsage, ReplayStats
from whenpro_core.trace.model import Annotation, GroundTruth, Outcome, Source, Step, Trace
from whenpro_core.trace.taxonomy import Taxonomy

#: Terminations that cut a continuation short for reasons outside the run (a model-call
#: budget, a cancel): without a final answer the counterfactual's outcome is unknown.
UNFINISHED = frozenset({"max_calls", "stopped"})


@dataclass
class InjectionResult:
    """The labelled ``counterfactual``, its ``verdict``, the ``replay`` details and the
    ``generated`` step."""

    counterfactual: Trace
    verdict: Verdict
    replay: ReplayResult
    generated: GeneratedStep


def resolve_step(trace: Trace, coord: str) -> int:
    """The index of the step with coordinate ``coord`` (``#N`` selects index ``N``).

    Raises ConfigError naming the valid coordinates."""
    text = str(coord).strip()
    if text.startswith("#") and text[1:].isdigit():
        index = small_int(text[1:])
        if index is not None and index < len(trace.steps):
            return index
    else:
        step = trace.step_by_coord(text)
        if step is not None:
            return step.index
    coords = [s.coord for s in trace.steps if s.coord is not None]
    shown = ", ".join(coords[:8]) + (f", ... {coords[-1]}" if len(coords) > 8 else "")
    raise ConfigError(f"no step {coord!r} in trace {trace.id!r}", expected=f"a coordinate ({shown}) or #INDEX")


def check_mode(mode: str, taxonomy: Taxonomy | None = None) -> str:
    """The canonical code of ``mode``; ConfigError for a code outside the taxonomy."""
    tax = taxonomy or Taxonomy.builtin()
    found = tax.get(mode)
    if found is None:
        raise ConfigError(f"unknown failure mode {mode!r}", expected=", ".join(m.code for m in tax))
    return found.code


def inject(
    trace: Trace,
    index: int,
    mode: str,
    generator: Generator,
    executor: Executor,
    *,
    seed: int = 0,
    timeout: float = 600.0,
    on_step: Callable[[Step], None] | None = None,
    cancel: threading.Event | None = None,
    now: str | None = None,
) -> InjectionResult:
    """Inject an error of ``mode`` at step ``index`` of ``trace`` and replay.

    Args:
        trace: the seed run (normally a success; the verdict says when it was not).
        index: 0-based step index of ``t``.
        mode: failure-mode code.
        generator, executor: see :mod:`~whenpro_core.injection.generate` and
            :mod:`~whenpro_core.injection.executors`.
        seed: for the generator's choices.
        timeout: seconds for the continuation.
        on_step: streams the replaced step and each new step.
        cancel: stops the continuation early.
        now: ISO timestamp for the provenance (default: the current UTC time).

    Raises ConfigError (mode does not fit, bad generator) and ReplayError (executor).
    """
    code = check_mode(mode)
    generated = generator.generate(InjectionRequest(trace, index, code, seed))
    result = warm_start(trace, index, generated.step, executor, on_step=on_step, timeout=timeout, cancel=cancel)
    cf = _counterfactual(trace, index, code, generated, result, seed=seed, now=now)
    verdict = verify(trace, cf, index, final_answer=result.final_answer)
    if result.termination in UNFINISHED and result.final_answer is None:
        # the run was cut by a budget or the user, not ended by its agents: no outcome
        verdict.counterfactual_success, verdict.decisive, verdict.kept = None, False, False
        verdict.detail = f"the continuation was cut ({result.termination}) before a final answer"
    cf.outcome = {True: Outcome.success, False: Outcome.failure, None: Outcome.unknown}[verdict.counterfactual_success]
    record = cf.injection
    if record is not None:
        record.verdict = verdict.as_dict()
        cf.set_injection(record)
    step = cf.steps[index]
    if verdict.decisive:
        cf.ground_truth = GroundTruth(
            agent=step.agent, step=step.coord, step_index=index, mode=code, reason=generated.description
        )
    else:
        cf.annotations.append(
            Annotation(
                label=code,
                agent=step.agent,
                step=step.coord,
                reason=generated.description,
                source="whenpro inject (not decisive)",
            )
        )
    return InjectionResult(cf, verdict, result, generated)


def counterfactual_id(trace: Trace, mode: str, coord: str | None, seed: int = 0) -> str:
    """``<seed trace id>__<mode>__<coord>`` (plus ``__s<seed>`` for a non-zero seed)."""
    return f"{trace.id}__{mode}__{coord}" + (f"__s{seed}" if seed else "")


def _counterfactual(
    trace: Trace, index: int, mode: str, gen: GeneratedStep, result: ReplayResult, *, seed: int, now: str | None
) -> Trace:
    step = result.steps[index]
    extras = {k: v for k, v in trace.model_copy(deep=True).extras.items() if k != INJECTION_KEY}
    record = Injection(
        seed_trace=trace.id,
        seed_ref=trace.source.ref(),
        step=step.coord,
        step_index=index,
        agent=step.agent,
        mode=mode,
        description=gen.description,
        generator=gen.generator,
        executor=result.executor,
        seed=seed,
        timestamp=now or datetime.now(UTC).isoformat(timespec="seconds"),
        replay=ReplayStats(
            prefix_len=result.prefix_len,
            new_steps=len(result.new_steps),
            termination=result.termination,
            tool_cache_hits=result.cache_hits,
            tool_cache_misses=result.cache_misses,
            seconds=round(result.seconds, 3),
        ),
    )
    if gen.usage:
        record.usage = ModelUsage.model_validate(gen.usage)
    if gen.details:
        record.generation = gen.details
    if result.details:
        record.continuation = ContinuationRecord.model_validate(result.details)
    cf = Trace(
        id=counterfactual_id(trace, mode, step.coord, seed),
        framework=trace.framework,
        benchmark=trace.benchmark,
        modality=trace.modality,
        agents=[a.model_copy() for a in trace.agents],
        task=trace.task.model_copy(deep=True),
        steps=result.steps,
        final_answer=result.final_answer,
        outcome=Outcome.unknown,
        source=Source(format="native"),
        extras=extras,
    )
    cf.set_injection(record)
    env = trace.env_run
    if env is not None:  # the run as replayed: its own ending; the checker's word is the verdict's
        env.termination = result.termination
        cf.set_env_run(env.without("check"))
    return cf


def describe(result: InjectionResult) -> list[str]:
    """Human lines for the CLI: the seed, the injected step, the replay and the verdict."""
    cf, v, r = result.counterfactual, result.verdict, result.replay
    inj = cf.injection
    if inj is None:
        raise WhenproError("the counterfactual has no injection provenance", json_path="$.extras.injection")
    seed_state = {True: "succeeded", False: "failed", None: "outcome unknown"}[v.original_success]
    lines = [
        f"seed: {inj.seed_trace} ({seed_state})",
        f"injected: {inj.mode} at step {inj.step} ({inj.agent}): {inj.description}",
        f"replayed: {plural(r.prefix_len, 'step')} from the record, 1 replaced, {len(r.new_steps)} new "
        f"({r.executor}; tool cache {r.cache_hits} hit(s), {r.cache_misses} miss(es); ended by {r.termination})",
    ]
    lines += _llm_lines(inj)
    if v.counterfactual_success is True:
        verdict = "still succeeds — not decisive"
    elif v.counterfactual_success is False:
        verdict = "now fails — decisive" if v.original_success else "fails (the seed run failed too) — not decisive"
    else:
        verdict = "outcome unknown (no gold answer) — not decisive"
    lines.append(f"counterfactual: {verdict} (final answer {_short(cf.final_answer)}; {v.detail})")
    filters = []
    if v.revealing:
        filters.append("the injected text reveals the construction: " + ", ".join(repr(p) for p in v.revealing))
    if v.gold_visible_before_t:
        filters.append("the gold answer was visible before the injected step")
    lines.append("filters: " + ("; ".join(filters) if filters else "passed") + (" — kept" if v.kept else " — not kept"))
    return lines


def _llm_lines(inj: Injection) -> list[str]:
    """The model cost lines of :func:`describe` (generator and simulated continuation)."""
    lines = []
    usage = inj.usage
    if usage:
        lines.append(
            f"generator model: {plural(usage.calls, 'call')}, "
            f"{usage.input_tokens:,} tokens in, {usage.output_tokens:,} out, "
            f"${usage.cost_usd:.4f}"
        )
    cont = inj.continuation
    if cont is not None and cont.usage is not None:
        u = cont.usage
        lines.append(
            f"simulation model: {plural(cont.calls, 'call')} of {cont.max_calls} allowed, "
            f"{u.input_tokens:,} tokens in, {u.output_tokens:,} out, "
            f"${u.cost_usd:.4f}; {plural(cont.simulated_steps, 'simulated tool result')}, "
            f"{cont.tool_results_from_record} from the record"
        )
    return lines


def _short(text: str | None, n: int = 60) -> str:
    if text is None:
        return "none"
    text = " ".join(text.split())
    return repr(text if len(text) <= n else text[: n - 1] + "…")


def default_output(trace: Trace, cf_id: str) -> Path:
    """Where ``whenpro inject`` writes without ``--out``: next to the seed file, named
    after the counterfactual's id (the current folder when the seed has no file)."""
    folder = Path(trace.source.path).parent if trace.source.path else Path.cwd()
    return folder / f"{safe_name(cf_id)}.json"


@dataclass(frozen=True)
class InjectOptions:
    """The options of one ``whenpro inject``, as typed (built once by the command, then
    passed whole). ``generator``: ``offline``, ``text:...`` or ``llm``; ``executor``:
    ``builtin``, ``cmd:COMMAND``, ``simulate[...]`` or a plugin; ``out``: the counterfactual
    file (``None``: next to the seed, :func:`default_output`); ``seed``: of the mutator's
    choices; ``force``: overwrite ``out``; ``timeout``/``message_timeout``: seconds for the
    whole continuation / each message of a ``cmd:`` executor; ``model`` (``provider:model``):
    of ``--generator llm`` and ``--executor simulate`` unless their spec names one;
    ``max_steps``/``max_calls``: bounds of the simulate executor; ``use_cache=False`` skips
    cached model answers; ``base_url`` overrides the model provider's base URL."""

    generator: str = "offline"
    executor: str = "builtin"
    out: Path | None = None
    seed: int = 0
    force: bool = False
    timeout: float = 600.0
    message_timeout: float = 60.0
    model: str | None = None
    max_steps: int | None = None
    max_calls: int | None = None
    use_cache: bool = True
    base_url: str | None = None


def run_inject_command(
    trace_ref: str,
    step: str,
    mode: str,
    options: InjectOptions = InjectOptions(),
    *,
    echo: Callable[[str], None] = print,
) -> InjectionResult:
    """What ``whenpro inject`` does: load, inject at ``step`` (a coordinate or ``#INDEX``)
    an error of failure mode ``mode``, warm-start replay, verify, print each line with
    ``echo``, write (:class:`InjectOptions` says how).

    Refuses to overwrite the output file unless ``options.force`` (WhenproError). An error
    located by a JSON path inside the trace (``$.extras.env.name``) names ``trace_ref`` as its file."""
    trace = load_trace(trace_ref)
    with errors_located_in(trace_ref):
        return _run_loaded(trace, step, mode, options, echo)


def _run_loaded(
    trace: Trace, step: str, mode: str, options: InjectOptions, echo: Callable[[str], None]
) -> InjectionResult:
    """:func:`run_inject_command` after the trace is loaded."""
    o = options
    index = resolve_step(trace, step)
    settings = load_settings(base_url=o.base_url) if o.base_url else None
    gen = get_generator(o.generator, model=o.model, settings=settings, use_cache=o.use_cache)
    ex = get_executor(
        o.executor,
        message_timeout=o.message_timeout,
        model=o.model,
        settings=settings,
        max_steps=o.max_steps,
        max_calls=o.max_calls,
        use_cache=o.use_cache,
    )
    code = check_mode(mode)
    target = o.out or default_output(trace, counterfactual_id(trace, code, trace.steps[index].coord, o.seed))
    if target.exists() and not o.force:
        raise WhenproError("output file exists", path=target, expected="a new path, or --force to overwrite")
    result = inject(trace, index, code, gen, ex, seed=o.seed, timeout=o.timeout)
    for line in describe(result):
        echo(line)
    write_trace(result.counterfactual, target)
    echo(f"wrote {target}")
    return result


__all__ = [
    "InjectOptions",
    "InjectionResult",
    "check_mode",
    "check_trace",
    "describe",
    "inject",
    "resolve_step",
    "run_inject_command",
]
