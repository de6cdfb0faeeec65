"""hybrid: all-at-once picks the agent, then that agent's steps are asked about one at a
time, in order, until one is judged decisive (docs/architecture.md, 'Attribution protocols'; Who&When §4). Calls: 1
+ up to
that agent's step count.

Every call shares one prefix (instructions, task, the whole transcript) ending in a cache
breakpoint; only the question after it changes, so a provider's prompt cache serves
nearly all prompt tokens of the calls after the first. The step questions see the whole
transcript, which the all-at-once call has already shown.

With a known context window (:mod:`whenpro_core.attribution.window`) hybrid fits itself:
the all-at-once call cuts long fields as all-at-once does, and a trace it cannot fit is
not an error here: hybrid says so and asks about every step. A step question that does
not fit with the whole transcript shows the steps up to the one it asks about (as many
of the latest as fit, cut), so no request is longer than the window.
"""

from __future__ import annotations

from whenpro_core.attribution.all_at_once import ask_all_at_once
from whenpro_core.attribution.asking import ask
from whenpro_core.attribution.judge import Judge, Progress, ProgressCallback, Tally
from whenpro_core.attribution.judge_images import image_loader_for
from whenpro_core.attribution.parse import ParsedAnswer
from whenpro_core.attribution.prompts import Message, StepJudgement, step_question
from whenpro_core.attribution.step_by_step import judged_blocks
from whenpro_core.attribution.window import WindowError, fit_trailing, prompt_limit, request_tokens
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.taxonomy import Taxonomy
from whenpro_core.views.transcript import StepBlock, Transcript, render_transcript


async def _agent_pick(
    trace: Trace, transcript: Transcript, judge: Judge, taxonomy: Taxonomy, tally: Tally, with_gold: bool
) -> ParsedAnswer | None:
    """The all-at-once answer, or ``None`` and a warning when the trace cannot fit the window."""
    try:
        return await ask_all_at_once(trace, transcript, judge, taxonomy, tally, with_gold=with_gold)
    except WindowError:
        tally.warn("the trace does not fit the model's context window for the agent pick; asked about every step")
        return None


def _question(
    trace: Trace,
    transcript: Transcript,
    taxonomy: Taxonomy,
    with_gold: bool,
    block: StepBlock,
    n: int,
    limit: int | None,
) -> tuple[list[Message], bool]:
    """Step question ``n`` about ``block`` with the whole transcript, or (it does not fit
    ``limit`` tokens) with the steps up to ``block`` that fit; and whether it was fitted."""
    messages = step_question(trace, transcript, taxonomy, with_gold, block, n)
    if limit is None or request_tokens(messages) <= limit:
        return messages, False
    coords = transcript.coords()
    upto = coords[: coords.index(block.coord) + 1]
    view = fit_trailing(transcript, upto, limit, lambda t: step_question(trace, t, taxonomy, with_gold, block, n))
    return step_question(trace, view, taxonomy, with_gold, block, n), True


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
    picked = await _agent_pick(trace, transcript, judge, taxonomy, tally, with_gold)
    first = picked or ParsedAnswer()
    agent = None if trace.is_single_agent else first.agent
    if picked is not None and not first.agent:
        tally.warn("all-at-once named no agent; asked about every step")
    blocks = judged_blocks(trace, transcript, agent)
    limit, fitted = prompt_limit(judge), False
    for n, block in enumerate(blocks):
        if progress:
            progress(Progress("hybrid", n + 2, (block.coord,), f"asking about step {block.coord}"))
        question, cut = _question(trace, transcript, taxonomy, with_gold, block, n, limit)
        if cut and not fitted:
            fitted = True
            tally.warn("the step questions show only the steps up to the one asked about that fit the context window")
        answer, _ = await ask(judge, question, StepJudgement, taxonomy, tally)
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
    tally.warn("no step was judged decisive" + ("; kept the all-at-once verdict" if picked else ""))
    return tally.finish(
        trace,
        agent=first.agent,
        step=first.step,
        mode=first.mode,
        reason=first.reason,
        confidence=first.confidence,
        step_text=first.step_text,
    )
