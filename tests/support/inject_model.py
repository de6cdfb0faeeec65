"""A scripted model for the local LLM test server that answers the questions of the LLM
error generator (stage 1: the flaw; stage 2: the rewritten step) and of the simulate
executor (an agent's next step; a tool's output) by reading the prompt, in the structured
form when the request asks for a schema and as labelled sections otherwise. It logs what
it was asked, in order, so tests can check which questions reached the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.judge_oracle import wants_structured
from tests.support.llm_wire import prompt_text
from whenpro_core.injection.llm_generate import STAGE1_ASK, STAGE2_ASK
from whenpro_core.injection.simulate import STEP_ASK, TOOL_ASK

_TURN = re.compile(re.escape(STEP_ASK) + r" (\S+) \| Agent: (.+?)\. Answer with")
_CALLS = re.compile(r"Agent: (.+?) calls: (\[.*\])\n" + re.escape(TOOL_ASK))
_EXEC = re.compile(re.escape(TOOL_ASK) + r" running the code of Step (\S+) as (.+?) prints it")


def step_answer(
    content: str, tool_calls: list[dict] | None = None, final_answer: str | None = None, ends_run: bool = False
) -> dict[str, Any]:
    """A simulated agent turn (the :class:`~whenpro_core.llm.generation.SimStep` fields)."""
    calls = [{"name": c["name"], "arguments_json": json.dumps(c["arguments"])} for c in tool_calls or []]
    return {"content": content, "tool_calls": calls, "final_answer": final_answer, "ends_run": ends_run}


@dataclass
class Asked:
    """One question the model saw: ``kind`` (stage1, stage2, turn, tool, exec), the
    ``agent`` / ``coord`` / tool ``calls`` it names, and the whole ``prompt``."""

    kind: str
    prompt: str
    agent: str | None = None
    coord: str | None = None
    calls: Any = None


@dataclass
class InjectModel:
    """Answers by question kind.

    Attributes:
        plan: stage-1 ``{"flaw", "wrong_result"}``.
        rewrites: stage-2 answers ``{"content", "tool_calls"}`` in order (the last repeats).
        turns: agent -> list of :func:`step_answer` dicts, in order (the last repeats), or a
            callable ``(agent, coord, prompt) -> dict``.
        tool: ``(calls, prompt) -> observation`` for simulated tool results.
        exec_output: ``(prompt) -> text`` for a simulated code executor.
        raw: a callable ``(kind) -> str | None``; a string is sent as the answer as is
            (to test unusable answers).
    """

    plan: dict[str, str] = field(default_factory=lambda: {"flaw": "flaw", "wrong_result": "wrong"})
    rewrites: list[dict[str, Any]] = field(default_factory=list)
    turns: dict[str, list[dict[str, Any]]] | Callable[[str, str, str], dict[str, Any]] = field(default_factory=dict)
    tool: Callable[[Any, str], str] = lambda calls, prompt: "0"
    exec_output: Callable[[str], str] = lambda prompt: "exitcode: 0 (execution succeeded)\nCode output: 0"
    raw: Callable[[str], str | None] = lambda kind: None
    asked: list[Asked] = field(default_factory=list)

    def kinds(self) -> list[str]:
        """The kinds asked so far, in order."""
        return [a.kind for a in self.asked]

    def __call__(self, body: dict[str, Any]) -> Any:
        prompt = prompt_text(body)
        structured = wants_structured(body)
        if STAGE2_ASK in prompt:
            n = sum(1 for a in self.asked if a.kind == "stage2")
            self.asked.append(Asked("stage2", prompt))
            ans = self.rewrites[min(n, len(self.rewrites) - 1)]
            return self._out("stage2", ans, structured, self._rewrite_text)
        if STAGE1_ASK in prompt:
            self.asked.append(Asked("stage1", prompt))
            return self._out(
                "stage1", self.plan, structured, lambda a: f"Flaw: {a['flaw']}\nWrong result: {a['wrong_result']}"
            )
        m = _EXEC.search(prompt)
        if m:
            self.asked.append(Asked("exec", prompt, agent=m.group(2), coord=m.group(1)))
            return self._out(
                "exec", {"observation": self.exec_output(prompt), "error": None}, structured, self._tool_text
            )
        m = _CALLS.search(prompt)
        if m:
            calls = json.loads(m.group(2))
            self.asked.append(Asked("tool", prompt, agent=m.group(1), calls=calls))
            return self._out(
                "tool", {"observation": self.tool(calls, prompt), "error": None}, structured, self._tool_text
            )
        m = _TURN.findall(prompt)
        if m:
            coord, agent = m[-1]
            self.asked.append(Asked("turn", prompt, agent=agent, coord=coord))
            if callable(self.turns):
                ans = self.turns(agent, coord, prompt)
            else:
                mine = self.turns[agent]
                n = sum(1 for a in self.asked[:-1] if a.kind == "turn" and a.agent == agent)
                ans = mine[min(n, len(mine) - 1)]
            return self._out("turn", ans, structured, self._turn_text)
        self.asked.append(Asked("other", prompt))
        return "I cannot help with that."

    def _out(self, kind: str, ans: dict[str, Any], structured: bool, as_text: Callable[[dict], str]) -> Any:
        raw = self.raw(kind)
        if raw is not None:
            return raw
        return ans if structured else as_text(ans)

    @staticmethod
    def _rewrite_text(a: dict[str, Any]) -> str:
        calls = a.get("tool_calls")
        return f"### CONTENT\n{a['content']}\n### TOOL CALLS\n{json.dumps(calls) if calls is not None else 'null'}"

    @staticmethod
    def _turn_text(a: dict[str, Any]) -> str:
        return (
            f"### CONTENT\n{a['content']}\n### TOOL CALLS\n{json.dumps(a['tool_calls'])}\n"
            f"### FINAL ANSWER\n{a['final_answer'] or 'null'}\n### ENDS RUN\n{'yes' if a['ends_run'] else 'no'}"
        )

    @staticmethod
    def _tool_text(a: dict[str, Any]) -> str:
        return f"### OBSERVATION\n{a['observation']}\n### ERROR\n{a['error'] or 'null'}"
