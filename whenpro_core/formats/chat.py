"""OpenAI-style chat logs and AG2/AutoGen group-chat histories.

Accepted shapes (content decides, never the file name):

* a JSON list of messages ``{role, content, name?, tool_calls?, tool_call_id?}``;
* an object holding such a list under ``messages`` (OpenAI fine-tuning rows) or
  ``chat_history`` (AutoGen ``ChatResult``), other members kept in ``extras``;
* JSON lines: one message per line (the whole file is one conversation), or one
  ``{"messages": [...]}`` conversation per line (a trace per row, key = row number).

``content`` may be a string, ``null`` (an assistant turn that only calls tools), a list of
strings (MAD stores lines), or a list of parts (``{"type": "text", "text"}``,
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``). Inline
``data:`` images become :class:`MediaRef` data; remote URLs are kept as the media label.

Speaker: a message's ``name`` when set (AG2 group chats name Planner/Coder/Tester there,
``role`` is only the chat-API role, SOURCE.md of mast-lint-ag2-dogfood), else its role.

Kind in an AG2/AutoGen chat (:func:`is_group_chat`: every conversational message names
its speaker, and there are at least two speakers): ``role`` says nothing about who is
acting (AG2 sends every peer's message with role ``user``, and a user proxy's with role
``assistant``), so the kind comes from the speaker: the opening message (the task the
initiator posts) and messages of a human or user proxy (:func:`is_human_name`) are
``user`` steps, every other message is an agent step (``assistant``, or ``action`` with
tool calls). Elsewhere the kind follows the chat role.
Coordinate: the 0-based message index, as in Who&When. Roles outside the OpenAI set are
left to :mod:`whenpro_core.formats.agentrx` (Magentic-One lists name the speaker in
``role``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.agenterrorbench import apply_label, label_for
from whenpro_core.formats.base import (
    DocumentImporter,
    JsonLinesImporter,
    LoadContext,
    as_text,
    expect,
    is_message_list,
    maybe_json,
    parse_json,
    redact_secrets,
    summarize,
)
from whenpro_core.formats.native_lines import skipped_lines_warning
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Agent, MediaRef, Outcome, Source, Step, Task, ToolCall, Trace, TraceSummary

#: Chat-API roles of OpenAI-compatible logs.
CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function", "ipython"})
_KIND = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}


#: Speaker names of the human side of an AG2/AutoGen chat: ``user_proxy``
#: (UserProxyAgent), ``mathproxyagent`` (MathUserProxyAgent, MAD), ``Admin`` (GroupChat's
#: human admin), ``human``, ``user``.
_HUMAN_NAME = re.compile(r"proxy|human|^(user|admin)(?![a-z0-9])", re.IGNORECASE)


def is_human_name(name: str) -> bool:
    """True when an AG2/AutoGen speaker name is a human or a user proxy (see
    :data:`_HUMAN_NAME`), not an agent."""
    return bool(_HUMAN_NAME.search(name.strip()))


def _conversational(msg: Any) -> bool:
    if not isinstance(msg, dict):
        return False
    role = msg.get("role")
    return not (isinstance(role, str) and _KIND.get(role) in ("system", "tool"))


def is_group_chat(messages: list[Any]) -> bool:
    """True for an AG2/AutoGen chat history: every message that is not a system or tool
    message carries a non-empty ``name``, with at least two distinct names. (An OpenAI
    chat that names only its user keeps role-based kinds.)"""
    names = [m.get("name") for m in messages if _conversational(m)]
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        return False
    return len({n.strip() for n in names}) >= 2


def opening_index(messages: list[Any]) -> int | None:
    """Index of the first conversational (not system, not tool) message: the task in an
    AG2 group chat."""
    return next((i for i, m in enumerate(messages) if _conversational(m)), None)


def is_chat_list(value: Any) -> bool:
    """True for a non-empty list of objects with a chat-API ``role`` (see
    :data:`CHAT_ROLES`) each, and ``content`` or ``tool_calls`` on each."""
    return is_message_list(value) and all(
        is_chat_role(m.get("role")) and ("content" in m or "tool_calls" in m) for m in value
    )


def is_chat_role(role: Any) -> bool:
    """True if ``role`` is one of :data:`CHAT_ROLES`."""
    return isinstance(role, str) and role in CHAT_ROLES


def data_url_media(url: str, label: str | None = None) -> MediaRef:
    """A MediaRef for an image URL: ``data:<mime>;base64,<data>`` becomes inline data,
    anything else (``https://...``) is kept as the label (never fetched)."""
    if url.startswith("data:") and "," in url:
        header, _, data = url.partition(",")
        mime = header[5:].split(";", 1)[0] or None
        return MediaRef(kind="image", data=data, mime=mime, label=label)
    return MediaRef(kind="image", label=url if label is None else f"{label}: {url}")


def _image_part(
    part: dict[str, Any], ctx: LoadContext, where: str, resolve: Callable[[str], str] | None, number: int
) -> MediaRef:
    """Image part ``number`` of a content: an Anthropic base64 ``source``, else an
    ``image_url`` (``{url}`` or a string) or ``image`` URL. Raises when it has no URL."""
    source = part.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        return MediaRef(
            kind="image",
            data=str(source.get("data") or ""),
            mime=source.get("media_type"),
            label=f"image #{number}",
        )
    url = part.get("image_url", part.get("image"))
    if isinstance(url, dict):
        url = url.get("url")
    if not isinstance(url, str):
        raise ctx.error("image part without a URL", where, "image_url.url or image as a string")
    return data_url_media(resolve(url) if resolve else url, f"image #{number}")


def _part_text(part: dict[str, Any], resolve: Callable[[str], str] | None) -> str:
    """The text of a non-image part: a ``text`` part's text (resolved), ``[reasoning] ...``,
    or any other part as text."""
    ptype = part.get("type")
    if ptype in ("text", "input_text", "output_text"):
        text = part.get("text")
        return resolve(text) if resolve and isinstance(text, str) else as_text(text)
    if ptype == "reasoning":
        return f"[reasoning] {as_text(part.get('reasoning'))}"
    return as_text(part)


def _typed_parts(
    content: list[Any], ctx: LoadContext, where: str, resolve: Callable[[str], str] | None
) -> tuple[str, list[MediaRef]]:
    """Text (non-empty pieces joined by newlines) and images of a list of strings and
    typed parts. Raises for a part that is neither."""
    texts: list[str] = []
    media: list[MediaRef] = []
    for j, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            raise ctx.error(
                f"wrong type (got {type(part).__name__})", f"{where}[{j}]", "a content part object with a type"
            )
        if part.get("type") in ("image_url", "input_image", "image"):
            media.append(_image_part(part, ctx, f"{where}[{j}]", resolve, len(media)))
        else:
            texts.append(_part_text(part, resolve))
    return "\n".join(t for t in texts if t), media


def content_parts(
    content: Any, ctx: LoadContext, where: str, resolve: Callable[[str], str] | None = None
) -> tuple[str, list[MediaRef]]:
    """Text and media of a message ``content``: a string, ``None``, a list of strings,
    or a list of typed parts (OpenAI ``text``/``image_url``/``input_image``, Inspect
    ``text``/``image``/``reasoning``, Anthropic ``image`` with a base64 ``source``).
    ``resolve`` maps a reference (``attachment://<hash>``) to its stored value.
    TraceFormatError names ``where`` for a content of another type."""
    if content is None or isinstance(content, str):
        return (resolve(content) if resolve and content else content) or "", []
    if not isinstance(content, list):
        raise ctx.error(
            f"wrong type (got {type(content).__name__})", where, "a string, null or a list of content parts"
        )
    if all(isinstance(part, str) for part in content):
        return "\n".join(content), []  # a list of lines (MAD), blank lines kept
    return _typed_parts(content, ctx, where, resolve)


def tool_calls_of(msg: JSONObject, ctx: LoadContext, where: str) -> list[ToolCall]:
    """OpenAI ``tool_calls`` ``[{id, type, function: {name, arguments}}]`` (arguments a
    JSON string, decoded when valid) and the legacy ``function_call``; Inspect's flat
    ``{id, function, arguments}`` too."""
    calls = msg.get("tool_calls")
    if calls is None and isinstance(msg.get("function_call"), dict):
        calls = [{"function": msg["function_call"]}]
    if calls is None:
        return []
    calls = maybe_json(calls)
    expect(calls, list, ctx, f"{where}.tool_calls", "a list of tool calls")
    out = []
    for j, call in enumerate(calls):
        expect(call, dict, ctx, f"{where}.tool_calls[{j}]", "a tool call object")
        fn = call.get("function")
        if isinstance(fn, dict):
            name, args = fn.get("name"), fn.get("arguments")
        else:
            name, args = fn, call.get("arguments")
        if not isinstance(name, str):
            raise ctx.error(
                "tool call without a name", f"{where}.tool_calls[{j}].function.name", "the tool's name as a string"
            )
        cid = call.get("id")
        out.append(ToolCall(id=str(cid) if cid is not None else None, name=name, arguments=maybe_json(args)))
    return out


def _message_role(msg: dict[str, Any], ctx: LoadContext, where: str) -> str:
    """The message's ``role``; raises when it is missing or not a string."""
    role = msg.get("role")
    if not isinstance(role, str):
        raise ctx.error(
            "missing role" if role is None else "wrong type", f"{where}.role", "the message role as a string"
        )
    return role


def _message_meta(msg: dict[str, Any], role: str) -> dict[str, Any]:
    """The step meta of a message: its role and its scalar ``tool_call_id``, ``function``,
    ``source``, ``model`` and ``index``."""
    meta: dict[str, Any] = {"role": role}
    for key in ("tool_call_id", "function", "source", "model", "index"):
        if key in msg and msg[key] is not None and not isinstance(msg[key], (dict, list)):
            meta[key] = msg[key]
    return meta


def _group_kind(kind: str, speaker: str, has_calls: bool, opening: bool) -> str:
    """The kind of a conversational message in an AG2 group chat: ``user`` for the
    opening message and a human or user proxy, else ``action``/``assistant``; system and
    tool messages keep ``kind``."""
    if kind in ("system", "tool"):
        return kind
    if opening or is_human_name(speaker):
        return "user"
    return "action" if has_calls else "assistant"


def chat_step(
    i: int,
    msg: Any,
    ctx: LoadContext,
    where: str,
    *,
    agent: str | None = None,
    coord: str | None = None,
    resolve: Callable[[str], str] | None = None,
    group: bool = False,
    opening: bool = False,
) -> Step:
    """One chat message as a step. ``agent`` overrides the speaker (default: ``name``,
    else ``role``); ``coord`` defaults to ``str(i)``. Kind: ``system``, ``user``,
    ``assistant``, ``action`` (an assistant turn with tool calls) or ``tool``.

    ``group`` (the message is part of an AG2 group chat, :func:`is_group_chat`): the kind
    of a conversational message comes from its speaker, not its role: ``user`` for the
    ``opening`` message (the task) and for a human or user proxy, else ``assistant`` /
    ``action`` (see the module doc)."""
    expect(msg, dict, ctx, where, "a message object {role, content}")
    role = _message_role(msg, ctx, where)
    text, media = content_parts(msg.get("content"), ctx, f"{where}.content", resolve)
    calls = tool_calls_of(msg, ctx, where)
    name = msg.get("name") if isinstance(msg.get("name"), str) and msg.get("name").strip() else None
    kind = _KIND.get(role, "message")
    if kind == "assistant" and calls:
        kind = "action"
    meta = _message_meta(msg, role)
    speaker = agent or (name.strip() if name and kind != "tool" else role)
    if group:
        kind = _group_kind(kind, speaker, bool(calls), opening)
    if kind == "tool" and name:
        meta["tool"] = name
    return Step(
        index=i,
        coord=str(i) if coord is None else coord,
        agent=speaker,
        kind=kind,
        content=text,
        tool_calls=calls,
        media=media,
        meta=meta,
        raw=redact_secrets(msg),
    )


def chat_steps(messages: list[Any], ctx: LoadContext, where: str) -> list[Step]:
    """Every message of a chat log as a step (``where[i]`` names message i in errors),
    with AG2 group-chat kinds when :func:`is_group_chat`."""
    group = is_group_chat(messages)
    opening = opening_index(messages) if group else None
    return [chat_step(i, m, ctx, f"{where}[{i}]", group=group, opening=i == opening) for i, m in enumerate(messages)]


def chat_trace(
    messages: list[Any],
    ctx: LoadContext,
    *,
    where: str = "$",
    trace_id: str,
    fmt: str = "chat",
    extras: JSONObject | None = None,
) -> Trace:
    """A trace from a list of chat messages: framework ``ag2`` when an assistant turn
    carries an agent ``name`` or the messages form a group chat (:func:`is_group_chat`),
    else ``openai-chat`` (OpenAI allows a ``name`` on user and system messages too)."""
    steps = chat_steps(messages, ctx, where)
    named = is_group_chat(messages) or any(
        isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("name"), str) and m["name"].strip()
        for m in messages
    )
    agents: dict[str, None] = {}
    for s in steps:
        if s.kind not in ("system", "tool"):
            agents.setdefault(s.agent, None)
    query = next((s.content for s in steps if s.kind == "user"), "")
    final = next((s.content for s in reversed(steps) if s.kind == "assistant" and s.content), None)
    return Trace(
        id=trace_id,
        framework="ag2" if named else "openai-chat",
        agents=[Agent(id=a) for a in agents],
        task=Task(query=query),
        steps=steps,
        final_answer=final,
        outcome=Outcome.unknown,
        source=Source(format=fmt, path=str(ctx.path), key=ctx.key, root=str(ctx.root) if ctx.root else None),
        extras=redact_secrets(extras or {}),
    )


_LIST_KEYS = ("messages", "chat_history")


def _messages_of(doc: Any) -> tuple[list[Any] | None, str]:
    if isinstance(doc, list):
        return doc, "$"
    if isinstance(doc, dict):
        for key in _LIST_KEYS:
            if isinstance(doc.get(key), list):
                return doc[key], f"$.{key}"
    return None, "$"


class ChatImporter(DocumentImporter):
    """A JSON chat log: a message list, or an object with ``messages``/``chat_history``."""

    name = "chat"
    priority = 1

    def matches(self, doc: Any) -> bool:
        messages, _ = _messages_of(doc)
        # {"messages": <not a list>} is a chat log with a wrong type: load says so there
        return is_chat_list(messages) or (isinstance(doc, dict) and "messages" in doc and messages is None)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        messages, where = _messages_of(doc)
        if messages is None:
            expect(doc.get("messages"), list, ctx, "$.messages", "a list of messages")
        extras = {k: v for k, v in doc.items() if k not in _LIST_KEYS} if isinstance(doc, dict) else {}
        tid = str(extras.get("id") or ctx.path.stem)
        trace = chat_trace(messages or [], ctx, where=where, trace_id=tid, extras=extras)
        label, notes = label_for(ctx.path) if isinstance(doc, dict) and "messages" in doc else (None, [])
        if notes:  # a label file beside it that could not be wholly read
            trace.extras.setdefault("whenpro_warnings", []).extend(notes)
        if label is not None:  # an AgentErrorBench trajectory
            apply_label(trace, label)
        return [trace]


class ChatJsonlImporter(JsonLinesImporter):
    """Chat JSON lines: one message per line (one trace) or one conversation per line."""

    name = "chat-jsonl"
    priority = 1

    def line_matches(self, obj: Any) -> bool:
        if isinstance(obj, dict) and is_chat_role(obj.get("role")):
            return "content" in obj or "tool_calls" in obj
        messages, _ = _messages_of(obj)
        return isinstance(obj, dict) and is_chat_list(messages)

    def load_row(self, obj: Any, ctx: LoadContext) -> Trace:
        expect(obj, dict, ctx, "$", 'a {"messages": [...]} conversation')
        return (
            ChatImporter()
            .load(obj, ctx)[0]
            .model_copy(update={"id": str(obj.get("id") or f"{ctx.path.stem}-{ctx.key}")})
        )

    def _per_message(self, path: Path) -> bool:
        for row, line in self.rows(path):
            obj = parse_json(line, path, row)
            return isinstance(obj, dict) and "role" in obj
        return False

    def _message_trace(self, path: Path, root: Path | None) -> Trace:
        """One message a line: bad lines are skipped (noted in ``extras["whenpro_warnings"]``)
        as the live follower skips them; no good line raises the first line's error."""
        ctx = LoadContext(path=path, root=root)
        messages, bad = [], []
        for row, line in self.rows(path):
            try:
                obj = parse_json(line, path, row)
                chat_step(0, obj, ctx, "$")
            except TraceFormatError as exc:
                bad.append(exc.located(path=path, row=row))
                continue
            messages.append(obj)
        if bad and not messages:
            raise bad[0]
        trace = chat_trace(messages, ctx, trace_id=path.stem, fmt=self.name)
        if bad:
            trace.extras.setdefault("whenpro_warnings", []).append(skipped_lines_warning(bad))
        return trace

    def summaries(self, path: Path, root: Path | None) -> Iterator[TraceSummary]:
        try:
            if self._per_message(path):
                yield summarize(self._message_trace(path, root))
                return
        except TraceFormatError as exc:
            yield TraceSummary(id=path.stem, path=str(path), format=self.name, error=exc.one_line())
            return
        yield from super().summaries(path, root)

    def load(self, path: Path, key: str | None, root: Path | None) -> Trace:
        if self._per_message(path):
            return self._message_trace(path, root)
        return super().load(path, key, root)

    def load_all(self, path: Path, root: Path | None) -> list[Trace]:
        if self._per_message(path):
            return [self._message_trace(path, root)]
        return super().load_all(path, root)


__all__ = [
    "ChatImporter",
    "ChatJsonlImporter",
    "chat_step",
    "chat_steps",
    "chat_trace",
    "content_parts",
    "data_url_media",
    "is_chat_list",
    "is_group_chat",
    "is_human_name",
    "opening_index",
    "tool_calls_of",
]
