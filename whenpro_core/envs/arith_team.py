"""``arith_team``: a planner, a solver, a verifier and a reporter answer arithmetic,
schedule and table questions (tasks: :mod:`whenpro_core.envs.arith_tasks`).

The reference policies talk in plain text and read each other's text:

* **planner** writes a numbered plan from the query: ``N. solver: var = expr`` lines, a
  ``verifier: check a, b`` line (the planner asks only for the inputs read off the task,
  plus the total on short orders — so some later slips go unchecked) and a
  ``reporter: report var`` line.
* **solver** takes the first plan item without a value yet, substitutes the values of
  earlier vars *as read from the conversation* (tool observations of its own earlier
  steps, or a value stated in their text) and calls ``calculator``, ``lookup`` or
  ``clock_add``. After a verifier's mismatch it redoes the flagged item (with the
  verifier's expression) and everything after it.
* **verifier** recomputes the checked vars from its own reading of the task (for table
  tasks it can only re-multiply the looked-up values it finds in the conversation) and
  either approves or flags the first mismatch.
* **reporter** reports the plan's answer var as read from the conversation.

So an injected wrong number propagates through the solver's reading of earlier steps, and
is caught only when it lands in something the verifier checks. Turn order
(:meth:`ArithTeam.next_agent`) is a function of the steps, so a run resumes from any prefix.
"""

from __future__ import annotations

import random
import re
from typing import Any

from whenpro_core.envs.arith_tasks import (
    FAMILIES,
    Derivation,
    Item,
    ToolFailure,
    calculate,
    clock_add,
    derive,
    family_kind,
    fmt_number,
    gold_answer,
    lookup,
    make_query,
    parse_value,
    same_value,
)
from whenpro_core.envs.base import (
    FRAMING_KINDS,
    CheckResult,
    Env,
    EnvState,
    EnvTask,
    ToolOutput,
    ToolRunner,
    ToolSpec,
)
from whenpro_core.envs.style import chance, draw_style, pick
from whenpro_core.errors import TraceFormatError
from whenpro_core.trace.model import Agent, Step, ToolCall

PLAN_LINE = re.compile(r"^\s*\d+\.\s*(\w+)\s*:\s*(.*\S)\s*$", re.MULTILINE)
ASSIGN = re.compile(r"^(\w+)\s*=\s*(.+)$")
MARKER = re.compile(
    r"^\s*(?:Computing|Looking up|Recomputing|Now computing|Next,? computing|Working out|"
    r"Calculating|Fetching|Reading|Getting)\s+(\w+)",
    re.IGNORECASE,
)
#: A solver remark that its part of the plan is done (the turn order moves on).
DONE = re.compile(
    r"that was the last item|that completes the plan|all plan items now have values|"
    r"nothing left to compute|every plan item has a value",
    re.IGNORECASE,
)
FLAG = re.compile(r"Mismatch on (\w+)")
CORRECTION = re.compile(r"from the task (\w+) = (.+?) = (-?[\d.:]+)")
REDO = re.compile(r"redo from (\w+)", re.IGNORECASE)
IDENT = re.compile(r"\b([a-z_][a-z0-9_]*)\b")
OPS = re.compile(r"(?<=[\w)]) [-+*/] ")


def find_ops(expr: str) -> list[str]:
    """The binary operators of an arithmetic expression (``a + b * c`` -> 2)."""
    return OPS.findall(expr)


#: The message conventions of the module docstring, for the LLM policy.
ARITH_GUIDANCE = {
    "planner": "Write a numbered plan, one line each: `N. solver: var = expression` for each value "
    "to compute (vars in snake_case, expressions over numbers and earlier vars), "
    "`N. verifier: check var1, var2` and `N. reporter: report var` (add `as HH:MM` for a time).",
    "solver": "Take the first plan item with no value yet. Start your message with `Computing var` "
    "and call one tool (calculator, lookup or clock_add) to get its value.",
    "verifier": "Recompute the checked vars from the task. Say `Approved.` when they match; otherwise "
    "`Mismatch on var: from the task var = expression = value; redo from var`.",
    "reporter": "Give the reported var's value as the final answer.",
}


# --- reading the conversation ----------------------------------------------------------


class Plan:
    """The latest plan in the conversation: solver ``items`` (var -> expr, in order),
    verifier ``checks``, the reporter's ``report`` var and answer ``fmt``, and the var
    after which the planner ``review``s progress (a ``planner: review progress after
    var`` line; the review repeats the plan without that line)."""

    def __init__(self, text: str) -> None:
        self.items: dict[str, str] = {}
        self.checks: list[str] = []
        self.report: str | None = None
        self.review: str | None = None
        self.fmt = "money"
        for role, body in PLAN_LINE.findall(text):
            role = role.lower()
            if role == "planner" and (m := re.match(r"review progress after (\w+)", body, re.IGNORECASE)):
                self.review = m.group(1)
            elif role == "solver" and (m := ASSIGN.match(body)):
                self.items.setdefault(m.group(1), m.group(2).strip())
            elif role == "verifier" and body.lower().startswith("check"):
                self.checks = [c for c in re.split(r"[,\s]+|\band\b", body[5:]) if re.fullmatch(r"\w+", c or "")]
            elif role == "reporter" and (m := re.match(r"report\s+(\w+)(.*)", body, re.IGNORECASE)):
                self.report = m.group(1)
                self.fmt = "time" if "HH:MM" in m.group(2) else "money"


def read_plan(steps: list[Step]) -> Plan:
    """The plan of the latest planner step (an empty plan when there is none)."""
    for step in reversed(steps):
        if step.agent == "planner":
            return Plan(step.content)
    return Plan("")


def read_values(steps: list[Step]) -> dict[str, float | str]:
    """Each var's latest value as the conversation states it: a solver step marked
    ``Computing v`` / ``Looking up v`` / ``Recomputing v`` gives ``v`` the value of its tool
    observation, or, when it called no tool, the last value written in its text."""
    values: dict[str, float | str] = {}
    for step in steps:
        if step.agent != "solver":
            continue
        m = MARKER.match(step.content or "")
        if not m:
            continue
        if step.tool_calls:
            if step.error or step.observation is None:
                continue
            value = parse_value(step.observation)
        else:
            value = parse_value(step.content[m.end() :])
        if value is not None:
            values[m.group(1)] = value
    return values


def latest_flag(steps: list[Step]) -> tuple[int, str | None, dict[str, str]]:
    """``(index of the latest verifier mismatch or -1, the var to redo from,
    corrected expressions by var from every mismatch so far)``."""
    corrections: dict[str, str] = {}
    last, redo = -1, None
    for step in steps:
        if step.agent != "verifier":
            continue
        flag = FLAG.search(step.content or "")
        if not flag:
            continue
        last = step.index
        for var, expr, _ in CORRECTION.findall(step.content):
            corrections[var] = expr.strip()
        m = REDO.search(step.content)
        redo = m.group(1) if m else flag.group(1)
    return last, redo, corrections


def pending_items(steps: list[Step], plan: Plan) -> list[str]:
    """Plan vars the solver still has to compute: after a mismatch, the redo var and
    everything after it not recomputed since; otherwise every var without a value."""
    since, redo, _ = latest_flag(steps)
    order = list(plan.items)
    start = order.index(redo) if redo in order else 0
    done = set(read_values([s for s in steps if s.index > since]))
    return [v for v in order[start:] if v not in done]


def _fmt(value: float | str) -> str:
    return value if isinstance(value, str) else fmt_number(value)


def evaluate(items: list[Item], known: dict[str, float | str]) -> dict[str, float | str]:
    """Values of ``items`` computed in order (the verifier's own recomputation): lookups
    are taken from ``known`` (the conversation), arithmetic and clock items are computed.
    Items that cannot be computed are left out."""
    own: dict[str, float | str] = {}
    for item in items:
        try:
            if item.kind == "lookup":
                if item.var in known:
                    own[item.var] = known[item.var]
                continue
            if item.kind == "clock":
                m = re.match(r"clock\((\d\d:\d\d)\s*\+\s*(\w+)\)", item.expr)
                if m and m.group(2) in own:
                    own[item.var] = clock_add(m.group(1), own[m.group(2)])
                continue
            expr = IDENT.sub(lambda mm: _fmt(own[mm.group(1)]), item.expr)
            own[item.var] = float(calculate(expr))
        except (KeyError, ToolFailure, ValueError):
            continue
    return own


# --- the reference policies --------------------------------------------------------------

#: Wording pools (first entry: the original wording; :mod:`whenpro_core.envs.style`).
INTROS = (
    "Restating the task: we need {report}, built from {n} intermediate values.",
    "Before planning: the question asks for {report}; I count {n} values to work out.",
    "Reading the task. The answer is {report}, which takes {n} steps to get.",
    "Let me break this down: {n} values lead to {report}.",
)
HEADS = ("Plan:", "Here is the plan:", "Plan for the team:", "Steps:", "Breaking it down:", "The plan:")
REVIEWS = (
    "Progress check; the plan stands:",
    "Halfway review. Remaining plan as before:",
    "Checking in on progress. Plan unchanged:",
    "Progress review, same plan:",
    "Review: so far so good. The plan is still:",
)
COMPUTES = ("Computing", "Computing", "Now computing", "Working out", "Calculating", "Next, computing")
LOOKUPS = (
    "Looking up {var}: lookup({item}, {col}).",
    "Fetching {var} from the table: lookup({item}, {col}).",
    "Looking up {var} with lookup({item}, {col}).",
    "Reading {var}: lookup({item}, {col}).",
    "Getting {var} via lookup({item}, {col}).",
)
DONES = (
    "That was the last item.",
    "That completes the plan.",
    "All plan items now have values.",
    "Nothing left to compute.",
)
APPROVALS = (
    "Checked {list} against the task: correct. Approved.",
    "Verified {list}: all match the task. Approved.",
    "{list} agree with my own computation from the task. Approved.",
    "I recomputed {list} from the task and they match. Approved.",
    "Recomputed from the task: {list}. Everything matches. Approved.",
)
MISMATCHES = (
    "Mismatch on {var}: the conversation has {shown}, but from the task {var} = {expr} = {own}. "
    "Solver, please redo from {redo}.",
    "Mismatch on {var}. The conversation has {shown}; from the task {var} = {expr} = {own}. Please redo from {redo}.",
    "I get something else. Mismatch on {var}: the conversation has {shown}, but from the task "
    "{var} = {expr} = {own}. Solver, redo from {redo}, please.",
)
REPORTS = (
    "Final answer: {a}",
    "The result is {a}.\nFinal answer: {a}",
    "Reporting {var}.\nFinal answer: {a}",
    "{var} comes to {a}.\nFinal answer: {a}",
    "Final answer: {a}",
)
#: Chances of an intro before the plan, in-head arithmetic, a slip, and a done remark.
P_INTRO, P_HEAD, P_SLIP, P_DONE, P_REVIEW = 0.3, 0.25, 0.1, 0.35, 0.4


def shuffled_items(items: list[Item], style: int | None) -> list[Item]:
    """``items`` in a seeded topological order (each item after the vars it uses): the
    order the work allows. The original order when ``style`` is None."""
    if style is None:
        return list(items)
    rng = random.Random(f"{style}:order")
    names = {i.var for i in items}
    left, out = list(items), []
    done: set[str] = set()
    while left:
        ready = [i for i in left if not (set(IDENT.findall(i.expr)) & names) - done]
        pick_one = rng.choice(ready or left)
        out.append(pick_one)
        done.add(pick_one.var)
        left.remove(pick_one)
    return out


def _nudge(expr: str, style: int | None, key: object) -> str:
    """``expr`` with one number off by one (a slip)."""
    nums = list(re.finditer(r"(?<![\w.])\d+(?![\w.])", expr))
    if not nums:
        return expr
    m = pick(style, nums, key, "slip")
    return expr[: m.start()] + str(int(m.group()) + 1) + expr[m.end() :]


class ArithReferencePolicy:
    """Policies of the four agents (see the module docstring); wording, an intro
    before the plan, the plan's order, in-head arithmetic, slips and done remarks vary
    with the run's style."""

    name = "reference"

    def act(self, state: EnvState) -> Step:
        steps = list(state.steps)
        step: Step = getattr(self, f"_{state.agent}")(state.query, steps, state.style)
        return step

    def _planner(self, query: str, steps: list[Step], style: int | None) -> Step:
        d = derive(query)
        key = len(steps)
        if not d.items:
            return Step(
                index=0,
                agent="planner",
                kind="plan",
                content="Plan:\n1. reporter: I cannot break this task into steps.",
            )
        earlier = [s for s in steps if s.agent == "planner" and PLAN_LINE.search(s.content or "")]
        if earlier:  # the progress review: the latest plan again, without its review line
            kept = [
                ln
                for ln in earlier[-1].content.split("\n")[1:]
                if not re.match(r"\s*\d+\.\s*planner\s*:", ln, re.IGNORECASE)
            ]
            matched = [m for ln in kept if (m := PLAN_LINE.match(ln))]
            body = "\n".join(f"{n}. {m.group(1)}: {m.group(2)}" for n, m in enumerate(matched, 1))
            head = pick(style, REVIEWS, key, "review")
            return Step(index=0, agent="planner", kind="plan", content=head + "\n" + body)
        if not any(s.agent == "planner" for s in steps) and chance(style, P_INTRO, "intro"):
            return Step(
                index=0,
                agent="planner",
                kind="plan",
                content=pick(style, INTROS, key, "intro").format(report=d.report, n=len(d.items)),
            )
        items = shuffled_items(d.items, style)
        lines = [f"solver: {i.var} = {i.expr}" for i in items]
        if len(items) >= 4 and chance(style, P_REVIEW, "review"):
            after = items[len(items) // 2 - 1].var
            lines.insert(len(items) // 2, f"planner: review progress after {after}")
        if d.checks:
            checks = sorted(d.checks, key=lambda c: random.Random(f"{style}:{c}").random()) if style else d.checks
            lines.append("verifier: check " + ", ".join(checks))
        lines.append(f"reporter: report {d.report}" + (" as HH:MM" if d.fmt == "time" else " with two decimals"))
        body = "\n".join(f"{n}. {line}" for n, line in enumerate(lines, 1))
        return Step(index=0, agent="planner", kind="plan", content=pick(style, HEADS, key, "head") + "\n" + body)

    def _solver(self, query: str, steps: list[Step], style: int | None) -> Step:
        plan = read_plan(steps)
        todo = pending_items(steps, plan)
        key = len(steps)
        if not todo:
            return Step(index=0, agent="solver", kind="assistant", content="Every plan item has a value.")
        var = todo[0]
        _, redo, corrections = latest_flag(steps)
        expr = corrections.get(var, plan.items[var])
        redoing = var in corrections or redo is not None
        verb = "Recomputing" if redoing else pick(style, COMPUTES, key, "verb")
        done = f" {pick(style, DONES, key, 'done')}" if len(todo) == 1 and chance(style, P_DONE, key, "done") else ""
        values = read_values(steps)
        if m := re.fullmatch(r"lookup\(\s*(\w+)\s*,\s*(\w+)\s*\)", expr):
            text = pick(style, LOOKUPS, key, "lookup").format(var=var, item=m.group(1), col=m.group(2))
            return Step(
                index=0,
                agent="solver",
                kind="action",
                content=text + done,
                tool_calls=[
                    ToolCall(
                        id=f"call_{len(steps)}", name="lookup", arguments={"item": m.group(1), "column": m.group(2)}
                    )
                ],
            )
        missing: list[str] = []

        def sub(mm: re.Match[str]) -> str:
            if mm.group(1) in values:
                return _fmt(values[mm.group(1)])
            missing.append(mm.group(1))
            return "0"

        note = ""
        if m := re.fullmatch(r"clock\(\s*(\d\d:\d\d)\s*\+\s*(\w+)\s*\)", expr):
            minutes = IDENT.sub(sub, m.group(2))
            note = f" ({', '.join(missing)} has no value yet; using 0)" if missing else ""
            return Step(
                index=0,
                agent="solver",
                kind="action",
                content=f"{verb} {var} = {expr} with {m.group(2)} = {minutes}{note}.{done}",
                tool_calls=[
                    ToolCall(
                        id=f"call_{len(steps)}",
                        name="clock_add",
                        arguments={"start": m.group(1), "minutes": float(minutes) if "." in minutes else int(minutes)},
                    )
                ],
            )
        filled = IDENT.sub(sub, expr)
        note = f" ({', '.join(missing)} has no value yet; using 0)" if missing else ""
        if not redoing and var in plan.checks and chance(style, P_SLIP, key, "slip"):
            filled = _nudge(filled, style, key)  # a slip the verifier will catch
        shown = f"{expr} = {filled}" if filled != expr else expr
        if not missing and len(find_ops(filled)) == 1 and chance(style, P_HEAD, key, "head"):
            try:
                value = calculate(filled)
            except ToolFailure:
                value = ""
            if value:
                return Step(
                    index=0, agent="solver", kind="assistant", content=f"{verb} {var} = {shown} = {value}.{done}"
                )
        return Step(
            index=0,
            agent="solver",
            kind="action",
            content=f"{verb} {var} = {shown}{note}.{done}",
            tool_calls=[ToolCall(id=f"call_{len(steps)}", name="calculator", arguments={"expression": filled})],
        )

    def _verifier(self, query: str, steps: list[Step], style: int | None) -> Step:
        plan = read_plan(steps)
        values = read_values(steps)
        key = len(steps)
        d: Derivation = derive(query)
        own = evaluate(d.items, values)
        own_expr = {i.var: i.expr for i in d.items}
        leaves = {i.var for i in d.items if i.kind != "lookup" and not IDENT.search(i.expr.replace("clock", ""))}
        checked, unchecked = [], []
        for var in plan.checks:
            if var not in own:
                unchecked.append(var)
                continue
            found = values.get(var)
            if not same_value(found, own[var]):
                shown = "no value" if found is None else _fmt(found)
                redo = var if var in leaves else next(iter(plan.items), var)
                return Step(
                    index=0,
                    agent="verifier",
                    kind="assistant",
                    content=pick(style, MISMATCHES, key, "mismatch").format(
                        var=var, shown=shown, expr=own_expr[var], own=_fmt(own[var]), redo=redo
                    ),
                )
            checked.append(f"{var} = {_fmt(own[var])}")
        if checked:
            text = pick(style, APPROVALS, key, "approve").format(list=", ".join(checked))
        else:
            text = "Nothing to check. Approved."
        if unchecked:
            text = text.removesuffix(" Approved.") + f" Could not check {', '.join(unchecked)}. Approved."
        return Step(index=0, agent="verifier", kind="assistant", content=text)

    def _reporter(self, query: str, steps: list[Step], style: int | None) -> Step:
        plan = read_plan(steps)
        values = read_values(steps)
        var = plan.report or (list(plan.items)[-1] if plan.items else None)
        value = values.get(var) if var else None
        if value is None:
            answer = "unknown"
        elif isinstance(value, str) or plan.fmt == "time":
            answer = _fmt(value)
        else:
            answer = f"{round(value + 1e-9, 2):.2f}"  # as the gold answer rounds (85.125 -> 85.13)
        return Step(
            index=0,
            agent="reporter",
            kind="final_answer",
            content=pick(style, REPORTS, len(steps), "report").format(a=answer, var=var),
        )


# --- the environment ---------------------------------------------------------------------


def _planner_owes_plan(turns: list[Step]) -> bool:
    """True until the planner has written the plan: after no planner turn, or after only
    an intro (one turn without a plan line)."""
    planner = [s for s in turns if s.agent == "planner"]
    return not planner or (len(planner) < 2 and not PLAN_LINE.search(planner[-1].content or ""))


def _solver_due(steps: list[Step], turns: list[Step], plan: Plan, since: int) -> bool:
    """True while plan items are pending, the solver has not said it is done since the
    latest flag, and it has had fewer than ``2 * items + 2`` turns since then."""
    solver_turns = sum(1 for s in turns if s.agent == "solver" and s.index > since)
    said_done = any(DONE.search(s.content or "") for s in turns if s.agent == "solver" and s.index > since)
    return bool(pending_items(steps, plan)) and not said_done and solver_turns < 2 * len(plan.items) + 2


def _verifier_due(turns: list[Step], plan: Plan, last_solver: int) -> bool:
    """True when the plan has checks, the verifier has not spoken since the solver's
    last turn, and it has had fewer than three turns."""
    verifier_turns = sum(1 for s in turns if s.agent == "verifier")
    checked_since = any(s.agent == "verifier" and s.index > last_solver for s in turns)
    return bool(plan.checks) and not checked_since and verifier_turns < 3


class ArithTeam(Env):
    """Planner / solver / verifier / reporter on checkable arithmetic questions."""

    name = "arith_team"
    benchmark = "whenpro-arith"
    version = 1
    agents = (
        Agent(id="planner", role="Planner"),
        Agent(id="solver", role="Solver (calculator, lookup, clock_add)"),
        Agent(id="verifier", role="Verifier"),
        Agent(id="reporter", role="Reporter"),
    )
    max_steps = 40

    def make_task(self, seed: int) -> EnvTask:
        query, params = make_query(seed)
        params["style"] = draw_style(random.Random(f"arith_team:style:{seed}"))
        return EnvTask(seed=seed, query=query, answer=gold_answer(params), params=params)

    def task_from_params(self, seed: int, query: str, answer: str, params: dict[str, Any]) -> EnvTask:
        if family_kind(str(params.get("family"))) is None:
            raise TraceFormatError(
                "unknown arith_team task family", json_path="$.extras.env.task.family", expected=", ".join(FAMILIES)
            )
        return EnvTask(seed=seed, query=query, answer=answer or gold_answer(params), params=params)

    def reference_policy(self) -> ArithReferencePolicy:
        return ArithReferencePolicy()

    def llm_guidance(self, agent: str) -> str:
        return ARITH_GUIDANCE.get(agent, "")

    def tool_specs(self, agent: str) -> tuple[ToolSpec, ...]:
        if agent != "solver":
            return ()
        return (
            ToolSpec("calculator", "Evaluate + - * / and parentheses.", ("expression",)),
            ToolSpec("lookup", "Read a cell of the inventory table.", ("item", "column")),
            ToolSpec("clock_add", "Add minutes to an HH:MM time.", ("start", "minutes")),
        )

    def live_tools(self, task: EnvTask) -> ToolRunner:
        table = task.params.get("table") or {}

        def run_one(call: ToolCall) -> str:
            args = call.arguments if isinstance(call.arguments, dict) else {}
            if call.name == "calculator":
                return calculate(args.get("expression"))
            if call.name == "clock_add":
                return clock_add(args.get("start"), args.get("minutes"))
            if call.name == "lookup":
                return lookup(table, args.get("item"), args.get("column"))
            raise ToolFailure(f"unknown tool {call.name!r}")

        def runner(calls: list[ToolCall]) -> ToolOutput:
            outs, errors = [], []
            for call in calls:
                try:
                    outs.append(run_one(call))
                except ToolFailure as exc:
                    outs.append(f"error: {exc}")
                    errors.append(f"ToolError: {exc}")
            text = outs[0] if len(outs) == 1 else "\n".join(f"{c.name}: {o}" for c, o in zip(calls, outs, strict=False))
            return ToolOutput(text, "; ".join(errors) or None)

        return runner

    def next_agent(self, query: str, steps: list[Step]) -> str | None:
        turns = [s for s in steps if s.kind not in FRAMING_KINDS and s.agent != "user"]
        if _planner_owes_plan(turns):
            return "planner"  # an intro is followed by the plan
        plan = read_plan(steps)
        if plan.review and plan.review in read_values(steps):
            return "planner"  # the review line asks for a progress check once that var has a value
        since, _, _ = latest_flag(steps)
        last_solver = max((s.index for s in turns if s.agent == "solver"), default=-1)
        if _solver_due(steps, turns, plan, since):
            return "solver"
        if _verifier_due(turns, plan, last_solver):
            return "verifier"
        if any(s.agent == "reporter" for s in turns if s.index > max(last_solver, since)):
            return None
        return "reporter"

    def check(self, task: EnvTask, final_answer: str | None) -> CheckResult:
        return check_value(final_answer, task.answer)


def check_value(final_answer: str | None, gold: str) -> CheckResult:
    """Compare a reported value with the gold answer: numbers within 0.005 (the answers
    have two decimals), times exactly."""
    if final_answer is None:
        return CheckResult(False, "no final answer")
    got, want = parse_value(final_answer), parse_value(gold)
    if isinstance(want, float) and isinstance(got, float):
        ok = abs(got - want) < 0.005
    else:
        ok = got is not None and str(got) == str(want)
    return CheckResult(ok, f"answer {final_answer!r}, gold {gold!r}")
