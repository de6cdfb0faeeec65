"""Ask a judge and read the answer: structured output when the backend returned one,
the lenient four-line parser otherwise (docs/architecture.md, 'Attribution protocols'). A parse failure is a warning."""

from __future__ import annotations

from pydantic import BaseModel

from whenpro_core.attribution.judge import CallSettings, Judge, Tally, from_parsed
from whenpro_core.attribution.parse import ParsedAnswer, is_readable, parse_answer
from whenpro_core.attribution.prompts import HalfChoice, Message, ModeJudgement, StepJudgement, Verdict
from whenpro_core.trace.coords import normalize_coord
from whenpro_core.trace.taxonomy import Taxonomy

_NEEDS = {
    Verdict: ("Agent Name", "Step Number", "Error Mode", "Reason"),
    StepJudgement: ("Decisive",),
    HalfChoice: ("Half",),
    ModeJudgement: ("Error Mode", "Reason"),
}


def _from_structured(obj: BaseModel, taxonomy: Taxonomy) -> ParsedAnswer:
    out = ParsedAnswer()
    if isinstance(obj, Verdict):
        out.agent = obj.agent_name.strip() or None
        out.step = normalize_coord(obj.step_number) if obj.step_number.strip() else None
        out.step_text = obj.step_number.strip() or None
    if isinstance(obj, StepJudgement):
        out.decisive = obj.decisive
    if isinstance(obj, HalfChoice):
        out.half = obj.half
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
    """One call: returns the parsed answer and the raw text. Usage, raw output and
    warnings go to ``tally``. An answer whose verdict cannot be read is not kept in the
    response cache (the next run asks again). ``structured=False`` asks for free text
    (no forced schema; ``schema`` still says which fields to read); ``call`` fixes the
    request's temperature and max tokens."""
    need = _NEEDS[schema]

    def readable(text: str, parsed: BaseModel | None) -> bool:
        return isinstance(parsed, schema) or is_readable(text, taxonomy, need)

    reply = await judge.ask(messages, schema if structured else None, readable, call)
    tally.record(reply)
    if isinstance(reply.parsed, schema):
        return from_parsed(_from_structured(reply.parsed, taxonomy), tally), reply.text
    return from_parsed(parse_answer(reply.text, taxonomy, need=need), tally), reply.text
