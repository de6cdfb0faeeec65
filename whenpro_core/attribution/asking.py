"""Ask a judge and read the answer: structured output when the backend returned one,
the lenient four-line parser otherwise (docs/architecture.md, 'Attribution protocols'). A parse failure is a warning."""

from __future__ import annotations

from pydantic import BaseModel

from whenpro_core.attribution.judge import CallSettings, Judge, Tally, from_parsed
from whenpro_core.attribution.parse import ParsedAnswer, is_readable, parse_answer
from whenpro_core.attribution.prompts import Answer, HalfChoice, Message, ModeJudgement, StepJudgement, Verdict
from whenpro_core.trace.coords import normalize_coord
from whenpro_core.trace.taxonomy import Taxonomy

_NEEDS = {
    Verdict: ("Agent Name", "Step Number", "Error Mode", "Reason"),
    StepJudgement: ("Decisive",),
    HalfChoice: ("Half",),
    ModeJudgement: ("Error Mode", "Reason"),
}


def _answered(obj: BaseModel, question: type[BaseModel]) -> bool:
    """Does the structured ``obj`` hold what ``question`` asks for (a verdict's agent or
    step, a step judgement's yes/no, a half, a failure mode)?"""
    if isinstance(obj, question):
        return True
    if not isinstance(obj, Answer):
        return False
    if question is Verdict:
        return bool(obj.agent_name.strip() or obj.step_number.strip())
    if question is StepJudgement:
        return obj.decisive is not None
    if question is HalfChoice:
        return obj.half in ("first", "second")
    return bool(obj.error_mode.strip())


def _from_structured(obj: BaseModel, taxonomy: Taxonomy, question: type[BaseModel]) -> ParsedAnswer:
    """The fields ``question`` asks for, read from a structured answer (:class:`Answer`
    or the question's own class), failure mode and reason always."""
    out = ParsedAnswer()
    if question is Verdict:
        agent, step = getattr(obj, "agent_name", "").strip(), getattr(obj, "step_number", "").strip()
        out.agent = agent or None
        out.step = normalize_coord(step) if step else None
        out.step_text = step or None
    elif question is StepJudgement:
        out.decisive = getattr(obj, "decisive", None)
    elif question is HalfChoice:
        out.half = getattr(obj, "half", "") or None
    raw_mode = getattr(obj, "error_mode", "") or ""
    out.mode = taxonomy.find_code(raw_mode)
    if raw_mode and not out.mode and raw_mode.strip().lower() not in ("none", "n/a", ""):
        out.warnings.append(f"unrecognised error mode: {raw_mode[:60]!r}")
    out.reason = (getattr(obj, "reason", "") or "").strip() or None
    return out


async def ask(
    judge: Judge,
    messages: list[Message],
    schema: type[BaseModel],
    taxonomy: Taxonomy,
    tally: Tally,
    *,
    structured: bool = True,
    call: CallSettings | None = None,
) -> tuple[ParsedAnswer, str]:
    """One call asking for what ``schema`` names (:class:`Verdict`, :class:`StepJudgement`,
    :class:`HalfChoice` or :class:`ModeJudgement`): returns the parsed answer and the raw
    text. Structured output is always requested as :class:`Answer` (one schema for every
    question keeps the provider's cached prefix across a protocol's calls). Usage, raw output and
    warnings go to ``tally``. An answer whose verdict cannot be read is not kept in the
    response cache (the next run asks again). ``structured=False`` asks for free text
    (no forced schema; ``schema`` still says which fields to read); ``call`` fixes the
    request's temperature and max tokens."""
    need = _NEEDS[schema]

    def readable(text: str, parsed: BaseModel | None) -> bool:
        return (parsed is not None and _answered(parsed, schema)) or is_readable(text, taxonomy, need)

    reply = await judge.ask(messages, Answer if structured else None, readable, call)
    tally.record(reply)
    if reply.parsed is not None and _answered(reply.parsed, schema):
        return from_parsed(_from_structured(reply.parsed, taxonomy, schema), tally), reply.text
    return from_parsed(parse_answer(reply.text, taxonomy, need=need), tally), reply.text
