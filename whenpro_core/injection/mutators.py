"""Offline, deterministic error mutators: one per failure mode where a mechanical edit of
a step makes sense (docs/architecture.md, 'Injection and warm-start replay' step 1, the offline branch; taxonomy
docs/architecture.md, 'Failure-mode taxonomy').

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
R.3  perturb one number (±1, ±2, ×2, +10 units of its last digit), in     a number in a tool argument (not a
     the tool arguments and where the content quotes the argument (the    copy of a value the run worked out)
     symbolic side of ``v = a + 4 = 94 + 4`` follows a literal); in a     or the content (list markers ``1.``
     computation stated without a tool, its result (bad arithmetic)       excluded)
R.1  work from a made-up input: one number the expression reads from     a one-operator tool expression the
     a variable is made up, in the tool call and where the text quotes    text quotes, by an agent that states
     it (the step keeps its kind and tool call, as honest tool steps of   results without tools too; a
     the agent have them; the tool works the result out on replay). In    computation stated in the text; a
     a computation stated in the text, the same, the result worked out    verifier's report of a failing run of
     right on it. At a verifier's report of its failing test run: its     its own; or a number in a tool-less
     own approval, the count set to every case run. Else add an           step
     unsupported figure (a seeded phrasing of :data:`FIGURES`)
R.2  flip one operator (``+``/``-``, ``*``/``/``, ``>=``/``>``,             an operator between operands or
     ``<=``/``<``, ``min``/``max``), in arguments and content, on both    ``min(``/``max(``
     sides of ``v = a + b = 2 + 3``, a stated result worked out again
R.4  replace a number taken from the task with another number of the      a number that also occurs in the
     task (confusing which quantity is which), on both sides of a         task query, which has another one
     computation, a stated result worked out again
PL.1 drop one line of a numbered plan and renumber                        a plan step (kind ``plan``/
                                                                          ``planning`` or >= 3 numbered lines)
A.1  corrupt one tool argument, and the text where it quotes it (the      a tool call with arguments
     call as the agent wrote it): a number is perturbed, an expression
     loses its last operand (so does its symbolic side), a name becomes
     another value used for that argument elsewhere in the trace (a
     time or figure given as text is perturbed; else it loses its last
     letter), code loses one line (one whose removal leaves Python
     compiling, e.g. a test case, and a count of those cases the text
     states goes down by one; else its last line)
A.2  break the syntax of the step's last code block                       a fenced code block with a ``:`` line
A.3  declare the agent's part done too early: append the sentence by    a step before the agent's last one,
     which the agent says so elsewhere in the trace; else turn the step   not final, when the agent says it is
     into the agent's own final-answer step (its format, with the latest  done elsewhere or gives the final
     code block before the step, else its own, or number seen so far)     answer later (not right after a
                                                                          peer's report of a problem unless
                                                                          its final answer follows one too)
A.4  repeat the agent's previous step (content and tool calls)            an earlier, different step by the
                                                                          same agent
C.2  ignore a peer: after a peer's critique (fail, mismatch, fix...),      a peer critique answered by a revision,
     resubmit the agent's own earlier step; otherwise replace a number     or a number taken from a peer's step
     taken from a peer's latest message by that peer's earlier figure      that had an earlier, different figure
     (in the wording and in the tool call that computes with it)
V.2  approve without checking: the report of a problem becomes the       a verifier-like agent's (id/role)
     agent's own approval from elsewhere in the trace, listing the        report of a problem (critique words,
     values the conversation shows (else a seeded approval,               no tool call, no approval); after its
     :data:`APPROVALS`); after its own failing test run, that approval    own test run, one where a case passed
     with the count of the cases the run shows passing
==== ==================================================================== =====================================

An edit rewrites the step coherently (issue 28): a changed tool argument is changed where
the text quotes it, a changed filled-in number or operator of ``var = symbolic = filled``
on the symbolic side too where it is a literal or an operator there, and a stated result is
worked out again (except R.3's, whose wrong result is the error). No mode turns a check (a
tool call) into a verdict: an approval with no test run before it is a move no honest run
makes.

``whenpro build`` tries a mode only where its error can reach the final answer
(:func:`build_modes`, :data:`NEVER_DECISIVE`): not R.1 by a figure added to a step no peer
computes from, not A.2 in code a peer then runs (the run
reports the syntax error at once), not A.4/C.2 resending code whose test run failed, not
A.4 repeating a tool call just made, a report of a problem a peer has answered since, or a
step without code in place of the code a peer runs next, not C.2 by a stale figure in a
checking agent's message.

Modes without an offline mutator (P.1, P.2, PL.2, V.1, C.1, C.3) need the ``text:``
generator or the LLM generator. Nothing a mutator writes names the injection, and no
mutator writes one fixed sentence (issue 14): an edit keeps the agent's format, kind and
tool calls unless the mode is about them, and its wording is either derived from the
agent's own steps or a seeded choice among several phrasings.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from whenpro_core.errors import ConfigError
from whenpro_core.injection.textedit import (
    ASSIGNMENT,
    CODE_BLOCK,
    COMPUTATION,
    EXPR,
    apply_arg_edit,
    arg_text_edits,
    clip,
    find_numbers,
    find_operators,
    flip,
    fresh_step,
    is_agent_step,
    numeric_args,
    perturb,
    quote_edit,
    refill,
    set_arg,
    string_args,
    token_spans,
    tokens,
)
from whenpro_core.trace.model import Step, Trace

#: Words of a report of a problem; a count of failing cases too (``Failures (1 of 2):``,
#: ``2 failing of 2:``), but not ``No failures in 3 tests`` nor ``Patched the failing case``.
CRITIQUE = re.compile(
    r"\b(fail(?:ed|s|ure)?|mismatch|wrong|incorrect|please fix|redo|error)\b"
    r"|\bfailures \([1-9]|\b[1-9]\d* failing\b",
    re.IGNORECASE,
)
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


def _rng(trace: Trace, index: int, mode: str, seed: int) -> random.Random:
    return random.Random(f"{trace.id}:{index}:{mode}:{seed}")


def _copied(trace: Trace, i: int, text: str) -> bool:
    """Whether a tool argument of step ``i`` is a verbatim copy of text an earlier step
    wrote (at least 20 characters: a peer's code passed on to a test run, say)."""
    body = text.strip()
    return len(body) >= 20 and any(body in (st.content or "") for st in trace.steps[:i])


def _composed(trace: Trace, i: int, edits: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``edits`` (tuples whose third item is an argument's text) on arguments the agent
    composed itself, when there are any: an agent errs in what it writes, not in text it
    passes on verbatim (which stays right in its source step); else all ``edits``."""
    own = [e for e in edits if not _copied(trace, i, e[2])]
    return own or edits


# --- R.3 numerical error ---------------------------------------------------------------


def _r3_fits(trace: Trace, i: int) -> bool:
    """A number to change; in a tool argument, one that is not a copy of a value the run
    worked out (:func:`_read_from_variable`), else a numeric argument or one in the text."""
    s = trace.steps[i]
    edits = arg_text_edits(s, find_numbers)
    if any(not _read_from_variable(s.content, e[2], e[3]) for e in edits):
        return True
    return not edits and bool(numeric_args(s) or find_numbers(s.content))


def _r3(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    new = fresh_step(s)
    text_edits = [e for e in arg_text_edits(s, find_numbers) if not _read_from_variable(s.content, e[2], e[3])]
    text_edits = _composed(trace, i, text_edits)
    num_args = numeric_args(s)
    if text_edits:
        ci, key, text, m = rng.choice(text_edits)
        wrong = perturb(m.group(), rng)
        after = apply_arg_edit(new, ci, key, text, m, wrong)
        return Mutation(
            new, f"Uses {wrong} instead of {m.group()} in `{clip(after)}`; everything computed from it is off."
        )
    if num_args:
        ci, key, value = rng.choice(num_args)
        wrong_text = perturb(str(value), rng)
        wrong_number = float(wrong_text) if isinstance(value, float) else int(Decimal(wrong_text))
        set_arg(new, ci, key, wrong_number)
        new.content = quote_edit(new.content or "", str(value), str(wrong_number))
        return Mutation(new, f"Uses {wrong_number} instead of {value} for {key}; everything computed from it is off.")
    stated = _computations(s.content)
    if stated:  # a computation stated in the text: its result comes out wrong
        a = rng.choice(stated)
        wrong = perturb(a.group("result"), rng)
        new.content = s.content[: a.start("result")] + wrong + s.content[a.end("result") :]
        return Mutation(new, f"Works out {a.group('filled')} as {wrong}; it is {a.group('result')}.")
    m = rng.choice(find_numbers(s.content))
    wrong = perturb(m.group(), rng)
    new.content = s.content[: m.start()] + wrong + s.content[m.end() :]
    return Mutation(new, f"States {wrong} where the correct figure is {m.group()}.")


def _read_from_variable(content: str | None, expr: str, number: re.Match[str]) -> bool:
    """Whether ``number`` (a match in the tool argument ``expr``) stands for a variable on
    the symbolic side of ``var = symbolic = expr`` in ``content``: a value the run worked
    out before, so a changed copy of it disagrees with the run where anyone can see it (the
    audit's 'filled vs symbolic' check). R.3 prefers a literal (a rate, a count from the
    task), changed on both sides: a misread constant reads like the agent's own slip."""
    a = next((a for a in ASSIGNMENT.finditer(content or "") if a.group("filled").strip() == expr.strip()), None)
    if a is None:
        return False
    at = [n for n, t in enumerate(token_spans(expr)) if t.start() == number.start()]
    return bool(at) and at[0] in _read_operands(expr, a.group("sym"))


def _computations(text: str | None) -> list[re.Match[str]]:
    """Computations stated with their result in ``text`` (an agent's arithmetic done
    without a tool, :data:`~whenpro_core.injection.textedit.COMPUTATION`)."""
    return list(COMPUTATION.finditer(text or ""))


# --- R.1 hallucination -----------------------------------------------------------------

#: Ways to add an unsupported figure to a step that has no tool result.
FIGURES = (
    "{c}, in line with the {n} from before.",
    "{c} (consistent with the earlier {n}).",
    "{c}, matching the {n} we had.",
    "{c}; the earlier figure was {n}.",
    "{c}, as with {n} earlier.",
    "{c}, same as the {n} noted above.",
)
#: A result stated without a tool: ``= N`` closing a sentence (``... = 16.``, also when a
#: remark follows: ``... = 16. That completes the plan.``). Group 1 is the value.
_STATED = re.compile(r"=\s*(-?\d[\d:]*(?:\.\d+)?)(?=\.?\s*$|\.\s+[A-Z])")
#: The end of a sentence: a full stop not inside a number.
_SENTENCE_END = re.compile(r"\.(?=\s|$)")


def _own_toolless(trace: Trace, i: int) -> list[Step]:
    s = trace.steps[i]
    return [
        st
        for st in trace.steps
        if st.index != i
        and st.agent == s.agent
        and is_agent_step(st)
        and not st.tool_calls
        and st.kind != "final_answer"
    ]


def _claim_text(trace: Trace, i: int, claim: str, rng: random.Random, pool: tuple[str, ...]) -> str:
    """The step's text with ``claim`` stated the way the agent states results without a
    tool when it does so elsewhere (``... = N.``, closing the sentence that holds the
    step's last ``=``, before any remark that follows it), else a seeded phrasing of
    ``pool``."""
    text = (trace.steps[i].content or "").rstrip()
    if "=" in text and _states_without_tool(trace, i):
        end = _SENTENCE_END.search(text, text.rfind("="))
        cut = end.start() if end else len(text)
        return f"{text[:cut]} = {claim}.{text[cut + 1 :] if end else ''}"
    core = text[:-1] if text.endswith(".") else text
    return rng.choice(pool).format(c=core, n=claim)


def _states_without_tool(trace: Trace, i: int) -> bool:
    """Whether the agent of step ``i`` states results without a tool elsewhere
    (``... = N.``): only then does a tool-less claim read like its own steps."""
    return any(_STATED.search(st.content or "") for st in _own_toolless(trace, i))


def _r1_fits(trace: Trace, i: int) -> bool:
    s = trace.steps[i]
    if s.tool_calls:
        return _made_up_input(trace, i) is not None
    if _misreport(trace, i, every_case=True) is not None:
        return True
    return s.kind != "final_answer" and bool(find_numbers(s.content)) and not _run_verdict(trace, i)


def _read_operands(expr: str, sym: str | None) -> list[int]:
    """Token positions of ``expr``'s numbers that its symbolic side ``sym`` reads from a
    variable (all of them when there is no symbolic side that lines up)."""
    toks, names = tokens(expr), tokens(sym or "")
    if len(names) != len(toks):
        return [n for n, t in enumerate(toks) if t[0].isdigit()]
    return [n for n, (t, v) in enumerate(zip(toks, names, strict=True)) if t[0].isdigit() and not v[0].isdigit()]


def _made_up_input(trace: Trace, i: int) -> tuple[str, str] | None:
    """At a calculator-like step (a one-operator expression the text quotes, maybe as the
    filled-in side of ``var = symbolic = filled``) by an agent that states results
    without a tool elsewhere: ``(expression, symbolic side or "")``, when a number of the
    expression is read from a variable (any number, without a symbolic side). Else
    ``None``."""
    s = trace.steps[i]
    if len(s.tool_calls) != 1 or not _states_without_tool(trace, i):
        return None
    expr = next((v for _, v in string_args(s.tool_calls[0]) if EXPR.match(v)), None)
    if expr is None or len(find_operators(expr)) != 1:
        return None
    if expr.strip() not in (s.content or ""):
        return None
    a = next((a for a in ASSIGNMENT.finditer(s.content or "") if a.group("filled").strip() == expr.strip()), None)
    sym = a.group("sym") if a is not None else ""
    return (expr, sym) if _read_operands(expr, sym) else None


def _r1(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    verdict = _misreport(trace, i, every_case=True)
    if verdict is not None:  # reports a passing run its check did not give
        content, count = verdict
        return Mutation(
            fresh_step(s, content=content),
            f"{s.agent} reports that all {count} tests passed at step {s.coord}; its run just before shows failures.",
        )
    if s.tool_calls:  # an input made up, worked on by the tool: the step keeps its kind and call
        new, figure, real = _with_made_up(trace, i, rng)
        return Mutation(
            new,
            f"Calls {s.tool_calls[0].name} on a figure of {figure} that nothing in the run gave "
            f"(the value it reads is {real}).",
        )
    stated = [a for a in _computations(s.content) if _read_operands(a.group("filled"), a.group("sym"))]
    if stated:  # a computation in the text: one input it reads is made up, the arithmetic follows
        a = rng.choice(stated)
        spans = token_spans(a.group("filled"))
        at = spans[rng.choice(_read_operands(a.group("filled"), a.group("sym")))]
        figure, real = perturb(at.group(), rng), at.group()
        text = refill(s.content, a, a.group("filled")[: at.start()] + figure + a.group("filled")[at.end() :])
        return Mutation(
            fresh_step(s, content=text),
            f"Computes from a figure of {figure} that nothing in the run gave (the value it reads is {real}).",
        )
    m = find_numbers(s.content)[-1]
    claim = perturb(m.group(), rng)
    return Mutation(
        fresh_step(s, content=_claim_text(trace, i, claim, rng, FIGURES)),
        f"Cites a figure of {claim} that no earlier step produced.",
    )


def _with_made_up(trace: Trace, i: int, rng: random.Random) -> tuple[Step, str, str]:
    """Step ``i`` (a calculator-like step, :func:`_made_up_input`) with one number of its
    expression that is read from a variable made up, in the tool call and where the text
    quotes the expression (its symbolic side keeps the variable): ``(step, the made-up
    figure, the real one)``. The step keeps its kind and tool call, as the agent's honest
    tool steps have them, and the tool works out the result on replay."""
    s = trace.steps[i]
    expr, sym = _made_up_input(trace, i) or ("", "")
    key = next(k for k, v in string_args(s.tool_calls[0]) if v == expr)
    at = token_spans(expr)[rng.choice(_read_operands(expr, sym))]
    figure = perturb(at.group(), rng)
    filled = expr[: at.start()] + figure + expr[at.end() :]
    new = fresh_step(s, content=quote_edit(s.content or "", expr, filled))
    set_arg(new, 0, key, filled)
    return new, figure, at.group()


def _run_verdict(trace: Trace, i: int) -> bool:
    """Whether step ``i`` is a verifier's verdict on its own check just before it (a
    tool step whose result is in the trace)."""
    s = trace.steps[i]
    prev = next((st for st in reversed(trace.steps[:i]) if is_agent_step(st)), None)
    return (
        prev is not None
        and prev.agent == s.agent
        and bool(prev.tool_calls)
        and not s.tool_calls
        and _is_verifier(trace, s)
    )


_RESULT_LINE = re.compile(r"^(PASS|FAIL)\b", re.MULTILINE)


def _misreport(trace: Trace, i: int, every_case: bool) -> tuple[str, int] | None:
    """At a verifier's report of a problem found by its own check just before (a test
    run printing ``PASS``/``FAIL`` lines, at least one failing): its own approval from
    elsewhere in the trace, in its wording, with the count of passing tests it states
    set to every case run (``every_case``: a result the run did not give, R.1) or to
    the cases the run shows passing (it approves on the passes it read, V.2; ``None``
    when none passed). ``(content, count)``, else ``None``."""
    s = trace.steps[i]
    if not _run_verdict(trace, i) or not CRITIQUE.search(s.content or "") or CHECK_WORDS.search(s.content or ""):
        return None
    results = _RESULT_LINE.findall(trace.steps[i - 1].observation or "") if i else []
    if "FAIL" not in results:
        return None
    count = len(results) if every_case else results.count("PASS")
    approvals = [
        st.content for st in _own_approvals(trace, i) if len(set(n.group() for n in find_numbers(st.content))) == 1
    ]
    if not count or not approvals:
        return None
    approval = approvals[0]
    return re.sub(r"(?<![\w.])\d+(?![\w.])", str(count), approval), count


# --- R.2 reasoning error ---------------------------------------------------------------


#: In test code: an exception handler whose first line reports a failure (``FAIL ...``).
_FAIL_HANDLER = re.compile(r"(except\b[^\n]*:[ \t]*\n[ \t]+print\(\s*f?['\"])FAIL\b")


def _handler_slips(trace: Trace, i: int) -> list[tuple[int, Any, str, re.Match[str]]]:
    """Test code step ``i`` composed (a tool argument) whose exception handler reports a
    failure, where a case that raised failed (the step's result says so)."""
    s = trace.steps[i]
    if not re.search(r"^FAIL\b.*\braised\b", s.observation or "", re.MULTILINE):
        return []
    edits = [
        (ci, key, value, m)
        for ci, c in enumerate(s.tool_calls)
        for key, value in string_args(c)
        if not _copied(trace, i, value)
        for m in [_FAIL_HANDLER.search(value)]
        if m
    ]
    return edits


def _r2_fits(trace: Trace, i: int) -> bool:
    s = trace.steps[i]
    return bool(arg_text_edits(s, find_operators) or find_operators(s.content) or _handler_slips(trace, i))


def _r2(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    new = fresh_step(s)
    slips = _handler_slips(trace, i)
    if slips:  # the handler counts a case that raises as a pass: one case of the test logic wrong
        ci, key, value, m = rng.choice(slips)
        set_arg(new, ci, key, value[: m.end(1)] + "PASS" + value[m.end() :])
        return Mutation(
            new,
            f"Its test code reports a case that raises an exception as a pass (in {s.tool_calls[ci].name}), "
            "so a crash in the code under test goes unreported.",
        )
    edits = _composed(trace, i, arg_text_edits(s, find_operators))
    if edits:
        ci, key, text, m = rng.choice(edits)
        after = apply_arg_edit(new, ci, key, text, m, flip(m))
        return Mutation(new, f"Applies the wrong operation: `{clip(after)}` instead of `{clip(text)}`.")
    stated = _computations(s.content)
    if stated:  # a computation in the text: the operation flips on both sides, the result follows
        a = rng.choice(stated)
        m = rng.choice(find_operators(a.group("filled")))
        filled = a.group("filled")[: m.start()] + flip(m) + a.group("filled")[m.end() :]
        new.content = refill(s.content, a, filled)
    else:
        m = rng.choice(find_operators(s.content))
        new.content = s.content[: m.start()] + flip(m) + s.content[m.end() :]
    return Mutation(new, f"Uses '{flip(m).strip(' (')}' where the derivation needs '{m.group().strip(' (')}'.")


# --- R.4 task misunderstanding ---------------------------------------------------------


def _task_numbers(trace: Trace) -> list[str]:
    return list(dict.fromkeys(m.group() for m in find_numbers(trace.task.query)))


def _r4_candidates(trace: Trace, i: int) -> list[tuple[str, Any]]:
    s = trace.steps[i]
    task = _task_numbers(trace)
    if len(task) < 2:
        return []
    edits = _composed(trace, i, [e for e in arg_text_edits(s, find_numbers) if e[3].group() in task])
    cands: list[tuple[str, Any]] = [("arg", e) for e in edits]
    if not cands:
        cands = [("content", m) for m in find_numbers(s.content) if m.group() in task]
        filled = [c for c in cands if _filled_at(s.content, c[1].start()) is not None]
        cands = filled or cands
    return cands


def _replace_number(text: str, m: re.Match[str], new: str) -> str:
    """``text`` with number ``m`` replaced by ``new``; in a stated computation
    (:func:`_computations`) on both its sides where they line up, with the result worked
    out again (:func:`~whenpro_core.injection.textedit.refill`)."""
    for a in _computations(text):
        for side in ("filled", "sym"):
            if a.group(side) is None or not a.start(side) <= m.start() < a.end(side):
                continue
            starts = [t.start() + a.start(side) for t in token_spans(a.group(side))]
            filled = token_spans(a.group("filled"))
            if m.start() not in starts or len(starts) != len(filled):
                break
            token = filled[starts.index(m.start())]
            if token.group() == m.group():
                return refill(text, a, a.group("filled")[: token.start()] + new + a.group("filled")[token.end() :])
    return text[: m.start()] + new + text[m.end() :]


def _filled_at(text: str | None, pos: int) -> re.Match[str] | None:
    """The stated computation (:func:`_computations`) whose filled-in side holds
    position ``pos`` of ``text``, if any."""
    return next((a for a in _computations(text) if a.start("filled") <= pos < a.end("filled")), None)


def _r4(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    new = fresh_step(s)
    where, cand = rng.choice(_r4_candidates(trace, i))
    m = cand[3] if where == "arg" else cand
    other = rng.choice([n for n in _task_numbers(trace) if n != m.group()])
    if where == "arg":
        ci, key, text, _ = cand
        apply_arg_edit(new, ci, key, text, m, other)
    else:
        new.content = _replace_number(s.content, m, other)
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
    items = {n: m for n, ln in enumerate(lines) if (m := PLAN_ITEM.match(ln))}
    numbered = list(items)
    drop = rng.choice(numbered[:-1] if len(numbered) > 2 else numbered)
    dropped = items[drop].group(4)
    kept, k = [], 0
    for n, ln in enumerate(lines):
        if n == drop:
            continue
        m = PLAN_ITEM.match(ln)
        if m:
            k += 1
            ln = f"{m.group(1)}{k}{m.group(3)} {m.group(4)}"
        kept.append(ln)
    return Mutation(
        fresh_step(s, content="\n".join(kept)),
        f"The plan leaves out '{clip(dropped)}', so the work it needs is never done.",
    )


# --- A.1 tool parameter error ----------------------------------------------------------


def _a1_fits(trace: Trace, i: int) -> bool:
    s = trace.steps[i]
    return any(string_args(c) or numeric_args(s) for c in s.tool_calls)


def _a1(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    new = fresh_step(s)
    ci, key, value = rng.choice(_a1_options(trace, i))
    name = s.tool_calls[ci].name
    if not isinstance(value, str):
        wrong: Any = type(value)(Decimal(perturb(str(value), rng)))
    elif "\n" in value.strip():
        wrong = _drop_line(value, rng, s.observation)
    elif EXPR.match(value) and len(find_operators(value)) >= 1:
        last = find_operators(value)[-1]
        wrong = value[: last.start()].rstrip()
    else:
        wrong = _other_value(trace, name, key, value, rng)
    set_arg(new, ci, key, wrong)
    new.content = _quote_argument(new.content or "", value, wrong)
    label = f"{name}({key}=...)" if key is not None else name
    return Mutation(new, f"Calls {label} with {clip(repr(wrong))} instead of {clip(repr(value))}.")


def _quote_argument(content: str, value: Any, wrong: Any) -> str:
    """``content`` saying what the call now does: a one-line argument the text quotes is
    quoted as changed (and the symbolic side it fills in follows,
    :func:`~whenpro_core.injection.textedit.quote_edit`); for a multi-line one (a table
    of test cases) that lost a line, a count of those lines the text states goes down by
    one."""
    if not isinstance(value, str) or "\n" not in value.strip():
        return quote_edit(content, str(value), str(wrong))
    rows = _table_rows(value)
    if rows and _table_rows(str(wrong)) == rows - 1:
        return re.sub(rf"(?<![\w.]){rows}(?![\w.])", str(rows - 1), content)
    return content


def _table_rows(code: str) -> int:
    """Rows of the largest table of one-line entries in ``code`` (``    ('f(1)', '2'),``
    lines)."""
    return len(re.findall(r"^[ \t]+[(\[{].*[)\]}],[ \t]*$", code, re.MULTILINE))


def _a1_options(trace: Trace, i: int) -> list[tuple[int, Any, Any]]:
    """``(call index, key, value)`` of step ``i``'s arguments A.1 may corrupt: string
    arguments the agent composed (else all of them), and numeric ones."""
    s = trace.steps[i]
    options = [(ci, k, v) for ci, c in enumerate(s.tool_calls) for k, v in string_args(c)]
    return ([o for o in options if not _copied(trace, i, o[2])] or options) + numeric_args(s)


def _other_value(trace: Trace, name: str, key: Any, value: str, rng: random.Random) -> str:
    """Another value the trace passes to ``name``'s argument ``key`` (else ``value`` less
    its last letter)."""
    seen: list[str] = [
        a[key]
        for st in trace.steps
        for c in st.tool_calls
        if c.name == name and isinstance(a := c.arguments, dict) and isinstance(a.get(key), str)
    ]
    others = sorted({v for v in seen if v != value})
    if others:
        return rng.choice(others)
    if re.fullmatch(r"\d+(?::\d\d)?(?:\.\d+)?", value):  # a time or a figure given as text
        return perturb(value, rng)
    return value[:-1] if len(value) > 1 else value + "x"


_QUOTED_TEXT = re.compile(r"'([^'\n]{4,})'|\"([^\"\n]{4,})\"")


def _drop_line(value: str, rng: random.Random, observation: str | None = None) -> str:
    """``value`` (a multi-line argument) without one of its lines: when it is Python
    that compiles, a seeded choice among the lines whose removal leaves it compiling (a
    test case or a statement left out, not a syntax error the tool reports at once),
    preferring a line whose quoted text a failing line of the tool's ``observation``
    names (the case that fails is the one left out); else its last line."""
    failing = [ln for ln in (observation or "").splitlines() if CRITIQUE.search(ln)]
    lines = value.rstrip("\n").split("\n")
    options = [len(lines) - 1]
    if _compiles(value):
        kept = [n for n, ln in enumerate(lines) if ln.strip() and _compiles("\n".join(lines[:n] + lines[n + 1 :]))]
        named = [
            n
            for n in kept
            if any(q in f for m in _QUOTED_TEXT.finditer(lines[n]) for q in m.groups() if q for f in failing)
        ]
        options = named or kept or options
    n = rng.choice(options)
    return "\n".join(lines[:n] + lines[n + 1 :]) + "\n"


def _compiles(code: str) -> bool:
    """Whether ``code`` compiles as Python (never runs it)."""
    try:
        compile(code, "<argument>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


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
    broken = code[: c.start()] + code[c.start() + 1 :]
    content = s.content[: m.start(1)] + broken + s.content[m.end(1) :]
    line = code[: c.start()].rsplit("\n", 1)[-1].strip()
    return Mutation(fresh_step(s, content=content), f"The code is not valid Python: `{clip(line)}` lacks its colon.")


def run_verbatim(trace: Trace, i: int) -> bool:
    """Whether a later step passes step ``i``'s last code block verbatim to a tool (a
    peer's test run of it). A syntax error there is reported by that run at once, so
    A.2 at such a step can never reach the final answer: :func:`build_modes` leaves it
    out (``whenpro inject`` still offers it, to watch the team catch it)."""
    blocks = CODE_BLOCK.findall(trace.steps[i].content or "")
    if not blocks:
        return False
    code = blocks[-1].strip()
    return any(
        isinstance(value, str) and value.strip() == code
        for st in trace.steps[i + 1 :]
        for c in st.tool_calls
        if isinstance(c.arguments, dict)
        for value in c.arguments.values()
    )


# --- A.3 premature termination ---------------------------------------------------------

#: A sentence in which an agent says its part of the work is finished.
DONE_SENTENCE = re.compile(
    r"[^.\n]*\b(?:last item|completes the plan|nothing (?:left|else) to|all (?:plan )?items? "
    r"(?:now )?(?:have|has) values?|every plan item has a value|that'?s all|all done|"
    r"(?:work|task) is (?:done|complete))\b[^.\n]*\.",
    re.IGNORECASE,
)


def _done_remark(trace: Trace, i: int) -> str | None:
    """A sentence by which the agent of step ``i`` says elsewhere in the trace that its
    work is done (``None`` when it never does, or step ``i`` already says it)."""
    s = trace.steps[i]
    if DONE_SENTENCE.search(s.content or ""):
        return None
    for st in trace.steps:
        m = DONE_SENTENCE.search(st.content or "") if st.agent == s.agent and st.index != i else None
        if m and is_agent_step(st):
            return m.group().strip()
    return None


def _final_of(trace: Trace, i: int) -> Step | None:
    """The agent's own final-answer step after ``i`` (its format is reused)."""
    s = trace.steps[i]
    return next((st for st in trace.steps[i + 1 :] if st.kind == "final_answer" and st.agent == s.agent), None)


def _a3_fits(trace: Trace, i: int) -> bool:
    s = trace.steps[i]
    if s.kind == "final_answer" or i >= len(trace.steps) - 1:
        return False
    later_own = any(st.agent == s.agent and is_agent_step(st) for st in trace.steps[i + 1 :])
    if not later_own:
        return False
    final = _final_of(trace, i)
    return _done_remark(trace, i) is not None or (final is not None and _hands_in_here(trace, i, final))


def _peer_before(trace: Trace, i: int) -> Step | None:
    """The latest step before ``i`` by another agent (or the task)."""
    return next((st for st in reversed(trace.steps[:i]) if st.agent != trace.steps[i].agent), None)


def _hands_in_here(trace: Trace, i: int, final: Step) -> bool:
    """Whether the agent may hand in its final answer at step ``i``: not in answer to a
    peer's report of a problem (:data:`CRITIQUE`) unless its own final answer follows one
    too. A coder that hands in only after an approval never answers a report of failures
    with its final answer (issue 28: a move no honest code_pair run made, found in 3 of 17
    labelled steps of a default build)."""
    before, before_final = _peer_before(trace, i), _peer_before(trace, final.index)
    if before is None or before_final is None or not CRITIQUE.search(before.content or ""):
        return True
    return bool(CRITIQUE.search(before_final.content or ""))


def _partial_result(trace: Trace, i: int) -> tuple[str, bool]:
    """The latest artefact available at step ``i``: a code block (the latest before ``i``,
    which is what exists when the agent stops instead of doing step ``i``'s work; step
    ``i``'s own when none came before), else the latest number of an agent step before
    ``i`` (observation, then content)."""
    for st in [*reversed(trace.steps[:i]), trace.steps[i]]:
        if is_agent_step(st):
            blocks = CODE_BLOCK.findall(st.content or "")
            if blocks:
                return blocks[-1], True
    for st in reversed(trace.steps[:i]):
        if not is_agent_step(st):
            continue
        for text in (st.observation or "", st.content or ""):
            nums = [m.group() for m in re.finditer(r"(?<![\w.])-?\d+(?:\.\d+)?(?::\d\d)?(?!\w|\.\d)", text)]
            if nums:
                return nums[-1], False
    own = find_numbers(trace.steps[i].content or "")
    if own:
        return own[-1].group(), False
    first = (trace.steps[i].content or "").strip().split("\n")[0]
    return first or "(none)", False


def _as_final(final: Step, value: str, is_code: bool) -> str:
    """``final``'s content with its answer (last code block, else the text after
    ``Final answer:``, else its last number) replaced by ``value``."""
    text = final.content or ""
    blocks = list(CODE_BLOCK.finditer(text))
    if is_code and blocks:
        block = blocks[-1]
        return text[: block.start(1)] + value + text[block.end(1) :]
    if m := re.search(r"(final answer\s*:\s*)(.+)$", text, re.IGNORECASE | re.DOTALL):
        return text[: m.start(2)] + value
    nums = find_numbers(text)
    if nums:
        return text[: nums[-1].start()] + value + text[nums[-1].end() :]
    return f"Final answer: {value}"


def _a3(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    remark = _done_remark(trace, i)
    if remark is not None:
        text = (s.content or "").rstrip()
        return Mutation(
            fresh_step(s, content=f"{text} {remark}"),
            "Declares its part of the work finished while items remain, so the run ends early.",
        )
    value, is_code = _partial_result(trace, i)
    final = _final_of(trace, i)
    content = _as_final(final, value, is_code) if final is not None else f"Final answer: {value}"
    new = fresh_step(s, content=content, tool_calls=[], kind="final_answer")
    shown = "its current code" if is_code else repr(value)
    return Mutation(new, f"Stops early and returns {shown} as the final answer before the remaining work is done.")


def ends_run(trace: Trace, i: int, mode: str) -> bool:
    """Whether ``mode``'s mutation of step ``i`` makes it the run's final answer, so the
    counterfactual ends there (A.3 when the agent never says elsewhere that its work is
    done: it hands in what exists at step ``i``)."""
    return mode == "A.3" and _done_remark(trace, i) is None


# --- A.4 repetition --------------------------------------------------------------------


def _previous_own(trace: Trace, i: int) -> Step | None:
    s = trace.steps[i]
    for st in reversed(trace.steps[:i]):
        if st.agent == s.agent and is_agent_step(st):
            same = st.content == s.content and [c.model_dump() for c in st.tool_calls] == [
                c.model_dump() for c in s.tool_calls
            ]
            return None if same else st
    return None


def _a4_fits(trace: Trace, i: int) -> bool:
    return _previous_own(trace, i) is not None


def _a4(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    prev = _previous_own(trace, i)
    assert prev is not None, "mutate() applies A.4 only where _a4_fits"
    new = fresh_step(
        s, content=prev.content, tool_calls=[c.model_copy(deep=True) for c in prev.tool_calls], kind=prev.kind
    )
    return Mutation(new, f"Repeats its step {prev.coord} instead of moving on.")


# --- C.2 communication failure ---------------------------------------------------------


def _c2_plan(trace: Trace, i: int) -> tuple[str, Any] | None:
    s = trace.steps[i]
    peers = [st for st in trace.steps[:i] if is_agent_step(st) and st.agent != s.agent]
    if not peers:
        return None
    latest = peers[-1]
    own_before = [st for st in trace.steps[: latest.index] if st.agent == s.agent and is_agent_step(st)]
    if (
        CRITIQUE.search(latest.content or "")
        and own_before
        and own_before[-1].content != s.content
        and own_before[-1].kind != "final_answer"
    ):
        return "resubmit", (latest, own_before[-1])
    for m in find_numbers(s.content):
        for peer in reversed(peers):
            if m.group() in {n.group() for n in find_numbers((peer.content or "") + "\n" + (peer.observation or ""))}:
                earlier = [st for st in peers if st.agent == peer.agent and st.index < peer.index]
                for old in reversed(earlier):
                    stale = [
                        n.group()
                        for n in find_numbers((old.observation or "") + "\n" + (old.content or ""))
                        if n.group() != m.group()
                    ]
                    if stale:
                        return "stale", (m, peer, stale[-1])
                break
    return None


def _c2_fits(trace: Trace, i: int) -> bool:
    return _c2_plan(trace, i) is not None


def _c2(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    plan = _c2_plan(trace, i)
    assert plan is not None, "mutate() applies C.2 only where _c2_fits"
    how, data = plan
    if how == "resubmit":
        peer, own = data
        new = fresh_step(
            s, content=own.content, tool_calls=[c.model_copy(deep=True) for c in own.tool_calls], kind=own.kind
        )
        return Mutation(
            new, f"Ignores {peer.agent}'s report at step {peer.coord} and resubmits its step {own.coord} unchanged."
        )
    m, peer, stale = data
    new = fresh_step(s)
    in_call = _stale_in_call(trace, i, new, m.group(), stale)
    if new.content == s.content:  # the text does not quote the call's argument: edit the figure it states
        new.content = _replace_number(s.content, m, stale)
    where = " in its tool call" if in_call else ""
    return Mutation(
        new,
        f"Ignores {peer.agent}'s latest figure {m.group()} (step {peer.coord}) and uses its earlier {stale}{where}.",
    )


def _stale_in_call(trace: Trace, i: int, new: Step, figure: str, stale: str) -> bool:
    """Carry the stale figure into the tool call where step ``i`` computes with ``figure``
    (an argument the agent composed, else any; else a numeric argument of that value), so
    the agent works with the outdated figure instead of only mentioning it: in the built-in
    systems the edit of the wording alone was never decisive (224 attempts, none). Returns
    whether a call changed."""
    edits = _composed(trace, i, [e for e in arg_text_edits(trace.steps[i], find_numbers) if e[3].group() == figure])
    if edits:
        ci, key, text, m = edits[0]
        apply_arg_edit(new, ci, key, text, m, stale)
        return True
    for ci, key, value in numeric_args(trace.steps[i]):
        if ":" not in figure + stale and Decimal(str(value)) == Decimal(figure):
            set_arg(new, ci, key, float(stale) if "." in stale else int(stale))
            return True
    return False


# --- V.2 inadequate verification ------------------------------------------------------

#: Approvals for an agent that never approves elsewhere in the trace (a seeded choice).
APPROVALS = (
    "Looks correct to me. Approved.",
    "I checked this; it matches. Approved.",
    "This is right. Approved.",
    "No problems found. Approved.",
    "Everything checks out. Approved.",
    "Verified. Approved.",
)


def _is_verifier(trace: Trace, s: Step) -> bool:
    roles = {a.id: (a.role or "") for a in trace.agents}
    return bool(VERIFIER_ROLE.search(s.agent) or VERIFIER_ROLE.search(roles.get(s.agent, "")))


def _v2_fits(trace: Trace, i: int) -> bool:
    """A verifier's report of a problem (no tool call): approving instead is the error.
    After its own check (a test run) the report fits only when that run shows a passing
    case to approve on (:func:`_misreport`)."""
    s = trace.steps[i]
    if s.kind == "final_answer" or not is_agent_step(s) or not _is_verifier(trace, s) or s.tool_calls:
        return False
    if _run_verdict(trace, i):
        return _misreport(trace, i, every_case=False) is not None
    return bool(CRITIQUE.search(s.content or "")) and not CHECK_WORDS.search(s.content or "")


def _own_approvals(trace: Trace, i: int) -> list[Step]:
    """The tool-less approvals of step ``i``'s agent elsewhere in the trace."""
    s = trace.steps[i]
    return [
        st
        for st in trace.steps
        if st.agent == s.agent
        and st.index != i
        and not st.tool_calls
        and CHECK_WORDS.search(st.content or "")
        and not CRITIQUE.search(st.content or "")
    ]


def _v2(trace: Trace, i: int, rng: random.Random) -> Mutation:
    s = trace.steps[i]
    verdict = _misreport(trace, i, every_case=False)
    if verdict is not None:  # approves on the passing cases it read, past the failing one
        content, count = verdict
        return Mutation(
            fresh_step(s, content=content),
            f"{s.agent} approves at step {s.coord} on the {count} passing test(s) of its run, overlooking the failure.",
        )
    own = _own_approvals(trace, i)
    text = _as_seen(trace, i, rng.choice(own).content) if own else rng.choice(APPROVALS)
    return Mutation(fresh_step(s, content=text), f"{s.agent} approves at step {s.coord} without checking the work.")


_NAMED_VALUE = re.compile(r"\b([a-z_]\w*) = (\d\d:\d\d|-?\d+(?:\.\d+)?)\b")


def _as_seen(trace: Trace, i: int, approval: str) -> str:
    """``approval`` (the agent's own, from elsewhere in the trace) with each ``name = N``
    it lists set to the value the conversation before step ``i`` shows for that name: an
    agent that approves without checking approves what it sees (its approval elsewhere
    lists the values of that later point, which would contradict the conversation)."""

    def seen(m: re.Match[str]) -> str:
        value = _value_seen(trace, i, m.group(1))
        return f"{m.group(1)} = {value}" if value is not None else m.group()

    return _NAMED_VALUE.sub(seen, approval)


def _value_seen(trace: Trace, i: int, name: str) -> str | None:
    """The latest value a peer's step before ``i`` gives ``name``: a step that opens on
    that name (``Computing name = ...``, ``Reading name: lookup(...)``) gives its tool
    result, else the last number of its text."""
    opens = re.compile(rf"^\W*(?:\w+,? ){{0,3}}{re.escape(name)}\b")
    for st in reversed(trace.steps[:i]):
        if st.agent == trace.steps[i].agent or not is_agent_step(st) or not opens.match(st.content or ""):
            continue
        source = (st.observation or "") if st.tool_calls else (st.content or "")
        nums = re.findall(r"\d\d:\d\d|-?\d+(?:\.\d+)?", source)
        return nums[-1] if nums else None
    return None


#: mode -> (fits(trace, index), apply(trace, index, rng)).
MUTATORS: dict[str, tuple[Callable[[Trace, int], bool], Callable[[Trace, int, random.Random], Mutation]]] = {
    "R.1": (_r1_fits, _r1),
    "R.2": (_r2_fits, _r2),
    "R.3": (_r3_fits, _r3),
    "R.4": (lambda t, i: bool(_r4_candidates(t, i)), _r4),
    "PL.1": (_pl1_fits, _pl1),
    "A.1": (_a1_fits, _a1),
    "A.2": (_a2_fits, _a2),
    "A.3": (_a3_fits, _a3),
    "A.4": (_a4_fits, _a4),
    "C.2": (_c2_fits, _c2),
    "V.2": (_v2_fits, _v2),
}


def check_injectable(trace: Trace, index: int) -> Step:
    if not 0 <= index < len(trace.steps):
        raise ConfigError(f"step index {index} out of range", expected=f"0..{len(trace.steps) - 1}")
    step = trace.steps[index]
    if not is_agent_step(step):
        raise ConfigError(
            f"step {step.coord} is the {step.kind} framing, not an agent's step", expected="a step taken by an agent"
        )
    return step


def applicable_modes(trace: Trace, index: int) -> list[str]:
    """Failure-mode codes whose offline mutator fits step ``index`` (empty for framing
    steps such as the user's task)."""
    if not 0 <= index < len(trace.steps) or not is_agent_step(trace.steps[index]):
        return []
    return [code for code, (fits, _) in MUTATORS.items() if fits(trace, index)]


def _failed_run(trace: Trace, step: Step | None) -> bool:
    """Whether ``step``'s last code block was passed verbatim to a tool by a later step
    whose result shows a problem (a peer's test run that failed)."""
    blocks = CODE_BLOCK.findall(step.content or "") if step is not None else []
    if step is None or not blocks:
        return False
    code = blocks[-1].strip()
    return any(
        CRITIQUE.search(st.observation or "")
        for st in trace.steps[step.index + 1 :]
        for c in st.tool_calls
        if isinstance(c.arguments, dict) and any(isinstance(v, str) and v.strip() == code for v in c.arguments.values())
    )


def _repeat_caught(trace: Trace, i: int) -> bool:
    """Whether A.4 at step ``i`` repeats a step whose repetition the team absorbs or that
    ends the run at once: code whose test run failed (the re-run fails again); a tool
    call the agent made in its step just before (the same call gives the same result,
    read in the agent's next turn); its own report of a problem that a peer has answered
    since (the peer gets the same report and answers it again); or a step without code
    in place of the code a peer runs next, or of the plan its peers work from (nothing
    is left to run and the run stops there: a coder's first draft, a trivial item every
    time; a planner's opening remark again, after which the reporter answers at once, a
    move no honest run makes). Measured on the built-in
    systems, none of the others was ever kept (code_pair: about 100 attempts a build, 71
    first drafts over ten builds; arith_team: 63); the planner's was, twice in one
    arith_team build of 37 traces."""
    prev = _previous_own(trace, i)
    if prev is None:
        return False
    if _failed_run(trace, prev):
        return True
    if run_verbatim(trace, i) and not CODE_BLOCK.search(prev.content or ""):
        return True
    if _pl1_fits(trace, i) and not PLAN_ITEM.search(prev.content or ""):
        return True  # a remark in place of the plan the others work from: the run ends at once
    if prev.tool_calls and prev.index == i - 1:
        return True
    answered = any(st.agent != prev.agent and is_agent_step(st) for st in trace.steps[prev.index + 1 : i])
    return answered and not prev.tool_calls and bool(CRITIQUE.search(prev.content or ""))


def _resubmits_failed(trace: Trace, i: int) -> bool:
    """Whether C.2 at step ``i`` resubmits, after a critique, code whose test run
    already failed (the peer re-runs the same test, which fails again, so the error
    never reaches the final answer), or puts a stale figure into a checking agent's
    message (:data:`VERIFIER_ROLE`): its peer acts on the verdict, which C.2 keeps, not
    on the figure (of 146 such attempts in the built-in systems' builds, by arith_team's
    verifier or code_pair's tester, none was decisive)."""
    plan = _c2_plan(trace, i)
    if plan is None:
        return False
    if plan[0] == "stale":
        return bool(VERIFIER_ROLE.search(trace.steps[i].agent))
    return _failed_run(trace, plan[1][1])


def _figure_only(trace: Trace, i: int) -> bool:
    """Whether R.1 at step ``i`` only adds an unsupported figure (a phrasing of
    :data:`FIGURES`) to a step that states no computation a peer reads: in the built-in
    systems' builds none of 144 such attempts was decisive (arith_team's verifier and
    planner, code_pair's coder), and the phrasings are none of the agent's own."""
    s = trace.steps[i]
    if s.tool_calls or _misreport(trace, i, every_case=True) is not None:
        return False
    return not any(_read_operands(a.group("filled"), a.group("sym")) for a in _computations(s.content))


#: mode -> a step where its error is made but can never be kept: a build does not try
#: it there (:func:`build_modes`). A figure added to a step no peer computes from
#: changes no work (:func:`_figure_only`); a syntax error in code a peer then runs is reported
#: by that run at once; code resubmitted after its test run failed fails the re-run;
#: the repetitions of :func:`_repeat_caught` are absorbed or end the run at once; a
#: stale figure in a check is not what its peer acts on.
NEVER_DECISIVE: dict[str, Callable[[Trace, int], bool]] = {
    "R.1": _figure_only,
    "A.2": run_verbatim,
    "A.4": _repeat_caught,
    "C.2": _resubmits_failed,
}


def build_modes(trace: Trace, index: int) -> list[str]:
    """:func:`applicable_modes` less those that can never be decisive at step ``index``
    (:data:`NEVER_DECISIVE`): what ``whenpro build`` tries there."""
    return [m for m in applicable_modes(trace, index) if not (m in NEVER_DECISIVE and NEVER_DECISIVE[m](trace, index))]


def mutate(trace: Trace, index: int, mode: str, seed: int = 0) -> Mutation:
    """Rewrite step ``index`` of ``trace`` with an error of failure mode ``mode``.

    Raises ConfigError when the step is a framing step, when ``mode`` has no offline
    mutator, or when the mutator does not fit this step (the message lists the modes that
    do)."""
    step = check_injectable(trace, index)
    code = mode.strip().upper()
    if code not in MUTATORS:
        raise ConfigError(
            f"no offline mutator for mode {mode!r}", expected=f"one of {', '.join(MUTATORS)}, or --generator text:..."
        )
    fits, apply = MUTATORS[code]
    if not fits(trace, index):
        ok = applicable_modes(trace, index)
        raise ConfigError(
            f"mode {code} does not fit step {step.coord} ({step.agent}, {step.kind})",
            expected=f"one of {', '.join(ok)}" if ok else "another step",
        )
    return apply(trace, index, _rng(trace, index, code, seed))
