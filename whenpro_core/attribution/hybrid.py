"""hybrid: all-at-once picks the agent, then step-by-step runs over that agent's steps
(DESIGN §6; Who&When §4). Calls: 1 + up to that agent's step count."""

from __future__ import annotations

from whenpro_core.attribution.all_at_once import run_all_at_once
from whenpro_core.attribution.judge import Judge, ProgressCallback, Tally
from whenpro_core.attribution.step_by_step import run_step_by_step
from whenpro_core.model import Attribution, Trace
from whenpro_core.taxonomy import Taxonomy


async def run_hybrid(trace: Trace, judge: Judge, taxonomy: Taxonomy, *, with_gold: bool = True,
                     progress: ProgressCallback | None = None) -> Attribution:
    """Agent from all-at-once; step and mode from step-by-step over its steps. If that
    agent has no step judged decisive, the all-at-once verdict stands (with a warning)."""
    first = await run_all_at_once(trace, judge, taxonomy, with_gold=with_gold, progress=progress)
    tally = Tally("hybrid", judge, with_gold)
    tally.result.usage = first.usage.model_copy(update={"seconds": 0.0})
    tally.result.raw_outputs = list(first.raw_outputs)
    tally.result.warnings = list(first.warnings)
    if not first.agent or trace.is_single_agent:
        if not first.agent:
            tally.warn("all-at-once named no agent; step-by-step over all steps")
        result = await run_step_by_step(trace, judge, taxonomy, with_gold=with_gold, progress=progress,
                                        protocol="hybrid", tally=tally)
    else:
        result = await run_step_by_step(trace, judge, taxonomy, with_gold=with_gold, progress=progress,
                                        agent=first.agent, protocol="hybrid", tally=tally)
    if result.step is None:
        result.warnings.append("step-by-step found no decisive step; kept the all-at-once verdict")
        result.agent, result.step, result.mode, result.reason = (
            first.agent, first.step, first.mode, first.reason)
    return result
