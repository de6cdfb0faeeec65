"""Lenient parsing of judge answers (DESIGN §6). Never raises: a missing or
unrecognised field becomes ``None`` plus a warning.

The all-at-once answer is four labelled lines::

    Agent Name: ...
    Step Number: ...
    Error Mode: ...
    Reason: ...

Real answers bold the labels, drop the space after the colon, add prose before or after,
write ``A.3 (Premature Termination)``, or put the code only in the reason; all are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from whenpro_core.coords import normalize_coord
from whenpro_core.taxonomy import Taxonomy

_FIELDS = ("Agent Name", "Step Number", "Error Mode", "Reason", "Decisive", "Half", "Confidence")
_ALIASES = {"agent": "Agent Name", "step": "Step Number", "mode": "Error Mode",
            "failure mode": "Error Mode", "step coordinate": "Step Number"}
_LABELS = "|".join(re.escape(n) for n in (*_FIELDS, *_ALIASES))
_FIELD = re.compile(
    rf"^[ \t>*_#-]*(?:\*\*|__)?(?P<key>{_LABELS})(?:\*\*|__)?[ \t]*[:：][ \t]*(?:\*\*|__)?[ \t]*"
    rf"(?P<val>.*?)(?=\n[ \t>*_#-]*(?:\*\*|__)?(?:{_LABELS})(?:\*\*|__)?[ \t]*[:：]|\Z)",
    re.IGNORECASE | re.DOTALL | re.MULTILINE)


@dataclass
class ParsedAnswer:
    """Fields read from a judge's answer; any may be ``None``."""

    agent: str | None = None
    step: str | None = None
    mode: str | None = None
    reason: str | None = None
    decisive: bool | None = None
    half: str | None = None
    confidence: float | None = None
    warnings: list[str] = field(default_factory=list)


def _fields(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _FIELD.finditer(text):
        key = m.group("key").strip().lower()
        name = _ALIASES.get(key) or next(f for f in _FIELDS if f.lower() == key)
        out.setdefault(name, m.group("val").strip())
    return out


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    val = value.strip().strip("*_`").strip()
    if len(val) >= 2 and val[0] == val[-1] and val[0] in "\"'`":
        val = val[1:-1].strip()
    val = val.splitlines()[0].strip() if val else val
    if val.startswith("(") and val.endswith(")") and len(val) > 4:
        return None  # the format's placeholder copied back
    return val or None


def _step(value: str | None) -> str | None:
    if not value:
        return None
    m = re.search(r"\d+(?:\.\d+)?", value)
    return normalize_coord(m.group(0)) if m else None


def _yes_no(value: str | None) -> bool | None:
    if not value:
        return None
    low = value.strip().lower()
    if re.match(r"^(yes|true|y)\b", low):
        return True
    if re.match(r"^(no|false|n)\b", low):
        return False
    return None


def parse_answer(text: str | None, taxonomy: Taxonomy, *,
                 need: tuple[str, ...] = ("Agent Name", "Step Number", "Error Mode", "Reason")
                 ) -> ParsedAnswer:
    """Read a judge's answer.

    Args:
        text: the raw answer.
        taxonomy: valid failure-mode codes; a mode is accepted only if it is one.
        need: the fields the protocol asked for; each one missing adds a warning.
    """
    out = ParsedAnswer()
    if not text or not text.strip():
        out.warnings.append("empty answer")
        return out
    fields = _fields(text)
    out.agent = _clean(fields.get("Agent Name"))
    out.step = _step(fields.get("Step Number"))
    reason = fields.get("Reason")
    out.reason = " ".join(reason.split()) if reason else None
    raw_mode = fields.get("Error Mode")
    out.mode = taxonomy.find_code(raw_mode or "") or (None if raw_mode else taxonomy.find_code(text))
    if raw_mode and not out.mode:
        out.warnings.append(f"unrecognised error mode: {raw_mode[:60]!r}")
    out.decisive = _yes_no(fields.get("Decisive"))
    if out.decisive is None and "Decisive" in need:
        first = text.strip().split(None, 1)[0] if text.strip() else ""
        out.decisive = _yes_no(first.strip("*.,:"))
    half = (fields.get("Half") or "").lower()
    out.half = "first" if "first" in half or "upper" in half else "second" if (
        "second" in half or "lower" in half) else None
    conf = fields.get("Confidence")
    if conf:
        m = re.search(r"\d+(?:\.\d+)?", conf)
        if m:
            value = float(m.group(0))
            out.confidence = min(1.0, value / 100 if value > 1 else value)
    names = {"Agent Name": out.agent, "Step Number": out.step, "Error Mode": out.mode,
             "Reason": out.reason, "Decisive": out.decisive, "Half": out.half}
    for name in need:
        if names.get(name) is None and not (name == "Error Mode" and raw_mode):
            out.warnings.append(f"missing field: {name}")
    return out
