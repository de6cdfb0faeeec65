"""all-at-once: the whole transcript in one call (docs/architecture.md, 'Attribution protocols'; Who&When §4)."""

from __future__ import annotations

from whenpro_core.attribution.asking import ask
from whenpro_core.attribution.judge import Judge, Progress, ProgressCallback, Tally
from whenpro_core.attribution.judge_images import image_loader_for
from whenpro_core.attribution.parse import ParsedAnswer
from whenpro_core.attribution.prompts import Verdict, all_at_once
from whenpro_core.attribution.template import PromptTemplate, template_messages
from whenpro_core.attribution.window import Build, fit_whole, prompt_limit
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.taxonomy import Taxonomy
from whenpro_core.views.transcript import Transcript, render_transcript


async def ask_all_at_once(
    trace: Trace,
    transcript: Transcript,
    judge: Judge,
    taxonomy: Taxonomy,
    tally: Tally,
    *,
    with_gold: bool,
    template: PromptTemplate | None = None,
) -> ParsedAnswer:
    """The all-at-once call on an already rendered ``transcript``; usage and warnings go
    to ``tally``. A step coordinate that is not in the trace is kept but warned about.
    With ``template`` the request is the user's template (free-text answer). A judge with
    a known context window gets the transcript cut to fit it (WindowError when it cannot)."""
    if template is not None:
        view = _fitted(transcript, judge, lambda t: template_messages(template, trace, t, taxonomy, with_gold))
    else:
        view = _fitted(transcript, judge, lambda t: all_at_once(trace, t, taxonomy, with_gold))
    for w in view.warnings[len(transcript.warnings) :] if view is not transcript else []:
        tally.warn(w)
    transcript = view
    if template is not None:
        messages = template_messages(template, trace, transcript, taxonomy, with_gold)
        answer, _ = await ask(judge, messages, Verdict, taxonomy, tally, structured=False)
    else:
        answer, _ = await ask(judge, all_at_once(trace, transcript, taxonomy, with_gold), Verdict, taxonomy, tally)
    if answer.step is not None and transcript.block(answer.step) is None:
        tally.warn(f"answered step {answer.step}, which is not a step of this trace")
    return answer


def _fitted(transcript: Transcript, judge: Judge, build: Build) -> Transcript:
    """``transcript`` cut to fit the judge's window (WindowError when it cannot)."""
    return fit_whole(transcript, prompt_limit(judge), build, "all-at-once")


async def run_all_at_once(
    trace: Trace,
    judge: Judge,
    taxonomy: Taxonomy,
    *,
    with_gold: bool = True,
    progress: ProgressCallback | None = None,
    template: PromptTemplate | None = None,
) -> Attribution:
    """One call with the whole transcript; the answer names agent, step, mode and reason."""
    tally = Tally("all-at-once", judge, with_gold)
    transcript = render_transcript(trace, image_loader=image_loader_for(judge), budget_tokens=judge.budget_tokens)
    for w in transcript.warnings:
        tally.warn(w)
    if progress:
        progress(Progress("all-at-once", 1, tuple(transcript.coords()), "reading the whole transcript"))
    answer = await ask_all_at_once(trace, transcript, judge, taxonomy, tally, with_gold=with_gold, template=template)
    return tally.finish(
        trace,
        agent=answer.agent,
        step=answer.step,
        mode=answer.mode,
        reason=answer.reason,
        confidence=answer.confidence,
        step_text=answer.step_text,
    )
