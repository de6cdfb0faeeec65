"""Gemini CLI chat recordings, ``~/.gemini/tmp/<projectHash>/chats/session-*.json[l]``
(SOURCE.md of real_traces/gemini-cli).

* **Legacy recording**: one JSON object ``{sessionId, projectHash, startTime,
  lastUpdated, kind?, messages: [...]}``.
* **JSONL recording** (2026+): the first line is that header without ``messages``; later
  lines are message records or ``{"$set": {...}}`` patches to the header (a ``$set`` of
  ``messages`` is a checkpoint: the messages so far are replaced by that list), or
  ``{"$rewindTo": <message id>}`` (that message and every later one are dropped). A message
  id can be written again (a ``gemini`` message is re-emitted once its tool results
  arrive): the last record of an id wins, in the place its id first appeared.

A message is ``{id, timestamp, type: user|gemini|info|error|warning, content, ...}``;
``content`` is a string or a list of ``{text}`` parts. Steps, one per message (coordinate
= 0-based position): ``user`` steps; ``gemini`` messages as ``assistant`` (or ``action``
when they hold ``toolCalls``: each ``{id, name, args, result: [{functionResponse:
{response: {output}}}], status}`` is a call, the results are the observation, a status
other than ``success`` sets the step's error); ``thoughts`` (``[{subject, description}]``,
summaries) go to ``meta["reasoning"]``; ``tokens`` and ``model`` to ``meta``; ``info``
messages are ``info`` steps of agent ``system``; ``error``/``warning`` are ``error`` steps.
A ``delegate_to_agent`` call's report (its result) is also a step of the sub-agent named
by ``args.agent_name``, right after the call.

Final answer: the content of the last ``gemini`` message. Outcome: ``unknown``.
``logs.json`` (prompts only) is recognised by :mod:`whenpro_core.formats.auxiliary`.
"""

from __future__ import annotations

from typing import Any

from whenpro_core.formats.base import (
    DocumentImporter,
    LoadContext,
    as_text,
    dict_or_empty,
    expect,
    redact_secrets,
    text_or_none,
)
from whenpro_core.formats.session_lines import LineBuilder, SessionLinesImporter, renumber
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Agent, Outcome, Source, Step, Task, ToolCall, Trace

AGENT = "gemini"
_HEADER_KEYS = ("sessionId", "projectHash", "startTime")
_KINDS = {"user": "user", "gemini": "assistant", "info": "info", "error": "error", "warning": "error"}
_SPEAKER = {"user": "user", "gemini": AGENT, "info": "system", "error": "system", "warning": "system"}


def is_header(obj: Any) -> bool:
    """A recording header: ``sessionId``, ``projectHash`` and ``startTime``."""
    return isinstance(obj, dict) and all(k in obj for k in _HEADER_KEYS)


def is_legacy_recording(doc: Any) -> bool:
    """A legacy single-object recording: a header with a ``messages`` list."""
    return is_header(doc) and isinstance(doc.get("messages"), list)


def parts_text(content: Any) -> str:
    """Text of a message ``content``: a string, or a list of ``{text}`` parts (other
    parts as JSON)."""
    if isinstance(content, list):
        return "\n".join(as_text(p.get("text")) if isinstance(p, dict) and "text" in p else as_text(p) for p in content)
    return as_text(content)


def _results_text(result: Any) -> str:
    if not isinstance(result, list):
        return as_text(result)
    out = []
    for item in result:
        resp = item.get("functionResponse") if isinstance(item, dict) else None
        response = resp.get("response") if isinstance(resp, dict) else None
        if isinstance(response, dict) and ("output" in response or "error" in response):
            out.append(as_text(response.get("output", response.get("error"))))
        else:
            out.append(as_text(item))
    return "\n".join(out)


def _thoughts(thoughts: Any) -> str:
    if not isinstance(thoughts, list):
        return ""
    out = []
    for t in thoughts:
        if isinstance(t, dict):
            subject, desc = as_text(t.get("subject")), as_text(t.get("description")).strip()
            out.append(f"{subject}: {desc}" if subject else desc)
    return "\n\n".join(out)


class GeminiBuilder:
    """Builds a recording's trace from its header, message records and ``$set`` patches
    fed one at a time (see the module doc)."""

    def __init__(self, ctx: LoadContext) -> None:
        self.ctx = ctx
        self.header: dict[str, Any] = {}
        self.messages: dict[str, JSONObject] = {}
        self.rewritten = 0

    def feed(self, obj: Any, row: int | None = None, where: str = "$") -> tuple[str, ...]:
        """Add one header, patch or message; TraceFormatError (nothing changed) for a bad one."""
        expect(obj, dict, self.ctx, where, "a header, a message record or a $set patch")
        if "$set" in obj:
            patch = expect(obj["$set"], dict, self.ctx, f"{where}.$set", "an object of header fields")
            if "messages" in patch:
                self._checkpoint(
                    expect(patch["messages"], list, self.ctx, f"{where}.$set.messages", "the list of messages"),
                    f"{where}.$set.messages",
                )
            self.header.update({k: v for k, v in patch.items() if k != "messages"})
            return tuple(patch)
        if "$rewindTo" in obj:
            ids = list(self.messages)
            target = str(obj["$rewindTo"])
            if target in ids:
                for mid in ids[ids.index(target) :]:
                    del self.messages[mid]
            return ()
        if is_header(obj) and "type" not in obj:
            self.header.update({k: v for k, v in obj.items() if k != "messages"})
            return tuple(obj)
        mtype = obj.get("type")
        if not isinstance(mtype, str):
            raise self.ctx.error(
                "missing type" if mtype is None else "wrong type",
                f"{where}.type",
                "user, gemini, info, error or warning",
            )
        if obj.get("toolCalls") is not None:
            expect(obj["toolCalls"], list, self.ctx, f"{where}.toolCalls", "a list of tool calls")
        mid = str(obj.get("id") if obj.get("id") is not None else f"#{len(self.messages)}")
        self.rewritten += mid in self.messages
        self.messages[mid] = obj
        return ()

    def _checkpoint(self, messages: list[Any], where: str) -> None:
        before = dict(self.messages)
        self.messages.clear()
        try:
            for i, msg in enumerate(messages):
                self.feed(msg, where=f"{where}[{i}]")
        except Exception:
            self.messages = before  # a bad checkpoint changes nothing
            raise

    def _steps(self, msg: JSONObject) -> list[Step]:
        mtype: str = msg["type"]  # checked a string when the message was fed
        text = parts_text(msg.get("content"))
        kind = _KINDS.get(mtype, mtype)
        step = Step(
            index=0,
            agent=_SPEAKER.get(mtype, mtype),
            kind=kind,
            content=text,
            meta={"id": msg.get("id"), "timestamp": msg.get("timestamp")},
            raw=redact_secrets(msg),
        )
        if kind == "error":
            step.error = text
        for key in ("model", "tokens"):
            if msg.get(key) is not None:
                step.meta["usage" if key == "tokens" else key] = msg[key]
        reasoning = _thoughts(msg.get("thoughts"))
        if reasoning:
            step.meta["reasoning"] = reasoning
        out = [step]
        calls = [c for c in msg.get("toolCalls") or [] if isinstance(c, dict)]
        for call in calls:
            out.extend(self._call(step, call, len(calls) > 1))
        return out

    def _call(self, step: Step, call: JSONObject, several: bool) -> list[Step]:
        name = text_or_none(call.get("name")) or "tool"
        step.kind = "action"
        step.tool_calls.append(ToolCall(id=text_or_none(call.get("id")), name=name, arguments=call.get("args")))
        result = _results_text(call.get("result"))
        status = call.get("status")
        if status not in (None, "success"):
            note = f"{name}: {status}" + (f": {result}" if result else "")
            step.error = note if step.error is None else f"{step.error}\n{note}"
        args = dict_or_empty(call.get("args"))
        sub = text_or_none(args.get("agent_name")) if name == "delegate_to_agent" else None
        obs = f"[{name}] report from {sub} (next step)" if sub else (f"[{name}] {result}" if several else result)
        step.observation = obs if step.observation is None else f"{step.observation}\n{obs}"
        if not sub:
            return []
        return [
            Step(
                index=0,
                agent=sub,
                kind="assistant",
                content=result,
                meta={"delegated_by": call.get("id"), "timestamp": call.get("timestamp")},
            )
        ]

    @property
    def trace_id(self) -> str:
        """``gemini-<sessionId>`` (from the header), else from the file name."""
        return f"gemini-{text_or_none(self.header.get('sessionId')) or self.ctx.path.stem}"

    def trace(self) -> Trace:
        """The recording so far."""
        steps: list[Step] = []
        for msg in self.messages.values():
            steps.extend(self._steps(msg))
        renumber(steps)
        agents = [Agent(id=AGENT, role="main")]
        agents += [
            Agent(id=a, role="subagent")
            for a in dict.fromkeys(s.agent for s in steps)
            if a not in (AGENT, "user", "system")
        ]
        query = next((s.content for s in steps if s.kind == "user" and s.content), "")
        final = next((s.content for s in reversed(steps) if s.agent == AGENT and s.content), None)
        header = redact_secrets(self.header)
        extras: dict[str, Any] = {"header": header}
        if self.rewritten:
            extras["rewritten_messages"] = self.rewritten
        return Trace(
            id=self.trace_id,
            framework="gemini-cli",
            agents=agents,
            task=Task(query=query),
            steps=steps,
            final_answer=final,
            outcome=Outcome.unknown,
            source=Source(
                format="gemini-cli", path=str(self.ctx.path), root=str(self.ctx.root) if self.ctx.root else None
            ),
            extras=extras,
        )


class GeminiJsonImporter(DocumentImporter):
    """A legacy Gemini CLI recording (one JSON object with ``messages``)."""

    name = "gemini-cli"
    priority = 9

    def matches(self, doc: Any) -> bool:
        return is_legacy_recording(doc)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        builder = GeminiBuilder(ctx)
        builder.feed({k: v for k, v in doc.items() if k != "messages"})
        for i, msg in enumerate(doc["messages"]):
            builder.feed(msg, where=f"$.messages[{i}]")
        return [builder.trace()]


class GeminiJsonlImporter(SessionLinesImporter):
    """A Gemini CLI JSONL recording (header line, messages, ``$set`` patches)."""

    name = "gemini-cli"

    def line_matches(self, obj: Any) -> bool:
        return is_header(obj) and "messages" not in obj and "type" not in obj

    def make_builder(self, ctx: LoadContext) -> LineBuilder:
        return GeminiBuilder(ctx)


__all__ = [
    "GeminiBuilder",
    "GeminiJsonImporter",
    "GeminiJsonlImporter",
    "is_header",
    "is_legacy_recording",
    "parts_text",
]
