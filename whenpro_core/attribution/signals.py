"""The signals of the offline ``heuristic`` attributor (docs/architecture.md, 'Attribution protocols'): evidence in the
trajectory itself that a step holds the decisive error.

Each detector looks at the whole trace and returns :class:`Signal` s — a step, a
strength in 0..1, the failure mode the evidence points to, and a one-line reason that
the verdict cites. Strengths are fixed by the kind of evidence (a provably wrong
calculation is stronger than hedging language), not fitted to any dataset.
"""

from __future__ import annotations

import ast
import hashlib
import operator
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import orjson

from whenpro_core.storage import jsonio
from whenpro_core.trace.evidence import (
    answer_matches,
    answer_values,
    capped,
    contains_rounding_of,
    contains_value,
    full_text,
    is_relay_agent,
    is_verifier,
    is_weak_value,
    may_be_blamed,
    normalize_number,
    quote,
    quote_value,
    salient_values,
    step_text,
)
from whenpro_core.trace.model import Step, Trace


@dataclass(frozen=True)
class Signal:
    """Evidence that step ``index`` holds the decisive error: ``strength`` 0..1, the
    failure ``mode`` it suggests, the ``name`` of the detector and a short ``reason``."""

    index: int
    strength: float
    mode: str
    name: str
    reason: str


@dataclass
class Context:
    """What every detector may read: the trace, the final answer and the step that gave
    it, the gold answer (``None`` without gold), and whether the run visibly failed."""

    trace: Trace
    final: str
    final_index: int | None
    gold: str | None
    failed: bool
    candidates: list[Step] = field(default_factory=list)


def _clip(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


# ---------------------------------------------------------------- wrong arithmetic (R.3)

#: A number: digits with optional thousands commas (a comma only between digits, so the
#: comma after ``= 20, so`` is not part of it) and decimals.
_NUM = r"-?\d+(?:,\d+)*(?:\.\d+)?"
#: An equation ``expression = number``: one or more operations on numbers, then the
#: stated result in a look-ahead, so the result of one link of a chain ``a = b = c`` can
#: start the next link. :func:`_equations` keeps only whole sides.
_EQUATION = re.compile(rf"(?<![\w.])(\(?{_NUM}(?:\s*[-+*/×x÷]\s*\(?{_NUM}\)?)+)(?=\s*=\s*\$?({_NUM}))")
#: The end of the text before an expression when the expression is only the tail of a
#: longer one (``subtotal * 15 / 100``): an operator, maybe then a ``$``.
_CONTINUED_FROM = re.compile(r"(?:[-+*/×÷^]|(?<!\w)x)\s*\$?\s*$")
#: The text after a stated result when the result is only the first operand of a longer
#: expression (``= 16 * 15 / 100``): an operator, then an operand.
_CONTINUES = re.compile(r"\s*(?:[-+*/×÷^]\s*[\w($.]|x\s*[\d(])")
_OPS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _safe_eval(expr: str) -> float | None:
    """Evaluate a small arithmetic expression (numbers and + - * / only), or None."""
    expr = expr.replace("×", "*").replace("÷", "/").replace(",", "")
    expr = re.sub(r"(?<=\d)\s*x\s*(?=[\d(])", "*", expr)
    if len(expr) > 200:
        return None
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None

    def ev(n: ast.AST) -> float:
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
            return float(n.value)
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            return _OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and type(n.op) in _OPS:
            return _OPS[type(n.op)](ev(n.operand))
        raise ValueError

    try:
        return ev(node)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None


def _equations(text: str) -> Iterator[tuple[str, str, str]]:
    """The equations ``expression = number`` stated in ``text`` whose sides are whole,
    as (expression, stated result, the equation as written).

    A side that only continues or starts a longer expression is no equation: in
    ``subtotal * 15 / 100 = 16 * 15 / 100 = 2.4`` the only one is ``16 * 15 / 100 = 2.4``,
    not ``15 / 100 = 16``."""
    for m in _EQUATION.finditer(text):
        head = text[max(0, m.start() - 40) : m.start()]
        if _CONTINUED_FROM.search(head) or _CONTINUES.match(text, m.end(2)):
            continue
        yield m.group(1), m.group(2), text[m.start() : m.end(2)]


def wrong_arithmetic(ctx: Context) -> list[Signal]:
    """A stated calculation ``a op b = c`` whose result is wrong (beyond rounding)."""
    out = []
    for step in ctx.candidates:
        for expr, result, written in _equations(capped(step.content or "")):
            value = _safe_eval(expr)
            try:
                stated = float(result.replace(",", ""))
            except ValueError:
                continue
            if value is None:
                continue
            tol = max(0.011, abs(value) * 0.005)
            if abs(value - stated) > tol:
                out.append(
                    Signal(
                        step.index,
                        0.95,
                        "R.3",
                        "wrong-arithmetic",
                        f"states {_clip(written, 40)}, but it is {value:g}",
                    )
                )
                break
    return out


# ------------------------------------------------------- where a wrong final value appears


def _suspect_values(ctx: Context, query: str) -> set[str]:
    """The salient values of the final answer that may be wrong: not in the task query,
    and (with the gold answer) not in the gold either."""
    values = answer_values(ctx.final)
    if ctx.gold:
        values = {v for v in values if not contains_value(ctx.gold, v)}
    return {v for v in values if not contains_value(query, v)}


def _first_seen(trace: Trace, ordered: list[str]) -> dict[str, int]:
    """For each value, the index of the first step whose full text holds it (or a rounding of it)."""
    first: dict[str, int] = {}
    for step in trace.steps:
        text = full_text(step)
        for v in ordered:
            if v not in first and (contains_value(text, v) or contains_rounding_of(text, v)):
                first[v] = step.index
    return first


def _origin_signal(trace: Trace, author: Step, value: str, query: str, strength: float) -> Signal:
    """The signal on the step that brought ``value`` in, following its derivation from
    ``author``: R.2 when the source value was in the step's own observation (charged to
    the earlier code step that computed the printed variable, if any), else R.1."""
    origin, source_value = _follow_derivation(trace, author, value, query)
    observed = origin.observation or ""
    seen = contains_value(observed, source_value) or contains_rounding_of(observed, source_value)
    mode = "R.2" if seen else "R.1"
    via = f" (via '{_clip(value, 20)}')" if origin.index != author.index else ""
    where = _clip(quote_value(full_text(origin), source_value), 70)
    maker = _computed_earlier(trace, origin) if seen else None
    if maker is not None:  # this step only prints a variable an earlier code step computed
        via += f" (printed at step {origin.coord} from a variable computed here)"
        origin = maker
    return Signal(
        origin.index,
        strength,
        mode,
        "final-value-origin",
        f"first brings in '{_clip(source_value, 30)}' (“{where}”){via}, which ends up in the final answer",
    )


def final_value_origin(ctx: Context) -> list[Signal]:
    """The earliest agent step that introduces a value of the (wrong) final answer.

    With the gold answer, only final-answer values absent from the gold count as wrong;
    without it, every salient value of the final answer is traced (weaker). A value first
    seen in an environment output is charged to the agent step that caused that output.
    """
    if not ctx.final or not ctx.failed:
        return []
    query = ctx.trace.task.query or ""
    values = _suspect_values(ctx, query)
    if not values:
        return []
    strength = 0.75 if ctx.gold else 0.5
    first = _first_seen(ctx.trace, _in_text_order(values, ctx.final))
    for value, index in sorted(first.items(), key=lambda kv: kv[1]):
        author = _responsible_step(ctx.trace, index)
        if author is not None:
            return [_origin_signal(ctx.trace, author, value, query, strength)]
    return []


# ------------------------------------------------------- data flow through code variables


def code_of(step: Step) -> str:
    """The code a step ran through a tool (a ``code`` argument, or the whole argument
    text), joined; ``""`` when it ran none."""
    parts = []
    for call in step.tool_calls:
        args = call.arguments
        if isinstance(args, dict) and isinstance(args.get("code"), str):
            parts.append(args["code"])
        elif isinstance(args, str):
            parts.append(args)
    return "\n".join(parts)


def _names(code: str) -> tuple[set[str], set[str]] | None:
    """(names a piece of Python assigns, names its ``print``/final expression reads), or
    ``None`` when it does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    shown: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            shown |= {n.id for arg in node.args for n in ast.walk(arg) if isinstance(n, ast.Name)}
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not isinstance(tree.body[-1].value, ast.Call):
        shown |= {n.id for n in ast.walk(tree.body[-1]) if isinstance(n, ast.Name)}
    return assigned, shown


def _computed_earlier(trace: Trace, step: Step) -> Step | None:
    """When ``step``'s code only prints variables (assigning none of them), the latest
    earlier agent step whose code assigned one of them: the value was computed there and
    merely shown here. ``None`` otherwise."""
    names = _names(code_of(step)) if step.tool_calls else None
    if not names:
        return None
    assigned, shown = names
    if not shown or assigned & shown:
        return None
    for earlier in reversed(trace.steps[: step.index]):
        if earlier.agent != step.agent or not earlier.tool_calls:
            continue
        found = _names(code_of(earlier))
        if found and found[0] & shown:
            return earlier
    return None


_NUM_TOKEN = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _operands(step: Step, value: str) -> list[str] | None:
    """If ``step`` derives ``value`` from other numbers (a correct stated calculation, or
    a tool call whose result holds it), those numbers; ``None`` if the step introduces
    the value itself."""
    texts: list[str] = []
    if step.tool_calls and contains_value(step.observation or "", value):
        texts = [jsonio.as_text(c.arguments) for c in step.tool_calls]
    else:
        for expr, result, _ in _equations(capped(step.content or "")):
            if normalize_number(result) == value and _safe_eval(expr) is not None:
                texts.append(expr)
    if not texts:
        return None
    nums = dict.fromkeys(normalize_number(t) for text in texts for t in _NUM_TOKEN.findall(text))
    return [n for n in nums if len(n.replace(".", "").lstrip("-")) >= 2 and n != value]


def _in_text_order(values: set[str], text: str) -> list[str]:
    """``values`` ordered by where they first occur in ``text`` (lower-cased), values
    not found verbatim last, ties alphabetical: a set's own order changes with
    PYTHONHASHSEED, and the verdict must not."""
    low = text.lower()

    def key(v: str) -> tuple[int, str]:
        at = low.find(v)
        return (at if at >= 0 else len(low), v)

    return sorted(values, key=key)


def _follow_derivation(trace: Trace, author: Step, value: str, query: str, depth: int = 4) -> tuple[Step, str]:
    """Walk a derived value back to the earliest step that introduced one of its inputs
    (docs/architecture.md, 'Attribution protocols': the decisive error is the earliest step whose correction fixes
    the run).
    Returns that step and the value it introduced."""
    for _ in range(depth):
        operands = _operands(author, value)
        if not operands:
            break
        origins = []
        for op in operands:
            if contains_value(query, op):
                continue
            first = next((s for s in trace.steps[: author.index + 1] if contains_value(full_text(s), op)), None)
            step = _responsible_step(trace, first.index) if first else None
            if step is not None and step.index < author.index:
                origins.append((step.index, step, op))
        if not origins:
            break
        _, author, value = min(origins, key=lambda o: o[0])
    return author, value


def _responsible_step(trace: Trace, index: int) -> Step | None:
    """The agent step accountable for what step ``index`` shows: itself if it is a
    candidate, else the nearest earlier candidate (the one that caused the output)."""
    for step in reversed(trace.steps[: index + 1]):
        if may_be_blamed(trace, step):
            return step
    return None


# ------------------------------------------------------------- unsupported new facts (R.1)

_CLAIM = re.compile(
    r"\b(here (?:are|is)|found|according to|retrieved|results?|figures?|"
    r"the (?:price|population|rating|answer) (?:is|was)|shows?)\b",
    re.I,
)


def unsupported_facts(ctx: Context) -> list[Signal]:
    """A step that asserts several specific facts (numbers, names) that appear nowhere in
    the task or any earlier step or observation, without a tool result of its own."""
    seen = set(salient_values(ctx.trace.task.query or ""))
    out = []
    for step in ctx.trace.steps:
        if (
            may_be_blamed(ctx.trace, step)
            and step.kind != "plan"
            and not is_relay_agent(step.agent)
            and not step.observation
        ):
            text = capped(step.content or "")
            new = [
                v
                for v in salient_values(text)
                if v not in seen and any(ch.isdigit() for ch in v) and not is_weak_value(v)
            ]
            if len(new) >= 2 and _CLAIM.search(text):
                strength = min(0.7, 0.3 + 0.08 * len(new))
                out.append(
                    Signal(
                        step.index,
                        strength,
                        "R.1",
                        "unsupported-facts",  # values quoted
                        f"asserts {len(new)} figures seen nowhere before (e.g. {', '.join(sorted(new)[:3])})",
                    )
                )
        seen |= salient_values(full_text(step))
    return out


# ------------------------------------------------------------ fabrication language (R.1)

_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)|<code>.*?(?:</code>|\Z)", re.S | re.I)
_MARKUP = re.compile(r"[*_#`>]+|^\s*(?:thought|code)\s*:\s*$", re.M | re.I)


def _prose(step: Step) -> str:
    """What a step says in words: its content without code blocks (however fenced) and
    without markdown markup, so no signal depends on how the reasoning is formatted."""
    return _MARKUP.sub(" ", _CODE_BLOCK.sub(" ", capped(step.content or "")))


_FABRICATION = re.compile(
    r"\b(assum(?:e|ing|ption)|hypothetical(?:ly)?|let'?s say|placeholder|sample data|dummy|"
    r"simulat(?:e|ed|ing)|mock(?:ed)?|example (?:data|values)|for demonstration|"
    r"made[- ]up|fictional|approximate(?:ly)?|i (?:don'?t|do not) have access)\b",
    re.I,
)


def fabrication_language(ctx: Context) -> list[Signal]:
    """An agent that says it assumes, simulates or makes up data instead of finding it."""
    out = []
    for step in ctx.candidates:
        text = _prose(step)
        m = _FABRICATION.search(text)
        if m:
            out.append(
                Signal(
                    step.index,
                    0.45,
                    "R.1",
                    "fabrication-language",
                    f"says “{_clip(quote(text, m.start(), m.end()), 70)}” instead of using real data",
                )
            )
    return out


# ------------------------------------------------------------- tool / execution errors

_ERROR = re.compile(
    r"(traceback \(most recent call last\)|exitcode: [1-9]|\berror\b[.:!\s]|"
    r"exception|execution failed|not found|404|permission denied|timed? ?out)",
    re.I,
)
#: How tools and relaying agents commonly open a failure report (``Error. Could not
#: transcribe this audio.``, ``I'm sorry, but I cannot access...``): read at the start of
#: a relaying agent's message, where a page's own text could not trigger them.
_FAILURE_LEAD = re.compile(
    r"\A\W*(?:error\b|failed\b|failure\b|exception\b|could ?n[o']t\b|unable to\b|cannot\b|can'?t\b|"
    r"i(?:'m| am) (?:sorry|unable|not able)|sorry\b|no (?:results?|matches|file|such)\b|access denied|"
    r"forbidden|permission denied|not found|invalid\b|timed? ?out|rate limit)",
    re.I,
)


def execution_errors(ctx: Context) -> list[Signal]:
    """A step whose own tool call or code failed (recorded error, or an error in the
    environment's next output). Weaker when the same agent later recovers."""
    out = []
    steps = ctx.trace.steps
    for step in steps:
        text, m = _failure_text(step)
        if m is None:
            continue
        author = step if may_be_blamed(ctx.trace, step) else _responsible_step(ctx.trace, step.index)
        if author is None or _only_reports(ctx, author):
            continue  # the final answer relaying an earlier failure did not cause it
        mode = "A.2" if re.search(r"syntax|parse|format", text[:4000], re.I) else "A.1"
        recovered = any(
            s.agent == author.agent and s.index > step.index and not s.error for s in steps[step.index + 1 :]
        )
        out.append(
            Signal(
                author.index,
                0.3 if recovered else 0.5,
                mode,
                "execution-error",
                f"its action failed (“{_clip(quote(text, m.start(), m.end()), 70)}”)"
                + ("; later recovered" if recovered else ""),
            )
        )
    return out


def _failure_text(step: Step) -> tuple[str, re.Match[str] | None]:
    """The text of ``step`` that reports what its action returned, and the first failure
    phrase in it: the recorded error, an environment output, a relaying agent's message
    (failure phrasing at its start only), else the step's observation."""
    if step.error:
        text = step.error[:4000]
        return text, _ERROR.search(text)
    if step.kind in ("observation", "tool"):
        text = capped(step.content or "")[:4000]
        return text, _ERROR.search(text) or _FAILURE_LEAD.search(text)
    if is_relay_agent(step.agent) and step.content:
        text = step.content[:4000]
        return text, _FAILURE_LEAD.search(text)
    text = (step.observation or "")[:4000]
    return text, (_ERROR.search(text) or _FAILURE_LEAD.search(text)) if text else None


def _only_reports(ctx: Context, step: Step) -> bool:
    """True when ``step`` is the final-answer step and only hands over its answer (a
    ``final_answer`` call or the last message): an error it shows was made earlier."""
    if step.index != ctx.final_index:
        return False
    return not step.tool_calls or all(
        "final" in c.name.lower() or "final_answer" in jsonio.as_text(c.arguments) for c in step.tool_calls
    )


# ------------------------------------------------------------- loops and stalls (A.4)


def _ledger_flags(step: Step) -> tuple[bool, bool]:
    """(no progress, in a loop) from a Magentic-One orchestrator ledger in the content."""
    text = capped(step.content or "")
    if "is_progress_being_made" not in text and "is_in_loop" not in text:
        return False, False
    start = text.find("{")
    try:
        ledger = orjson.loads(text[start:]) if start >= 0 else {}
    except orjson.JSONDecodeError:
        return ('"is_progress_being_made": {' in text and '"answer": false' in text), False

    def answer(key: str) -> bool:
        item = ledger.get(key) if isinstance(ledger, dict) else None
        return bool(isinstance(item, dict) and item.get("answer"))

    return not answer("is_progress_being_made"), answer("is_in_loop")


def _action_digest(step: Step) -> str:
    """A digest of a step's whole action: its content (whitespace folded, case ignored)
    and its tool calls' names and arguments. Two actions that differ anywhere differ
    here (keyed on their first 500 characters, Claude Code's TodoWrite updates, which
    resend the list with one status moved, were called repeated unchanged)."""
    text = " ".join((step.content or "").split()).lower().encode()
    calls = jsonio.dumps([[c.name, c.arguments] for c in step.tool_calls], sort_keys=True, default=str)
    return hashlib.blake2b(text + b"\0" + calls, digest_size=16).hexdigest()


def loops_and_stalls(ctx: Context) -> list[Signal]:
    """Repeated identical actions by the same agent, and the first step after which the
    system's own ledger reports no progress or a loop."""
    out = []
    seen: dict[tuple[str, str], int] = {}
    quoted: set[int] = set()  # steps whose repeated action is already quoted once
    for step in ctx.candidates:
        key_text = " ".join(step_text(step).split()).lower()
        if not step.tool_calls and len(key_text) < 200:
            continue  # short routing messages ("Next speaker WebSurfer") repeat by design
        key = (step.agent, _action_digest(step))
        if key in seen:
            what = "it" if seen[key] in quoted else f"its action (“{_clip(key_text, 50)}”)"
            quoted.add(seen[key])
            out.append(
                Signal(seen[key], 0.45, "A.4", "repeated-action", f"{what} is repeated unchanged at step {step.coord}")
            )
        else:
            seen[key] = step.index
    for step in ctx.trace.steps:
        stalled, looping = _ledger_flags(step)
        if stalled or looping:
            prev = next(
                (
                    s
                    for s in reversed(ctx.trace.steps[: step.index])
                    if may_be_blamed(ctx.trace, s) and s.agent != step.agent
                ),
                None,
            )
            if prev is not None:
                flag = '"is_in_loop"' if looping else '"is_progress_being_made"'
                at = step.content.find(flag) if step.content else -1
                said = f" (“{_clip(quote(step.content, at, at + len(flag), 60), 80)}”)" if at >= 0 else ""
                out.append(
                    Signal(
                        prev.index,
                        0.5,
                        "A.4" if looping else "PL.1",
                        "no-progress",
                        f"the next ledger (step {step.coord}) reports "
                        + ("a loop" if looping else "no progress")
                        + said,
                    )
                )
                break
    return out


# ------------------------------------------------------------- premature termination (A.3)

_GIVE_UP = re.compile(
    r"\b(unable to|could not|couldn'?t|cannot|can'?t|not available|"
    r"no (?:\w+ )?(?:found|information|results?)|unknown|n/a)\b",
    re.I,
)


def premature_termination(ctx: Context) -> list[Signal]:
    """A final answer that gives up or is empty while the run failed."""
    if not ctx.failed or ctx.final_index is None:
        return []
    m = _GIVE_UP.search(ctx.final)
    step = ctx.trace.steps[ctx.final_index]
    if m and may_be_blamed(ctx.trace, step):
        return [
            Signal(
                step.index,
                0.4,
                "A.3",
                "gave-up",
                f"ends the run with “{_clip(quote(ctx.final, m.start(), m.end()), 70)}” instead of an answer",
            )
        ]
    return []


# ------------------------------------------------------------- rubber-stamp verification

_APPROVE = re.compile(
    r"\b(verified|is correct|are correct|confirm(?:ed|s)?|accurate|"
    r"looks good|approved?|validated)\b",
    re.I,
)


def rubber_stamp(ctx: Context) -> list[Signal]:
    """A verifier that approves work on a run whose answer is wrong (V.2)."""
    if not ctx.failed:
        return []
    for step in ctx.candidates:
        text = capped(step.content or "")
        m = _APPROVE.search(text) if is_verifier(step.agent) else None
        if m:
            return [
                Signal(
                    step.index,
                    0.35,
                    "V.2",
                    "rubber-stamp",
                    f"approves the work (“{_clip(quote(text, m.start(), m.end()), 70)}”) "
                    "although the run's answer is wrong",
                )
            ]
    return []


# ------------------------------------------------------------- gold seen, then lost (V.1)


def gold_lost(ctx: Context) -> list[Signal]:
    """With the gold answer: it appeared in the run, but the next agent step moved on
    without it (context loss or ignored evidence)."""
    if not ctx.gold or not ctx.failed:
        return []
    for step in ctx.trace.steps:
        if step.index == 0 or step.coord is None:
            continue
        if answer_matches(full_text(step), ctx.gold) and not answer_matches(ctx.final, ctx.gold):
            nxt = next((s for s in ctx.trace.steps[step.index + 1 :] if may_be_blamed(ctx.trace, s)), None)
            if nxt is not None and not answer_matches(full_text(nxt), ctx.gold):
                seen = _clip(quote_value(full_text(step), ctx.gold.strip().lower()), 70)
                return [
                    Signal(
                        nxt.index,
                        0.55,
                        "V.1",
                        "gold-lost",
                        f"the correct answer was visible at step {step.coord} (“{seen}”) but is dropped here",
                    )
                ]
            return []
    return []


DETECTORS = (
    wrong_arithmetic,
    final_value_origin,
    unsupported_facts,
    fabrication_language,
    execution_errors,
    loops_and_stalls,
    premature_termination,
    rubber_stamp,
    gold_lost,
)


def collect(ctx: Context) -> list[Signal]:
    """Run every detector; returns all signals (several per step are possible)."""
    out: list[Signal] = []
    for detector in DETECTORS:
        out.extend(detector(ctx))
    return out


__all__ = ["Signal", "Context", "collect", "DETECTORS", "normalize_number"]
