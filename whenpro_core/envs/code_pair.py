"""``code_pair``: a coder and a tester write a small Python function to a spec (tasks:
:mod:`whenpro_core.envs.code_tasks`).

Reference policies (each reads only the spec and the conversation):

* **coder** — with no code yet, reads the spec and writes a first version of the main
  behaviour (it handles an ``Edge case:`` sentence only once a test fails); after a tester
  report with failures it re-reads the spec and writes the complete version; after an
  approval (or three failed rounds) it gives its latest code block as the final answer.
* **tester** — turns the spec's ``Examples:`` lines into test code and runs it with the
  ``run_tests`` tool against the coder's *latest code block in the conversation*
  (sandboxed: :mod:`whenpro_core.envs.sandbox`), then reads the tool output and approves or
  lists the failures.

The final answer is the code; the run succeeds when the task's hidden tests (more cases than
the examples) pass in the sandbox. So an injected slip in the code is caught only when an
example exercises it.
"""

from __future__ import annotations

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
    harness,
    hidden_cases,
    make_task,
    read_spec,
    reference_solution,
    spec_examples,
)
from whenpro_core.envs.sandbox import run_python
from whenpro_core.errors import TraceFormatError
from whenpro_core.model import Agent, Step, ToolCall

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


def latest_code(steps: list[Step]) -> str | None:
    """The last fenced code block written by the coder, or ``None``."""
    for step in reversed(steps):
        if step.agent == "coder":
            blocks = CODE_BLOCK.findall(step.content or "")
            if blocks:
                return blocks[-1]
    return None


def extract_code(text: str) -> str:
    """The last fenced code block of ``text``, else ``text`` itself (stripped of a
    ``Final code:``/``Final answer:`` label)."""
    blocks = CODE_BLOCK.findall(text or "")
    if blocks:
        return blocks[-1]
    return re.sub(r"^\s*final (?:code|answer)\s*:\s*", "", text or "", flags=re.IGNORECASE)


def _verdicts(steps: list[Step]) -> list[Step]:
    """Tester steps that are verdicts (no tool call)."""
    return [s for s in steps if s.agent == "tester" and not s.tool_calls and s.kind not in FRAMING_KINDS]


def failed_rounds(steps: list[Step]) -> int:
    """How many tester verdicts so far did not approve."""
    return sum(1 for s in _verdicts(steps) if not APPROVED.search(s.content or ""))


class CodeReferencePolicy:
    """Deterministic coder and tester (see the module docstring)."""

    name = "reference"

    def act(self, state: EnvState) -> Step:
        return getattr(self, f"_{state.agent}")(state.query, list(state.steps))

    def _coder(self, spec: str, steps: list[Step]) -> Step:
        code = latest_code(steps)
        verdicts = _verdicts(steps)
        last_verdict = verdicts[-1] if verdicts else None
        reading = read_spec(spec)
        if code is None:
            if reading is None:
                return Step(index=0, agent="coder", kind="assistant",
                            content="I cannot tell which function this spec asks for.")
            template, params = reading
            return Step(index=0, agent="coder", kind="assistant",
                        content=f"First version of `{template.name}`:\n```python\n{template.draft(params)}```")
        approved = last_verdict is not None and APPROVED.search(last_verdict.content or "")
        if approved or failed_rounds(steps) >= MAX_ROUNDS or reading is None:
            return Step(index=0, agent="coder", kind="final_answer", content=f"Final code:\n```python\n{code}```")
        template, params = reading
        failures = [ln.strip("- ").strip() for ln in (last_verdict.content if last_verdict else "").splitlines()
                    if ln.strip().startswith("- ")]
        what = f" ({failures[0]})" if failures else ""
        return Step(index=0, agent="coder", kind="assistant", content=(
            f"Fixing what the tester reported{what}; re-reading the spec, including its edge case:\n"
            f"```python\n{template.full(params)}```"))

    def _tester(self, spec: str, steps: list[Step]) -> Step:
        last = steps[-1]
        if last.agent == "tester" and last.tool_calls:
            return self._verdict(last)
        code = latest_code(steps)
        cases = spec_examples(spec)
        if code is None or not cases:
            return Step(index=0, agent="tester", kind="assistant",
                        content="There is no code or no example to test. Coder, please fix.")
        return Step(index=0, agent="tester", kind="action",
                    content=(f"Running the {len(cases)} examples from the spec as tests against "
                             "the coder's latest code."),
                    tool_calls=[ToolCall(id=f"call_{len(steps)}", name="run_tests",
                                         arguments={"code": code, "tests": harness(cases)})])

    def _verdict(self, action: Step) -> Step:
        out = action.observation or ""
        passed = [ln for ln in out.splitlines() if ln.startswith("PASS ")]
        failed = [ln for ln in out.splitlines() if ln.startswith("FAIL ")]
        if passed and not failed and not action.error:
            return Step(index=0, agent="tester", kind="assistant",
                        content=f"All {len(passed)} tests passed. Approved.")
        if failed:
            listing = "\n".join(f"- {ln[5:]}" for ln in failed)
            text = f"{len(failed)} of {len(failed) + len(passed)} tests failed:\n{listing}\nCoder, please fix."
        else:
            last_line = (out.strip().splitlines() or ["no output"])[-1]
            text = f"The tests could not run:\n- {last_line}\nCoder, please fix."
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
            raise TraceFormatError("unknown code_pair template", json_path="$.extras.env.task.template",
                                   expected=" or ".join(BY_NAME))
        return EnvTask(seed=seed, query=query, answer=answer or reference_solution(params), params=params)

    def reference_policy(self) -> CodeReferencePolicy:
        return CodeReferencePolicy()

    def tool_specs(self, agent: str) -> tuple[ToolSpec, ...]:
        if agent != "tester":
            return ()
        return (ToolSpec("run_tests", "Run test code against code in a sandbox; prints PASS/FAIL lines.",
                         ("code", "tests")),)

    def live_tools(self, task: EnvTask) -> ToolRunner:
        def runner(calls: list[ToolCall]) -> ToolOutput:
            outs, errors = [], []
            for call in calls:
                args = call.arguments if isinstance(call.arguments, dict) else {}
                if call.name != "run_tests" or not isinstance(args.get("code"), str) \
                        or not isinstance(args.get("tests"), str):
                    outs.append(f"error: {call.name} needs string arguments code and tests")
                    errors.append("ToolError: bad run_tests call")
                    continue
                limit = sandbox_timeout()
                result = run_python(args["code"] + "\n\n" + args["tests"], timeout=limit)
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
        result = run_python(final_answer + "\n\n" + harness(cases), timeout=sandbox_timeout())
        passed = sum(1 for ln in result.stdout.splitlines() if ln.startswith("PASS "))
        ok = result.ok and passed == len(cases)
        detail = f"{passed}/{len(cases)} hidden tests passed"
        if result.timed_out:
            detail += " (timed out)"
        return CheckResult(ok, detail)
