"""LangSmith / LangChain runs (SOURCE.md of real_traces/langsmith).

Accepted documents (content decides):

* the SDK's batch body ``{post: [run, ...], patch: [run, ...]}``: a patch completes the
  post with the same ``id`` (the JS SDK leaves ``id`` out of a patch: the last segment of
  its ``dotted_order`` names the run); several bodies saved as a JSON list (one a
  request, as a capture of the SDK's traffic keeps them): every body's posts first, then
  the patches;
* a run tree: one run ``{id, name, run_type, inputs, outputs, start_time, ...,
  child_runs: [...]}`` with nested children, or a list of runs (flat, linked by
  ``parent_run_id``, or trees).

The runs of one trace id (``trace_id``, else the root id that starts ``dotted_order``)
are one trace; a document holding several trace ids is one trace per id, keyed by it (as
for OpenTelemetry).

A run is ``{id, name, run_type: llm|chain|tool|retriever|prompt|parser|embedding|agent,
inputs, outputs, error?, start_time, end_time, parent_run_id, trace_id, dotted_order,
extra: {metadata, runtime}, events, tags}``; times are ISO strings (Python SDK) or epoch
milliseconds (JS SDK). Runs are taken in start order, depth first (``dotted_order``, which
encodes each ancestor's start time, else start time); ``meta["depth"]`` is the run's
depth. Steps, coordinate = 0-based position:

* an ``llm`` run: its input messages not seen before (``inputs.messages``, OpenAI dicts or
  serialized LangChain messages) as ``system``/``user``/``tool`` steps, then the model's
  reply (``outputs.choices[0].message`` or LangChain ``generations``) as ``assistant``,
  or ``action`` when it calls tools; ``usage_metadata`` goes to ``meta["usage"]``;
* a ``tool`` run: an ``action`` step calling the run's tool with its inputs, the outputs
  as its observation;
* other runs (chains, agents, retrievers): a ``run`` step with its inputs as content and
  outputs as observation.

The agent of a step is the nearest enclosing ``chain``/``agent`` run's name (the run's
own name at the top). A run's ``error`` is the step's error; the root run's error makes
the outcome ``failure``, else it is ``unknown``. Final answer: the root run's output text,
else the last assistant reply.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from whenpro_core.formats.base import (
    DocumentImporter,
    LoadContext,
    as_text,
    dict_or_empty,
    expect,
    list_or_empty,
    redact_secrets,
    text_or_none,
)
from whenpro_core.formats.chat import content_parts, tool_calls_of
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Agent, Outcome, Step, Task, ToolCall, Trace

RUN_TYPES = frozenset({"llm", "chain", "tool", "retriever", "prompt", "parser", "embedding", "agent"})
_LC_ROLES = {
    "human": "user",
    "HumanMessage": "user",
    "ai": "assistant",
    "AIMessage": "assistant",
    "system": "system",
    "SystemMessage": "system",
    "tool": "tool",
    "ToolMessage": "tool",
    "AIMessageChunk": "assistant",
    "FunctionMessage": "tool",
}
_AGENT_RUNS = ("chain", "agent")


def is_run(value: Any) -> bool:
    """A run object: ``run_type`` one of :data:`RUN_TYPES` and ``inputs`` or ``name``."""
    return (
        isinstance(value, dict)
        and text_or_none(value.get("run_type")) in RUN_TYPES
        and ("inputs" in value or "name" in value)
    )


def is_batch(doc: Any) -> bool:
    """An SDK batch body: ``post`` and/or ``patch`` lists whose first entry is a run
    (a patch: an object with ``dotted_order``, ``trace_id`` or ``id``)."""
    if not isinstance(doc, dict) or not (set(doc) <= {"post", "patch"}) or not doc:
        return False
    posts, patches = doc.get("post", []), doc.get("patch", [])
    if not isinstance(posts, list) or not isinstance(patches, list) or not (posts or patches):
        return False
    return (not posts or is_run(posts[0])) and (
        not patches or (isinstance(patches[0], dict) and bool({"dotted_order", "trace_id", "id"} & patches[0].keys()))
    )


def is_run_document(doc: Any) -> bool:
    """A batch body, a run tree, a non-empty list of runs or of batch bodies."""
    if is_batch(doc) or is_run(doc):
        return True
    return isinstance(doc, list) and bool(doc) and (all(is_run(r) for r in doc) or all(is_batch(b) for b in doc))


def _time(value: Any) -> float | None:
    """Seconds since the epoch of an ISO string or epoch milliseconds; ``None`` otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value / 1000.0 if value > 1e11 else float(value)
    if isinstance(value, str) and value:
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    return None


def _dotted_id(run: JSONObject) -> str | None:
    dotted = run.get("dotted_order")
    if isinstance(dotted, str) and "Z" in dotted:
        return dotted.rsplit(".", 1)[-1].split("Z", 1)[-1] or None
    return None


def _flatten(run: Any, ctx: LoadContext, where: str, parent: str | None, out: list[tuple[JSONObject, str]]) -> None:
    expect(run, dict, ctx, where, "a run object {id, name, run_type, inputs, outputs}")
    flat = {k: v for k, v in run.items() if k != "child_runs"}
    if parent is not None and flat.get("parent_run_id") is None:
        flat["parent_run_id"] = parent
    out.append((flat, where))
    children = run.get("child_runs")
    if children is None:
        return
    expect(children, list, ctx, f"{where}.child_runs", "a list of runs")
    rid = str(run.get("id") or _dotted_id(run) or where)
    for i, child in enumerate(children):
        _flatten(child, ctx, f"{where}.child_runs[{i}]", rid, out)


def collect_runs(doc: Any, ctx: LoadContext) -> list[tuple[JSONObject, str]]:
    """``(run, JSON path)`` of every run in the document, patches merged into their posts."""
    out: list[tuple[JSONObject, str]] = []
    if is_batch(doc):
        return _batch_runs([(doc, "$")], ctx)
    if isinstance(doc, list) and doc and all(is_batch(b) for b in doc):
        return _batch_runs([(body, f"$[{i}]") for i, body in enumerate(doc)], ctx)
    runs = doc if isinstance(doc, list) else [doc]
    for i, run in enumerate(runs):
        _flatten(run, ctx, f"$[{i}]" if isinstance(doc, list) else "$", None, out)
    return out


def _batch_runs(bodies: list[tuple[JSONObject, str]], ctx: LoadContext) -> list[tuple[JSONObject, str]]:
    """The runs of batch bodies ``(body, its JSON path)``: every post, then each patch
    merged into its post (an update whose post is in no body is a run of its own)."""
    out: list[tuple[JSONObject, str]] = []
    for body, where in bodies:
        for i, run in enumerate(body.get("post", [])):
            _flatten(run, ctx, f"{where}.post[{i}]", None, out)
    by_id = {str(r.get("id") or _dotted_id(r)): r for r, _ in out}
    for body, where in bodies:
        for i, patch in enumerate(body.get("patch", [])):
            expect(patch, dict, ctx, f"{where}.patch[{i}]", "a run update object")
            rid = str(patch.get("id") or _dotted_id(patch) or "")
            target = by_id.get(rid)
            if target is None:
                _flatten(patch, ctx, f"{where}.patch[{i}]", None, out)
                by_id[rid] = out[-1][0]
            else:
                target.update({k: v for k, v in patch.items() if v is not None and k != "child_runs"})
    return out


def _order_key(run: JSONObject) -> tuple[int, str, float]:
    dotted = run.get("dotted_order")
    return (0, dotted, 0.0) if isinstance(dotted, str) else (1, "", _time(run.get("start_time")) or 0.0)


def _message_role(msg: JSONObject) -> str:
    role = msg.get("role")
    if isinstance(role, str):
        return role
    mtype = msg.get("type")
    if isinstance(mtype, str) and mtype in _LC_ROLES:
        return _LC_ROLES[mtype]
    ident = msg.get("id")
    if isinstance(ident, list) and ident and isinstance(ident[-1], str):
        return _LC_ROLES.get(ident[-1], "user")
    return "user"


def _lc_fields(msg: JSONObject) -> JSONObject:
    """A serialized LangChain message ``{lc, type: constructor, id, kwargs}`` as its kwargs."""
    if msg.get("lc") is not None and isinstance(msg.get("kwargs"), dict):
        return {**msg["kwargs"], "id": msg.get("id")}
    return msg


def _input_messages(inputs: Any) -> list[JSONObject]:
    msgs = inputs.get("messages") if isinstance(inputs, dict) else None
    if isinstance(msgs, list) and msgs and isinstance(msgs[0], list):  # LangChain: a batch of lists
        msgs = msgs[0]
    return [m for m in list_or_empty(msgs) if isinstance(m, dict)]


def _reply(outputs: Any) -> JSONObject | None:
    """The model's reply message in an llm run's outputs (OpenAI or LangChain shape)."""
    if not isinstance(outputs, dict):
        return None
    choices = outputs.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        msg = choices[0].get("message")
        return msg if isinstance(msg, dict) else {"role": "assistant", "content": choices[0].get("text")}
    gens = outputs.get("generations")
    if isinstance(gens, list) and gens:
        first = gens[0][0] if isinstance(gens[0], list) and gens[0] else gens[0]
        if isinstance(first, dict):
            msg = first.get("message")
            return _lc_fields(msg) if isinstance(msg, dict) else {"role": "assistant", "content": first.get("text")}
    return None


def _run_text(value: Any) -> str:
    if isinstance(value, dict) and len(value) == 1:
        only = next(iter(value.values()))
        if isinstance(only, str):
            return only
    return as_text(value)


class _Steps:
    def __init__(self, ctx: LoadContext) -> None:
        self.ctx = ctx
        self.steps: list[Step] = []
        self.seen: set[tuple[str, str]] = set()

    def add(self, step: Step) -> None:
        step.index = len(self.steps)
        step.coord = str(step.index)
        self.steps.append(step)

    def llm(self, run: JSONObject, where: str, agent: str, meta: JSONObject) -> None:
        for j, raw in enumerate(_input_messages(run.get("inputs"))):
            msg = _lc_fields(raw)
            role = _message_role(msg)
            text, media = content_parts(msg.get("content"), self.ctx, f"{where}.inputs.messages[{j}].content")
            key = (role, text)
            if role == "assistant" or key in self.seen:
                continue
            self.seen.add(key)
            kind = role if role in ("system", "user") else "tool"
            self.add(
                Step(
                    index=0,
                    agent=role if role != "tool" else "environment",
                    kind=kind,
                    content=text,
                    media=media,
                    meta={**meta, "message": j},
                )
            )
        reply = _reply(run.get("outputs"))
        outputs = dict_or_empty(run.get("outputs"))
        if isinstance(outputs.get("usage_metadata"), dict):
            meta["usage"] = outputs["usage_metadata"]
        if reply is None:
            self.add(
                Step(
                    index=0,
                    agent=agent,
                    kind="assistant",
                    content=_run_text(run.get("outputs")),
                    meta=meta,
                    error=text_or_none(run.get("error")),
                    raw=redact_secrets(run),
                )
            )
            return
        text, media = content_parts(reply.get("content"), self.ctx, f"{where}.outputs.message.content")
        calls = tool_calls_of(reply, self.ctx, f"{where}.outputs.message")
        self.seen.add(("assistant", text))
        self.add(
            Step(
                index=0,
                agent=agent,
                kind="action" if calls else "assistant",
                content=text,
                media=media,
                tool_calls=calls,
                meta=meta,
                error=text_or_none(run.get("error")),
                raw=redact_secrets(run),
            )
        )

    def other(self, run: JSONObject, agent: str, meta: JSONObject) -> None:
        name = text_or_none(run.get("name")) or str(run.get("run_type"))
        outputs = run.get("outputs")
        observation = _run_text(outputs) if outputs is not None else None
        error = text_or_none(run.get("error"))
        if run.get("run_type") == "tool":
            self.add(
                Step(
                    index=0,
                    agent=agent,
                    kind="action",
                    tool_calls=[ToolCall(id=text_or_none(run.get("id")), name=name, arguments=run.get("inputs"))],
                    observation=observation,
                    error=error,
                    meta=meta,
                    raw=redact_secrets(run),
                )
            )
            return
        self.add(
            Step(
                index=0,
                agent=agent,
                kind="run",
                content=f"{name}: {_run_text(run.get('inputs'))}",
                observation=observation,
                error=error,
                meta=meta,
                raw=redact_secrets(run),
            )
        )


def _trace_id_of(run: JSONObject) -> str:
    """The trace a run belongs to: its ``trace_id``, else the run id that starts its
    ``dotted_order`` (the root's), else ``""`` (one trace for every such run)."""
    tid = text_or_none(run.get("trace_id"))
    dotted = run.get("dotted_order")
    if tid is None and isinstance(dotted, str) and "Z" in dotted:
        tid = dotted.split(".", 1)[0].split("Z", 1)[-1] or None
    return tid or ""


def runs_traces(doc: Any, ctx: LoadContext) -> list[Trace]:
    """One trace per trace id among the runs of ``doc``, in order of first appearance
    (one trace, without a key, when every run shares one; else each keyed by its trace
    id, as for OpenTelemetry). TraceFormatError names the JSON path of a run that is not
    an object or has malformed messages."""
    runs = collect_runs(doc, ctx)
    if not runs:
        raise ctx.error("no runs", "$", "at least one run")
    groups: dict[str, list[tuple[JSONObject, str]]] = {}
    for run in runs:
        groups.setdefault(_trace_id_of(run[0]), []).append(run)
    if len(groups) == 1:
        return [_runs_trace(runs, ctx)]
    traces = []
    for tid, group in groups.items():
        trace = _runs_trace(group, ctx)
        trace.source = ctx.source("langsmith", key=tid or None)
        traces.append(trace)
    return traces


def _runs_trace(runs: list[tuple[JSONObject, str]], ctx: LoadContext) -> Trace:
    """The trace of ``runs`` (``(run, JSON path)``, patches merged), in start order."""
    by_id = {str(r.get("id") or _dotted_id(r)): r for r, _ in runs}
    runs = sorted(runs, key=lambda rw: _order_key(rw[0]))
    builder = _Steps(ctx)
    for run, where in runs:
        chain = _ancestors(run, by_id)
        agent = next(
            (text_or_none(a.get("name")) for a in chain if text_or_none(a.get("run_type")) in _AGENT_RUNS), None
        )
        meta = {
            "run_id": run.get("id"),
            "run_type": run.get("run_type"),
            "name": run.get("name"),
            "depth": len(chain),
            "start_time": run.get("start_time"),
            "end_time": run.get("end_time"),
            "parent_run_id": run.get("parent_run_id"),
        }
        agent = agent or text_or_none(run.get("name")) or "agent"
        if run.get("run_type") == "llm":
            builder.llm(run, where, agent, meta)
        else:
            builder.other(run, agent, meta)
    return _trace(runs, builder.steps, ctx)


def _ancestors(run: JSONObject, by_id: dict[str, JSONObject]) -> list[JSONObject]:
    chain: list[JSONObject] = []
    parent = run.get("parent_run_id")
    while parent is not None and str(parent) in by_id and len(chain) < 256:
        node = by_id[str(parent)]
        if node is run or node in chain:
            break
        chain.append(node)
        parent = node.get("parent_run_id")
    return chain


def _root_final(root: dict[str, Any], steps: list[Step]) -> str | None:
    """The final answer: the root run's reply content, else its outputs as text, else
    the last non-empty assistant step."""
    reply = _reply(root.get("outputs"))
    final = (as_text(reply.get("content")) if reply else None) or (
        _run_text(root["outputs"]) if root.get("outputs") is not None else None
    )
    return final or next((s.content for s in reversed(steps) if s.kind == "assistant" and s.content), None)


def _root_extras(root: dict[str, Any], runs: int) -> dict[str, Any]:
    """The trace extras (secrets redacted): the root run without its inputs, outputs and
    serialized form, its ``extra.metadata`` and ``extra.runtime``, and the run count."""
    extra = dict_or_empty(root.get("extra"))
    run_fields = {k: v for k, v in root.items() if k not in ("inputs", "outputs", "serialized")}
    extras: dict[str, Any] = redact_secrets(
        {"root_run": run_fields, "metadata": extra.get("metadata"), "runtime": extra.get("runtime"), "runs": runs}
    )
    return extras


def _trace(runs: list[tuple[JSONObject, str]], steps: list[Step], ctx: LoadContext) -> Trace:
    root = next((r for r, _ in runs if r.get("parent_run_id") is None), runs[0][0])
    agents = dict.fromkeys(s.agent for s in steps if s.kind not in ("system", "user", "tool"))
    final = _root_final(root, steps)
    query = next((s.content for s in steps if s.kind == "user" and s.content), "") or _run_text(root.get("inputs"))
    extras = _root_extras(root, len(runs))
    tid = text_or_none(root.get("trace_id")) or text_or_none(root.get("id")) or ctx.path.stem
    return Trace(
        id=f"langsmith-{tid}",
        framework="langsmith",
        agents=[Agent(id=a) for a in agents],
        task=Task(query=query),
        steps=steps,
        final_answer=final,
        outcome=Outcome.failure if text_or_none(root.get("error")) else Outcome.unknown,
        source=ctx.source("langsmith"),
        extras=extras,
    )


class LangSmithImporter(DocumentImporter):
    """LangSmith runs: an SDK batch body, a run tree or a list of runs."""

    name = "langsmith"
    priority = 9

    def matches(self, doc: Any) -> bool:
        return is_run_document(doc)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        return runs_traces(doc, ctx)


__all__ = ["LangSmithImporter", "collect_runs", "is_batch", "is_run", "is_run_document", "runs_traces"]
