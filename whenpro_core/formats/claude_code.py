"""Claude Code session transcripts, ``~/.claude/projects/<project>/<session>.jsonl``
(SOURCE.md of real_traces/claude-code).

Every line is an envelope ``{type, uuid, parentUuid, sessionId, timestamp, cwd, gitBranch,
version, isSidechain, agentId?, message?, ...}``; ``type`` is ``user``, ``assistant``,
``system``, ``progress``, ``file-history-snapshot``, ``queue-operation`` or (older)
``summary``. ``message`` is an Anthropic Messages API object, and **each content block of
an assistant message is written as its own line**. Steps:

* one step per assistant ``message.id`` (its lines merged): ``text`` blocks are the
  content, ``thinking`` blocks go to ``meta["reasoning"]`` (the agent's reasoning, shown
  folded and given to a judge), ``tool_use`` blocks are tool calls; kind ``action`` when it
  calls tools, else ``assistant``; ``message.usage`` and ``model`` go to ``meta``;
* a ``tool_result`` (user line) joins the step whose ``tool_use`` has its id, as that
  step's ``observation``; ``is_error`` results set the step's ``error``; images in results
  and prompts become media;
* a human prompt (a string, or text/image blocks) is a ``user`` step; an
  ``isCompactSummary`` prompt is a ``summary`` step; ``system`` ``compact_boundary`` is a
  ``compaction`` step;
* ``progress`` (hooks, bash output, ``agent_progress``), ``file-history-snapshot``,
  ``queue-operation``, ``isMeta`` prompts and other ``system`` lines are folded away:
  counted in ``extras["folded_lines"]``, not shown as steps.

Sub-agents (the ``Task`` tool): the child's own transcript
``<session>/subagents/agent-<agentId>.jsonl`` (or ``agent-<agentId>.jsonl`` beside the
session, older versions) when present, else the ``agent_progress`` lines that stream its
messages inline, become steps of agent ``task-<description>`` (named from the ``Task``
call, as below; role: the ``subagent_type``; ``meta["subagent_id"]`` the ``agentId``),
placed right after the ``Task`` call. Claude Code 1.0.x wrote sub-agents inline instead:
``isSidechain: true`` lines of the session file itself, each sub-agent a ``parentUuid``
chain from a prompt line with ``parentUuid`` null, and no link to its ``Task`` call but
the prompt: a chain whose prompt is a ``Task`` call's ``input.prompt`` (else the first
``Task`` call with no sub-agent yet) becomes steps of agent ``task-<description>`` (named
from that call; role: its ``subagent_type``) right after the call; a chain no call
explains is agent ``sidechain-<n>``, after the main step it followed. A sub-agent file
opened by itself (its first line a sidechain with an ``agentId``) is a trace whose
agent is that sub-agent. The ``acompact-*`` sidechain (the /compact summariser) is not
spliced in: its summary is the ``summary`` step.

Final answer: the last assistant text. Outcome: ``unknown`` (a session states none).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import LoadContext, as_text, dict_or_empty, merged_path, redact_secrets, text_or_none
from whenpro_core.formats.chat import content_parts
from whenpro_core.formats.session_lines import LineBuilder, SessionLinesImporter, feed_file, renumber
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Agent, Outcome, Source, Step, Task, ToolCall, Trace

LINE_TYPES = frozenset(
    {"user", "assistant", "system", "progress", "file-history-snapshot", "queue-operation", "summary"}
)
#: Bookkeeping records of 2.x sessions (the last prompt typed, a title, the permission
#: mode, the cost so far): no step of the run, folded away and counted.
BOOKKEEPING_TYPES = frozenset({"last-prompt", "custom-title", "agent-name", "mode", "permission-mode", "cost-state"})
MAIN_AGENT = "claude"
_ENVELOPE_KEYS = ("sessionId", "cwd", "gitBranch", "version", "slug")


def is_session_line(obj: JSONObject) -> bool:
    """A Claude Code transcript line: a known ``type`` plus the envelope's ``sessionId``
    (snapshot, queue and summary lines, which may come first, have their own keys)."""
    kind = text_or_none(obj.get("type"))
    if kind not in LINE_TYPES:
        return False
    if kind == "file-history-snapshot":
        return "snapshot" in obj and "messageId" in obj
    if kind == "summary":
        return "leafUuid" in obj
    return "sessionId" in obj and ("uuid" in obj or "operation" in obj)


def _blocks(message: Any, ctx: LoadContext, where: str) -> list[Any]:
    if not isinstance(message, dict):
        raise ctx.error("wrong type", f"{where}.message", "the Messages API object {role, content}")
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise ctx.error("wrong type", f"{where}.message.content", "a string or a list of content blocks")
    return content


class ClaudeSessionBuilder:
    """Builds one agent's steps from transcript lines fed one at a time (see the module
    doc). ``agent`` names the speaker of assistant lines."""

    def __init__(self, ctx: LoadContext, agent: str = MAIN_AGENT) -> None:
        self.ctx = ctx
        self.agent = agent
        self.steps: list[Step] = []
        self.folded: Counter[str] = Counter()
        self.envelope: dict[str, Any] = {}
        self.summaries: list[str] = []
        self._by_message: dict[str, Step] = {}
        self._by_call: dict[str, Step] = {}
        self.tasks: dict[str, dict[str, Any]] = {}  # Task tool_use id -> {agentId, subagent_type}
        self.inline: dict[str, list[JSONObject]] = {}  # Task tool_use id -> agent_progress messages

    # ------------------------------------------------------------------ lines
    def feed(self, obj: Any, row: int | None = None) -> tuple[str, ...]:
        """Add one parsed line; TraceFormatError (nothing changed) for a bad one."""
        where = "$"
        if isinstance(obj, dict) and obj.get("type") in BOOKKEEPING_TYPES:
            self.folded[str(obj["type"])] += 1
            return ()
        if not isinstance(obj, dict) or text_or_none(obj.get("type")) not in LINE_TYPES:
            raise self.ctx.error(
                "not a Claude Code transcript line", f"{where}.type", "type user, assistant, system, progress, ..."
            )
        kind = obj["type"]
        if kind in ("user", "assistant"):
            blocks = _blocks(obj.get("message"), self.ctx, where)  # validate before changing state
            for key in _ENVELOPE_KEYS:
                if obj.get(key) is not None:
                    self.envelope.setdefault(key, obj[key])
            if kind == "assistant":
                self._assistant(obj, blocks)
            else:
                self._user(obj, blocks)
        elif kind == "system" and obj.get("subtype") == "compact_boundary":
            self._compaction(obj)
        elif kind == "progress":
            self._progress(obj)
        elif kind == "summary":
            self.summaries.append(as_text(obj.get("summary")))
            self.folded["summary"] += 1
        else:
            sub = obj.get("subtype") if kind == "system" else None
            self.folded[f"{kind}/{sub}" if sub else kind] += 1
        return ()

    def _assistant(self, obj: JSONObject, blocks: list[Any]) -> None:
        message = obj["message"]
        mid = text_or_none(message.get("id")) or str(obj.get("uuid"))
        step = self._by_message.get(mid)
        if step is None:
            step = Step(
                index=len(self.steps),
                agent=self.agent,
                kind="assistant",
                meta={"message_id": mid, "timestamp": obj.get("timestamp"), "lines": 0},
                raw=[],
            )
            if text_or_none(message.get("model")):
                step.meta["model"] = message["model"]
            self.steps.append(step)
            self._by_message[mid] = step
        step.meta["lines"] += 1
        step.raw.append(redact_secrets(obj))
        if isinstance(message.get("usage"), dict):
            step.meta["usage"] = message["usage"]
        for block in blocks:
            self._assistant_block(step, block)

    def _assistant_block(self, step: Step, block: Any) -> None:
        if not isinstance(block, dict):
            step.content = _join(step.content, as_text(block))
            return
        btype = block.get("type")
        if btype == "text":
            step.content = _join(step.content, as_text(block.get("text")))
        elif btype == "thinking":
            step.meta["reasoning"] = _join(step.meta.get("reasoning", ""), as_text(block.get("thinking")))
        elif btype == "redacted_thinking":
            step.meta["reasoning"] = _join(step.meta.get("reasoning", ""), "[redacted thinking]")
        elif btype == "tool_use":
            call = ToolCall(
                id=text_or_none(block.get("id")), name=str(block.get("name") or "tool"), arguments=block.get("input")
            )
            step.tool_calls.append(call)
            step.kind = "action"
            if call.id:
                self._by_call[call.id] = step
                if call.name in ("Task", "Agent") and isinstance(call.arguments, dict):
                    self.tasks[call.id] = {
                        "subagent_type": call.arguments.get("subagent_type"),
                        "description": call.arguments.get("description"),
                        "prompt": call.arguments.get("prompt"),
                    }
        else:
            step.content = _join(step.content, as_text(block))

    def _user(self, obj: JSONObject, blocks: list[Any]) -> None:
        if obj.get("isMeta"):
            self.folded["user/meta"] += 1
            return
        prompt: list[Any] = []
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                self._tool_result(obj, block)
            else:
                prompt.append(block)
        if not prompt:
            return
        text, media = content_parts(prompt, self.ctx, "$.message.content")
        kind = "summary" if obj.get("isCompactSummary") else "user"
        self.steps.append(
            Step(
                index=len(self.steps),
                agent="user",
                kind=kind,
                content=text,
                media=media,
                meta={"timestamp": obj.get("timestamp"), "uuid": obj.get("uuid")},
                raw=redact_secrets(obj),
            )
        )

    def _tool_result(self, obj: JSONObject, block: JSONObject) -> None:
        text, media = content_parts(block.get("content"), self.ctx, "$.message.content[].content")
        cid = text_or_none(block.get("tool_use_id"))
        step = self._by_call.get(cid or "")
        result = obj.get("toolUseResult")
        if cid in self.tasks and isinstance(result, dict) and text_or_none(result.get("agentId")):
            self.tasks[cid]["agentId"] = result["agentId"]
        if step is None:  # a result whose call is not in this file (resumed session)
            step = Step(
                index=len(self.steps),
                agent="environment",
                kind="observation",
                meta={"timestamp": obj.get("timestamp"), "tool_use_id": cid},
                raw=[],
            )
            self.steps.append(step)
        if len(step.tool_calls) > 1:
            name = next((c.name for c in step.tool_calls if c.id == cid), "tool")
            text = f"[{name}] {text}"
        step.observation = text if step.observation is None else f"{step.observation}\n\n{text}"
        step.media.extend(media)
        if block.get("is_error"):
            step.error = text if step.error is None else f"{step.error}\n\n{text}"
        if isinstance(step.raw, list):
            step.raw.append(redact_secrets(obj))

    def _compaction(self, obj: JSONObject) -> None:
        meta = dict_or_empty(obj.get("compactMetadata"))
        text = as_text(obj.get("content")) or "Conversation compacted"
        if meta:
            text += f" (trigger {meta.get('trigger')}, {meta.get('preTokens')} tokens before)"
        self.steps.append(
            Step(
                index=len(self.steps),
                agent="system",
                kind="compaction",
                content=text,
                meta={"timestamp": obj.get("timestamp"), **meta},
                raw=redact_secrets(obj),
            )
        )

    def _progress(self, obj: JSONObject) -> None:
        data = dict_or_empty(obj.get("data"))
        ptype = str(data.get("type") or "progress")
        self.folded[f"progress/{ptype}"] += 1
        parent = text_or_none(obj.get("parentToolUseID"))
        if ptype == "agent_progress" and parent and isinstance(data.get("message"), dict):
            self.inline.setdefault(parent, []).append({**data["message"], "agentId": data.get("agentId")})


def _join(a: str, b: str) -> str:
    return f"{a}\n\n{b}" if a and b else (a or b)


def subagent_file(session: Path, agent_id: str) -> Path | None:
    """The sub-agent transcript of ``agent_id`` for the session file ``session``:
    ``<session>/subagents/agent-<id>.jsonl`` (2.1.x) or ``agent-<id>.jsonl`` beside it."""
    for candidate in (
        session.with_suffix("") / "subagents" / f"agent-{agent_id}.jsonl",
        session.parent / f"agent-{agent_id}.jsonl",
    ):
        if candidate.is_file():
            return candidate
    return None


def _agent_name(info: JSONObject, taken: set[str]) -> str:
    """``task-<description>`` (lower case, words joined by ``-``, at most 40 characters;
    the ``subagent_type`` when the call has no description), ``-2``, ``-3``, ... when taken."""
    words = re.findall(r"[a-z0-9]+", str(info.get("description") or info.get("subagent_type") or "subagent").lower())
    base = "task-" + ("-".join(words)[:40].rstrip("-") or "subagent")
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


class InlineSidechains:
    """Claude Code 1.0.x sub-agents written inline (module doc): ``isSidechain`` lines
    grouped into ``parentUuid`` chains, each chain built by its own
    :class:`ClaudeSessionBuilder`."""

    def __init__(self, ctx: LoadContext) -> None:
        self.ctx = ctx
        self.chains: dict[str, ClaudeSessionBuilder] = {}  # root uuid -> its steps, in first-line order
        self.anchor: dict[str, int] = {}  # root uuid -> main steps written before its first line
        self._root_of: dict[str, str] = {}  # line uuid -> root uuid

    def feed(self, obj: JSONObject, main_steps: int) -> tuple[str, ...]:
        """Add one sidechain line; TraceFormatError (nothing changed) for a bad one."""
        uuid = text_or_none(obj.get("uuid")) or f"line-{len(self._root_of)}"
        root = self._root_of.get(text_or_none(obj.get("parentUuid")) or "", uuid)
        chain = self.chains.get(root) or ClaudeSessionBuilder(self.ctx, "sidechain")
        chain.feed(obj)
        self.chains.setdefault(root, chain)
        self.anchor.setdefault(root, main_steps)
        self._root_of[uuid] = root
        return ()

    def assign(
        self, tasks: dict[str, JSONObject], done: set[str], taken: set[str]
    ) -> tuple[dict[str, tuple[str, list[Step]]], dict[int, list[tuple[str, list[Step]]]]]:
        """Each chain's steps as a sub-agent: ``({Task call id: (agent, steps)},
        {main step index: [(agent, steps) of chains no call explains, after it]})``.
        ``done``: calls whose sub-agent was found otherwise; ``taken``: agent names in use
        (the names given here are added)."""
        free = [cid for cid in tasks if cid not in done]
        by_call: dict[str, tuple[str, list[Step]]] = {}
        loose: dict[int, list[tuple[str, list[Step]]]] = {}
        for n, (root, chain) in enumerate(self.chains.items(), start=1):
            prompt = next((s.content.strip() for s in chain.steps if s.kind == "user"), "")
            call = next((c for c in free if as_text(tasks[c].get("prompt")).strip() == prompt), None)
            call = call or next(iter(free), None)
            name = _agent_name(tasks[call], taken) if call else f"sidechain-{n}"
            steps = [s.model_copy(update={"meta": dict(s.meta)}) for s in chain.steps]
            for step in steps:
                step.agent = name if step.agent == "sidechain" else step.agent
                step.meta["sidechain_root"] = root
                if call:
                    step.meta["parent_tool_use_id"] = call
            if call:
                free.remove(call)
                by_call[call] = (name, steps)
            else:
                loose.setdefault(max(self.anchor[root] - 1, 0), []).append((name, steps))
        return by_call, loose


class ClaudeTraceBuilder:
    """The whole session: the main agent's builder, with sub-agents spliced in when the
    trace is built (their files are read then; a file that cannot be read is a warning)."""

    def __init__(self, ctx: LoadContext) -> None:
        self.ctx = ctx
        self.main = ClaudeSessionBuilder(ctx)
        self.sidechain: str | None = None
        self.inline = InlineSidechains(ctx)
        self._seen_main = False
        self._files: dict[Path, tuple[tuple[int, int], list[Step], list[str]]] = {}

    @property
    def trace_id(self) -> str:
        """``claude-<sessionId>`` (``-agent-<agentId>`` for a sub-agent file), else from
        the file name."""
        sid = text_or_none(self.main.envelope.get("sessionId")) or self.ctx.path.stem
        return f"claude-{sid}" + (f"-agent-{self.sidechain}" if self.sidechain else "")

    def feed(self, obj: Any, row: int | None = None) -> tuple[str, ...]:
        turn = isinstance(obj, dict) and obj.get("type") in ("user", "assistant")
        if turn and obj.get("isSidechain") and self.sidechain is None:
            if self._seen_main:  # 1.0.x: a sub-agent written inline
                return self.inline.feed(obj, len(self.main.steps))
            if text_or_none(obj.get("agentId")):
                self.sidechain = obj["agentId"]  # a sub-agent file opened by itself
                self.main.agent = f"agent-{self.sidechain}"
        done = self.main.feed(obj, row)
        self._seen_main = self._seen_main or turn
        return done

    def _read_child(self, path: Path, name: str) -> tuple[list[Step], list[str]]:
        """A sub-agent file's steps, read again only when the file changed (a followed
        session asks for its trace after every line)."""
        try:
            st = path.stat()
            stamp = (st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = (-1, -1)
        cached = self._files.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1], cached[2]
        child = ClaudeSessionBuilder(self.ctx, name)
        try:
            _, bad = feed_file(child, path)
        except TraceFormatError as exc:
            bad = [exc]
        notes = [f"sub-agent {path.name}: skipped {len(bad)} bad lines ({bad[0].one_line()})"] if bad else []
        self._files[path] = (stamp, child.steps, notes)
        return child.steps, notes

    def _child_steps(
        self, task_id: str, info: JSONObject, warnings: list[str], taken: set[str]
    ) -> tuple[str, list[Step]]:
        """The sub-agent of the ``Task`` call ``task_id``: its agent name (from the call,
        :func:`_agent_name`; claimed in ``taken`` only when it has steps) and its steps."""
        agent_id = text_or_none(info.get("agentId"))
        inline = self.main.inline.get(task_id, [])
        if agent_id is None:
            agent_id = next((text_or_none(m.get("agentId")) for m in inline if m.get("agentId")), None)
        name = _agent_name(info, set(taken))
        child = ClaudeSessionBuilder(self.ctx, name)
        path = subagent_file(self.ctx.path, agent_id) if agent_id else None
        if path is not None:
            steps, notes = self._read_child(path, name)
            warnings.extend(notes)
            child.steps = [s.model_copy(update={"meta": dict(s.meta)}) for s in steps]
        else:
            for msg in inline:
                try:
                    child.feed(msg)
                except TraceFormatError:
                    continue
        if child.steps:
            taken.add(name)
        for step in child.steps:
            step.meta["parent_tool_use_id"] = task_id
            step.meta.setdefault("subagent_id", agent_id)
            step.meta.setdefault("subagent_file", path.name if path else None)
            if path is not None:
                step.meta.setdefault("subagent_path", merged_path(path, self.ctx.path))
        return name, child.steps

    def trace(self) -> Trace:
        warnings: list[str] = []
        steps: list[Step] = []
        roles: dict[str, str | None] = {}
        found: dict[str, tuple[str, list[Step]]] = {}
        taken: set[str] = set()
        for call_id, info in self.main.tasks.items():
            name, child = self._child_steps(call_id, info, warnings, taken)
            if child:
                found[call_id] = (name, child)
        inline, loose = self.inline.assign(self.main.tasks, set(found), taken)
        found.update(inline)
        for i, step in enumerate(self.main.steps):
            steps.append(step)
            for call in step.tool_calls:
                name, child = found.get(call.id or "", ("", []))
                if child:
                    roles.setdefault(name, text_or_none(self.main.tasks[call.id or ""].get("subagent_type")))
                steps.extend(child)
            for name, child in loose.pop(i, []):
                roles.setdefault(name, "sidechain")
                steps.extend(child)
        for name, child in (c for k in sorted(loose) for c in loose[k]):  # before any main step
            roles.setdefault(name, "sidechain")
            steps.extend(child)
        steps = renumber([s.model_copy() for s in steps])
        return self._trace(steps, roles, warnings)

    def _trace(self, steps: list[Step], roles: dict[str, str | None], warnings: list[str]) -> Trace:
        env = self.main.envelope
        agents = [Agent(id=self.main.agent, role="subagent" if self.sidechain else "main")]
        agents += [Agent(id=a, role=r) for a, r in roles.items()]
        query = next((s.content for s in steps if s.kind == "user" and s.content), "")
        final = next(
            (
                s.content
                for s in reversed(steps)
                if s.agent == self.main.agent and s.kind in ("assistant", "action") and s.content
            ),
            None,
        )
        extras: dict[str, Any] = {k: env[k] for k in _ENVELOPE_KEYS if k in env}
        extras["folded_lines"] = dict(self.main.folded)
        if self.main.summaries:
            extras["summaries"] = self.main.summaries
        if warnings:
            extras["whenpro_warnings"] = warnings
        return Trace(
            id=self.trace_id,
            framework="claude-code",
            agents=agents,
            task=Task(query=query),
            steps=steps,
            final_answer=final,
            outcome=Outcome.unknown,
            source=Source(
                format="claude-code", path=str(self.ctx.path), root=str(self.ctx.root) if self.ctx.root else None
            ),
            extras=extras,
        )


class ClaudeCodeImporter(SessionLinesImporter):
    """A Claude Code session transcript (JSON lines, one content block a line)."""

    name = "claude-code"

    def line_matches(self, obj: Any) -> bool:
        return is_session_line(obj)

    def make_builder(self, ctx: LoadContext) -> LineBuilder:
        return ClaudeTraceBuilder(ctx)


__all__ = [
    "ClaudeCodeImporter",
    "InlineSidechains",
    "ClaudeSessionBuilder",
    "ClaudeTraceBuilder",
    "is_session_line",
    "subagent_file",
]
