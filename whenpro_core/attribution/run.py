"""Run any attribution protocol on a trace (docs/architecture.md, 'Attribution protocols'): the one entry point the CLI,
the TUI and the benchmark runner call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from whenpro_core.attribution.heuristic import attribute_heuristic, outcome_warnings
from whenpro_core.attribution.protocols import PRESET_NAMES, PRESET_PROTOCOLS, protocol_name
from whenpro_core.errors import ConfigError
from whenpro_core.trace.model import Attribution, Outcome, Trace
from whenpro_core.trace.taxonomy import Taxonomy, taxonomy_for

if TYPE_CHECKING:  # start-up: each protocol's module is imported when that protocol runs
    from whenpro_core.attribution.judge import Judge, ProgressCallback
    from whenpro_core.attribution.template import PromptTemplate


async def attribute(
    trace: Trace,
    protocol: str = "heuristic",
    *,
    judge: Judge | None = None,
    with_gold: bool = True,
    progress: ProgressCallback | None = None,
    taxonomy: Taxonomy | None = None,
    template: PromptTemplate | None = None,
) -> Attribution:
    """Attribute the decisive error of ``trace`` with ``protocol``.

    ``judge`` is required for every protocol but ``heuristic`` (ConfigError otherwise).
    The taxonomy defaults to the trace's dataset ``taxonomy.yaml`` or the built-in one.
    A run whose outcome is ``success`` gets an empty verdict with a warning (nothing failed).
    Raises BackendError when the judge's backend fails after its retries; cancelling the
    awaiting task stops the protocol between calls. ``template`` (``--template``) words
    the all-at-once request; ConfigError with any other protocol.
    """
    protocol = protocol_name(protocol)
    if template is not None and protocol != "all-at-once":
        raise ConfigError(
            f"--template words the all-at-once request, not {protocol}", expected="--protocol all-at-once (no --preset)"
        )
    taxonomy = taxonomy or taxonomy_for(trace.source.root)
    if trace.outcome == Outcome.success:
        return nothing_to_attribute(trace, protocol, judge, with_gold)
    import asyncio  # start-up: the CLI's offline heuristic runs without the event loop's modules

    if protocol == "heuristic":
        return await asyncio.to_thread(attribute_heuristic, trace, with_gold=with_gold)
    if protocol == "counterfactual":  # replay-verified: the judge's model fixes steps (none: built-in, offline)
        from whenpro_core.attribution.counterfactual import run_protocol

        model = judge.model if judge is not None else None
        return await asyncio.to_thread(run_protocol, trace, model, progress=progress)
    if judge is None:
        raise ConfigError(
            f"protocol {protocol} needs a model",
            expected="--model provider:model (or use --protocol heuristic offline)",
        )
    from whenpro_core.attribution.window import fit_taxonomy

    taxonomy, shortened = fit_taxonomy(taxonomy, judge)
    if protocol == "all-at-once":
        from whenpro_core.attribution.all_at_once import run_all_at_once

        verdict = await run_all_at_once(
            trace, judge, taxonomy, with_gold=with_gold, progress=progress, template=template
        )
        return _noted(verdict, shortened)
    run = _runner(protocol)
    verdict = _noted(await run(trace, judge, taxonomy, with_gold=with_gold, progress=progress), shortened)
    verdict.warnings[:0] = [w for w in outcome_warnings(trace) if w not in verdict.warnings]
    return verdict


def _noted(verdict: Attribution, note: str | None) -> Attribution:
    if note:
        verdict.warnings.append(note)
    return verdict


def _runner(protocol: str) -> Callable[..., Awaitable[Attribution]]:
    """The run function of a judged protocol other than all-at-once (lazy imports: each
    protocol's module is loaded only when it runs)."""
    if protocol == "step-by-step":
        from whenpro_core.attribution.step_by_step import run_step_by_step

        return run_step_by_step
    if protocol == "binary-search":
        from whenpro_core.attribution.binary_search import run_binary_search

        return run_binary_search
    if protocol == PRESET_PROTOCOLS["whowhen-pro"]:
        from whenpro_core.attribution.whowhen_pro_preset import run_whowhen_pro

        return run_whowhen_pro
    if protocol in PRESET_NAMES:  # --preset whowhen
        from whenpro_core.attribution.whowhen_preset import RUNNERS

        return RUNNERS[protocol]
    from whenpro_core.attribution.hybrid import run_hybrid

    return run_hybrid


def nothing_to_attribute(trace: Trace, protocol: str, judge: Judge | None, with_gold: bool) -> Attribution:
    """The empty verdict of a run that succeeded: there is no decisive error, so no
    protocol is run and no model is called."""
    return Attribution(
        protocol=protocol,
        model=judge.model if judge else "heuristic",
        with_gold=with_gold,
        warnings=[
            "the run succeeded (outcome success): there is no decisive error "
            "to attribute; inject one with `whenpro inject` to test a protocol"
        ],
    )


def trace_has_gold(trace: Trace) -> bool:
    """True when the trace records a gold answer (protocols can use it)."""
    return bool(trace.task.answer)


__all__ = ["attribute", "trace_has_gold"]
