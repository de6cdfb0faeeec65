"""Text-editing primitives of the offline mutators: find numbers and operators in step
text and tool arguments, perturb a number, and apply an edit to a tool argument and the
content that quotes it (used by :mod:`whenpro_core.injection.mutators`)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from whenpro_core.envs.arith_tasks import ToolFailure, calculate
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
    """Replace match ``m`` in a string argument, and the same argument text where the
    content quotes it (:func:`quote_edit`: with the symbolic side it fills in)."""
    new_text = old_text[: m.start()] + replacement + old_text[m.end() :]
    set_arg(new, ci, key, new_text)
    new.content = quote_edit(new.content or "", old_text, new_text)
    return new_text


#: Tokens of an arithmetic expression, symbolic (``a_b * 3``) or filled in (``1.5 * 3``).
_TOKEN = re.compile(r"\d+(?::\d\d)?(?:\.\d+)?|[A-Za-z_]\w*|[-+*/()]")
#: ``var = symbolic = filled[ = result]`` as an agent writes a computation (the solver's
#: ``Computing total = a + b = 24 + 9.75 = 33.75.``); ``filled`` holds digits only.
ASSIGNMENT = re.compile(
    r"\b(?P<var>[a-z_]\w*) = (?P<sym>[\w .+\-*/()]+?) = (?P<filled>[\d .+\-*/()]+?)"
    r"(?: = (?P<result>-?\d+(?:\.\d+)?))?(?=\s*\(|\.(?:\s|$)|,|$)"
)


#: A computation stated with its result, ``var = [symbolic = ]filled = result`` (the
#: solver's in-head ``Working out v = a * b = 1.5 * 16 = 24.``; the symbolic side holds a
#: name, the filled-in side digits and operators only).
COMPUTATION = re.compile(
    r"\b[a-z_]\w* = (?:(?P<sym>[\w .+\-*/()]*?[a-z_][\w .+\-*/()]*?) = )?"
    r"(?P<filled>[\d .+\-*/()]+?[-+*/][\d .+\-*/()]*?) = (?P<result>-?\d+(?:\.\d+)?)(?=\s*\(|\.(?:\s|$)|,|$)"
)


def refill(text: str, a: re.Match[str], filled: str) -> str:
    """``text`` with computation ``a`` (a :data:`COMPUTATION` match in it) filled in with
    ``filled``: its symbolic side follows where they line up (:func:`sync_symbolic`) and
    its result is worked out again (kept when ``filled`` is no arithmetic)."""
    result = recompute(filled) or a.group("result")
    out = text[: a.start("filled")] + filled + " = " + result + text[a.end("result") :]
    if a.group("sym") is not None:
        sym = sync_symbolic(a.group("sym"), a.group("filled"), filled)
        out = out[: a.start("sym")] + sym + out[a.end("sym") :]
    return out


def tokens(expr: str) -> list[str]:
    """``"(a - 1) * 5"`` -> ``["(", "a", "-", "1", ")", "*", "5"]``."""
    return _TOKEN.findall(expr)


def token_spans(expr: str) -> list[re.Match[str]]:
    """The matches of :func:`tokens`, with their positions."""
    return list(_TOKEN.finditer(expr))


def _is_operand(token: str) -> bool:
    return token[0].isalnum() or token[0] == "_"


def sync_symbolic(sym: str, old: str, new: str) -> str:
    """The symbolic side ``sym`` of a filled-in expression ``old`` after ``old`` became
    ``new``: a flipped operator flips there too, a changed number that ``sym`` writes as
    the same literal changes there too, and a trailing operand ``new`` lost is lost there
    too (a value read from a variable stays the variable: the agent misread it). ``sym``
    unchanged when the two sides do not line up token by token."""
    s, o, n = tokens(sym), tokens(old), tokens(new)
    if len(s) != len(o) or any(
        _is_operand(a) != _is_operand(b) or (not _is_operand(a) and a != b) for a, b in zip(s, o, strict=True)
    ):
        return sym
    if len(n) < len(o) and n == o[: len(n)]:
        return " ".join(s[: len(n)]).replace("( ", "(").replace(" )", ")")
    if len(n) != len(o):
        return sym
    out = [t if a == b else (b if not _is_operand(t) or t == a else t) for t, a, b in zip(s, o, n, strict=True)]
    spans = list(_TOKEN.finditer(sym))
    text = sym
    for m, after in reversed(list(zip(spans, out, strict=True))):
        text = text[: m.start()] + after + text[m.end() :]
    return text


def recompute(expr: str) -> str | None:
    """The value of an arithmetic expression as a calculator writes it (``"24 + 9.75"``
    -> ``"33.75"``), or ``None`` when it is not one."""
    try:
        return calculate(expr)
    except ToolFailure:
        return None


def quote_edit(content: str, old: str, new: str) -> str:
    """``content`` with its quote of ``old`` (a tool argument, or a filled-in expression)
    rewritten to ``new``: the last occurrence that stands alone (not inside a longer
    word or number); when it fills in a ``var = symbolic = old`` line, the symbolic side
    follows (:func:`sync_symbolic`; a stated ``= result`` is kept: :func:`refill` works one
    out again). ``content`` unchanged when it does not quote ``old``."""
    for m in ASSIGNMENT.finditer(content):
        if m.group("filled").strip() == old.strip():
            sym = sync_symbolic(m.group("sym"), old, new)
            out = f"{m.group('var')} = {sym} = {new}"
            if m.group("result") is not None:
                out += f" = {m.group('result')}"
            return content[: m.start()] + out + content[m.end() :]
    spots = list(re.finditer(rf"(?<![\w.:]){re.escape(old)}(?![\w:]|\.\d)", content)) if old else []
    if not spots:
        return content
    m = spots[-1]
    return content[: m.start()] + new + content[m.end() :]


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
