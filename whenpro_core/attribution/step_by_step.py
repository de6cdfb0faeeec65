"""step-by-step (incremental): show steps one at a time and ask whether the newest
holds the decisive error; stop at the first yes (docs/architecture.md, 'Attribution protocols'; Who&When §4).

The conversation only grows: each call's messages are the previous call's messages
plus the judge's answer and one new user turn, so a provider's prefix cache serves
everything but the newest step.
"""

from __future__ import annotations

from whenpro_core.attribution.asking import ask
from whenpro_core.attribution.judge import Judge, Progress, ProgressCallback, Tally
from whenpro_core.attribution.judge_images import image_loader_for
from whenpro_core.attribution.prompts import Message, StepJudgement, step_by_step_opening, step_turn
from whenpro_core.attribution.window import capped, largest_cap, prompt_limit, request_tokens, slide
from whenpro_core.trace.evidence import is_candidate
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.taxonomy import Taxonomy
from whenpro_core.views.transcript import StepBlock, Transcript, render_transcript

#: Steps a windowed conversation holds at least (with the opening) when its fields are cut.
STEPS_IN_WINDOW = 3


def judged_blocks(trace: Trace, transcript: Transcript, agent: str | None = None) -> list[StepBlock]:
    """Blocks a protocol asks about: those holding an agent's step (not the environment's
    output or a human turn), optionally only ``agent``'s."""
    out = []
    for block in transcript.blocks:
        steps = [trace.steps[i] for i in block.indexes]
        if not any(is_candidate(s) for s in steps):
            continue
        if (
            agent is not None
            and not any(s.agent.lower() == agent.lower() for s in steps)
            and block.agent.lower() != agent.lower()
        ):
            continue
        out.append(block)
    return out


def windowed_transcript(
    trace: Trace, transcript: Transcript, taxonomy: Taxonomy, with_gold: bool, limit: int
) -> Transcript:
    """``transcript`` with every field capped so that the opening and a few step turns
    fit ``limit`` tokens (the conversation then slides: :func:`~whenpro_core.attribution.window.slide`);
    itself when the whole conversation fits."""
    turns = [step_turn([b], b.coord) for b in transcript.blocks]
    if request_tokens(step_by_step_opening(trace, transcript, taxonomy, with_gold) + turns) <= limit:
        return transcript
    longest = max((len(t) for b in transcript.blocks for _, t in b.fields), default=0)
    longest = max([longest, *(len(t) for _, t in transcript.context)])

    def fits(cap: int) -> bool:
        view = capped(transcript, cap)
        some = [step_turn([b], b.coord) for b in view.blocks[:STEPS_IN_WINDOW]]
        return request_tokens(step_by_step_opening(trace, view, taxonomy, with_gold) + some) <= limit

    cap = largest_cap(fits, longest)
    view = capped(transcript, cap)
    view.warnings = [
        *transcript.warnings,
        f"steps cut to {cap:,} characters per field to fit the model's context window",
    ]
    return view


async def run_step_by_step(
    trace: Trace,
    judge: Judge,
    taxonomy: Taxonomy,
    *,
    with_gold: bool = True,
    progress: ProgressCallback | None = None,
    agent: str | None = None,
    protocol: str = "step-by-step",
    tally: Tally | None = None,
) -> Attribution:
    """Ask about each judged step in order; the first "yes" is the verdict. With
    ``agent``, only that agent's steps are asked about (the others are still shown).
    If no step is judged decisive the verdict is empty, with a warning."""
    tally = tally or Tally(protocol, judge, with_gold)
    transcript = render_transcript(trace, image_loader=image_loader_for(judge), budget_tokens=judge.budget_tokens)
    limit = prompt_limit(judge)
    if limit is not None:
        transcript = windowed_transcript(trace, transcript, taxonomy, with_gold, limit)
    for w in transcript.warnings:
        tally.warn(w)
    asked = {id(b) for b in judged_blocks(trace, transcript, agent)}
    messages: list[Message] = step_by_step_opening(trace, transcript, taxonomy, with_gold)
    pending: list[StepBlock] = []
    calls = 0
    slid = False
    for block in transcript.blocks:
        pending.append(block)
        if id(block) not in asked:
            continue
        calls += 1
        if progress:
            progress(Progress(protocol, calls, (block.coord,), f"asking about step {block.coord}"))
        turn = step_turn(pending, block.coord)
        if len(messages) == 2 and messages[-1].role == "user":
            messages[-1] = Message("user", messages[-1].parts + turn.parts, cache_breakpoint=True)
        else:
            messages.append(turn)
        pending = []
        sent, dropped = slide(messages, limit) if limit is not None else (messages, 0)
        if dropped and not slid:
            slid = True
            tally.warn("the conversation outgrew the model's context window: older steps left it as it slid")
        answer, raw = await ask(judge, sent, StepJudgement, taxonomy, tally)
        if answer.decisive:
            step_agent = block.agent if agent is None else agent
            return tally.finish(trace, agent=step_agent, step=block.coord, mode=answer.mode, reason=answer.reason)
        if answer.decisive is None:
            tally.warn(f"step {block.coord}: answer was neither yes nor no; read as no")
        messages.append(Message.text("assistant", raw or "Decisive: No"))
    tally.warn("no step was judged decisive")
    return tally.finish(trace, agent=None, step=None, mode=None, reason=None)
