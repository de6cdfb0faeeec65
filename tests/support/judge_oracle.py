"""A scripted judge for the local LLM test server: it answers every attribution
protocol's question as a model that knows the decisive error would (agent, step, mode),
in the structured form when the request asks for a schema and as labelled lines
otherwise. Tests and ``benchmarks/protocol_cost.py`` use it to drive the real protocols
through the real SDKs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tests.support.llm_wire import prompt_text

_ASK_STEP = re.compile(r"Does Step (\S+) hold the decisive error\?")
_HALVES = re.compile(
    r"first half \((?:Steps? )(\S+)(?: to (\S+))?\) or the second half \((?:Steps? )(\S+)(?: to (\S+))?\)"
)


def wants_structured(body: dict[str, Any]) -> bool:
    """True when the request asks for JSON-schema output or a forced tool call."""
    text = body.get("text")
    return bool(
        body.get("response_format")
        or (isinstance(text, dict) and text.get("format"))
        or body.get("output_config")
        or body.get("tool_choice")
    )


@dataclass
class Oracle:
    """Answers as if the decisive error were at ``step`` by ``agent`` of ``mode``.
    ``order`` lists the trace's step coordinates in order (for binary search)."""

    agent: str
    step: str
    mode: str
    order: list[str]
    calls: int = 0

    def _pos(self, coord: str) -> int:
        return self.order.index(coord) if coord in self.order else -1

    def __call__(self, body: dict[str, Any]) -> Any:
        self.calls += 1
        prompt = prompt_text(body)
        structured = wants_structured(body)
        asked = _ASK_STEP.findall(prompt)
        if "first half (" in prompt:
            m = _HALVES.findall(prompt)[-1]
            first_end = m[1] or m[0]
            half = "first" if self._pos(self.step) <= self._pos(first_end) else "second"
            return {"half": half, "reason": "oracle"} if structured else f"Half: {half}\nReason: oracle"
        if "Which failure mode is it?" in prompt:
            return (
                {"error_mode": self.mode, "reason": "oracle"}
                if structured
                else f"Error Mode: {self.mode}\nReason: oracle"
            )
        if asked and prompt.rstrip().endswith("(one sentence)"):
            yes = asked[-1] == self.step
            if structured:
                return {"decisive": yes, "error_mode": self.mode if yes else "", "reason": "oracle"}
            return f"Decisive: {'Yes' if yes else 'No'}\nError Mode: {self.mode if yes else 'None'}\nReason: oracle"
        if structured:
            return {"agent_name": self.agent, "step_number": self.step, "error_mode": self.mode, "reason": "oracle"}
        return f"Agent Name: {self.agent}\nStep Number: {self.step}\nError Mode: {self.mode}\nReason: oracle"


def oracle_for(trace) -> Oracle:
    """An oracle that knows ``trace``'s ground truth."""
    gt = trace.ground_truth
    order = []
    for s in trace.steps:
        if s.coord is not None and s.coord not in order:
            order.append(s.coord)
    agent = gt.agent or (gt.agents[0] if gt.agents else "agent")
    return Oracle(agent=agent, step=gt.step, mode=gt.mode or "R.2", order=order)
