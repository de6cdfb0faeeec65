"""``heuristic``: the no-LLM attribution protocol, whenpro's offline default (docs/architecture.md,
'Attribution protocols').

It reads signals from the trace itself (:mod:`whenpro_core.attribution.signals`): a
provably wrong calculation, where a wrong final value first appears, facts asserted with
no source, fabrication language, tool errors, loops and stalls reported by the system's
own ledger, premature termination, rubber-stamp verification, and a gold answer that was
seen and then lost. Each step's score is its strongest signal plus a small share of the
others. Following the definition of the decisive error (the *earliest* step whose
correction would fix the run), the verdict is the earliest step scoring within 80% of
the best. With no signal at all it falls back to the first acting agent step.

It is a baseline: honest about it in its reason and confidence, and measured against
the random baseline by ``benchmarks/heuristic_accuracy.py``.
"""

from __future__ import annotations

import math
import re
import time
from collections import defaultdict

from whenpro_core.attribution.signals import Context, Signal, collect
from whenpro_core.trace.evidence import answer_matches, candidate_steps, final_answer
from whenpro_core.trace.model import Attribution, Modality, Outcome, Step, Trace, Usage

#: A step within this share of the best score counts as tied; the earliest tied step wins.
TIE_SHARE = 0.8
#: Weight of a step's weaker signals added to its strongest one.
SUPPORT_WEIGHT = 0.25


#: The warning of a verdict on a run whose outcome is unknown (coding-agent sessions,
#: interchange files): it is attributed as if it failed, which it may not have.
UNKNOWN_OUTCOME_NOTE = (
    "the run's outcome is unknown (the file does not say whether it succeeded): "
    "it was treated as possibly failed, so the verdict may point at a run that worked"
)


def outcome_warnings(trace: Trace) -> list[str]:
    """The warnings every protocol adds for ``trace``'s outcome: :data:`UNKNOWN_OUTCOME_NOTE`
    when it is unknown and no ground truth says the run failed."""
    return [UNKNOWN_OUTCOME_NOTE] if trace.outcome == Outcome.unknown and trace.ground_truth is None else []


def build_context(trace: Trace, with_gold: bool) -> Context:
    """Gather what the detectors read. The run counts as failed when its outcome says so
    or is unknown, or when a gold answer is given and the final answer does not state it.
    Whether the trace carries a ground-truth label never matters: a verdict must not
    depend on the existence of the label it is scored against."""
    final, final_index = final_answer(trace)
    gold = trace.task.answer if with_gold and trace.task.answer else None
    failed = trace.outcome in (Outcome.failure, Outcome.unknown)
    if gold and final and trace.outcome != Outcome.success:
        failed = failed or not answer_matches(final, gold)
    return Context(
        trace=trace, final=final, final_index=final_index, gold=gold, failed=failed, candidates=candidate_steps(trace)
    )


def score_steps(signals: list[Signal]) -> dict[int, tuple[float, list[Signal]]]:
    """Per step: (score, its signals strongest first)."""
    by_step: dict[int, list[Signal]] = defaultdict(list)
    for sig in signals:
        by_step[sig.index].append(sig)
    scored = {}
    for index, sigs in by_step.items():
        sigs.sort(key=lambda s: -s.strength)
        score = sigs[0].strength + SUPPORT_WEIGHT * sum(s.strength for s in sigs[1:])
        scored[index] = (min(score, 1.0), sigs)
    return scored


_VISUAL = re.compile(
    r"\b(image|picture|photo|chart|graph|figure|frame|screenshot|bars?|"
    r"visible|shown|depicted|looks like|appears? to be)\b",
    re.IGNORECASE,
)


def refine_mode(trace: Trace, step: Step, mode: str) -> str:
    """On image and video tasks, a wrong claim made while describing what is seen is a
    perception error (P.1, visual misidentification) rather than R.1/R.2."""
    if trace.modality != Modality.text and mode in ("R.1", "R.2") and _VISUAL.search(step.content or ""):
        return "P.1"
    return mode


#: Calibration of the confidence (a logistic map of the evidence, fitted once on the shared
#: labelled traces of every subset together, both with and without gold, and rounded; see
#: ``benchmarks/heuristic_accuracy.py`` for its reliability table): how often the verdict
#: is right falls with the number of steps it could have named, rises when signals of two
#: or more kinds agree on the step, and is lower when the leading signal is indirect (a
#: loop, a stall, an approval, wording) rather than a located value or a failed action.
CAL_INTERCEPT = 0.4
CAL_PER_LOG_CANDIDATE = -0.7
CAL_AGREEMENT = 0.45
CAL_INDIRECT = -0.2
#: Detectors whose evidence only points near the error (they fire on symptoms).
INDIRECT_SIGNALS = frozenset({"no-progress", "repeated-action", "rubber-stamp", "gave-up", "fabrication-language"})
#: With no signal at all the verdict is a prior, not evidence: its confidence is at most this.
PRIOR_CAP = 0.1


def calibrated_confidence(candidates: int, sigs: list[Signal]) -> float:
    """Chance (0..1) that a verdict backed by ``sigs`` (strongest first; empty for the
    first-step prior) names the right step among ``candidates`` steps."""
    kinds = {s.name for s in sigs}
    x = (
        CAL_INTERCEPT
        + CAL_PER_LOG_CANDIDATE * math.log(max(candidates, 1))
        + CAL_AGREEMENT * (len(kinds) > 1)
        + CAL_INDIRECT * bool(sigs and sigs[0].name in INDIRECT_SIGNALS)
    )
    p = 1 / (1 + math.exp(-x))
    return round(p if sigs else min(PRIOR_CAP, p), 2)


#: Signals of one kind named in a reason; more are counted (a loop repeats hundreds of times).
SIGNALS_NAMED = 3


def _reason_parts(sigs: list[Signal]) -> list[str]:
    """``reason [name]`` for each signal, at most :data:`SIGNALS_NAMED` of each kind, then
    ``… and N more [name]``."""
    parts: list[str] = []
    seen: dict[str, int] = {}
    for s in sigs:
        seen[s.name] = seen.get(s.name, 0) + 1
        if seen[s.name] <= SIGNALS_NAMED:
            parts.append(f"{s.reason} [{s.name}]")
    parts += [f"… and {n - SIGNALS_NAMED} more [{name}]" for name, n in seen.items() if n > SIGNALS_NAMED]
    return parts


def attribute_heuristic(
    trace: Trace, *, with_gold: bool = True, signals_out: list[Signal] | None = None
) -> Attribution:
    """Attribute the decisive error of ``trace`` offline.

    Returns an :class:`Attribution` with agent, step coordinate, failure mode, a reason
    citing the signals used, a confidence in 0..1, and warnings (e.g. when no signal
    fired). Never raises on odd content; a trace with no agent steps gets an empty
    prediction and a warning. ``signals_out``, when given, receives every signal seen
    (live judging reads them).
    """
    started = time.perf_counter()
    ctx = build_context(trace, with_gold)
    result = Attribution(protocol="heuristic", model="heuristic", with_gold=with_gold, warnings=outcome_warnings(trace))
    if not ctx.candidates:
        result.warnings.append("no agent step to attribute")
        result.usage = Usage(seconds=time.perf_counter() - started)
        return result
    signals = collect(ctx)
    if signals_out is not None:
        signals_out.extend(signals)
    scored = score_steps(signals)
    if scored:
        best = max(score for score, _ in scored.values())
        index = min(i for i, (score, _) in scored.items() if score >= TIE_SHARE * best)
        score, sigs = scored[index]
        step = trace.steps[index]
        mode = refine_mode(trace, step, sigs[0].mode)
        reason = f"Step {step.coord} ({step.agent}): " + "; ".join(_reason_parts(sigs))
        confidence = calibrated_confidence(len(ctx.candidates), sigs)
    else:
        step = ctx.candidates[0]
        mode = "PL.1" if step.kind == "plan" else "R.2"
        reason = (
            f"Step {step.coord} ({step.agent}): no signal found in the trace; "
            "falling back to the first acting agent step [first-step prior]"
        )
        confidence = calibrated_confidence(len(ctx.candidates), [])
        result.warnings.append("no heuristic signal fired; verdict is the first-step prior")
    result.agent = "agent" if trace.is_single_agent else step.agent
    result.step = step.coord
    result.mode = mode
    result.reason = reason + ". (Offline heuristic baseline; an LLM protocol is more reliable.)"
    result.confidence = confidence
    result.usage = Usage(seconds=time.perf_counter() - started)
    return result
