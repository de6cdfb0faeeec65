"""OpenAI Codex CLI rollout files, ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``
(SOURCE.md of real_traces/codex-cli).

Every line is ``{timestamp, type, payload}``; ``type`` is ``session_meta`` (the first line:
id, cwd, originator, cli_version, git, instructions), ``turn_context`` (model, policies),
``response_item`` or ``event_msg``. Steps, in file order:

* ``response_item`` ``message``: ``developer`` messages and the injected user context
  (AGENTS.md, ``<environment_context>``, ``<permissions instructions>``) are ``system``
  framing without a coordinate; other user messages are ``user`` steps, assistant
  messages ``assistant`` steps;
* ``function_call``, ``custom_tool_call`` (``apply_patch`` with the raw patch as input),
  ``local_shell_call`` and ``web_search_call``: one ``action`` step each; a call's
  ``arguments`` JSON string is decoded;
* ``function_call_output`` / ``custom_tool_call_output``: the observation of the call
  with the same ``call_id``; ``exec_command_end`` with a non-zero ``exit_code`` and
  ``patch_apply_end`` with ``success: false`` set that step's ``error``;
* ``reasoning``: its readable ``summary`` text goes to the next step's
  ``meta["reasoning"]`` (encrypted reasoning is only counted);
* ``event_msg`` ``error``/``stream_error``: an ``error`` step;
  ``token_count``: ``meta["usage"]`` of the last ``codex`` step (its ``last_token_usage``:
  the model call that wrote it);
  ``task_complete``: ``last_agent_message`` is the final answer; ``user_message`` repeats
  the user's response item and is folded, but one no response item repeats (rollouts
  that keep the prompt only there) is the ``user`` step. The other events
  (``agent_message`` repeats a response item) and ``turn_context`` lines are folded:
  counted in ``extras["folded_lines"]``.

The older rollout format (before ``session_meta``, Codex CLI of mid 2025) is read too:
its first line is a bare header ``{id, timestamp, instructions, cwd?, git?}`` (taken as
``session_meta``), then bare response items (``{type: "message", role, content}``,
``{type: "function_call", ...}``, no ``payload`` wrapper, a ``timestamp`` of their own
at most) and ``{"record_type": "state"}`` markers (folded).

Outcome: ``unknown`` (a rollout states none).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from whenpro_core.formats.base import (
    LoadContext,
    as_text,
    dict_or_empty,
    list_or_empty,
    maybe_json,
    redact_secrets,
    text_or_none,
)
from whenpro_core.formats.chat import content_parts
from whenpro_core.formats.session_lines import LineBuilder, SessionLinesImporter, renumber
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Agent, Outcome, Source, Step, Task, ToolCall, Trace

LINE_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
AGENT = "codex"
_CONTEXT_PREFIXES = (
    "<environment_context>",
    "# AGENTS.md instructions",
    "<user_instructions>",
    "<permissions instructions>",
)
_CALLS = {
    "function_call": "arguments",
    "custom_tool_call": "input",
    "local_shell_call": "action",
    "web_search_call": "action",
}
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
#: ``type`` of a bare response item in an older rollout.
_ITEM_TYPES = frozenset({"message", "reasoning", *_CALLS, *_OUTPUTS})


def is_rollout_line(obj: JSONObject) -> bool:
    """A Codex rollout line: ``{timestamp, type, payload}`` with a rollout ``type``, or
    the bare header ``{id, timestamp, instructions | git}`` of an older rollout."""
    if "type" not in obj and "id" in obj and "timestamp" in obj:
        return "instructions" in obj or "git" in obj
    return text_or_none(obj.get("type")) in LINE_TYPES and "payload" in obj and "timestamp" in obj


def _is_injected(text: str) -> bool:
    return text.lstrip().startswith(_CONTEXT_PREFIXES)


class CodexBuilder:
    """Builds a rollout's trace one parsed line at a time (see the module doc)."""

    def __init__(self, ctx: LoadContext) -> None:
        self.ctx = ctx
        self.steps: list[Step] = []
        self.meta: dict[str, Any] = {}
        self.models: list[str] = []
        self.folded: Counter[str] = Counter()
        self.final: str | None = None
        self._calls: dict[str, Step] = {}
        self._reasoning: list[str] = []
        self._prompts: list[str] = []  # user response items no user_message event repeated yet

    def feed(self, obj: Any, row: int | None = None) -> tuple[str, ...]:
        """Add one parsed line; TraceFormatError (nothing changed) for a bad one."""
        if isinstance(obj, dict) and "payload" not in obj:
            return self._feed_bare(obj)
        if not (isinstance(obj, dict) and text_or_none(obj.get("type")) in LINE_TYPES):
            raise self.ctx.error(
                "not a Codex rollout line", "$.type", "session_meta, turn_context, response_item or event_msg"
            )
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            raise self.ctx.error("wrong type", "$.payload", "the line's payload object")
        kind = obj["type"]
        if kind == "session_meta":
            self.meta.update(
                redact_secrets({k: v for k, v in payload.items() if k not in ("base_instructions", "instructions")})
            )
        elif kind == "turn_context":
            self.folded["turn_context"] += 1
            model = text_or_none(payload.get("model"))
            if model and model not in self.models:
                self.models.append(model)
        elif kind == "response_item":
            self._item(payload, obj.get("timestamp"))
        elif kind == "event_msg":
            self._event(payload, obj.get("timestamp"))
        else:
            self.folded[kind] += 1
        return ()

    def _feed_bare(self, obj: JSONObject) -> tuple[str, ...]:
        """A line of an older rollout: the header, a state marker or a bare item."""
        if "type" not in obj and "record_type" in obj:
            self.folded[f"record_type/{obj['record_type']}"] += 1
        elif "type" not in obj and "id" in obj and not self.meta and not self.steps:
            self.meta.update(redact_secrets({k: v for k, v in obj.items() if k != "instructions"}))
        elif text_or_none(obj.get("type")) in _ITEM_TYPES:
            self._item(obj, obj.get("timestamp"))
        else:
            raise self.ctx.error(
                "not a Codex rollout line",
                "$.type",
                "a {timestamp, type, payload} line, or an older rollout's response item or state marker",
            )
        return ()

    # ------------------------------------------------------------------ response items
    def _add(self, step: Step) -> Step:
        step.index = len(self.steps)
        if self._reasoning and step.agent == AGENT:
            step.meta["reasoning"] = "\n\n".join(self._reasoning)
            self._reasoning = []
        self.steps.append(step)
        return step

    def _item(self, item: JSONObject, ts: Any) -> None:
        itype = text_or_none(item.get("type"))
        raw = redact_secrets(item)
        if itype == "message":
            self._message(item, raw, ts)
        elif itype == "reasoning":
            summary = list_or_empty(item.get("summary"))
            texts = [as_text(s.get("text")) if isinstance(s, dict) else as_text(s) for s in summary]
            if any(texts):
                self._reasoning.append("\n".join(t for t in texts if t))
            else:
                self.folded["reasoning (not readable)"] += 1
        elif itype in _CALLS:
            name = text_or_none(item.get("name")) or str(itype).removesuffix("_call")
            args = maybe_json(item.get(_CALLS[itype]))
            call = ToolCall(
                id=text_or_none(item.get("call_id")) or text_or_none(item.get("id")), name=name, arguments=args
            )
            step = self._add(
                Step(
                    index=0,
                    agent=AGENT,
                    kind="action",
                    tool_calls=[call],
                    meta={"timestamp": ts, "status": item.get("status")},
                    raw=raw,
                )
            )
            if call.id:
                self._calls[call.id] = step
        elif itype in _OUTPUTS:
            self._output(item, raw, ts)
        else:
            self.folded[f"response_item/{itype}"] += 1

    def _message(self, item: JSONObject, raw: JSONObject, ts: Any) -> None:
        role = item.get("role")
        text, media = content_parts(item.get("content"), self.ctx, "$.payload.content")
        if role == "assistant":
            step = Step(index=0, agent=AGENT, kind="assistant", content=text, media=media)
        elif role == "user" and not _is_injected(text):
            step = Step(index=0, agent="user", kind="user", content=text, media=media)
            self._prompts.append(text.strip())
        else:
            step = Step(index=0, agent="system", kind="system", content=text, media=media)
        step.meta["timestamp"] = ts
        step.raw = raw
        self._add(step)

    def _output(self, item: JSONObject, raw: JSONObject, ts: Any) -> None:
        cid = text_or_none(item.get("call_id")) or ""
        output = maybe_json(item.get("output"))
        if isinstance(output, dict) and "output" in output:  # custom tools: {output, metadata}
            meta = dict_or_empty(output.get("metadata"))
            if meta.get("exit_code") not in (None, 0):
                self._set_error(cid, f"exit code {meta['exit_code']}")
            output = output["output"]
        text = as_text(output)
        step = self._calls.get(cid)
        if step is None:
            self._add(
                Step(
                    index=0,
                    agent="environment",
                    kind="observation",
                    content=text,
                    meta={"timestamp": ts, "call_id": cid},
                    raw=raw,
                )
            )
            return
        step.observation = text if step.observation is None else f"{step.observation}\n{text}"

    def _set_error(self, cid: str, text: str) -> None:
        step = self._calls.get(cid)
        if step is not None:
            step.error = text if step.error is None else f"{step.error}\n{text}"

    # ------------------------------------------------------------------ events
    def _event(self, ev: JSONObject, ts: Any) -> None:
        etype = str(ev.get("type"))
        cid = text_or_none(ev.get("call_id")) or ""
        if etype == "exec_command_end":
            code = ev.get("exit_code")
            if cid in self._calls:
                self._calls[cid].meta["exit_code"] = code
            if code not in (None, 0):
                stderr = as_text(ev.get("stderr")).strip()
                self._set_error(cid, f"exit code {code}" + (f": {stderr}" if stderr else ""))
        elif etype == "patch_apply_end" and ev.get("success") is False:
            self._set_error(cid, as_text(ev.get("stderr")) or "patch failed")
        elif etype == "token_count":
            info = dict_or_empty(ev.get("info"))
            last = next((s for s in reversed(self.steps) if s.agent == AGENT), None)
            if last is not None and isinstance(info.get("last_token_usage"), dict):
                last.meta["usage"] = info["last_token_usage"]
        elif etype == "task_complete":
            self.final = text_or_none(ev.get("last_agent_message")) or self.final
        elif etype == "user_message" and self._user_event(ev, ts):
            return
        elif etype in ("error", "stream_error"):
            text = as_text(ev.get("message")) or etype
            self._add(
                Step(
                    index=0,
                    agent="environment",
                    kind="error",
                    content=text,
                    error=text,
                    meta={"timestamp": ts},
                    raw=redact_secrets(ev),
                )
            )
            return
        self.folded[f"event_msg/{etype}"] += 1

    def _user_event(self, ev: JSONObject, ts: Any) -> bool:
        """A ``user_message`` event: True when it is the prompt's only record (it became
        the ``user`` step); False when a response item holds it already."""
        text = as_text(ev.get("message"))
        if text.strip() in self._prompts:
            self._prompts.remove(text.strip())
            return False
        if not text.strip() or _is_injected(text):
            return False
        self._add(
            Step(index=0, agent="user", kind="user", content=text, meta={"timestamp": ts}, raw=redact_secrets(ev))
        )
        return True

    @property
    def trace_id(self) -> str:
        """``codex-<session id>`` (from ``session_meta``), else from the file name."""
        return f"codex-{text_or_none(self.meta.get('id')) or self.ctx.path.stem}"

    def trace(self) -> Trace:
        """The rollout so far."""
        steps = renumber([s.model_copy() for s in self.steps])
        query = next((s.content for s in steps if s.kind == "user" and s.content), "")
        final = self.final or next((s.content for s in reversed(steps) if s.kind == "assistant" and s.content), None)
        extras: dict[str, Any] = {"session_meta": self.meta, "models": self.models, "folded_lines": dict(self.folded)}
        return Trace(
            id=self.trace_id,
            framework="codex-cli",
            agents=[Agent(id=AGENT, role="main")],
            task=Task(query=query),
            steps=steps,
            final_answer=final,
            outcome=Outcome.unknown,
            source=Source(
                format="codex-cli", path=str(self.ctx.path), root=str(self.ctx.root) if self.ctx.root else None
            ),
            extras=extras,
        )


class CodexRolloutImporter(SessionLinesImporter):
    """A Codex CLI rollout (JSON lines of ``{timestamp, type, payload}``)."""

    name = "codex-cli"

    def line_matches(self, obj: Any) -> bool:
        return is_rollout_line(obj)

    def make_builder(self, ctx: LoadContext) -> LineBuilder:
        return CodexBuilder(ctx)


__all__ = ["CodexBuilder", "CodexRolloutImporter", "is_rollout_line"]
