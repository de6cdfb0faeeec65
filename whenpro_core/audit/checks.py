"""Consistency checks that read one step of a trace's judge view (issue 28): does the step
agree with itself and with what its run did before it?

A mutation that edits only part of a step leaves it disagreeing with itself, which no
honest run does and any reader can see without understanding the error:

* :func:`call_mismatch` — the step's text and its recorded tool call disagree: the call's
  arguments hold numbers or words the text never states (the edit reached the call only,
  or the text only), or it runs code that is a changed copy of the code written before;
* :func:`filled_mismatch` — an expression written twice, symbolically and filled in
  (``subtotal = erasers + notebooks = 14 + 45``), where a filled-in number is not the
  value the run computed for its symbol (the edit reached one side only);
* :func:`unchecked_verdict` — a verdict (``Approved.``, ``All tests pass``) with no check
  by its agent since the last word of another agent (no tool call, no tool result).

Each returns one value per candidate step (0.0 where the check has nothing to say). Pure
functions of an :class:`~whenpro_core.audit.view.AuditTrace`: they read the step's
content, calls and observation, never a label or an injection marker.
"""

from __future__ import annotations

import difflib
import json
import re

from whenpro_core.audit.view import AuditStep, AuditTrace

_NUM = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\w)")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_TOKEN = re.compile(r"-?\d+(?:\.\d+)?|[A-Za-z_][A-Za-z_0-9]*|[-+*/%^()]")
#: ``name = A = B`` where both sides are arithmetic (``A`` may hold symbols, ``B`` numbers).
_CHAIN = re.compile(r"([A-Za-z_][\w ]{0,40}?)\s*=\s*([^=\n.;:]+?)\s*=\s*([-\d.+*/%() ]+\d)")
#: ``name = 12.5``: a value the run states for a symbol (not the last symbol of an
#: expression, ``a * name = 12.5``, whose value is the expression's).
_STATED = re.compile(r"(?<![-+*/%(]\s)(?<![-+*/%(])\b([A-Za-z_]\w*)\s*=\s*(\d+(?:\.\d+)?)(?![\d.]?\d)(?!\s*[-+*/%(])")
_BLOCK = re.compile(r"```[\w+-]*\n(.*?)```", re.S)
#: Similarity (difflib ratio, 0..1) above which a call's code argument is a near copy of a written block.
NEAR_COPY = 0.8
_ASSIGN = re.compile(r"\b([A-Za-z_]\w*)\s*=")
_VERDICT = re.compile(
    r"\b(approved?|lgtm|looks good|(?:all|every) (?:\w+ )?(?:tests?|checks?|examples?|cases?) pass(?:es|ed)?"
    r"|tests? pass(?:es|ed)?|verified|is correct|are correct|correct\. )",
    re.I,
)


def numbers(text: str) -> set[float]:
    """The numbers written in ``text`` (``7``, ``8.85``; no sign, none inside a word), as floats rounded to 6 places."""
    return {round(float(m), 6) for m in _NUM.findall(text)}


def _tokens(text: str) -> set[str]:
    """The numbers (as :func:`numbers` reads them) and words (lower case) of ``text``."""
    return {str(n) for n in numbers(text)} | {w.lower() for w in _IDENT.findall(text) if len(w) > 1}


def _squash(text: str) -> str:
    return "".join(text.split())


def _arguments(calls: str) -> list[str]:
    """The argument values of ``name({...})`` call lines, as text (the whole line when it
    does not parse)."""
    out = []
    for line in calls.splitlines():
        _name, paren, rest = line.partition("(")
        try:
            args = json.loads(rest[:-1]) if paren and rest.endswith(")") else None
        except ValueError:
            args = None
        if isinstance(args, dict):
            out += [v if isinstance(v, str) else json.dumps(v) for v in args.values()]
        else:
            out.append(line)
    return out


def _multiline(arg: str) -> bool:
    return arg.count("\n") >= 2


def _near_copy(arg: str, blocks: list[str]) -> bool:
    """True when ``arg`` is no block written so far but nearly one of them (a copy that
    an edit changed on one side only)."""
    if any(arg in b for b in blocks):
        return False
    return any(difflib.SequenceMatcher(None, arg, b, autojunk=False).ratio() >= NEAR_COPY for b in blocks)


def call_mismatch(t: AuditTrace) -> list[float]:
    """Per step: how far its tool calls disagree with what was written: the share of the
    numbers and words in the calls' one-line arguments that the step's text does not state
    (when both hold some), plus 1 for each multi-line argument (code, a document) that is a near copy
    (:data:`NEAR_COPY`), not an exact one, of a code block written up to this step; else 0."""
    out = []
    blocks: list[str] = []
    for s in t.steps:
        blocks += [_squash(b) for b in _BLOCK.findall(s.content)]
        args = _arguments(s.calls)
        in_call = _tokens("\n".join(a for a in args if not _multiline(a)))
        in_text = _tokens(s.content)
        share = len(in_call - in_text) / len(in_call) if in_call and in_text else 0.0
        out.append(share + sum(_near_copy(_squash(a), blocks) for a in args if _multiline(a)))
    return out


def _value(text: str) -> float | None:
    """A lone number (the tool's answer ``'45'``), else None."""
    found = _NUM.findall(text.strip())
    return round(float(found[0]), 6) if len(found) == 1 and text.strip() == found[0] else None


def _known_values(step: AuditStep, known: dict[str, float]) -> None:
    """Learn the values a step states (``erasers = 16``) or computes (``erasers = 8 * 2``
    with the tool's answer ``16``) into ``known``."""
    for name, value in _STATED.findall(step.content):
        known[name.lower()] = round(float(value), 6)
    result = _value(step.observation)
    assigned = _ASSIGN.findall(step.content)
    if result is not None and assigned:
        known[assigned[0].lower()] = result


def _chain_mismatches(content: str, known: dict[str, float]) -> int:
    """How many filled-in numbers of ``content``'s ``name = A = B`` chains disagree with
    the values ``known`` for the symbols of ``A`` at the same place."""
    bad = 0
    for _name, symbolic, filled in _CHAIN.findall(content):
        left, right = _TOKEN.findall(symbolic), _TOKEN.findall(filled)
        if len(left) != len(right) or not any(_IDENT.fullmatch(x) for x in left):
            continue
        for a, b in zip(left, right, strict=True):
            if _IDENT.fullmatch(a) and a.lower() in known and not _IDENT.fullmatch(b):
                bad += abs(known[a.lower()] - float(b)) > 1e-6 * max(1.0, abs(float(b)))
            elif not _IDENT.fullmatch(a) and a != b:
                bad += 1
    return bad


def filled_mismatch(t: AuditTrace) -> list[float]:
    """Per step: how many numbers of its filled-in expressions disagree with the values
    the run computed or stated before it for the symbols they fill (module docstring)."""
    known: dict[str, float] = {}
    out = []
    for s in t.steps:
        out.append(float(_chain_mismatches(s.content, known)))
        _known_values(s, known)
    return out


def is_verdict(text: str) -> bool:
    """True when ``text`` states a verdict (approval, tests passing, correct)."""
    return bool(_VERDICT.search(text))


def states_verdict(step: AuditStep) -> bool:
    """True when the step's text states a verdict (:func:`is_verdict`)."""
    return is_verdict(step.content)


def unchecked_verdict(t: AuditTrace) -> list[float]:
    """Per step: 1.0 for a verdict with no check before it: neither this step nor any step
    of its agent since another agent last spoke made a tool call or got a tool result."""
    out = []
    for s in t.steps:
        if not states_verdict(s):
            out.append(0.0)
            continue
        checked = False
        for prev in reversed(t.steps[: s.rank + 1]):
            if prev.agent != s.agent:
                break
            checked = checked or bool(prev.calls or prev.observation)
        out.append(0.0 if checked else 1.0)
    return out


__all__ = ["call_mismatch", "filled_mismatch", "is_verdict", "numbers", "states_verdict", "unchecked_verdict"]
