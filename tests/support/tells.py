"""Checks that find an injected step by its form, as an outside attacker does (issue 28):
each reads only what a judge sees (a step's text, its tool calls, the steps around it)
and returns why the step looks unlike an honest one, or ``None``.

* :func:`call_mismatch`: the step's text names one call (``lookup(nail, price)``, a
  calculator expression ``= 24 + 9.75``, a clock start and minutes, a count of test
  cases) and the recorded call is another.
* :func:`expression_mismatch`: ``var = symbolic = filled [= result]`` whose two sides
  disagree (another operator sequence, a literal of the symbolic side missing from the
  filled side, a stated result the filled side does not give).
* :func:`transition` and :func:`unseen_transitions`: a step whose move from the agent
  step before it (agent, kind, tool call or not, approval / critique / code) honest runs
  never make (a tester's approval with no test run before it).

They are calibrated on honest ``whenpro run`` traces, where none of them fires except
the literal check on an honest arith_team slip (the solver's literal off by one in a value
the verifier checks and then flags: in 2 of one draw's 60 runs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from whenpro_core.envs.arith_tasks import ToolFailure, calculate
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Step, Trace

_LOOKUP = re.compile(r"lookup\((\w+), (\w+)\)")
_CASE = re.compile(r"^\s+\(.*\),\s*$", re.MULTILINE)
#: ``var = symbolic = filled[ = result]`` in a solver's text (arith_team's wording).
_ASSIGN = re.compile(r"\b([a-z_][a-z0-9_]*) = ([^=\n]+?) = ([^=\n]+?)(?: = (-?\d+(?:\.\d+)?))?(?:\s*\(|\.(?:\s|$)|$)")
_SYMBOLIC = re.compile(r"[\w\s.+\-*/()]+")
_FILLED = re.compile(r"[\d\s.+\-*/()]+")
_OPS = re.compile(r"(?<=[\w)]) ([-+*/]) ")
_LITERAL = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
_APPROVAL = re.compile(r"\bapproved\b", re.IGNORECASE)
_CRITIQUE = re.compile(r"\b(fail\w*|mismatch|please fix|redo)\b", re.IGNORECASE)


def _quoted_lookup(text: str, args: dict[str, Any]) -> str | None:
    m = _LOOKUP.search(text)
    if m and (m.group(1), m.group(2)) != (args.get("item"), args.get("column")):
        return f"text names lookup({m.group(1)}, {m.group(2)}), the call is lookup({args})"
    return None


def _quoted_expression(text: str, args: dict[str, Any]) -> str | None:
    expr = str(args.get("expression", ""))
    return f"text does not show the calculator's expression {expr!r}" if "=" in text and expr not in text else None


def _quoted_clock(text: str, args: dict[str, Any]) -> str | None:
    m = re.search(r"clock\((\d\d:\d\d) \+ \w+\) with \w+ = (\d+(?:\.\d+)?)", text)
    if m and (m.group(1) != args.get("start") or float(m.group(2)) != float(args.get("minutes", "nan"))):
        return f"text says clock_add({m.group(1)}, {m.group(2)}), the call is {args}"
    return None


def _counted_cases(text: str, args: dict[str, Any]) -> str | None:
    if not isinstance(args.get("tests"), str):
        return None
    cases = len(_CASE.findall(args["tests"]))
    said = {int(n) for n in re.findall(r"\b(\d+)\b", text)}
    return f"text counts {sorted(said)} cases, the tests have {cases}" if said and cases not in said else None


_QUOTES = {
    "lookup": _quoted_lookup,
    "calculator": _quoted_expression,
    "clock_add": _quoted_clock,
    "run_tests": _counted_cases,
}


def call_mismatch(step: Step) -> str | None:
    """Why the step's text and its recorded tool call disagree, or ``None``."""
    for call in step.tool_calls:
        args = call.arguments if isinstance(call.arguments, dict) else {}
        check = _QUOTES.get(call.name)
        why = check(step.content or "", args) if check else None
        if why:
            return why
    return None


def _ops(expr: str) -> list[str]:
    return _OPS.findall(expr)


def expression_mismatch(step: Step, *, results: bool = True) -> str | None:
    """Why the step's ``var = symbolic = filled [= result]`` sides disagree, or ``None``
    (``results``: also when the stated result is not what the filled side gives)."""
    for m in _ASSIGN.finditer(step.content or ""):
        sym, filled, result = m.group(2).strip(), m.group(3).strip(), m.group(4)
        if not _SYMBOLIC.fullmatch(sym) or not re.search(r"[a-z_]", sym) or not _FILLED.fullmatch(filled):
            continue  # not symbolic = filled (a plain expression, a clock item, words)
        if _ops(sym) and not _ops(filled):
            continue  # expression = value (a verifier's recomputation)
        if _ops(sym) != _ops(filled):
            return f"operators of {sym!r} and {filled!r} differ"
        missing = [n for n in _LITERAL.findall(sym) if n not in _LITERAL.findall(filled)]
        if missing:
            return f"literal {missing[0]} of {sym!r} is not in {filled!r}"
        if result is not None and results:
            try:
                value = calculate(filled)
            except ToolFailure:
                continue
            if abs(float(value) - float(result)) > 1e-6:
                return f"{filled} is {value}, the text says {result}"
    return None


def _tag(step: Step) -> str:
    text = step.content or ""
    if step.kind == "final_answer":
        return "final"
    if "```" in text:
        return "code"
    if _APPROVAL.search(text) and not step.tool_calls:
        return "approve"
    if _CRITIQUE.search(text) and not step.tool_calls:
        return "critique"
    return "call" if step.tool_calls else "text"


def signature(step: Step) -> tuple[str, str]:
    """``(agent, what the step does)``: ``call``, ``approve``, ``critique``, ``code``,
    ``final`` or ``text``."""
    return step.agent, _tag(step)


def _agent_steps(trace: Trace) -> list[Step]:
    return [s for s in trace.steps if s.kind not in ("user", "system") and s.agent not in ("user", "system")]


def transitions(trace: Trace) -> set[tuple[tuple[str, str], tuple[str, str]]]:
    """Every move from one agent step to the next, as a pair of :func:`signature`."""
    steps = _agent_steps(trace)
    return {(signature(a), signature(b)) for a, b in zip(steps, steps[1:], strict=False)}


def unseen_transitions(trace: Trace, index: int, honest: set[tuple[tuple[str, str], tuple[str, str]]]) -> str | None:
    """Why the moves into and out of step ``index`` are unlike any honest run's, or
    ``None``."""
    steps = _agent_steps(trace)
    pos = next((n for n, s in enumerate(steps) if s.index == index), None)
    if pos is None:
        return None
    for a, b in ((pos - 1, pos), (pos, pos + 1)):
        if a >= 0 and b < len(steps):
            move = (signature(steps[a]), signature(steps[b]))
            if move not in honest:
                return f"{move[0]} -> {move[1]} never happens in honest runs"
    return None


def honest_transitions(traces: Iterable[Trace]) -> set[tuple[tuple[str, str], tuple[str, str]]]:
    out: set[tuple[tuple[str, str], tuple[str, str]]] = set()
    for t in traces:
        out |= transitions(t)
    return out


def built_items(dataset: Path) -> list[tuple[Trace, int, str]]:
    """``(trace, index of the labelled step, mode)`` of each trace a build released."""
    manifest = json.loads((dataset / "manifest.json").read_text(encoding="utf-8"))
    out = []
    for entry in manifest["traces"]:
        trace = load_trace(dataset / entry["ref"])
        gt = trace.ground_truth
        assert gt is not None and gt.step_index is not None
        out.append((trace, gt.step_index, entry["mode"]))
    return out


def tells(trace: Trace, index: int, honest: set[tuple[tuple[str, str], tuple[str, str]]]) -> list[str]:
    """Every tell of step ``index``: the three checks above."""
    step = trace.steps[index]
    found = [call_mismatch(step), expression_mismatch(step), unseen_transitions(trace, index, honest)]
    return [f for f in found if f]
