"""How the published harnesses read a judge's answer, re-implemented from their documented
rules so a ``--preset`` verdict is the one the harness itself would record. whenpro's own
lenient reader (:mod:`whenpro_core.attribution.parse`) stays the default without a preset.

**Who&When Pro** (``whowhen_eval/parse.py``, all-at-once answers), :func:`read_whowhen_pro`:

* A field is one of four labels, ``Agent Name``, ``Step Number``, ``Error Mode``,
  ``Reason`` (any case, the label optionally in ``**bold**``), then ``:`` (spaces or tabs
  around it, an optional ``**`` after it). The label may stand anywhere, even mid-line.
  Its value runs, across lines, up to the next line that *starts* (after spaces or tabs,
  an optional ``**``) with one of the four labels and a colon, or to the end of the text.
  So a bulleted label (``- Step Number:``) does not end the value before it, and a value
  that goes on for several lines keeps them all.
* Values are taken in text order and a later one of the same label wins (a stray
  ``Step Number:`` line after the answer replaces its step).
* A value is stripped, leading and trailing ``**`` removed, then one pair of matching
  surrounding quotes (`````, ``"``, ``'``); ``(…)`` longer than four characters (the
  format's placeholder copied back) and empty values read as nothing. Commas, inner
  quotes and trailing prose stay in the value.
* The mode is the first taxonomy code (``UPPER.DIGITS``, case-sensitive, not touching
  other letters or digits) in the ``Error Mode`` value that the taxonomy has; when that
  value holds no code at all, the first such code anywhere in the answer (so ``Error Mode:
  unclear`` with ``R.2`` in the reason reads ``R.2``; a lower-case ``r.2`` reads nothing).
* Nothing else is read: no JSON, no ``Agent:``/``Step:``/``Mode:`` labels.

**Who&When** (``Automated_FA/evaluate.py``), :func:`read_whowhen`: the prediction block
ends at the first ``Prediction for`` (the log's next block); the agent is the first
``Agent Name:`` (any case) followed, after any white space (new lines too), by a run of
word characters, which is the name (``Orchestrator (thought)`` reads ``Orchestrator``);
the step is the first ``Step Number:`` followed by digits (``03`` stays ``03``). Both
must be found, else there is no prediction at all. The step-by-step and binary-search
verdicts are printed by the original as ``Agent Name: <speaker>`` / ``Step Number: <i>``
lines and read back the same way (:func:`whowhen_printed`).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

#: What each record's ``parser`` field says read the answer.
PARSER_LENIENT = "whenpro"
PARSER_WHOWHEN_PRO = "whowhen-pro (whowhen_eval/parse.py rules)"
PARSER_WHOWHEN = "whowhen (Automated_FA/evaluate.py rules)"

_LABELS = ("Agent Name", "Step Number", "Error Mode", "Reason")
_ANY_LABEL = "(?:" + "|".join(label.replace(" ", r"\ ") for label in _LABELS) + ")"
_BOLD = r"(?:\*\*)?"
_LABEL_START = rf"{_BOLD}(?P<label>{_ANY_LABEL}){_BOLD}[ \t]*:[ \t]*{_BOLD}[ \t]*"
_NEXT_LABEL_LINE = rf"\n[ \t]*{_BOLD}{_ANY_LABEL}{_BOLD}[ \t]*:"
_PRO_FIELD = re.compile(
    _LABEL_START + rf"(?P<value>.*?)(?={_NEXT_LABEL_LINE}|\Z)",
    re.IGNORECASE | re.DOTALL,
)
_PRO_CODE = re.compile(r"(?<![A-Za-z0-9])([A-Z]+\.[0-9]+)(?![A-Za-z0-9])")
_QUOTES = ("`", '"', "'")

_WW_AGENT = re.compile(r"Agent Name:\s*(\w+)", re.IGNORECASE)
_WW_STEP = re.compile(r"Step Number:\s*(\d+)", re.IGNORECASE)
_WW_BLOCK_END = "Prediction for"


@dataclass
class HarnessReading:
    """What a harness's parser read: ``agent`` and ``step`` exactly as read (``None``
    when nothing), ``mode`` (a taxonomy code or ``None``), ``reason``, and the
    harness's own warnings (missing fields, an unrecognised mode)."""

    agent: str | None = None
    step: str | None = None
    mode: str | None = None
    reason: str | None = None
    warnings: list[str] = field(default_factory=list)


def _pro_value(raw: str | None) -> str | None:
    """A field value cleaned as the Who&When Pro parser cleans it (module doc)."""
    if raw is None:
        return None
    value = raw.strip()
    while value.endswith("**"):
        value = value[:-2].rstrip()
    while value.startswith("**"):
        value = value[2:].lstrip()
    for quote in _QUOTES:
        if len(value) >= 2 and value[0] == quote and value[-1] == quote:
            value = value[1:-1].strip()
    if len(value) > 4 and value[0] == "(" and value[-1] == ")":
        return None
    return value or None


def _pro_mode(raw: str | None, text: str, codes: Collection[str]) -> tuple[str | None, str | None]:
    """(mode, warning): the first known code of the mode field, else of the whole text."""
    known = set(codes)
    found = _PRO_CODE.findall(raw) if raw else []
    for code in found or _PRO_CODE.findall(text):
        if code in known:
            return code, None
    if raw:
        return None, f"unrecognised error mode: {raw[:80]!r}"
    return None, "missing field: Error Mode"


def read_whowhen_pro(text: str | None, codes: Collection[str]) -> HarnessReading:
    """Read an all-at-once answer by the Who&When Pro parser's rules (module doc);
    ``codes``: the taxonomy's mode codes. Never raises."""
    out = HarnessReading()
    if not text:
        out.warnings.append("empty response")
        return out
    fields: dict[str, str] = {}
    for m in _PRO_FIELD.finditer(text):
        fields[m.group("label").title()] = m.group("value").strip()
    out.agent = _pro_value(fields.get("Agent Name"))
    out.step = _pro_value(fields.get("Step Number"))
    reason = fields.get("Reason")
    out.reason = " ".join(reason.split()) or None if reason is not None else None
    out.mode, warning = _pro_mode(fields.get("Error Mode"), text, codes)
    if warning:
        out.warnings.append(warning)
    for name, value in (("Agent Name", out.agent), ("Step Number", out.step), ("Reason", out.reason)):
        if not value:
            out.warnings.append(f"missing field: {name}")
    return out


def read_whowhen(text: str | None) -> HarnessReading:
    """Read an answer (or a printed verdict) by the original Who&When evaluate.py's rules
    (module doc): both agent and step, or nothing. Never raises."""
    out = HarnessReading()
    block = (text or "").split(_WW_BLOCK_END, 1)[0]
    agent, step = _WW_AGENT.search(block), _WW_STEP.search(block)
    if agent is None or step is None:
        out.warnings.append("the original Who&When reader finds no 'Agent Name:' and 'Step Number:' pair")
        return out
    out.agent, out.step = agent.group(1), step.group(1)
    return out


def whowhen_printed(speaker: str, step: str) -> HarnessReading:
    """A step-by-step or binary-search verdict as the original prints it and reads it back."""
    return read_whowhen(f"Agent Name: {speaker}\nStep Number: {step}")
