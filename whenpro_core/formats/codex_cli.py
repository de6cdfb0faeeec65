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

Sub-agents (multi-agent Codex: the ``spawn_agent`` tool): an ``event_msg``
``collab_agent_spawn_end`` ``{call_id, new_thread_id, new_agent_nickname?,
new_agent_role?}`` (or the call's output ``{agent_id}``) names the child thread; the
child's own rollout (``rollout-*-<thread id>.jsonl`` beside this one, or anywhere in the
sessions tree ``sessions/YYYY/MM/DD/`` above it) becomes steps of agent
``<nickname>`` (else the role, else ``subagent-<thread id>``; role: the agent role) right
after the spawning step. A forked child starts with a copy of its parent's records (a
second ``session_meta``, of the parent, up to the child's first ``turn_context``): they
are folded, not the child's steps. A child rollout that is absent is a warning.

Outcome: ``unknown`` (a rollout states none).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import (
    LoadContext,
    as_text,
    dict_or_empty,
    list_or_empty,
    maybe_json,
    merged_path,
    redact_secrets,
    text_or_none,
)
from whenpro_core.formats.chat import content_parts
from whenpro_core.formats.session_lines import LineBuilder, SessionLinesImporter, feed_file, renumber
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
        self.spawns: dict[str, dict[str, Any]] = {}  # spawning call id -> {thread_id, nickname, role}
        self._inherited = False  # inside a forked child's copy of its parent's records
        self._children: dict[Path, tuple[tuple[int, int], list[Step]]] = {}

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
            self._session_meta(payload)
        elif self._inherited and kind != "turn_context":
            self.folded["inherited from the parent"] += 1
        elif kind == "turn_context":
            self._inherited = False
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

    def _session_meta(self, payload: JSONObject) -> None:
        """The rollout's own ``session_meta``; a later one of another thread starts a
        forked child's copy of its parent (folded up to the next ``turn_context``)."""
        own = text_or_none(self.meta.get("id"))
        if own is not None and text_or_none(payload.get("id")) not in (None, own):
            self._inherited = True
            self.folded["inherited from the parent"] += 1
            return
        self.meta.update(
            redact_secrets({k: v for k, v in payload.items() if k not in ("base_instructions", "instructions")})
        )

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
        if step is not None and isinstance(output, dict) and text_or_none(output.get("agent_id")):
            self.spawns.setdefault(cid, {"thread_id": output["agent_id"], "nickname": None, "role": None})
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
        """One ``event_msg``: what it adds to the steps; counted as folded unless it
        became a step of its own."""
        etype = str(ev.get("type"))
        handler = _EVENT_HANDLERS.get(etype)
        if handler is not None and handler(self, ev, ts):
            return
        self.folded[f"event_msg/{etype}"] += 1

    def _exec_end(self, ev: JSONObject, ts: Any) -> bool:
        cid = text_or_none(ev.get("call_id")) or ""
        code = ev.get("exit_code")
        if cid in self._calls:
            self._calls[cid].meta["exit_code"] = code
        if code not in (None, 0):
            stderr = as_text(ev.get("stderr")).strip()
            self._set_error(cid, f"exit code {code}" + (f": {stderr}" if stderr else ""))
        return False

    def _patch_end(self, ev: JSONObject, ts: Any) -> bool:
        if ev.get("success") is False:
            self._set_error(text_or_none(ev.get("call_id")) or "", as_text(ev.get("stderr")) or "patch failed")
        return False

    def _token_count(self, ev: JSONObject, ts: Any) -> bool:
        info = dict_or_empty(ev.get("info"))
        last = next((s for s in reversed(self.steps) if s.agent == AGENT), None)
        if last is not None and isinstance(info.get("last_token_usage"), dict):
            last.meta["usage"] = info["last_token_usage"]
        return False

    def _task_complete(self, ev: JSONObject, ts: Any) -> bool:
        self.final = text_or_none(ev.get("last_agent_message")) or self.final
        return False

    def _spawn_end(self, ev: JSONObject, ts: Any) -> bool:
        if text_or_none(ev.get("new_thread_id")):
            self.spawns[text_or_none(ev.get("call_id")) or ""] = {
                "thread_id": ev["new_thread_id"],
                "nickname": text_or_none(ev.get("new_agent_nickname")),
                "role": text_or_none(ev.get("new_agent_role")),
            }
        return False

    def _error_event(self, ev: JSONObject, ts: Any) -> bool:
        text = as_text(ev.get("message")) or str(ev.get("type"))
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
        return True

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

    def _child_steps(self, spawn: dict[str, Any], name: str, warnings: list[str]) -> list[Step]:
        """The steps of a spawned thread's rollout as agent ``name`` (read again only
        when the file changed: a followed session asks for its trace after every line)."""
        found = child_rollout(self.ctx.path, str(spawn["thread_id"]))
        if found is None:
            warnings.append(f"sub-agent {name}: no rollout of thread {spawn['thread_id']} found near the session")
            return []
        st = found.stat()
        cached = self._children.get(found)
        if cached is None or cached[0] != (st.st_size, st.st_mtime_ns):
            child = CodexBuilder(LoadContext(path=found, root=self.ctx.root))
            try:
                feed_file(child, found)
            except TraceFormatError as exc:
                warnings.append(f"sub-agent {name}: {exc.one_line()}")
            cached = ((st.st_size, st.st_mtime_ns), child.steps)
            self._children[found] = cached
        steps = [s.model_copy(update={"meta": dict(s.meta)}) for s in cached[1]]
        for step in steps:
            step.agent = name if step.agent == AGENT else step.agent
            step.meta["subagent_file"] = found.name
            step.meta["subagent_path"] = merged_path(found, self.ctx.path)
        return steps

    def _with_children(self, warnings: list[str]) -> tuple[list[Step], list[Agent]]:
        """The rollout's steps with each spawned sub-agent's steps after its spawning step."""
        steps: list[Step] = []
        agents = [Agent(id=AGENT, role="main")]
        for step in self.steps:
            steps.append(step)
            for call in step.tool_calls:
                spawn = self.spawns.get(call.id or "")
                if spawn is None:
                    continue
                name = spawn["nickname"] or spawn["role"] or f"subagent-{str(spawn['thread_id'])[:8]}"
                child = self._child_steps(spawn, name, warnings)
                for sub in child:
                    sub.meta["parent_call_id"] = call.id
                if child and all(a.id != name for a in agents):
                    agents.append(Agent(id=name, role=spawn["role"] or "subagent"))
                steps.extend(child)
        return steps, agents

    def trace(self) -> Trace:
        """The rollout so far."""
        warnings: list[str] = []
        spliced, agents = self._with_children(warnings)
        steps = renumber([s.model_copy() for s in spliced])
        query = next((s.content for s in steps if s.kind == "user" and s.content), "")
        final = self.final or next((s.content for s in reversed(steps) if s.kind == "assistant" and s.content), None)
        extras: dict[str, Any] = {"session_meta": self.meta, "models": self.models, "folded_lines": dict(self.folded)}
        if warnings:
            extras["whenpro_warnings"] = warnings
        return Trace(
            id=self.trace_id,
            framework="codex-cli",
            agents=agents,
            task=Task(query=query),
            steps=steps,
            final_answer=final,
            outcome=Outcome.unknown,
            source=Source(
                format="codex-cli", path=str(self.ctx.path), root=str(self.ctx.root) if self.ctx.root else None
            ),
            extras=extras,
        )


#: ``event_msg`` types and their handlers: ``handler(builder, event, timestamp)`` is True
#: when the event became a step of its own (else it is counted as folded).
_EVENT_HANDLERS: dict[str, Callable[[CodexBuilder, JSONObject, Any], bool]] = {
    "exec_command_end": CodexBuilder._exec_end,
    "patch_apply_end": CodexBuilder._patch_end,
    "token_count": CodexBuilder._token_count,
    "task_complete": CodexBuilder._task_complete,
    "user_message": CodexBuilder._user_event,
    "collab_agent_spawn_end": CodexBuilder._spawn_end,
    "error": CodexBuilder._error_event,
    "stream_error": CodexBuilder._error_event,
}


def child_rollout(session: Path, thread_id: str) -> Path | None:
    """The rollout of thread ``thread_id``: ``rollout-*-<thread id>.jsonl`` beside
    ``session``, else in the sessions tree (``sessions/YYYY/MM/DD/``) three folders up."""
    if not thread_id or not all(c.isalnum() or c in "-_" for c in thread_id):
        return None  # an id from the file: never a path or a glob
    pattern = f"rollout-*-{thread_id}.jsonl"
    near = sorted(p for p in session.parent.glob(pattern) if p.is_file())
    if near:
        return near[0]
    parents = session.parent.parents
    tree = parents[2] if len(parents) > 2 else None
    far = sorted(p for p in tree.glob(f"*/*/*/{pattern}") if p.is_file()) if tree and tree.name == "sessions" else []
    return far[0] if far else None


class CodexRolloutImporter(SessionLinesImporter):
    """A Codex CLI rollout (JSON lines of ``{timestamp, type, payload}``)."""

    name = "codex-cli"

    def line_matches(self, obj: Any) -> bool:
        return is_rollout_line(obj)

    def make_builder(self, ctx: LoadContext) -> LineBuilder:
        return CodexBuilder(ctx)


__all__ = ["CodexBuilder", "CodexRolloutImporter", "child_rollout", "is_rollout_line"]
