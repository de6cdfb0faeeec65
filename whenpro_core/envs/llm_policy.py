"""An LLM policy for the built-in environments: a model plays whichever agent's turn it is
(``whenpro run ENV --model provider:model``; issue "Error injection", part 1).

Each turn is one call through the attribution backends (:mod:`whenpro_core.llm`: retries,
cache, usage). The model sees what a reference policy sees (:class:`EnvState`): the task
query, the agents and their roles, the conversation so far as the judge transcript, and
the tools the agent may call — never the gold answer. It answers with a
:class:`~whenpro_core.llm.generation.SimStep` (structured output, or the lenient
JSON / labelled-section readings). The environment's loop runs the tool calls with its
live tools and checks the final answer against the gold, as for the reference policy.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from whenpro_core.llm import LLMRequest, open_backend
from whenpro_core.llm.generation import (
    DATA_NOTE,
    SimStep,
    clean_generated,
    prompt_budget,
    read_answer,
    resolve_model,
    run_sync,
    step_sections,
    transcript_text,
)
from whenpro_core.trace.model import Step, Task, ToolCall, Trace

if TYPE_CHECKING:
    from whenpro_core.config import Settings
    from whenpro_core.envs.base import Env, EnvState

#: The request's wording that the test server (and a reader) can key on.
TURN_ASK = "Write your next message as"
LABELS = ["CONTENT", "TOOL CALLS", "FINAL ANSWER", "ENDS RUN"]

SYSTEM = (
    "You are one agent of a small multi-agent team solving a task together. Write only your "
    "own next message: reason briefly, call a tool when you need one (the team's tools are run "
    "for you and their results appear in the conversation), and give the team's final answer "
    "only when the task is solved and it is your role to report it.\n\n" + DATA_NOTE
)


class LLMPolicy:
    """A model plays every agent of ``env`` (module docstring).

    ``model`` is ``provider:model``; ``settings`` default to the user's. Raises
    ConfigError when the model is not an LLM or has no key / base URL configured. Each
    :meth:`act` makes one call (BackendError when the backend fails after its retries or
    the answer is unusable)."""

    def __init__(self, env: Env, model: str, settings: Settings | None = None) -> None:
        self.model, self.settings = resolve_model(None, model, settings, what="LLM policy")
        self.name = f"llm:{self.model}"
        self.env = env
        self.calls = 0

    def act(self, state: EnvState) -> Step:
        """One turn of ``state.agent``: its message, tool calls and, when it gives one,
        the final answer (a ``final_answer`` step that ends the run)."""
        return run_sync(lambda: self._act(state))

    async def _act(self, state: EnvState) -> Step:
        async with open_backend(self.model, self.settings) as backend:
            prompt = self._prompt(state, prompt_budget(backend))
            response = await backend.complete(LLMRequest.simple(prompt, system=SYSTEM, output_model=SimStep))
        self.calls += 1
        sim: Any = read_answer(
            response, SimStep, LABELS, step_sections, model=self.model, stage=f"turn of {state.agent}", hashes=True
        ).value
        content = clean_generated(sim.content)
        calls = [
            ToolCall(
                id=f"llm_{len(state.steps)}_{i}",
                name=clean_generated(c.name)[:200],
                arguments=_arguments(c.arguments_json),
            )
            for i, c in enumerate(sim.tool_calls)
        ]
        final = clean_generated(sim.final_answer).strip() if sim.final_answer else ""
        if final and final.lower() not in ("null", "none", "n/a") and not calls:
            if "final answer" not in content.lower():
                content = f"{content}\nFinal answer: {final}".strip()
            return Step(
                index=0, agent=state.agent, kind="final_answer", content=content, meta={"generated_by": self.name}
            )
        return Step(
            index=0,
            agent=state.agent,
            kind="action" if calls else "assistant",
            content=content,
            tool_calls=calls,
            meta={"generated_by": self.name},
        )

    def _prompt(self, state: EnvState, budget: int) -> str:
        view = Trace(
            id="run",
            framework=self.env.name,
            agents=list(self.env.agents),
            task=Task(query=state.query),
            steps=list(state.steps),
        )
        roles = "\n".join(
            f"- {a.id}" + (f" ({a.role})" if a.role else "") for a in self.env.agents if a.id not in ("user", "system")
        )
        tools = "\n".join(f"- {t.name}({', '.join(t.arguments)}): {t.description}" for t in state.tools) or "(none)"
        guidance = self.env.llm_guidance(state.agent)
        guidance = f"## How {state.agent} writes\n{guidance}\n\n" if guidance else ""
        return (
            f"## Task\n{state.query.strip()}\n\n## Agents\n{roles}\n\n## The conversation so far\n"
            f"{transcript_text(view, budget)}\n\n## Your tools\n{tools}\n\n{guidance}"
            f'{TURN_ASK} {state.agent}. Answer with JSON {{"content": ..., "tool_calls": '
            '[{"name": ..., "arguments_json": ...}], "final_answer": null or the answer, '
            '"ends_run": false}, or with the sections CONTENT, TOOL CALLS (a JSON list), '
            "FINAL ANSWER, ENDS RUN."
        )


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
