"""Incremental trace builders: a trace grown one parsed JSON line (or one batch of
spans) at a time, giving at every point the same trace the file importer would read
from the lines so far (docs/architecture.md, 'Formats and step coordinates' formats; ``live/``).

* native step lines: :class:`~whenpro_core.formats.native_lines.NativeLinesBuilder`;
* OpenAI chat messages, one a line: :class:`ChatLinesBuilder` (as
  :class:`~whenpro_core.formats.chat.ChatJsonlImporter` reads them);
* OTLP/JSON export requests, one a line: :class:`OtlpLinesBuilder` (as
  :class:`~whenpro_core.formats.otel.OtlpImporter` reads them), built on
  :class:`SpanSet`, which the OTLP receiver's store uses too;
* coding-agent sessions (:data:`SESSION_FORMATS`: Claude Code, Codex CLI, Gemini CLI
  JSONL): the importer's own builder (:mod:`whenpro_core.formats.session_lines`). A later
  line can change an earlier step (a tool result joins its call), so, as for OTLP, the
  steps are compared with :func:`common_prefix`.

Chat and native lines only ever append steps. Spans may arrive after spans that start
later (a parent span is exported when it ends, after its children), so an OTLP trace
can change before its end: :func:`common_prefix` tells how many steps stayed put.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import orjson

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import LoadContext, dict_or_empty
from whenpro_core.formats.chat import chat_step, chat_steps, is_chat_role, is_group_chat, opening_index
from whenpro_core.formats.claude_code import ClaudeCodeImporter
from whenpro_core.formats.codex_cli import CodexRolloutImporter
from whenpro_core.formats.gemini_cli import GeminiJsonlImporter
from whenpro_core.formats.native_lines import NativeLinesBuilder, is_header, is_step_line
from whenpro_core.formats.otel import agent_spans, build_traces
from whenpro_core.formats.otlp import Span, spans_of
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Agent, Outcome, Source, Step, Task, Trace

#: Session line formats, by name: the importer whose builder reads them.
SESSION_FORMATS = {
    "claude-code": ClaudeCodeImporter(),
    "codex-cli": CodexRolloutImporter(),
    "gemini-cli": GeminiJsonlImporter(),
}
#: Line formats a followed file may hold.
LINE_FORMATS = ("native", "chat", "otlp", *SESSION_FORMATS)
#: Line formats whose builders only ever append steps (the others may change earlier ones).
APPEND_ONLY = ("native", "chat")


def sniff_line(obj: Any) -> str | None:
    """The line format of a parsed first line: ``otlp`` (an object with
    ``resourceSpans``), a session format (:data:`SESSION_FORMATS`), ``chat`` (a message with
    a chat role), ``native`` (a header or a step object), or ``None``."""
    if not isinstance(obj, dict):
        return None
    if "resourceSpans" in obj:
        return "otlp"
    for name, importer in SESSION_FORMATS.items():
        if importer.line_matches(obj):
            return name
    if is_chat_role(obj.get("role")):
        return "chat"
    if is_header(obj) or is_step_line(obj):
        return "native"
    return None


def common_prefix(old: Sequence[object], new: Sequence[object]) -> int:
    """How many leading steps ``old`` and ``new`` share (the same object, or equal);
    works as well on step fingerprints (:func:`step_fingerprint`)."""
    n = 0
    for a, b in zip(old, new, strict=False):
        if a is not b and a != b:
            break
        n += 1
    return n


class ChatLinesBuilder:
    """OpenAI chat messages, one per line, as one conversation (framework ``ag2`` when
    assistant turns carry agent names, else ``openai-chat``). Kinds follow
    :func:`~whenpro_core.formats.chat.chat_steps`: when the messages so far turn out to
    be an AG2 group chat (or stop being one), every step is rebuilt with the new kinds,
    so the trace always equals what the file importer reads from the same lines (a
    follower then sees changed steps and announces a reset)."""

    format = "chat-jsonl"

    def __init__(self, ctx: LoadContext, default_id: str) -> None:
        self.ctx = ctx
        self.id = default_id
        self.steps: list[Step] = []
        self._messages: list[JSONObject] = []
        self._group = False

    def feed(self, obj: Any) -> tuple[str, ...]:
        """Add one message; TraceFormatError (state unchanged) for a bad one."""
        if not (isinstance(obj, dict) and is_chat_role(obj.get("role"))):
            raise self.ctx.error("not a chat message", "$", expected='one message a line {"role": ..., "content": ...}')
        chat_step(len(self.steps), obj, self.ctx, "$")  # validates (raises before any change)
        self._messages.append(obj)
        group = is_group_chat(self._messages)
        if group != self._group:
            self._group = group
            self.steps[:] = chat_steps(self._messages, self.ctx, "$")
        else:
            i = len(self.steps)
            self.steps.append(
                chat_step(i, obj, self.ctx, "$", group=group, opening=group and i == opening_index(self._messages))
            )
        return ()

    def trace(self) -> Trace:
        """The conversation so far."""
        named = any(
            isinstance(m.get("name"), str) and m.get("role") not in ("tool", "function") for m in self._messages
        )
        agents: dict[str, None] = {}
        for s in self.steps:
            if s.kind not in ("system", "tool"):
                agents.setdefault(s.agent, None)
        query = next((s.content for s in self.steps if s.kind == "user"), "")
        final = next((s.content for s in reversed(self.steps) if s.kind == "assistant" and s.content), None)
        return Trace(
            id=self.id,
            framework="ag2" if named else "openai-chat",
            agents=[Agent(id=a) for a in agents],
            task=Task(query=query),
            steps=list(self.steps),
            final_answer=final,
            outcome=Outcome.unknown,
            source=Source(
                format=self.format, path=str(self.ctx.path), root=str(self.ctx.root) if self.ctx.root else None
            ),
        )


class SpanSet:
    """The spans of one trace id, deduplicated by span id (a re-sent span replaces the
    earlier copy), built into a trace with the OpenTelemetry importer's own code."""

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self.spans: dict[str, Span] = {}

    def __len__(self) -> int:
        return len(self.spans)

    def add(self, spans: Iterable[Span]) -> int:
        """Add spans of this trace (others are ignored); returns how many were new."""
        new = 0
        for s in spans:
            if s.trace_id != self.trace_id:
                continue
            new += s.span_id not in self.spans
            self.spans[s.span_id] = s
        return new

    def build(self, ctx: LoadContext) -> Trace | None:
        """The trace of these spans (GenAI or OpenInference conventions), or ``None``
        when there are none."""
        if not self.spans:
            return None
        return build_traces(list(self.spans.values()), ctx)[0]

    @classmethod
    def from_trace(cls, trace: Trace) -> SpanSet:
        """The spans back from a trace built by :meth:`build` (each step's ``raw`` is
        its span; the agent spans framing steps and the resource are in ``extras``)."""
        resource = dict_or_empty(trace.extras.get("resource"))
        out = cls(trace.id)
        for span in [*(Span.from_raw(step.raw, resource) for step in trace.steps), *agent_spans(trace)]:
            if span is not None:
                out.spans[span.span_id] = span
        return out


class OtlpLinesBuilder:
    """OTLP/JSON export requests, one per line. Follows one trace id: ``trace_id`` if
    given, else the first one seen; spans of other traces are counted in
    :attr:`other_spans` and left out."""

    format = "otel"

    def __init__(self, ctx: LoadContext, trace_id: str | None = None) -> None:
        self.ctx = ctx
        self.set: SpanSet | None = SpanSet(trace_id) if trace_id else None
        self.other_spans = 0
        self._trace: Trace | None = None

    @property
    def steps(self) -> list[Step]:
        """The current steps (ordered by span start time)."""
        t = self.trace()
        return t.steps

    def feed(self, obj: Any) -> tuple[str, ...]:
        """Add one export request; TraceFormatError (state unchanged) for a bad one."""
        spans = list(spans_of(obj, self.ctx))
        if self.set is None and spans:
            self.set = SpanSet(spans[0].trace_id)
        if self.set is not None:
            added = self.set.add(spans)
            self.other_spans += sum(s.trace_id != self.set.trace_id for s in spans)
            if added or spans:
                self._trace = None
        return ()

    def trace(self) -> Trace:
        """The followed trace so far (empty, id ``pending``, before the first span)."""
        if self._trace is None:
            built = self.set.build(self.ctx) if self.set is not None else None
            if built is None:
                built = Trace(
                    id=self.set.trace_id if self.set else "pending",
                    framework="otel",
                    source=Source(format=self.format, path=str(self.ctx.path)),
                )
            self._trace = built
        return self._trace


class LiveBuilder(Protocol):
    """What the file follower needs of a line builder: ``feed`` one parsed line (returns
    the names of the header fields it changed) and the ``trace`` so far."""

    def feed(self, obj: Any) -> tuple[str, ...]: ...

    def trace(self) -> Trace: ...


def make_builder(fmt: str, path: Path, *, trace_id: str | None = None) -> LiveBuilder:
    """A builder for line format ``fmt`` (``native``, ``chat`` or ``otlp``) of the file
    ``path``; ConfigError-free: TraceFormatError for an unknown format."""
    ctx = LoadContext(path=path, root=path.parent)
    if fmt == "native":
        return NativeLinesBuilder(ctx, path.stem, growing=True)
    if fmt == "chat":
        return ChatLinesBuilder(ctx, path.stem)
    if fmt == "otlp":
        return OtlpLinesBuilder(ctx, trace_id)
    if fmt in SESSION_FORMATS:
        return SESSION_FORMATS[fmt].make_builder(ctx)
    raise TraceFormatError(f"unknown line format {fmt!r}", path=path, expected=", ".join(LINE_FORMATS))


def step_fingerprint(step: Step) -> bytes:
    """A small digest of a step (16 bytes; equal steps, equal digests), kept instead of
    the step to tell later which steps changed without holding them in memory."""
    try:
        data = orjson.dumps(step.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    except (TypeError, ValueError):  # values nested too deep or not JSON: unique, so "changed"
        return os.urandom(16)
    return hashlib.blake2b(data, digest_size=16).digest()


__all__ = [
    "APPEND_ONLY",
    "ChatLinesBuilder",
    "LINE_FORMATS",
    "LiveBuilder",
    "OtlpLinesBuilder",
    "SESSION_FORMATS",
    "SpanSet",
    "common_prefix",
    "step_fingerprint",
    "make_builder",
    "sniff_line",
]
