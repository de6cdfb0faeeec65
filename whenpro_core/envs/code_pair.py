"""``code_pair``: a coder and a tester write a small Python function to a spec (tasks:
:mod:`whenpro_core.envs.code_tasks`).

Reference policies (each reads only the spec and the conversation):

* **coder** — with no code yet, reads the spec and writes a first version of the main
  behaviour (it handles an ``Edge case:`` sentence only once a test fails; some runs open
  with a short plan, some write the complete version at once, and a draft sometimes has a
  slip, a literal off by one); after a tester report with failures it patches *its own
  latest code* with the edge case (:func:`patch_code`: the rest of its code stays as it
  was), and after a second failed round it rewrites the function from the spec; after an
  approval (or three failed rounds) it gives its latest code block as the final answer.
  The wording of every message is drawn from the run's style
  (:mod:`whenpro_core.envs.style`).
* **tester** — turns the spec's ``Examples:`` lines into test code once and runs it with
  the ``run_tests`` tool against the coder's *latest code block in the conversation*
  (sandboxed: :mod:`whenpro_core.envs.sandbox`); later rounds re-run the same test code
  (:func:`own_tests`), as a tester keeps its test file, and says how many cases it runs
  (those of its test code). It reads the tool output and approves or lists the failures.

The final answer is the code; the run succeeds when the task's hidden tests (more cases than
the examples) pass in the sandbox. So an injected slip in the code is caught only when an
example exercises it.
"""

from __future__ import annotations

import difflib
import os
import re
from typing import Any

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
from whenpro_core.envs.code_tasks import (
    BY_NAME,
    Template,
    count_cases,
    harness,
    hidden_cases,
    make_task,
    read_spec,
    reference_solution,
    spec_examples,
)
from whenpro_core.envs.sandbox import SandboxResult, run_python
from whenpro_core.envs.style import chance, pick
from whenpro_core.errors import TraceFormatError
from whenpro_core.trace.model import Agent, Step, ToolCall

CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
APPROVED = re.compile(r"\bapproved\b", re.IGNORECASE)
MAX_ROUNDS = 3

#: What an LLM playing each agent is told (:meth:`CodePair.llm_guidance`): the turn order
#: and the tools read these conventions (the latest ```python block, ``Approved``, PASS/FAIL).
CODE_GUIDANCE = {
    "coder": "Write the whole function in one fenced ```python block in every message: the tester "
    "tests your latest block. When the tester says `Approved.` (or after three failed "
    "rounds), give your latest code again in a ```python block as the final answer.",
    "tester": "First call run_tests with `code` = the coder's latest ```python block, verbatim, and "
    "`tests` = Python that prints one line per example of the spec: `PASS <call> == "
    "<expected>`, or `FAIL <call> == <expected>: got <value>`. Then, after its output: "
    "`All N tests passed. Approved.` when every line is PASS; otherwise each failing line "
    "as `- <call> == <expected>: got <value>` and `Coder, please fix.` Write the word "
    "approved only to approve.",
}
#: Wall-clock seconds for one sandboxed test run (``WHENPRO_SANDBOX_TIMEOUT`` overrides).
TEST_TIMEOUT = 5.0


def sandbox_timeout() -> float:
    """Seconds allowed to one sandboxed run: ``$WHENPRO_SANDBOX_TIMEOUT`` or 5."""
    try:
        value = float(os.environ.get("WHENPRO_SANDBOX_TIMEOUT", TEST_TIMEOUT))
    except ValueError:
        return TEST_TIMEOUT
    return value if 0 < value <= 600 else TEST_TIMEOUT


#: A run that timed out is run again with this many times the wall-clock time (and the
#: same CPU-time budget): on a loaded machine a test run can wait past its time without
#: running, and a made-up timeout turned a passing counterfactual into a "decisive" label.
RETRY_WALL_FACTOR = 4


def run_tests_code(source: str) -> SandboxResult:
    """Run ``source`` (code and its tests) in the sandbox within :func:`sandbox_timeout`;
    a run that times out is run once more with :data:`RETRY_WALL_FACTOR` times the wall
    clock and the same CPU seconds, so that only code that keeps running (a hang, a busy
    loop) times out, not code that waited for a busy machine."""
    limit = sandbox_timeout()
    result = run_python(source, timeout=limit)
    if result.timed_out:
        result = run_python(source, timeout=limit * RETRY_WALL_FACTOR, cpu_seconds=limit)
    return result


def latest_code(steps: list[Step]) -> str | None:
    """The last fenced code block written by the coder, or ``None``."""
    for step in reversed(steps):
        if step.agent == "coder":
            blocks: list[str] = CODE_BLOCK.findall(step.content or "")
            if blocks:
                return blocks[-1]
    return None


def extract_code(text: str) -> str:
    """The last fenced code block of ``text``, else ``text`` itself (stripped of a
    ``Final code:``/``Final answer:`` label)."""
    blocks: list[str] = CODE_BLOCK.findall(text or "")
    if blocks:
        return blocks[-1]
    return re.sub(r"^\s*final (?:code|answer)\s*:\s*", "", text or "", flags=re.IGNORECASE)


def own_tests(steps: list[Step]) -> str | None:
    """The test code of the tester's latest ``run_tests`` call, or ``None`` before its
    first: the tester keeps its test file and re-runs it in later rounds (so a test it got
    wrong, or left out, stays wrong or left out)."""
    for step in reversed(steps):
        if step.agent != "tester":
            continue
        for call in step.tool_calls:
            args = call.arguments if isinstance(call.arguments, dict) else {}
            tests = args.get("tests")
            if call.name == "run_tests" and isinstance(tests, str):
                return tests
    return None


def _verdicts(steps: list[Step]) -> list[Step]:
    """Tester steps that are verdicts (no tool call)."""
    return [s for s in steps if s.agent == "tester" and not s.tool_calls and s.kind not in FRAMING_KINDS]


def failed_rounds(steps: list[Step]) -> int:
    """How many tester verdicts so far did not approve."""
    return sum(1 for s in _verdicts(steps) if not APPROVED.search(s.content or ""))


#: Wording pools (the first entry is the original wording; :mod:`whenpro_core.envs.style`).
PLANS = (
    "I will write the main behaviour first and let the tests tell us what is missing.",
    "Plan: implement `{name}` from the spec, then have the examples run against it.",
    "Reading the spec for `{name}`; I'll start with the core logic and refine after testing.",
    "Starting on `{name}`. The main rule first; tester, the examples will follow.",
    "Let me sketch `{name}` from the description and then we test it.",
)
FIRSTS = (
    "First version of `{name}`:",
    "Here is a first version of `{name}`:",
    "Draft of `{name}`:",
    "My first attempt at `{name}`:",
    "Initial implementation:",
    "`{name}`, first pass:",
    "This should cover the main case:",
    "A first cut:",
)
CAREFUL = (
    "Complete version of `{name}`, edge case included:",
    "Here is `{name}`, handling the edge case too:",
    "`{name}` with the edge case from the spec:",
    "Full implementation:",
)
FIXES = (
    "Fixing what the tester reported{what}; re-reading the spec, including its edge case:",
    "Thanks. Updated `{name}`{what}:",
    "Patched the failing case{what}:",
    "Here is the fix{what}:",
    "Revised version{what}:",
    "Good catch{what}. New version:",
    "Adjusted the code for the report{what}:",
)
REWRITES = (
    "Rewriting `{name}` from the spec, step by step:",
    "Starting over from the spec:",
    "Let me redo `{name}` carefully against the spec:",
    "Fresh version written from the spec:",
)
FINALS = (
    "Final code:",
    "Final answer:",
    "Here is the final version:",
    "Final version of `{name}`:",
    "Done. The final code:",
    "Submitting this as the final code:",
)
RUNS = (
    "Running the {n} examples from the spec as tests against the coder's latest code.",
    "Testing the latest code with the spec's {n} examples.",
    "Let me run the {n} examples.",
    "Running the examples ({n}) against this version.",
    "Checking the code against the {n} examples.",
    "I'll run the spec's examples ({n} cases) now.",
)
PASSES = (
    "All {n} tests passed. Approved.",
    "{n}/{n} examples pass. Approved.",
    "Every example passes ({n} of {n}). Approved.",
    "The {n} tests pass. Approved.",
    "No failures in {n} tests. Approved.",
)
FAILS = (
    "{f} of {t} tests failed:",
    "{f}/{t} examples fail:",
    "Failures ({f} of {t}):",
    "Not yet: {f} of {t} tests fail.",
    "{f} failing of {t}:",
)
ASKS = (
    "Coder, please fix.",
    "Coder, please fix these.",
    "Please fix and resend, coder.",
    "Coder, can you fix this?",
    "Over to you, coder: please fix.",
)
DOCS = (
    "As the spec describes.",
    "Implements the spec.",
    "See the spec for the rules.",
    "Behaviour from the spec.",
    "Returns what the spec asks for.",
    "Per the task description.",
)
#: Chances of an optional planning message, a complete first version, a slip in a draft,
#: and a one-line docstring in the coder's functions (for the whole run).
P_PLAN, P_CAREFUL, P_SLIP, P_DOC = 0.3, 0.15, 0.15, 0.7
_DOCLINE = re.compile(r'^\s+"""[^\n]*"""\n', re.MULTILINE)


def dress(code: str, style: int | None) -> str:
    """``code`` as this run's coder writes it: with a one-line docstring under the
    ``def`` line in most runs (so its code is its own, not the reference text)."""
    if not chance(style, P_DOC, "doc") or _DOCLINE.search(code):
        return code
    head, nl, body = code.partition("\n")
    return f'{head}{nl}    """{pick(style, DOCS, "doc")}"""\n{body}'


def undress(code: str) -> str:
    """``code`` without the docstring line :func:`dress` adds."""
    return _DOCLINE.sub("", code, count=1)


_LITERAL = re.compile(r"(?<![\w.'])(\d+)(?![\w.'])")


def patch_code(latest: str, draft: str, full: str) -> str:
    """Apply the draft -> full edit of a template to ``latest`` (the coder's own latest
    code): lines the edit does not touch are kept as the coder last wrote them (so a slip
    there stays); ``full`` when the line counts do not match."""
    d, f, cur = draft.splitlines(), full.splitlines(), latest.splitlines()
    if len(cur) != len(d):
        return full
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, d, f).get_opcodes():
        out += cur[i1:i2] if tag == "equal" else f[j1:j2]
    return "\n".join(out) + "\n"


def slip(code: str, style: int | None, key: int) -> str:
    """``code`` with one literal off by one (a harmless slip when an example catches it)."""
    body = code.split("\n", 1)
    found = list(_LITERAL.finditer(body[1] if len(body) > 1 else ""))
    if not found:
        return code
    m = pick(style, found, key, "slip")
    value = int(m.group(1)) + pick(style, (1, -1), key, "slip-sign")
    rest = body[1]
    return body[0] + "\n" + rest[: m.start()] + str(max(value, 0)) + rest[m.end() :]


def _block(intro: str, code: str) -> str:
    return f"{intro}\n```python\n{code}```"


class CodeReferencePolicy:
    """Coder and tester (see the module docstring); wording, an optional planning
    message, a complete first version and slips vary with the run's style."""

    name = "reference"

    def act(self, state: EnvState) -> Step:
        step: Step = getattr(self, f"_{state.agent}")(state.query, list(state.steps), state.style)
        return step

    def _coder(self, spec: str, steps: list[Step], style: int | None) -> Step:
        code = latest_code(steps)
        key = len(steps)
        reading = read_spec(spec)
        if code is None:
            return self._first(reading, steps, style, key)
        verdicts = _verdicts(steps)
        last_verdict = verdicts[-1] if verdicts else None
        approved = last_verdict is not None and APPROVED.search(last_verdict.content or "")
        name = reading[0].name if reading else "the function"
        if approved or failed_rounds(steps) >= MAX_ROUNDS or reading is None:
            return Step(
                index=0,
                agent="coder",
                kind="final_answer",
                content=_block(pick(style, FINALS, key, "final").format(name=name), code),
            )
        template, params = reading
        failures = [
            ln.strip("- ").strip()
            for ln in (last_verdict.content if last_verdict else "").splitlines()
            if ln.strip().startswith("- ")
        ]
        what = f" ({failures[0]})" if failures else ""
        patched = dress(patch_code(undress(code), template.draft(params), template.full(params)), style)
        if failed_rounds(steps) >= 2 or patched == code:
            return Step(
                index=0,
                agent="coder",
                kind="assistant",
                content=_block(
                    pick(style, REWRITES, key, "rewrite").format(name=name), dress(template.full(params), style)
                ),
            )
        return Step(
            index=0,
            agent="coder",
            kind="assistant",
            content=_block(pick(style, FIXES, key, "fix").format(name=name, what=what), patched),
        )

    def _first(
        self, reading: tuple[Template, dict[str, Any]] | None, steps: list[Step], style: int | None, key: int
    ) -> Step:
        if reading is None:
            return Step(
                index=0, agent="coder", kind="assistant", content="I cannot tell which function this spec asks for."
            )
        template, params = reading
        name = template.name
        spoke = any(s.agent == "coder" for s in steps)
        if not spoke and chance(style, P_PLAN, "plan"):
            return Step(
                index=0, agent="coder", kind="assistant", content=pick(style, PLANS, key, "plan").format(name=name)
            )
        if chance(style, P_CAREFUL, "careful"):
            return Step(
                index=0,
                agent="coder",
                kind="assistant",
                content=_block(
                    pick(style, CAREFUL, key, "first").format(name=name), dress(template.full(params), style)
                ),
            )
        draft = template.draft(params)
        if chance(style, P_SLIP, "slip"):
            draft = slip(draft, style, key)
        return Step(
            index=0,
            agent="coder",
            kind="assistant",
            content=_block(pick(style, FIRSTS, key, "first").format(name=name), dress(draft, style)),
        )

    def _tester(self, spec: str, steps: list[Step], style: int | None) -> Step:
        last = steps[-1]
        if last.agent == "tester" and last.tool_calls:
            return self._verdict(last, style, len(steps))
        code = latest_code(steps)
        cases = spec_examples(spec)
        if code is None or not cases:
            return Step(
                index=0,
                agent="tester",
                kind="assistant",
                content="There is no code or no example to test. Coder, please fix.",
            )
        tests = own_tests(steps) or harness(cases)
        return Step(
            index=0,
            agent="tester",
            kind="action",
            content=pick(style, RUNS, len(steps), "run").format(n=count_cases(tests) or len(cases)),
            tool_calls=[ToolCall(id=f"call_{len(steps)}", name="run_tests", arguments={"code": code, "tests": tests})],
        )

    def _verdict(self, action: Step, style: int | None, key: int) -> Step:
        out = action.observation or ""
        passed = [ln for ln in out.splitlines() if ln.startswith("PASS ")]
        failed = [ln for ln in out.splitlines() if ln.startswith("FAIL ")]
        if passed and not failed and not action.error:
            return Step(
                index=0,
                agent="tester",
                kind="assistant",
                content=pick(style, PASSES, key, "pass").format(n=len(passed)),
            )
        ask = pick(style, ASKS, key, "ask")
        if failed:
            listing = "\n".join(f"- {ln[5:]}" for ln in failed)
            head = pick(style, FAILS, key, "fail").format(f=len(failed), t=len(failed) + len(passed))
            text = f"{head}\n{listing}\n{ask}"
        else:
            last_line = (out.strip().splitlines() or ["no output"])[-1]
            text = f"The tests could not run:\n- {last_line}\n{ask}"
        return Step(index=0, agent="tester", kind="assistant", content=text)


class CodePair(Env):
    """Coder / tester pair on small function specs with hidden tests."""

    name = "code_pair"
    benchmark = "whenpro-code"
    version = 1
    agents = (Agent(id="coder", role="Coder"), Agent(id="tester", role="Tester (run_tests, sandboxed)"))
    max_steps = 24

    def make_task(self, seed: int) -> EnvTask:
        spec, params = make_task(seed)
        return EnvTask(seed=seed, query=spec, answer=reference_solution(params), params=params)

    def task_from_params(self, seed: int, query: str, answer: str, params: dict[str, Any]) -> EnvTask:
        if params.get("template") not in BY_NAME:
            raise TraceFormatError(
                "unknown code_pair template", json_path="$.extras.env.task.template", expected=" or ".join(BY_NAME)
            )
        return EnvTask(seed=seed, query=query, answer=answer or reference_solution(params), params=params)

    def reference_policy(self) -> CodeReferencePolicy:
        return CodeReferencePolicy()

    def tool_specs(self, agent: str) -> tuple[ToolSpec, ...]:
        if agent != "tester":
            return ()
        return (
            ToolSpec(
                "run_tests", "Run test code against code in a sandbox; prints PASS/FAIL lines.", ("code", "tests")
            ),
        )

    def live_tools(self, task: EnvTask) -> ToolRunner:
        def runner(calls: list[ToolCall]) -> ToolOutput:
            outs, errors = [], []
            for call in calls:
                args = call.arguments if isinstance(call.arguments, dict) else {}
                if (
                    call.name != "run_tests"
                    or not isinstance(args.get("code"), str)
                    or not isinstance(args.get("tests"), str)
                ):
                    outs.append(f"error: {call.name} needs string arguments code and tests")
                    errors.append("ToolError: bad run_tests call")
                    continue
                limit = sandbox_timeout()
                result = run_tests_code(args["code"] + "\n\n" + args["tests"])
                outs.append(result.summary())
                if result.timed_out:
                    errors.append(f"ToolError: timed out after {limit:g} s")
                elif result.returncode != 0:
                    errors.append(f"ToolError: exit status {result.returncode}")
            return ToolOutput("\n".join(outs), "; ".join(errors) or None)

        return runner

    def next_agent(self, query: str, steps: list[Step]) -> str | None:
        turns = [s for s in steps if s.kind not in FRAMING_KINDS and s.agent != "user"]
        if not turns or latest_code(steps) is None:
            coder_turns = sum(1 for s in turns if s.agent == "coder")
            return "coder" if coder_turns < 2 else None
        last = turns[-1]
        if last.agent == "coder":
            return "tester"
        if last.agent == "tester":
            return "tester" if last.tool_calls else "coder"
        return None

    def extract_answer(self, step: Step) -> str:
        return extract_code(step.content)

    def llm_guidance(self, agent: str) -> str:
        return CODE_GUIDANCE.get(agent, "")

    def check(self, task: EnvTask, final_answer: str | None) -> CheckResult:
        if not final_answer:
            return CheckResult(False, "no final code")
        cases = hidden_cases(task.params)
        result = run_tests_code(final_answer + "\n\n" + harness(cases))
        passed = sum(1 for ln in result.stdout.splitlines() if ln.startswith("PASS "))
        ok = result.ok and passed == len(cases)
        detail = f"{passed}/{len(cases)} hidden tests passed"
        if result.timed_out:
            detail += " (timed out)"
        return CheckResult(ok, detail)
