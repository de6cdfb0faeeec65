"""Offline, deterministic error mutators: one per failure mode where a mechanical edit of
a step makes sense (DESIGN §8 step 1, the offline branch; taxonomy DESIGN §5).

``mutate(trace, index, mode, seed)`` rewrites step ``index`` of ``trace`` into a flawed
version and says what the flaw is; ``applicable_modes(trace, index)`` lists the modes
whose mutator fits that step. Mutators work on any native trace (not only the built-in
environments): they read the step's content and tool calls and the steps before it.
Choices among several candidates (which number, which argument) come from
``random.Random(f"{trace.id}:{index}:{mode}:{seed}")``, so a seed reproduces a mutation.

Modes, what the mutator does, and which steps it fits:

==== ==================================================================== =====================================
code edit                                                                 fits
==== ==================================================================== =====================================
R.3  perturb one number (±1, ±2, ×2, +10 units of its last digit), in     a number in a tool argument or the
     the tool arguments and, when the argument text is quoted in the     content (list markers ``1.`` excluded)
     content, there too
R.1  drop the tool call and state a made-up result as if found            a step with a recorded tool result,
     (``The result is N.``), or add an unsupported figure                  or a number in the content (not a
                                                                          final answer)
R.2  flip one operator (``+``/``-``, ``*``/``/``, ``>=``/``>``,             an operator between operands or
     ``<=``/``<``, ``min``/``max``), in arguments and content             ``min(``/``max(``
R.4  replace a number taken from the task with another number of the      a number that also occurs in the
     task (confusing which quantity is which)                             task query, which has another one
PL.1 drop one line of a numbered plan and renumber                        a plan step (kind ``plan``/
                                                                          ``planning`` or >= 3 numbered lines)
A.1  corrupt one tool argument only (content untouched): a number is      a tool call with arguments
     perturbed, an expression loses its last operand, a name becomes
     another value used for that argument elsewhere in the trace (else
     loses its last letter), code loses its last line
A.2  break the syntax of the step's last code block                       a fenced code block with a ``:`` line
A.3  turn the step into a premature final answer (the latest code         an agent step that is not the last
     block, else the latest number seen before the step, else the step's  one and not already final
     own last number)
A.4  repeat the agent's previous step (content and tool calls)            an earlier, different step by the
                                                                          same agent
C.2  ignore a peer: after a peer's critique (fail, mismatch, fix...),      a peer critique answered by a revision,
     resubmit the agent's own earlier step; otherwise replace a number     or a number taken from a peer's step
     taken from a peer's latest message by that peer's earlier figure      that had an earlier, different figure
V.2  approve without checking: drop tool calls, content becomes an        a verifier-like step (agent id/role
     approval                                                             or content mentions checking)
==== ==================================================================== =====================================

Modes without an offline mutator (P.1, P.2, PL.2, V.1, C.1, C.3) need the ``text:``
generator or, later, the LLM generator. Nothing a mutator writes names the injection.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from whenpro_core.errors import ConfigError
from whenpro_core.model import Step, ToolCall, Trace

FRAMING = frozenset({"user", "system"})
NUMBER = re.compile(r"(?<![\w.:])\d+(?:\.\d+)?(?::\d\d)?(?!\w|\.\d|:\d)")
OPERATOR = re.compile(r"(?<=[\w)\]]) (\+|-|\*|/|>=|<=|>|<) (?=[\w(\[])|\b(min|max)\(")
FLIP = {"+": "-", "-": "+", "*": "/", "/": "*", ">=": ">", ">": ">=", "<=": "<", "<": "<=",
        "min": "max", "max": "min"}
EXPR = re.compile(r"^[\d\s.+\-*/()]+$")
CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
CRITIQUE = re.compile(r"\b(fail(?:ed|s|ure)?|mismatch|wrong|incorrect|please fix|redo|error)\b", re.IGNORECASE)
VERIFIER_ROLE = re.compile(r"verif|test|check|critic|review|judge|audit|valid", re.IGNORECASE)
CHECK_WORDS = re.compile(r"\b(approved?|verified|checked|all tests|looks (?:right|correct|good))\b", re.IGNORECASE)


@dataclass
class Mutation:
    """A rewritten step and what is wrong with it.

    ``step`` keeps the original's index, coordinate and agent; its observation and error
    are cleared (replay recomputes them from the tool calls). ``description`` is the
    labeller's reason (it becomes ``GroundTruth.reason``)."""

    step: Step
    description: str


# --- helpers ---------------------------------------------------------------------------

def _rng(trace: Trace, index: int, mode: str, seed: int) -> random.Random:
    return random.Random(f"{trace.id}:{index}:{mode}:{seed}")


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


def _is_agent_step(step: Step) -> bool:
    return step.kind not in FRAMING and step.agent not in ("user", "system")


def _numbers(text: str) -> list[re.Match]:
    """Number tokens of ``text`` that are not list markers (``1.`` at a line start)."""
    out = []
    for m in NUMBER.finditer(text or ""):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if not text[line_start:m.start()].strip() and text[m.end():m.end() + 1] in (".", ")"):
            continue
        out.append(m)
    return out


def perturb(token: str, rng: random.Random) -> str:
    """A nearby wrong value with the same number of decimals (never equal, never negative
    for a non-negative input); an ``HH:MM`` time moves by 5 to 60 minutes."""
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
    choice = rng.choice(options)
    return f"{choice:.{decimals}f}"


def _string_args(call: ToolCall) -> list[tuple[Any, str]]:
    """``(key, value)`` of a call's string arguments (key ``None`` for a bare string)."""
    if isinstance(call.arguments, dict):
        return [(k, v) for k, v in call.arguments.items() if isinstance(v, str)]
    if isinstance(call.arguments, str):
        return [(None, call.arguments)]
    return []


def _set_arg(step: Step, ci: int, key: Any, value: Any) -> None:
    call = step.tool_calls[ci]
    if key is None:
        call.arguments = value
    else:
        call.arguments = {**call.arguments, key: value}


def _arg_text_edits(step: Step, pattern: Callable[[str], list[re.Match]]) -> list[tuple[int, Any, str, re.Match]]:
    edits = []
    for ci, call in enumerate(step.tool_calls):
        for key, value in _string_args(call):
            for m in pattern(value):
                edits.append((ci, key, value, m))
    return edits


def _apply_arg_edit(new: Step, ci: int, key: Any, old_text: str, m: re.Match, replacement: str) -> str:
    """Replace match ``m`` in a string argument, and the same argument text in the content."""
    new_text = old_text[:m.start()] + replacement + old_text[m.end():]
    _set_arg(new, ci, key, new_text)
    if old_text and old_text in new.content:
        new.content = new.content.replace(old_text, new_text, 1)
    return new_text


def _clip(text: str, n: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


# --- R.3 numerical error ---------------------------------------------------------------

def _r3_fits(trace: Trace, i: int) -> bool:
    s = trace.steps[i]
    return bool(_arg_text_edits(s, _numbers) or _numeric_args(s) or _numbers(s.content))


def _numeric_args(step: Step) -> list[tuple[int, Any, Any]]:
    out = []
    for ci, call in enumerate(step.tool_calls):
        if isinstance(call.arguments, dict):
            out += [(ci, k, v) for k, v in call.arguments.items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return out


def _r3(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    new = fresh_step(s)
    text_edits = _arg_text_edits(s, _numbers)
    num_args = _numeric_args(s)
    if text_edits:
        ci, key, text, m = rng.choice(text_edits)
        wrong = perturb(m.group(), rng)
        after = _apply_arg_edit(new, ci, key, text, m, wrong)
        return Mutation(new, f"Uses {wrong} instead of {m.group()} in `{_clip(after)}`; "
                             "everything computed from it is off.")
    if num_args:
        ci, key, value = rng.choice(num_args)
        wrong_text = perturb(str(value), rng)
        wrong: Any = float(wrong_text) if isinstance(value, float) else int(Decimal(wrong_text))
        _set_arg(new, ci, key, wrong)
        new.content = re.sub(rf"(?<![\w.]){re.escape(str(value))}(?!\w|\.\d)", str(wrong), new.content, count=1)
        return Mutation(new, f"Uses {wrong} instead of {value} for {key}; everything computed from it is off.")
    m = rng.choice(_numbers(s.content))
    wrong = perturb(m.group(), rng)
    new.content = s.content[:m.start()] + wrong + s.content[m.end():]
    return Mutation(new, f"States {wrong} where the correct figure is {m.group()}.")


# --- R.1 hallucination -----------------------------------------------------------------

def _r1_fits(trace: Trace, i: int) -> bool:
    s = trace.steps[i]
    return bool((s.tool_calls and s.observation) or (s.kind != "final_answer" and _numbers(s.content)))


def _r1(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    if s.tool_calls and s.observation:
        nums = _numbers(s.observation)
        if nums:
            claim = perturb(nums[-1].group(), rng)
            text = f"{s.content.rstrip()} The result is {claim}."
            why = f"States the result {claim} without calling {s.tool_calls[0].name} (the tool would give {nums[-1].group()})."
        else:
            text = f"{s.content.rstrip()} The result: everything works as expected."
            why = f"Claims the outcome of {s.tool_calls[0].name} without running it."
        return Mutation(fresh_step(s, content=text, tool_calls=[]), why)
    m = _numbers(s.content)[-1]
    claim = perturb(m.group(), rng)
    text = f"{s.content.rstrip()} This also matches the figure of {claim} found earlier."
    return Mutation(fresh_step(s, content=text), f"Cites a figure of {claim} that no earlier step produced.")


# --- R.2 reasoning error ---------------------------------------------------------------

def _ops(text: str) -> list[re.Match]:
    return list(OPERATOR.finditer(text or ""))


def _r2_fits(trace: Trace, i: int) -> bool:
    s = trace.steps[i]
    return bool(_arg_text_edits(s, _ops) or _ops(s.content))


def _flip(m: re.Match) -> str:
    if m.group(1):
        return f" {FLIP[m.group(1)]} "
    return f"{FLIP[m.group(2)]}("


def _r2(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    new = fresh_step(s)
    edits = _arg_text_edits(s, _ops)
    if edits:
        ci, key, text, m = rng.choice(edits)
        after = _apply_arg_edit(new, ci, key, text, m, _flip(m))
        return Mutation(new, f"Applies the wrong operation: `{_clip(after)}` instead of `{_clip(text)}`.")
    m = rng.choice(_ops(s.content))
    new.content = s.content[:m.start()] + _flip(m) + s.content[m.end():]
    return Mutation(new, f"Uses '{_flip(m).strip(' (')}' where the derivation needs '{m.group().strip(' (')}'.")


# --- R.4 task misunderstanding ---------------------------------------------------------

def _task_numbers(trace: Trace) -> list[str]:
    return list(dict.fromkeys(m.group() for m in _numbers(trace.task.query)))


def _r4_candidates(trace: Trace, i: int) -> list[tuple[str, Any]]:
    s = trace.steps[i]
    task = _task_numbers(trace)
    if len(task) < 2:
        return []
    cands: list[tuple[str, Any]] = [("arg", e) for e in _arg_text_edits(s, _numbers) if e[3].group() in task]
    if not cands:
        cands = [("content", m) for m in _numbers(s.content) if m.group() in task]
    return cands


def _r4(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    new = fresh_step(s)
    where, cand = rng.choice(_r4_candidates(trace, i))
    m = cand[3] if where == "arg" else cand
    other = rng.choice([n for n in _task_numbers(trace) if n != m.group()])
    if where == "arg":
        ci, key, text, _ = cand
        _apply_arg_edit(new, ci, key, text, m, other)
    else:
        new.content = s.content[:m.start()] + other + s.content[m.end():]
    return Mutation(new, f"Misreads the task: takes {other} (another quantity of the task) where {m.group()} belongs.")


# --- PL.1 ineffective planning ---------------------------------------------------------

PLAN_ITEM = re.compile(r"^(\s*)(\d+)([.)])\s+(.*)$", re.MULTILINE)


def _pl1_fits(trace: Trace, i: int) -> bool:
    s = trace.steps[i]
    items = PLAN_ITEM.findall(s.content or "")
    return len(items) >= 2 and (s.kind in ("plan", "planning") or len(items) >= 3)


def _pl1(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    lines = s.content.split("\n")
    numbered = [n for n, ln in enumerate(lines) if PLAN_ITEM.match(ln)]
    drop = rng.choice(numbered[:-1] if len(numbered) > 2 else numbered)
    dropped = PLAN_ITEM.match(lines[drop]).group(4)
    kept, k = [], 0
    for n, ln in enumerate(lines):
        if n == drop:
            continue
        m = PLAN_ITEM.match(ln)
        if m:
            k += 1
            ln = f"{m.group(1)}{k}{m.group(3)} {m.group(4)}"
        kept.append(ln)
    return Mutation(fresh_step(s, content="\n".join(kept)),
                    f"The plan leaves out '{_clip(dropped)}', so the work it needs is never done.")


# --- A.1 tool parameter error ----------------------------------------------------------

def _a1_fits(trace: Trace, i: int) -> bool:
    s = trace.steps[i]
    return any(_string_args(c) or _numeric_args(s) for c in s.tool_calls)


def _a1(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    new = fresh_step(s)
    options = [(ci, k, v) for ci, c in enumerate(s.tool_calls) for k, v in _string_args(c)]
    options += _numeric_args(s)
    ci, key, value = rng.choice(options)
    name = s.tool_calls[ci].name
    if not isinstance(value, str):
        wrong: Any = type(value)(Decimal(perturb(str(value), rng)))
    elif "\n" in value.strip():
        body = value.rstrip("\n").split("\n")
        wrong = "\n".join(body[:-1]) + "\n"
    elif EXPR.match(value) and len(_ops(value)) >= 1:
        last = _ops(value)[-1]
        wrong = value[:last.start()].rstrip()
    else:
        seen = [a.get(key) for st in trace.steps for c in st.tool_calls
                if c.name == name and isinstance(a := c.arguments, dict) and isinstance(a.get(key), str)]
        others = sorted({v for v in seen if v != value})
        wrong = rng.choice(others) if others else (value[:-1] if len(value) > 1 else value + "x")
    _set_arg(new, ci, key, wrong)
    label = f"{name}({key}=...)" if key is not None else name
    return Mutation(new, f"Calls {label} with {_clip(repr(wrong))} instead of {_clip(repr(value))}.")


# --- A.2 output format / syntax error --------------------------------------------------

def _a2_fits(trace: Trace, i: int) -> bool:
    blocks = CODE_BLOCK.findall(trace.steps[i].content or "")
    return bool(blocks) and bool(re.search(r":\s*$", blocks[-1], re.MULTILINE))


def _a2(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    m = list(CODE_BLOCK.finditer(s.content))[-1]
    code = m.group(1)
    colons = [c for c in re.finditer(r":(\s*)$", code, re.MULTILINE)]
    c = rng.choice(colons)
    broken = code[:c.start()] + code[c.start() + 1:]
    content = s.content[:m.start(1)] + broken + s.content[m.end(1):]
    line = code[: c.start()].rsplit("\n", 1)[-1].strip()
    return Mutation(fresh_step(s, content=content), f"The code is not valid Python: `{_clip(line)}` lacks its colon.")


# --- A.3 premature termination ---------------------------------------------------------

def _a3_fits(trace: Trace, i: int) -> bool:
    s = trace.steps[i]
    return s.kind != "final_answer" and i < len(trace.steps) - 1


def _partial_result(trace: Trace, i: int) -> tuple[str, bool]:
    """The latest artefact available at step ``i``: a code block (own content first), else
    the latest number of an agent step before ``i`` (observation, then content)."""
    for st in [trace.steps[i], *reversed(trace.steps[:i])]:
        if _is_agent_step(st):
            blocks = CODE_BLOCK.findall(st.content or "")
            if blocks:
                return blocks[-1], True
    for st in reversed(trace.steps[:i]):
        if not _is_agent_step(st):
            continue
        for text in (st.observation or "", st.content or ""):
            nums = [m.group() for m in re.finditer(r"(?<![\w.])-?\d+(?:\.\d+)?(?::\d\d)?(?!\w|\.\d)", text)]
            if nums:
                return nums[-1], False
    own = _numbers(trace.steps[i].content or "")
    if own:
        return own[-1].group(), False
    first = (trace.steps[i].content or "").strip().split("\n")[0]
    return first or "(none)", False


def _a3(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    value, is_code = _partial_result(trace, i)
    content = f"Final answer:\n```python\n{value}```" if is_code else f"Final answer: {value}"
    new = fresh_step(s, content=content, tool_calls=[], kind="final_answer")
    shown = "its current code" if is_code else repr(value)
    return Mutation(new, f"Stops early and returns {shown} as the final answer before the remaining work is done.")


# --- A.4 repetition --------------------------------------------------------------------

def _previous_own(trace: Trace, i: int) -> Step | None:
    s = trace.steps[i]
    for st in reversed(trace.steps[:i]):
        if st.agent == s.agent and _is_agent_step(st):
            same = st.content == s.content and [c.model_dump() for c in st.tool_calls] == \
                [c.model_dump() for c in s.tool_calls]
            return None if same else st
    return None


def _a4_fits(trace: Trace, i: int) -> bool:
    return _previous_own(trace, i) is not None


def _a4(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    prev = _previous_own(trace, i)
    new = fresh_step(s, content=prev.content, tool_calls=[c.model_copy(deep=True) for c in prev.tool_calls],
                 kind=prev.kind)
    return Mutation(new, f"Repeats its step {prev.coord} instead of moving on.")


# --- C.2 communication failure ---------------------------------------------------------

def _c2_plan(trace: Trace, i: int) -> tuple[str, Any] | None:
    s = trace.steps[i]
    peers = [st for st in trace.steps[:i] if _is_agent_step(st) and st.agent != s.agent]
    if not peers:
        return None
    latest = peers[-1]
    own_before = [st for st in trace.steps[:latest.index] if st.agent == s.agent and _is_agent_step(st)]
    if CRITIQUE.search(latest.content or "") and own_before and own_before[-1].content != s.content \
            and own_before[-1].kind != "final_answer":
        return "resubmit", (latest, own_before[-1])
    for m in _numbers(s.content):
        for peer in reversed(peers):
            if m.group() in {n.group() for n in _numbers((peer.content or "") + "\n" + (peer.observation or ""))}:
                earlier = [st for st in peers if st.agent == peer.agent and st.index < peer.index]
                for old in reversed(earlier):
                    stale = [n.group() for n in _numbers((old.observation or "") + "\n" + (old.content or ""))
                             if n.group() != m.group()]
                    if stale:
                        return "stale", (m, peer, stale[-1])
                break
    return None


def _c2_fits(trace: Trace, i: int) -> bool:
    return _c2_plan(trace, i) is not None


def _c2(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    how, data = _c2_plan(trace, i)
    if how == "resubmit":
        peer, own = data
        new = fresh_step(s, content=own.content, tool_calls=[c.model_copy(deep=True) for c in own.tool_calls],
                     kind=own.kind)
        return Mutation(new, f"Ignores {peer.agent}'s report at step {peer.coord} and resubmits its step "
                             f"{own.coord} unchanged.")
    m, peer, stale = data
    new = fresh_step(s, content=s.content[:m.start()] + stale + s.content[m.end():])
    return Mutation(new, f"Ignores {peer.agent}'s latest figure {m.group()} (step {peer.coord}) and uses "
                         f"its earlier {stale}.")


# --- V.2 inadequate verification ------------------------------------------------------

def _v2_fits(trace: Trace, i: int) -> bool:
    s = trace.steps[i]
    if s.kind == "final_answer" or not _is_agent_step(s):
        return False
    roles = {a.id: (a.role or "") for a in trace.agents}
    return bool(VERIFIER_ROLE.search(s.agent) or VERIFIER_ROLE.search(roles.get(s.agent, ""))
                or CHECK_WORDS.search(s.content or ""))


def _v2(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    new = fresh_step(s, content="I looked over the work so far and it is correct. Approved.", tool_calls=[],
                 kind="assistant")
    return Mutation(new, f"{s.agent} approves at step {s.coord} without checking the work.")


#: mode -> (fits(trace, index), apply(trace, index, rng)).
MUTATORS: dict[str, tuple[Callable[[Trace, int], bool], Callable[[Trace, int, random.Random], Mutation]]] = {
    "R.1": (_r1_fits, _r1), "R.2": (_r2_fits, _r2), "R.3": (_r3_fits, _r3), "R.4": (lambda t, i: bool(_r4_candidates(t, i)), _r4),
    "PL.1": (_pl1_fits, _pl1), "A.1": (_a1_fits, _a1), "A.2": (_a2_fits, _a2), "A.3": (_a3_fits, _a3),
    "A.4": (_a4_fits, _a4), "C.2": (_c2_fits, _c2), "V.2": (_v2_fits, _v2),
}


def check_injectable(trace: Trace, index: int) -> Step:
    if not 0 <= index < len(trace.steps):
        raise ConfigError(f"step index {index} out of range", expected=f"0..{len(trace.steps) - 1}")
    step = trace.steps[index]
    if not _is_agent_step(step):
        raise ConfigError(f"step {step.coord} is the {step.kind} framing, not an agent's step",
                          expected="a step taken by an agent")
    return step


def applicable_modes(trace: Trace, index: int) -> list[str]:
    """Failure-mode codes whose offline mutator fits step ``index`` (empty for framing
    steps such as the user's task)."""
    if not 0 <= index < len(trace.steps) or not _is_agent_step(trace.steps[index]):
        return []
    return [code for code, (fits, _) in MUTATORS.items() if fits(trace, index)]


def mutate(trace: Trace, index: int, mode: str, seed: int = 0) -> Mutation:
    """Rewrite step ``index`` of ``trace`` with an error of failure mode ``mode``.

    Raises ConfigError when the step is a framing step, when ``mode`` has no offline
    mutator, or when the mutator does not fit this step (the message lists the modes that
    do)."""
    step = check_injectable(trace, index)
    code = mode.strip().upper()
    if code not in MUTATORS:
        raise ConfigError(f"no offline mutator for mode {mode!r}",
                          expected=f"one of {', '.join(MUTATORS)}, or --generator text:...")
    fits, apply = MUTATORS[code]
    if not fits(trace, index):
        ok = applicable_modes(trace, index)
        raise ConfigError(f"mode {code} does not fit step {step.coord} ({step.agent}, {step.kind})",
                          expected=f"one of {', '.join(ok)}" if ok else "another step")
    return apply(trace, index, _rng(trace, index, code, seed))
