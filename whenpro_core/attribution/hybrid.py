"""hybrid: all-at-once picks the agent, then that agent's steps are asked about one at a
time, in order, until one is judged decisive (docs/architecture.md, 'Attribution protocols'; Who&When §4). Calls: 1
+ up to
that agent's step count.

Every call shares one prefix (instructions, task, the whole transcript) ending in a cache
breakpoint; only the question after it changes, so a provider's prompt cache serves
nearly all prompt tokens of the calls after the first. The step questions see the whole
transcript, which the all-at-once call has already shown.
"""

from __future__ import annotations

from whenpro_core.attribution.all_at_once import ask_all_at_once
from whenpro_core.attribution.asking import ask
from whenpro_core.attribution.judge import Judge, Progress, ProgressCallback, Tally
from whenpro_core.attribution.judge_images import image_loader_for
from whenpro_core.attribution.prompts import StepJudgement, step_question
from whenpro_core.attribution.step_by_step import judged_blocks
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.taxonomy import Taxonomy
from whenpro_core.views.transcript import render_transcript


async def run_hybrid(
    trace: Trace, judge: Judge, taxonomy: Taxonomy, *, with_gold: bool = True, progress: ProgressCallback | None = None
) -> Attribution:
    """Agent from all-at-once; step and mode from the first of its steps judged decisive.
    If none is, the all-at-once verdict stands (with a warning)."""
    tally = Tally("hybrid", judge, with_gold)
    transcript = render_transcript(trace, image_loader=image_loader_for(judge), budget_tokens=judge.budget_tokens)
    for w in transcript.warnings:
        tally.warn(w)
    if progress:
        progress(Progress("hybrid", 1, tuple(transcript.coords()), "reading the whole transcript"))
    first = await ask_all_at_once(trace, transcript, judge, taxonomy, tally, with_gold=with_gold)
    agent = None if trace.is_single_agent else first.agent
    if not first.agent:
        tally.warn("all-at-once named no agent; asked about every step")
    blocks = judged_blocks(trace, transcript, agent)
    for n, block in enumerate(blocks):
        if progress:
            progress(Progress("hybrid", n + 2, (block.coord,), f"asking about step {block.coord}"))
        answer, _ = await ask(
            judge, step_question(trace, transcript, taxonomy, with_gold, block, n), StepJudgement, taxonomy, tally
        )
        if answer.decisive:
            return tally.finish(
                trace,
                agent=block.agent if agent is None else agent,
                step=block.coord,
                mode=answer.mode or first.mode,
                reason=answer.reason,
            )
        if answer.decisive is None:
            tally.warn(f"step {block.coord}: answer was neither yes nor no; read as no")
    tally.warn("no step was judged decisive; kept the all-at-once verdict")
    return tally.finish(
        trace,
        agent=first.agent,
        step=first.step,
        mode=first.mode,
        reason=first.reason,
        confidence=first.confidence,
        step_text=first.step_text,
    )
