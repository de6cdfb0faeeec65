"""Lenient parsing of judge answers (docs/architecture.md, 'Attribution protocols'). Never raises: a missing or
unrecognised field becomes ``None`` plus a warning.

The all-at-once answer is four labelled lines::

    Agent Name: ...
    Step Number: ...
    Error Mode: ...
    Reason: ...

Real answers bold the labels, drop the space after the colon, add prose before or after,
write ``A.3 (Premature Termination)``, or put the code only in the reason; all are read.
They also answer in JSON (bare or in a ```` ```json ```` fence, with string, number or
boolean values), and sometimes give a draft answer and then a corrected one.

Rules (the last complete answer wins; the presets read answers by their own harness's rules instead,
:mod:`whenpro_core.attribution.harness_parse`):

1. The answer text is cut into *candidate answers*: every run of labelled lines (a label
   seen twice starts a new run) and every JSON object, each at its position in the text.
2. The chosen candidate is the last one whose *key fields* are all readable (agent and
   step for a verdict, the yes/no for a step judgement, the half for binary search, the
   mode for a mode question). When none is complete, fields are merged in text order,
   later values winning.
3. A yes/no or first/second-half that no candidate gives is read from the prose: the last
   sentence-level "yes"/"no" ("After careful review, yes"), else the last "is (not) the
   decisive error"; the last non-negated "first/second half" ("not the first half" does
   not count).
4. When the key fields cannot be read at all the answer is *unreadable*:
   :attr:`ParsedAnswer.readable` is ``False`` and a warning quotes its start. Such an
   answer is never kept in the response cache (see :func:`is_readable`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from whenpro_core.trace.coords import normalize_coord
from whenpro_core.trace.taxonomy import Taxonomy

_FIELDS = ("Agent Name", "Step Number", "Error Mode", "Reason", "Decisive", "Half", "Confidence")
_ALIASES = {
    "agent": "Agent Name",
    "step": "Step Number",
    "mode": "Error Mode",
    "failure mode": "Error Mode",
    "step coordinate": "Step Number",
}
_JSON_KEYS = {
    "agent name": "Agent Name",
    "agent": "Agent Name",
    "agent id": "Agent Name",
    "responsible agent": "Agent Name",
    "step number": "Step Number",
    "step": "Step Number",
    "step coordinate": "Step Number",
    "step coord": "Step Number",
    "step id": "Step Number",
    "error mode": "Error Mode",
    "mode": "Error Mode",
    "failure mode": "Error Mode",
    "error type": "Error Mode",
    "reason": "Reason",
    "explanation": "Reason",
    "rationale": "Reason",
    "reasoning": "Reason",
    "decisive": "Decisive",
    "is decisive": "Decisive",
    "contains decisive error": "Decisive",
    "half": "Half",
    "answer half": "Half",
    "confidence": "Confidence",
}
_LABELS = "|".join(re.escape(n) for n in (*_FIELDS, *_ALIASES))
_FIELD = re.compile(
    rf"^[ \t>*_#-]*(?:\*\*|__)?(?P<key>{_LABELS})(?:\*\*|__)?[ \t]*[:：][ \t]*(?:\*\*|__)?[ \t]*"
    rf"(?P<val>.*?)(?=\n[ \t>*_#-]*(?:\*\*|__)?(?:{_LABELS})(?:\*\*|__)?[ \t]*[:：]|\n```|\Z)",
    re.IGNORECASE | re.DOTALL | re.MULTILINE,
)
#: a sentence-level yes/no: at the start of a line or sentence, after a comma or colon,
#: after "so"/"therefore"/"the answer is", or bold ("After careful review, yes", "Answer: **No**",
#: "so no.")
_PROSE_YES_NO = re.compile(
    r"(?:^|[.!?,:;—–-]|\*\*|\b(?:so|thus|therefore|hence|answer is|verdict is))[ \t]*(?:\*\*|__)?[ \t]*"
    r"(yes|no)\b(?![-'])",
    re.IGNORECASE | re.MULTILINE,
)
_PROSE_DECISIVE = re.compile(
    r"\b(?:is|was|contains|holds|introduces)\s+(not\s+)?(?:the\s+|a\s+)?decisive\b|\b(not|non)[\s-]decisive\b",
    re.IGNORECASE,
)
_HALF = re.compile(r"\b(first|second|upper|lower|earlier|later|former|latter|1st|2nd)\b", re.IGNORECASE)
_PROSE_HALF = re.compile(
    r"\b(first|second|upper|lower|earlier|later|1st|2nd)\s+(?:half|part|range|set)\b", re.IGNORECASE
)
_NEGATION = re.compile(r"(?:\bnot|\bnor|rather than|instead of|n't)\s+(?:in\s+|within\s+)?(?:the\s+)?$", re.IGNORECASE)
_FIRST_WORDS = {"first", "upper", "earlier", "former", "1st"}
_KEY_FIELDS = ("Agent Name", "Step Number", "Decisive", "Half")


@dataclass
class ParsedAnswer:
    """Fields read from a judge's answer; any may be ``None``. ``step`` is the normalised
    coordinate, ``step_text`` the value as written. ``readable`` is ``False``
    when the fields the protocol needs most (see module doc, rule 4) could not be read."""

    agent: str | None = None
    step: str | None = None
    step_text: str | None = None
    mode: str | None = None
    reason: str | None = None
    decisive: bool | None = None
    half: str | None = None
    confidence: float | None = None
    warnings: list[str] = field(default_factory=list)
    readable: bool = True


@dataclass
class _Candidate:
    """One answer found in the text: its start ``pos`` and raw field values by name."""

    pos: int
    fields: dict[str, str]


# ---------------------------------------------------------------- finding candidates


def _label_candidates(text: str) -> list[_Candidate]:
    out: list[_Candidate] = []
    current: _Candidate | None = None
    for m in _FIELD.finditer(text):
        key = m.group("key").strip().lower()
        name = _ALIASES.get(key) or next(f for f in _FIELDS if f.lower() == key)
        if current is None or name in current.fields:
            current = _Candidate(m.start(), {})
            out.append(current)
        current.fields[name] = m.group("val").strip()
    return out


def _json_value(value: Any) -> str | None:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float, str)):
        return str(value)
    return None


def _json_fields(obj: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in obj.items():
        norm = re.sub(r"[_\-\s]+", " ", str(key)).strip().lower()
        name = _JSON_KEYS.get(norm)
        text = _json_value(value)
        if name and text is not None:
            out[name] = text
        elif isinstance(value, dict):  # {"answer": {...}} / {"verdict": {...}}
            out.update(_json_fields(value))
    return out


def _json_candidates(text: str) -> list[_Candidate]:
    decoder = json.JSONDecoder()
    out: list[_Candidate] = []
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(obj, dict):
            fields = _json_fields(obj)
            if fields:
                out.append(_Candidate(pos, fields))
        pos = text.find("{", end)
    return out


# ---------------------------------------------------------------- reading values


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    val = value.strip().strip("*_`").strip()
    if len(val) >= 2 and val[0] == val[-1] and val[0] in "\"'`":
        val = val[1:-1].strip()
    val = val.splitlines()[0].strip().rstrip(",").strip().strip("\"'*_`").strip() if val else val
    if val.startswith("(") and val.endswith(")") and len(val) > 4:
        return None  # the format's placeholder copied back
    return val or None


def _step(value: str | None) -> str | None:
    if not value:
        return None
    m = re.search(r"\d+(?:\.\d+)?", value)
    return normalize_coord(m.group(0)) if m else None


def _yes_no_word(word: str) -> bool:
    return word.lower() == "yes"


def _yes_no(value: str | None) -> bool | None:
    """A labelled or JSON yes/no: ``yes``/``true``/``y`` or ``no``/``false``/``n`` at the
    start, else the last sentence-level yes/no inside it ("after review, yes")."""
    if not value:
        return None
    low = value.strip().strip("*_`\"'").strip().lower()
    if re.match(r"^(yes|true|y)\b", low):
        return True
    if re.match(r"^(no|false|n)\b", low):
        return False
    return _prose_decisive(value)


def _prose_decisive(text: str) -> bool | None:
    """The last yes/no said in prose: a sentence-level "yes"/"no" or "is (not) the
    decisive error", whichever comes last."""
    said = [(m.start(), _yes_no_word(m.group(1))) for m in _PROSE_YES_NO.finditer(text)]
    said += [(m.start(), not (m.group(1) or m.group(2))) for m in _PROSE_DECISIVE.finditer(text)]
    return max(said)[1] if said else None


def _half_of(text: str, pattern: re.Pattern[str]) -> str | None:
    """The last non-negated half mentioned in ``text`` (``"first"``/``"second"``)."""
    found = None
    for m in pattern.finditer(text):
        if _NEGATION.search(text[max(0, m.start() - 24) : m.start()]):
            continue
        found = "first" if m.group(1).lower() in _FIRST_WORDS else "second"
    return found


def _half(value: str | None) -> str | None:
    if not value:
        return None
    low = value.strip().strip("*_`\"'").strip().lower()
    if low in ("1", "2"):
        return "first" if low == "1" else "second"
    return _half_of(value, _PROSE_HALF) or _half_of(value, _HALF)


def _confidence(value: str | None) -> float | None:
    if not value:
        return None
    m = re.search(r"\d+(?:\.\d+)?", value)
    if not m:
        return None
    number = float(m.group(0))
    return min(1.0, number / 100 if number > 1 else number)


_READERS = {
    "Agent Name": _clean,
    "Step Number": _step,
    "Decisive": _yes_no,
    "Half": _half,
}


def _readable(cand: _Candidate, keys: tuple[str, ...], taxonomy: Taxonomy) -> bool:
    for key in keys:
        if key == "Error Mode":
            if not taxonomy.find_code(cand.fields.get(key) or ""):
                return False
        elif _READERS[key](cand.fields.get(key)) is None:
            return False
    return True


def _key_fields(need: tuple[str, ...]) -> tuple[str, ...]:
    keys = tuple(k for k in need if k in _KEY_FIELDS)
    return keys or (("Error Mode",) if "Error Mode" in need else ())


def _choose(text: str, need: tuple[str, ...], taxonomy: Taxonomy) -> tuple[dict[str, str], int]:
    """The chosen answer's fields and its start in ``text`` (rules 1–2 of the module doc)."""
    cands = sorted(_label_candidates(text) + _json_candidates(text), key=lambda c: c.pos)
    keys = _key_fields(need)
    for cand in reversed(cands):
        if keys and _readable(cand, keys, taxonomy):
            return cand.fields, cand.pos
    merged: dict[str, str] = {}
    for cand in cands:
        merged.update(cand.fields)
    return merged, (cands[-1].pos if cands else 0)


# ---------------------------------------------------------------- the parser


def parse_answer(
    text: str | None,
    taxonomy: Taxonomy,
    *,
    need: tuple[str, ...] = ("Agent Name", "Step Number", "Error Mode", "Reason"),
) -> ParsedAnswer:
    """Read a judge's answer (rules in the module doc).

    Args:
        text: the raw answer.
        taxonomy: valid failure-mode codes; a mode is accepted only if it is one.
        need: the fields the protocol asked for; each one missing adds a warning.

    Returns:
        A :class:`ParsedAnswer`; never raises.
    """
    out = ParsedAnswer()
    if not text or not text.strip():
        out.warnings.append("empty answer")
        out.readable = False
        return out
    fields, start = _choose(text, need, taxonomy)
    out.agent = _clean(fields.get("Agent Name"))
    out.step = _step(fields.get("Step Number"))
    out.step_text = _clean(fields.get("Step Number"))
    reason = fields.get("Reason")
    out.reason = " ".join(reason.split()) if reason else None
    raw_mode = fields.get("Error Mode")
    out.mode = taxonomy.find_code(raw_mode or "") or (
        None if raw_mode else taxonomy.find_code(text[start:]) or taxonomy.find_code(text)
    )
    if raw_mode and not out.mode and raw_mode.strip().lower() not in ("none", "n/a", "null", "-"):
        out.warnings.append(f"unrecognised error mode: {raw_mode[:60]!r}")
    out.decisive = _yes_no(fields.get("Decisive"))
    if out.decisive is None and "Decisive" in need:
        out.decisive = _prose_decisive(text)
    out.half = _half(fields.get("Half"))
    if out.half is None and "Half" in need:
        out.half = _half_of(text, _PROSE_HALF)
    out.confidence = _confidence(fields.get("Confidence"))
    _check(out, text, need, bool(raw_mode))
    return out


def _check(out: ParsedAnswer, text: str, need: tuple[str, ...], had_mode: bool) -> None:
    names = {
        "Agent Name": out.agent,
        "Step Number": out.step,
        "Error Mode": out.mode,
        "Reason": out.reason,
        "Decisive": out.decisive,
        "Half": out.half,
    }
    for name in need:
        if names.get(name) is None and not (name == "Error Mode" and had_mode):
            out.warnings.append(f"missing field: {name}")
    keys = _key_fields(need)
    if keys and all(names.get(k) is None for k in keys):
        out.readable = False
        start = " ".join(text.split())[:80]
        out.warnings.append(f"could not read a verdict from the answer (it begins {start!r})")


def is_readable(text: str | None, taxonomy: Taxonomy, need: tuple[str, ...]) -> bool:
    """Whether :func:`parse_answer` reads the key fields of ``need`` from ``text``: the
    test a response must pass to be kept in the response cache."""
    return parse_answer(text, taxonomy, need=need).readable
