"""binary search: halve the range of candidate steps until one remains (docs/architecture.md, 'Attribution protocols';
Who&When §4). At most ⌈log2 n⌉ range calls plus one call for the failure mode.

An unclear answer is resolved deterministically to the first half (the decisive error
is the *earliest* fix) and recorded as a warning.
"""

from __future__ import annotations

import math
from functools import partial

from whenpro_core.attribution.asking import ask
from whenpro_core.attribution.judge import Judge, Progress, ProgressCallback, Tally
from whenpro_core.attribution.judge_images import image_loader_for
from whenpro_core.attribution.prompts import HalfChoice, Message, ModeJudgement, binary_search, mode_question
from whenpro_core.attribution.step_by_step import judged_blocks
from whenpro_core.attribution.window import Build, fit_view, prompt_limit, request_tokens
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.taxonomy import Taxonomy
from whenpro_core.views.transcript import Transcript, render_transcript


def max_calls(n: int) -> int:
    """Upper bound on calls for ``n`` candidate steps: ⌈log2 n⌉ + 1."""
    return (math.ceil(math.log2(n)) if n > 1 else 0) + 1


def _halves(
    trace: Trace, taxonomy: Taxonomy, with_gold: bool, first: list[str], second: list[str], view: Transcript
) -> list[Message]:
    return binary_search(trace, view, taxonomy, with_gold, first, second)


def _view(transcript: Transcript, coords: list[str], limit: int | None, build: Build) -> Transcript:
    """The whole transcript, or (``limit`` given: it does not fit the window) only the
    steps of ``coords``, cut to fit."""
    return transcript if limit is None else fit_view(transcript, coords, limit, build)


async def run_binary_search(
    trace: Trace, judge: Judge, taxonomy: Taxonomy, *, with_gold: bool = True, progress: ProgressCallback | None = None
) -> Attribution:
    """Narrow the candidate steps by halves, then ask for the failure mode of the one
    left. Its speaker is the agent."""
    tally = Tally("binary-search", judge, with_gold)
    transcript = render_transcript(trace, image_loader=image_loader_for(judge), budget_tokens=judge.budget_tokens)
    for w in transcript.warnings:
        tally.warn(w)
    blocks = judged_blocks(trace, transcript)
    if not blocks:
        tally.warn("no agent step to attribute")
        return tally.finish(trace, agent=None, step=None, mode=None, reason=None)
    lo, hi = 0, len(blocks)
    calls = 0
    limit = prompt_limit(judge)
    whole = binary_search(trace, transcript, taxonomy, with_gold, [b.coord for b in blocks], [])
    if limit is not None and request_tokens(whole) > limit:
        tally.warn("the trace does not fit the model's context window: each call shows only the steps it asks about")
    else:
        limit = None  # the whole transcript fits: every call shows it (one cached prefix)
    while hi - lo > 1:
        mid = (lo + hi + 1) // 2
        first = [b.coord for b in blocks[lo:mid]]
        second = [b.coord for b in blocks[mid:hi]]
        calls += 1
        if progress:
            progress(
                Progress(
                    "binary-search",
                    calls,
                    tuple(first + second),
                    f"steps {first[0]}–{second[-1]}: first or second half?",
                )
            )
        view = _view(transcript, first + second, limit, partial(_halves, trace, taxonomy, with_gold, first, second))
        answer, _ = await ask(
            judge, binary_search(trace, view, taxonomy, with_gold, first, second), HalfChoice, taxonomy, tally
        )
        if answer.half == "second":
            lo = mid
        else:
            if answer.half is None:
                tally.warn(f"unclear half for steps {first[0]}–{second[-1]}; took the first half")
            hi = mid
    block = blocks[lo]
    if progress:
        progress(Progress("binary-search", calls + 1, (block.coord,), f"failure mode of step {block.coord}"))
    view = _view(transcript, [block.coord], limit, lambda t: mode_question(trace, t, taxonomy, with_gold, block))
    answer, _ = await ask(judge, mode_question(trace, view, taxonomy, with_gold, block), ModeJudgement, taxonomy, tally)
    return tally.finish(trace, agent=block.agent, step=block.coord, mode=answer.mode, reason=answer.reason)
