"""Text-editing primitives of the offline mutators: find numbers and operators in step
text and tool arguments, perturb a number, and apply an edit to a tool argument and the
content that quotes it (used by :mod:`whenpro_core.injection.mutators`)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from whenpro_core.trace.model import Step, ToolCall

FRAMING = frozenset({"user", "system"})
NUMBER = re.compile(r"(?<![\w.:])\d+(?:\.\d+)?(?::\d\d)?(?!\w|\.\d|:\d)")
OPERATOR = re.compile(r"(?<=[\w)\]]) (\+|-|\*|/|>=|<=|>|<) (?=[\w(\[])|\b(min|max)\(")
FLIP = {"+": "-", "-": "+", "*": "/", "/": "*", ">=": ">", ">": ">=", "<=": "<", "<": "<=", "min": "max", "max": "min"}
EXPR = re.compile(r"^[\d\s.+\-*/()]+$")
CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


def fresh_step(step: Step, **changes: Any) -> Step:
    """A copy of ``step`` with ``changes``; observation, error, labels, meta and raw cleared."""
    new = step.model_copy(deep=True)
    new.observation = None
    new.error = None
    new.hidden = {}
    new.meta = {}
    new.raw = None
    for key, value in changes.items():
        setattr(new, key, value)
    return new


def is_agent_step(step: Step) -> bool:
    return step.kind not in FRAMING and step.agent not in ("user", "system")


def find_numbers(text: str) -> list[re.Match[str]]:
    """Number tokens of ``text`` that are not list markers (``1.`` at a line start)."""
    out = []
    for m in NUMBER.finditer(text or ""):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if not text[line_start : m.start()].strip() and text[m.end() : m.end() + 1] in (".", ")"):
            continue
        out.append(m)
    return out


def perturb(token: str, rng: random.Random) -> str:
    """A nearby wrong value with the same number of decimals, written without trailing
    zeros when ``token`` has none (never equal, never negative for a non-negative input);
    an ``HH:MM`` time moves by 5 to 60 minutes."""
    if ":" in token:
        hours, minutes = token.split(":", 1)
        total = (int(hours) * 60 + int(minutes) + rng.choice([5, 10, 15, -5, -10, 60])) % (24 * 60)
        return f"{total // 60:0{len(hours)}d}:{total % 60:02d}"
    decimals = len(token.split(".", 1)[1]) if "." in token else 0
    try:
        value = Decimal(token)
    except InvalidOperation:
        return token + "1"
    unit = Decimal(1).scaleb(-decimals)
    options = [value + unit, value + 2 * unit, value - unit, value * 2, value + 10 * unit]
    options = [o for o in options if o != value and (o >= 0 or value < 0)]
    out = f"{rng.choice(options):.{decimals}f}"
    if decimals and not token.endswith("0"):  # a number written without trailing zeros stays so (9.5 -> 19)
        out = out.rstrip("0").rstrip(".")
    return out


def string_args(call: ToolCall) -> list[tuple[Any, str]]:
    """``(key, value)`` of a call's string arguments (key ``None`` for a bare string)."""
    if isinstance(call.arguments, dict):
        return [(k, v) for k, v in call.arguments.items() if isinstance(v, str)]
    if isinstance(call.arguments, str):
        return [(None, call.arguments)]
    return []


def set_arg(step: Step, ci: int, key: Any, value: Any) -> None:
    call = step.tool_calls[ci]
    if key is None:
        call.arguments = value
    else:
        call.arguments = {**call.arguments, key: value}


def arg_text_edits(
    step: Step, pattern: Callable[[str], list[re.Match[str]]]
) -> list[tuple[int, Any, str, re.Match[str]]]:
    edits = []
    for ci, call in enumerate(step.tool_calls):
        for key, value in string_args(call):
            for m in pattern(value):
                edits.append((ci, key, value, m))
    return edits


def apply_arg_edit(new: Step, ci: int, key: Any, old_text: str, m: re.Match[str], replacement: str) -> str:
    """Replace match ``m`` in a string argument, and the same argument text in the content."""
    new_text = old_text[: m.start()] + replacement + old_text[m.end() :]
    set_arg(new, ci, key, new_text)
    if old_text and old_text in new.content:
        new.content = new.content.replace(old_text, new_text, 1)
    return new_text


def clip(text: str, n: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def numeric_args(step: Step) -> list[tuple[int, Any, Any]]:
    out = []
    for ci, call in enumerate(step.tool_calls):
        if isinstance(call.arguments, dict):
            out += [
                (ci, k, v) for k, v in call.arguments.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
            ]
    return out


def find_operators(text: str) -> list[re.Match[str]]:
    return list(OPERATOR.finditer(text or ""))


def flip(m: re.Match[str]) -> str:
    if m.group(1):
        return f" {FLIP[m.group(1)]} "
    return f"{FLIP[m.group(2)]}("
