"""SWE-agent ``.traj`` files (every schema version) and mini-swe-agent trajectories.

**SWE-agent** (SOURCE.md of real_traces/swe-agent-traj): ``{environment, trajectory:
[{response, thought, action, observation, state, execution_time?, messages?}], history:
[{role, content, agent, message_type?, thought?, action?, tool_calls?, tool_call_ids?,
is_demo?}], info: {exit_status, submission, model_stats, ...}, replay_config?}``.
``state`` is a JSON string in older files and an object in newer ones; some files hold
only ``history``. Steps:

* framing, no coordinate: the system prompt, the demonstrations (``is_demo`` messages or
  ``message_type == "demonstration"``) folded into one ``demonstration`` step whose
  ``meta`` says how many messages it folds, and the task (the first other user message);
* one ``action`` step per ``trajectory`` entry, coordinate ``1..N``: ``content`` is the
  thought, the action is a tool call (the history's ``tool_calls`` for function-calling
  agents, else the command's first word with the whole command as arguments), the
  observation as ``observation``; ``state`` and ``execution_time`` go to ``meta``. The
  per-step ``messages`` copy of the whole conversation is left out of ``raw``.
* only-history files: each assistant message with the tool/user messages after it.

Outcome: ``failure`` when ``exit_status`` names an error or limit (``exit_cost``,
``exit_error``, ...); ``unknown`` for ``submitted`` (the patch was not evaluated).

**mini-swe-agent** (``SWE-agent/mini-swe-agent``, ``run/utils/save.py``):
``{trajectory_format: "mini-swe-agent-1"|"mini-swe-agent-1.1", info: {exit_status,
submission, model_stats, mini_version, config}, messages: [{role, content, extra?,
tool_calls?}]}``. The system prompt and the task are framing; every assistant message is
an ``action`` step (coordinate ``1..N``) whose command is the ```` ```bash ```` block (v1),
``extra.actions`` or ``tool_calls`` (v2), and whose observation is the following
user/tool messages. A final ``exit`` message gives the exit status and submission. A reasoning model's
thinking (``reasoning_content``, on the message or its saved provider response) goes to
``meta["reasoning"]``. A run that ended by an exception (a provider's fatal error:
``info.exit_status`` the exception's class, ``info.exception_str``/``submission`` its
message, ``info.traceback``) ends with an ``error`` step of agent ``environment`` saying
so (traceback in ``meta``), and has no final answer.

Trace id: ``swe-agent-<file stem>`` (``mini-swe-agent-<file stem>``), with
``@<run folder>`` appended when another run folder holds a file of the same name
(:func:`~whenpro_core.formats.run_ids.distinct_id`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from whenpro_core.formats.base import (
    DocumentImporter,
    LoadContext,
    as_text,
    dict_or_empty,
    expect,
    maybe_json,
    redact_secrets,
    text_or_none,
)
from whenpro_core.formats.chat import content_parts, tool_calls_of
from whenpro_core.formats.run_ids import distinct_id
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Agent, Outcome, Step, Task, ToolCall, Trace

_BASH = re.compile(r"```(?:bash|sh)?\s*\n(.*?)\n```", re.S)
_FAILED_EXIT = re.compile(r"(^exit_|error|limit|timeout|exceeded|format)", re.I)
_WHOWHEN_KEYS = ("mistake_agent", "mistake_step", "question")


def outcome_of(exit_status: Any) -> Outcome:
    """``failure`` for error/limit exit statuses, else ``unknown`` (submitted, unevaluated)."""
    status = str(exit_status or "")
    if status and _FAILED_EXIT.search(status) and not status.lower().startswith("submitted"):
        return Outcome.failure
    return Outcome.unknown


def _command_call(action: str) -> list[ToolCall]:
    action = action.strip()
    if not action:
        return []
    return [ToolCall(name=action.split(None, 1)[0], arguments=action)]


class _Framing:
    """Builds the framing steps (system, folded demonstrations, task) of a message list."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.query = ""

    def add(self, msg: JSONObject, text: str, where: str) -> bool:
        """Add ``msg`` as framing if it is; False when the run proper has started."""
        demo = msg.get("is_demo") in (True, "True", "true") or msg.get("message_type") == "demonstration"
        role = msg.get("role")
        if demo:
            last = self.steps[-1] if self.steps else None
            if last is not None and last.kind == "demonstration":
                last.content += "\n\n" + text
                last.meta["folded"] += 1
                last.meta["paths"].append(where)
            else:
                self.steps.append(
                    Step(
                        index=len(self.steps),
                        agent="user",
                        kind="demonstration",
                        content=text,
                        meta={"is_demo": True, "folded": 1, "paths": [where]},
                    )
                )
            return True
        if role == "system":
            self.steps.append(Step(index=len(self.steps), agent="system", kind="system", content=text, raw=msg))
            return True
        if role == "user" and not self.query:
            self.query = text
            self.steps.append(Step(index=len(self.steps), agent="user", kind="user", content=text, raw=msg))
            return True
        return False


def _messages(doc: JSONObject, key: str, ctx: LoadContext) -> list[tuple[JSONObject, str, str]]:
    items = expect(doc.get(key), list, ctx, f"$.{key}", "a list of messages")
    out = []
    for i, msg in enumerate(items):
        where = f"$.{key}[{i}]"
        expect(msg, dict, ctx, where, "a message object {role, content}")
        if not isinstance(msg.get("role"), str):
            raise ctx.error(
                "missing role" if msg.get("role") is None else "wrong type",
                f"{where}.role",
                "the message role as a string",
            )
        text, _ = content_parts(msg.get("content"), ctx, f"{where}.content")
        out.append((msg, text, where))
    return out


def reasoning_of(msg: JSONObject) -> str | None:
    """A reasoning model's thinking kept with an assistant message: ``reasoning_content``
    (LiteLLM, DeepSeek, vLLM) or ``reasoning`` on the message, else on the provider
    response mini-swe-agent keeps in ``extra.response.choices[0].message``."""
    response = dict_or_empty(dict_or_empty(msg.get("extra")).get("response"))
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else {}
    for holder in (msg, dict_or_empty(dict_or_empty(first).get("message"))):
        for key in ("reasoning_content", "reasoning"):
            if text := text_or_none(holder.get(key)):
                return text
    return None


def _pair_history(
    msgs: list[tuple[JSONObject, str, str]],
    framing: _Framing,
    ctx: LoadContext,
    command_of: Callable[[JSONObject, str], list[ToolCall]],
) -> list[Step]:
    """Framing, then one action step per assistant message with the messages after it
    (until the next assistant message) as its observation."""
    steps = framing.steps
    started = False
    for msg, text, where in msgs:
        if not started and framing.add(msg, text, where):
            continue
        started = True
        role = msg["role"]
        if role == "assistant":
            calls = tool_calls_of(msg, ctx, where) or command_of(msg, text)
            thought = text_or_none(msg.get("thought")) or text
            meta: dict[str, Any] = {"role": role}
            if reasoning := reasoning_of(msg):
                meta["reasoning"] = reasoning
            steps.append(
                Step(
                    index=len(steps),
                    coord=str(sum(1 for s in steps if s.coord) + 1),
                    agent="agent",
                    kind="action",
                    content=thought,
                    tool_calls=calls,
                    meta=meta,
                    raw=msg,
                )
            )
        elif steps and steps[-1].kind == "action":
            prev = steps[-1]
            prev.observation = text if prev.observation is None else prev.observation + "\n" + text
        else:
            steps.append(
                Step(index=len(steps), agent=role, kind="user" if role == "user" else role, content=text, raw=msg)
            )
    return steps


class SweAgentImporter(DocumentImporter):
    """SWE-agent ``.traj`` files, every schema version, including only-history files."""

    name = "swe-agent"
    priority = 9

    def matches(self, doc: Any) -> bool:
        """``history`` plus ``trajectory`` (a list), ``info`` (an object) or
        ``environment``; a ``history`` that is not a list still matches then, so
        :meth:`load` reports it at ``$.history``. Without those keys, a ``history`` of
        ``{agent, role}`` messages."""
        if not isinstance(doc, dict) or "history" not in doc:
            return False
        if any(k in doc for k in _WHOWHEN_KEYS):
            return False
        if isinstance(doc.get("trajectory"), list) or isinstance(doc.get("info"), dict) or "environment" in doc:
            return True
        hist = doc["history"]
        if not isinstance(hist, list):
            return False
        return bool(hist) and all(isinstance(h, dict) and "agent" in h and "role" in h for h in hist)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        msgs = _messages(doc, "history", ctx)
        framing = _Framing()
        traj = doc.get("trajectory")
        if traj is None:
            steps = _pair_history(msgs, framing, ctx, lambda m, t: _command_call(as_text(m.get("action"))))
        else:
            expect(traj, list, ctx, "$.trajectory", "a list of steps")
            for msg, text, where in msgs:
                if not framing.add(msg, text, where):
                    break
            steps = framing.steps
            calls = [
                tool_calls_of(m, ctx, w) for m, _, w in msgs if m.get("role") == "assistant" and not m.get("is_demo")
            ]
            if len(calls) != len(traj):  # history and trajectory disagree: trust the actions
                calls = []
            for n, entry in enumerate(traj):
                steps.append(self._traj_step(len(steps), n, entry, calls[n] if n < len(calls) else [], ctx))
        info = dict_or_empty(doc.get("info"))
        return [
            Trace(
                id=distinct_id("swe-agent", ctx.path),
                framework="swe-agent",
                benchmark=_benchmark(doc),
                agents=[Agent(id="agent")],
                task=Task(query=framing.query),
                steps=steps,
                final_answer=text_or_none(info.get("submission")),
                outcome=outcome_of(info.get("exit_status")),
                source=ctx.source(self.name),
                extras=redact_secrets({k: v for k, v in doc.items() if k not in ("history", "trajectory")}),
            )
        ]

    @staticmethod
    def _traj_step(index: int, n: int, entry: Any, calls: list[ToolCall], ctx: LoadContext) -> Step:
        where = f"$.trajectory[{n}]"
        expect(entry, dict, ctx, where, "a step {thought, action, observation, state}")
        for key in ("thought", "action", "observation", "response"):
            if entry.get(key) is not None and not isinstance(entry[key], str):
                raise ctx.error("wrong type", f"{where}.{key}", "a string")
        state = maybe_json(entry.get("state")) if isinstance(entry.get("state"), str) else entry.get("state")
        if isinstance(state, str):
            state = maybe_json(state.strip())
        meta: dict[str, Any] = {"state": state}
        if isinstance(entry.get("execution_time"), (int, float)):
            meta["execution_time_s"] = entry["execution_time"]
        action = as_text(entry.get("action"))
        return Step(
            index=index,
            coord=str(n + 1),
            agent="agent",
            kind="action",
            content=as_text(entry.get("thought") or entry.get("response")),
            tool_calls=calls or _command_call(action),
            observation=entry.get("observation"),
            meta=meta,
            raw={k: v for k, v in entry.items() if k != "messages"},
        )


def _benchmark(doc: JSONObject) -> str:
    """``swe-bench`` when the run's recorded config names a SWE-bench image or dataset."""
    info = doc.get("info")
    config = doc.get("replay_config") or (info.get("config") if isinstance(info, dict) else None)
    text = as_text(maybe_json(config)).lower() if config else ""
    return "swe-bench" if "swe-bench" in text or "sweb.eval" in text or "swebench" in text else ""


def _mini_command(msg: JSONObject, text: str) -> list[ToolCall]:
    extra = dict_or_empty(msg.get("extra"))
    actions = extra.get("actions")
    if isinstance(actions, list) and actions:
        return [ToolCall(name="bash", arguments=a.get("command", a) if isinstance(a, dict) else a) for a in actions]
    return [ToolCall(name="bash", arguments=m.strip()) for m in _BASH.findall(text)]


_EXCEPTION_NAME = re.compile(r"^[A-Z]\w*(Error|Exception)$")


def _fatal_error(info: JSONObject, status: str, submission: str | None) -> Step | None:
    """The ``error`` step of a run that an exception ended (the mini-swe-agent doc
    above), or ``None``. Limits (``LimitsExceeded``) are no exceptions: the last step
    shows them."""
    message = text_or_none(info.get("exception_str")) or submission or ""
    if not (info.get("traceback") or info.get("exception_str") or _EXCEPTION_NAME.match(status)):
        return None
    text = f"{status}: {message}" if message else status or "the run ended by an exception"
    meta: dict[str, Any] = {"exit_status": status}
    if text_or_none(info.get("traceback")):
        meta["traceback"] = info["traceback"]
    return Step(index=0, agent="environment", kind="error", content=text, error=text, meta=meta)


class MiniSweAgentImporter(DocumentImporter):
    """mini-swe-agent trajectories (``trajectory_format: mini-swe-agent-1*``)."""

    name = "mini-swe-agent"
    priority = 9

    def matches(self, doc: Any) -> bool:
        """``messages`` plus a ``trajectory_format`` of mini-swe-agent or
        ``info.mini_version`` (``messages`` of the wrong type is reported by :meth:`load`)."""
        if not isinstance(doc, dict) or "messages" not in doc:
            return False
        info = doc.get("info")
        return str(doc.get("trajectory_format", "")).startswith("mini-swe-agent") or (
            isinstance(info, dict) and "mini_version" in info
        )

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        msgs = _messages(doc, "messages", ctx)
        exit_msg = next((m for m, _, _ in msgs if m.get("role") == "exit"), None)
        framing = _Framing()
        steps = _pair_history([x for x in msgs if x[0].get("role") != "exit"], framing, ctx, _mini_command)
        info = dict_or_empty(doc.get("info"))
        extra = dict_or_empty(exit_msg.get("extra")) if exit_msg else {}
        status = info.get("exit_status") or extra.get("exit_status")
        submission = text_or_none(info.get("submission")) or text_or_none(extra.get("submission"))
        extras = redact_secrets({k: v for k, v in doc.items() if k != "messages"})
        if exit_msg is not None:
            extras["exit_message"] = exit_msg
        fatal = _fatal_error(info, str(status or ""), submission)
        if fatal is not None:
            fatal.index = len(steps)
            fatal.coord = str(sum(1 for s in steps if s.coord) + 1)
            steps.append(fatal)
            submission = None
        return [
            Trace(
                id=distinct_id("mini-swe-agent", ctx.path),
                framework="mini-swe-agent",
                benchmark=_benchmark(doc),
                agents=[Agent(id="agent")],
                task=Task(query=framing.query),
                steps=steps,
                final_answer=submission,
                outcome=outcome_of(status),
                source=ctx.source(self.name),
                extras=extras,
            )
        ]
