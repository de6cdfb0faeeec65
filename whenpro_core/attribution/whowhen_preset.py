"""``--preset whowhen``: the original Who&When requests (``Automated_FA/Lib/utils.py`` of
the Who&When repository) for its three protocols, rebuilt from their rules; the
instructions are whenpro's own words, every rule and format matches.

Common rules: every request is a system message and one user message, at most 1,024
output tokens (no temperature is sent: the configured one applies), free text (no
schema). The speaker of a history entry is its ``name`` (Algorithm-Generated) or its
``role`` (Hand-Crafted, decorations such as ``Orchestrator (thought)`` kept); an entry
without one is ``Unknown Agent``. Steps are 0-based ``history`` indexes. The gold answer
is shown (``The answer to the problem is: …``) unless ``--no-gold``; no error mode is
asked for.

* **all-at-once**: the transcript is unnumbered, one ``SPEAKER: CONTENT`` line per
  entry joined by newlines; the answer is ``Agent Name:``, ``Step Number:`` and
  ``Reason for Mistake:`` lines, read as the original ``evaluate.py`` reads them: the
  first ``Agent Name:`` word and the first ``Step Number:`` digits, both or nothing
  (:func:`~whenpro_core.attribution.harness_parse.read_whowhen`).
* **step-by-step**: every entry is asked about in order, whoever spoke (humans and
  terminals too), each time in a fresh request holding the history so far as
  ``Step I - SPEAKER: CONTENT`` lines; the answer is ``1. Yes/No.`` then ``2. Reason:``.
  Original tie-breaking: the answer counts as yes only when it starts with ``1. yes``
  (case-insensitive), as no when it starts with ``1. no``; anything else is read as no
  (a warning) and the next step is asked. No yes: an empty verdict.
* **binary-search**: the range ``[start, end]`` (the whole history first) is shown
  unnumbered; mid = start + (end - start) // 2; the judge answers ``upper half``
  (``start..mid``) or ``lower half`` (``mid+1..end``). An answer containing ``upper
  half`` goes up even if it also says ``lower half``; an answer with neither picks a
  half at random (seeded by the trace id so a rerun is the same; a warning). One step
  left: its speaker and index are the verdict.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from pydantic import BaseModel

from whenpro_core.attribution.harness_parse import PARSER_WHOWHEN, read_whowhen
from whenpro_core.attribution.judge import CallSettings, Judge, Progress, ProgressCallback, Tally
from whenpro_core.attribution.prompts import Message
from whenpro_core.attribution.protocols import PRESET_CHOICES
from whenpro_core.errors import ConfigError
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.taxonomy import Taxonomy

#: The preset's protocols: whenpro's protocol name -> the preset's protocol name.
WHOWHEN_PROTOCOLS = PRESET_CHOICES["whowhen"]
#: Request settings of the original harness (``--max_tokens`` default; no temperature sent).
CALL = CallSettings(temperature=None, max_tokens=1024)
UNKNOWN = "Unknown Agent"

SYSTEM_ALL_AT_ONCE = "You analyse conversations carefully."
SYSTEM_STEP = "You judge each step of a conversation precisely."
SYSTEM_BINARY = "You locate errors in segments of a conversation."


def history(trace: Trace) -> list[tuple[str, str]]:
    """(speaker, content) per ``history`` entry of a Who&When trace, as the original
    harness reads them; ConfigError for a trace of another format."""
    if trace.source.format != "whowhen" or trace.extras.get("subset") not in ("Hand-Crafted", "Algorithm-Generated"):
        raise ConfigError(
            f"--preset whowhen needs a Who&When trace (this one is {trace.source.format})",
            expected="a file of Who&When's Algorithm-Generated or Hand-Crafted sets",
        )
    key = "role" if trace.extras.get("subset") == "Hand-Crafted" else "name"
    out = []
    for step in trace.steps:
        raw = step.raw if isinstance(step.raw, dict) else {}
        out.append((str(raw.get(key, UNKNOWN)), str(raw.get("content", ""))))
    return out


def _header(trace: Trace, with_gold: bool) -> str:
    gold = f"The answer to the problem is: {trace.task.answer or ''}\n" if with_gold else ""
    return f"The problem is: {trace.task.query}\n{gold}"


def _lines(entries: list[tuple[str, str]]) -> str:
    return "\n".join(f"{speaker}: {content}" for speaker, content in entries)


def all_at_once_request(trace: Trace, with_gold: bool) -> list[Message]:
    """The all-at-once request (module doc)."""
    text = (
        "Several agents talked with each other to solve a real-world problem, and the solution they reached "
        "is wrong. "
        + _header(trace, with_gold)
        + "Find the agent that made the mistake, the step where it happened, and why.\n"
        "The conversation:\n\n" + _lines(history(trace)) + "\n\n"
        "From this conversation, give:\n"
        "1. The name of the agent whose mistake is most directly responsible for the wrong solution. If no agent "
        "clearly erred, still choose one. Write the agent's name only.\n"
        "2. The step where that agent first made the mistake. Every message above is one step, counted from 0 "
        "in the order shown: the first message is step 0, the second step 1, and so on.\n"
        "3. Your reason.\n"
        "Answer in this format: Agent Name: (your prediction)\n Step Number: (your prediction)\n"
        " Reason for Mistake: \n"
    )
    return [Message.text("system", SYSTEM_ALL_AT_ONCE), Message.text("user", text)]


def step_request(trace: Trace, entries: list[tuple[str, str]], idx: int, with_gold: bool) -> list[Message]:
    """The step-by-step request about step ``idx`` (the history up to it, numbered)."""
    shown = "".join(f"Step {i} - {speaker}: {content}\n" for i, (speaker, content) in enumerate(entries[: idx + 1]))
    speaker = entries[idx][0]
    text = (
        "You check, one step at a time, a conversation in which several agents try to solve a real-world "
        "problem. " + _header(trace, with_gold) + f"The conversation so far:\n{shown}\n"
        f"The newest step ({idx}) was by '{speaker}'.\n"
        f"Does this newest step (Step {idx}) hold an error that could derail the solution or lead to a wrong "
        "answer? Answer 'Yes' or 'No' and explain why. Do not be overly strict: count only errors that clearly "
        "derail the work. Answer ONLY in this format: 1. Yes/No.\n2. Reason: [your explanation]"
    )
    return [Message.text("system", SYSTEM_STEP), Message.text("user", text)]


def halves(start: int, end: int) -> tuple[int, int, int, int]:
    """(start, mid, mid + 1, end): the upper and lower halves of ``[start, end]``."""
    mid = start + (end - start) // 2
    return start, mid, mid + 1, end


def binary_request(
    trace: Trace, entries: list[tuple[str, str]], start: int, end: int, with_gold: bool
) -> list[Message]:
    """The binary-search request about the range ``[start, end]`` (unnumbered segment)."""
    _, mid, _, _ = halves(start, end)
    text = (
        "Below is a segment of a conversation in which several agents work together on a user's problem.\n"
        "Find where the most critical mistake of this segment lies: which half holds the one step whose error "
        "makes the agents fail the problem.\n"
        + _header(trace, with_gold)
        + f"The segment, from step {start} to step {end}:\n\n{_lines(entries[start : end + 1])}\n\n"
        f"Is the most critical error more likely in the upper half (from step {start} to step {mid}) or in "
        f"the lower half (from step {mid + 1} to step {end}) of this segment?\n"
        "Reply ONLY 'upper half' or 'lower half'. Judge by the mistake that directly causes the failure; if no "
        "single error stands out, pick the step you hold most responsible and answer for its half."
    )
    return [Message.text("system", SYSTEM_BINARY), Message.text("user", text)]


# ---------------------------------------------------------------- reading answers


def yes_no(text: str) -> bool | None:
    """The original reading: yes when the answer starts with ``1. yes``, no when with
    ``1. no`` (case-insensitive, surrounding blanks ignored), else None."""
    low = text.lower().strip()
    return True if low.startswith("1. yes") else False if low.startswith("1. no") else None


def half(text: str) -> str | None:
    """``upper`` when the answer says "upper half" anywhere, else ``lower`` when it says
    "lower half", else None (the original checks "upper half" first)."""
    low = text.lower()
    return "upper" if "upper half" in low else "lower" if "lower half" in low else None


_REASON = re.compile(r"reason(?: for mistake)?\s*:\s*(.*)", re.IGNORECASE | re.DOTALL)


def reason_of(text: str) -> str | None:
    """The text after the last ``Reason:`` / ``Reason for Mistake:`` label."""
    found = _REASON.findall(text)
    return found[-1].strip() or None if found else None


async def _ask(
    judge: Judge, messages: list[Message], tally: Tally, readable: Callable[[str, BaseModel | None], bool]
) -> str:
    reply = await judge.ask(messages, None, readable, CALL)
    tally.record(reply)
    return reply.text


# ---------------------------------------------------------------- the protocols


async def run_all_at_once(
    trace: Trace, judge: Judge, taxonomy: Taxonomy, *, with_gold: bool = True, progress: ProgressCallback | None = None
) -> Attribution:
    """One call with the whole unnumbered conversation."""
    name = WHOWHEN_PROTOCOLS["all-at-once"]
    tally = Tally(name, judge, with_gold, parser=PARSER_WHOWHEN)
    messages = all_at_once_request(trace, with_gold)
    if progress:
        progress(Progress(name, 1, (), "reading the whole conversation"))
    text = await _ask(judge, messages, tally, lambda t, _p: read_whowhen(t).agent is not None)
    reading = read_whowhen(text)
    for w in reading.warnings:
        tally.warn(w)
    return tally.finish(
        trace, agent=reading.agent, step=reading.step, mode=None, reason=reason_of(text), step_text=reading.step
    )


async def run_step_by_step(
    trace: Trace, judge: Judge, taxonomy: Taxonomy, *, with_gold: bool = True, progress: ProgressCallback | None = None
) -> Attribution:
    """Ask about every step in order; the first yes is the verdict (module doc)."""
    name = WHOWHEN_PROTOCOLS["step-by-step"]
    tally = Tally(name, judge, with_gold, parser=PARSER_WHOWHEN)
    entries = history(trace)
    for idx, (speaker, _) in enumerate(entries):
        if progress:
            progress(Progress(name, idx + 1, (str(idx),), f"asking about step {idx}"))
        text = await _ask(
            judge, step_request(trace, entries, idx, with_gold), tally, lambda t, _p: yes_no(t) is not None
        )
        said = yes_no(text)
        if said:
            return tally.finish(trace, agent=speaker, step=str(idx), mode=None, reason=reason_of(text))
        if said is None:
            tally.warn(f"step {idx}: the answer does not start with '1. Yes' or '1. No'; read as no")
    tally.warn("no step was judged to hold an error")
    return tally.finish(trace, agent=None, step=None, mode=None, reason=None)


async def run_binary_search(
    trace: Trace, judge: Judge, taxonomy: Taxonomy, *, with_gold: bool = True, progress: ProgressCallback | None = None
) -> Attribution:
    """Halve the range until one step is left (module doc)."""
    name = WHOWHEN_PROTOCOLS["binary-search"]
    tally = Tally(name, judge, with_gold, parser=PARSER_WHOWHEN)
    entries = history(trace)
    if not entries:
        tally.warn("the trace has no steps")
        return tally.finish(trace, agent=None, step=None, mode=None, reason=None)
    coin = random.Random(trace.id)  # the original's random tie-break, repeatable per trace
    start, end, calls = 0, len(entries) - 1, 0
    while start < end:
        calls += 1
        if progress:
            progress(Progress(name, calls, (str(start), str(end)), f"steps {start}-{end}"))
        text = await _ask(
            judge, binary_request(trace, entries, start, end, with_gold), tally, lambda t, _p: half(t) is not None
        )
        chosen = half(text)
        if chosen is None:
            chosen = coin.choice(("upper", "lower"))
            tally.warn(f"steps {start}-{end}: the answer names neither half; chose the {chosen} half at random")
        _, mid, _, _ = halves(start, end)
        start, end = (start, mid) if chosen == "upper" else (min(mid + 1, end), end)
    return tally.finish(trace, agent=entries[start][0], step=str(start), mode=None, reason=None)


#: The run function of each preset protocol name.
RUNNERS = {
    WHOWHEN_PROTOCOLS["all-at-once"]: run_all_at_once,
    WHOWHEN_PROTOCOLS["step-by-step"]: run_step_by_step,
    WHOWHEN_PROTOCOLS["binary-search"]: run_binary_search,
}
