"""Who speaks next, and what counts as a tool, when an LLM continues a recorded run it did
not produce (the simulate executor, :mod:`whenpro_core.injection.simulate`; docs/architecture.md,
'Injection and warm-start replay'
step 2).

**Speaker rule** (decided here, no model call): the recorded order of agents while it
lasts, then the recorded habits.

1. A *code executor* agent (one whose recorded steps are all tool output, such as AG2's
   ``Computer_terminal`` or Magentic-One's ``ComputerTerminal``) speaks right after a
   message with fenced code, and only then: it is a tool, not a participant.
2. Otherwise the next agent is the next one in the recorded order of the original run
   after step ``t`` (code executors left out), one recorded turn per new step.
3. When the recorded order is used up (the continuation runs longer than the original),
   the next agent is the other agent that most often followed the last speaker in the
   recorded run (ties: the first seen), else the next agent in the trace's agent list
   (a single-agent run keeps its one agent).

**Recorded code executions**: a code executor's recorded reply is the result of the code
in the nearest message before it; such pairs go into the replay's tool cache under a
synthetic ``execute_code`` call, so the same code (whitespace at line ends aside) gets
the recorded output back without a model call.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from whenpro_core.injection.textedit import is_agent_step
from whenpro_core.injection.toolcache import ToolCache
from whenpro_core.trace.model import Step, ToolCall, Trace

#: Step kinds that hold a tool's output rather than an agent's decision.
TOOL_KINDS = frozenset({"observation", "tool", "tool_result", "function"})
#: Name of the synthetic tool call keying recorded code executions.
EXEC_TOOL = "execute_code"
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


def code_of(step: Step) -> str | None:
    """The fenced code blocks of ``step``'s content, joined, each line's trailing
    whitespace removed; ``None`` when it has none."""
    blocks = [b.strip("\n") for b in _FENCE.findall(step.content or "")]
    blocks = ["\n".join(line.rstrip() for line in b.splitlines()) for b in blocks if b.strip()]
    return "\n\n".join(blocks) if blocks else None


def exec_call(code: str) -> list[ToolCall]:
    """The synthetic tool call under which an execution of ``code`` is cached."""
    return [ToolCall(name=EXEC_TOOL, arguments={"code": code})]


@dataclass
class Roster:
    """The turn-taking facts of a recorded run (module docstring).

    Attributes:
        agents: participating agents in the trace's order (no framing, no code executors).
        executors: code-executor agents.
        order: recorded speakers after the replaced step (no code executors).
        successors: for each agent, the agent that most often followed it.
        kinds: each agent's recorded step kinds, most frequent first.
    """

    agents: list[str]
    executors: list[str]
    order: list[str]
    successors: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_trace(cls, trace: Trace, index: int) -> Roster:
        """The roster of ``trace`` for a continuation after step ``index``."""
        agent_steps = [s for s in trace.steps if is_agent_step(s)]
        by_agent: dict[str, list[Step]] = {}
        for s in agent_steps:
            by_agent.setdefault(s.agent, []).append(s)
        executors = [a for a, steps in by_agent.items() if all(s.kind in TOOL_KINDS for s in steps)]
        listed = [a.id for a in trace.agents if a.id in by_agent and a.id not in executors]
        agents = listed + [a for a in by_agent if a not in executors and a not in listed]
        seq = [s.agent for s in agent_steps if s.agent not in executors]
        pairs = Counter(zip(seq, seq[1:], strict=False))
        successors: dict[str, str] = {}
        for a in agents:
            # another agent when there is one (a repeated turn is how runs end, e.g. TERMINATE)
            followers = [
                (n, -seq.index(b), b) for (x, b), n in pairs.items() if x == a and (b != a or len(agents) == 1)
            ]
            if followers:
                successors[a] = max(followers)[2]
        order = [s.agent for s in trace.steps[index + 1 :] if is_agent_step(s) and s.agent not in executors]
        kinds = {a: [k for k, _ in Counter(s.kind for s in steps).most_common()] for a, steps in by_agent.items()}
        return cls(agents=agents, executors=executors, order=order, successors=successors, kinds=kinds)

    def next_speaker(self, steps: list[Step], used: int) -> tuple[str, bool]:
        """Who speaks after ``steps`` when ``used`` recorded turns are consumed; returns
        ``(agent, consumes_a_recorded_turn)``."""
        last = steps[-1] if steps else None
        if self.executors and last is not None and last.agent not in self.executors and code_of(last):
            return self.executors[0], False
        if used < len(self.order):
            return self.order[used], True
        previous = next((s.agent for s in reversed(steps) if is_agent_step(s) and s.agent not in self.executors), None)
        if previous in self.successors:
            return self.successors[previous], False
        if previous in self.agents:
            return self.agents[(self.agents.index(previous) + 1) % len(self.agents)], False
        return (self.agents[0] if self.agents else "agent"), False

    def kind_for(self, agent: str, steps: list[Step], *, with_tools: bool, final: bool, has_final_kind: bool) -> str:
        """The kind of a new step by ``agent``: ``final_answer`` for a final answer in a
        trace that uses that kind; else the kind of the agent's latest step of the same
        shape (with or without tool calls); else its most frequent kind; else
        ``assistant``."""
        if final and has_final_kind:
            return "final_answer"
        mine = [s for s in steps if s.agent == agent and s.kind != "final_answer"]
        same = [s for s in mine if bool(s.tool_calls) == with_tools]
        if same:
            return same[-1].kind
        if mine:
            return mine[-1].kind
        kinds = [k for k in self.kinds.get(agent, []) if k != "final_answer"]
        return kinds[0] if kinds else "assistant"


def next_coord(steps: list[Step]) -> str:
    """The coordinate of a new step: one more than the latest integer coordinate (so a
    trace numbered from 0 or 1 after an unnumbered task keeps its numbering), else the
    step's index as a string."""
    for s in reversed(steps):
        if s.coord is not None:
            return str(int(s.coord) + 1) if s.coord.isdigit() else str(len(steps))
    return str(len(steps))


def record_executions(trace: Trace, roster: Roster, cache: ToolCache) -> int:
    """Put ``trace``'s recorded code executions into ``cache`` (module docstring).
    Returns how many were found."""
    found = 0
    for i, step in enumerate(trace.steps):
        if step.agent not in roster.executors or not is_agent_step(step):
            continue
        for prev in reversed(trace.steps[:i]):
            if prev.agent in roster.executors:
                break
            code = code_of(prev)
            if code:
                cache.add(exec_call(code), step.content, step.error)
                found += 1
                break
    return found
