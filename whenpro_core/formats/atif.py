"""Harbor's Agent Trajectory Interchange Format, ``trajectory.json`` (ATIF v1.x; SOURCE.md of
real_traces/harbor-atif; read and tested on v1.5 to v1.7).

``{schema_version: "ATIF-v1.N", session_id, agent: {name, version, model_name?,
tool_definitions?, extra?}, steps: [...], final_metrics?, extra?}``. A step is ``{step_id
(1-based), source: system|user|agent, message, model_name?, reasoning_content?,
tool_calls?: [{tool_call_id, function_name, arguments}], observation?: {results:
[{source_call_id?, content, subagent_trajectory_ref?}]}, metrics?, is_copied_context?,
extra?, timestamp?}``. Steps (coordinate = ``step_id``):

* ``system`` and ``user`` steps keep their source as agent and kind;
* ``agent`` steps are spoken by ``agent.name``: ``action`` when they call tools (the same
  step's observation results are their observation, named by call when there are
  several), else ``assistant``; ``reasoning_content`` goes to ``meta["reasoning"]``,
  ``metrics`` (token counts and cost; token ids and logprobs left out) to ``meta["usage"]``;
* a result's ``subagent_trajectory_ref`` entries name other ATIF files: each one found
  beside this file (``trajectory_path`` by its file name, also with this file's own name
  prefix, as Harbor's golden files are named) becomes steps of the sub-agent
  ``agent.name`` of that file, right after the step, with coordinates ``<step_id>.1``,
  ``<step_id>.2``, ... in the order they are placed (several references of one step
  are numbered on; each child step's own ``step_id`` stays in ``meta["step_id"]``);
  steps the child copied from the parent (``is_copied_context``) are left out. A
  reference whose file is absent is a warning.

A trajectory whenpro wrote (:mod:`whenpro_core.formats.atif_write`) carries whenpro's own
fields in ``extra.whenpro`` (each step's agent, kind, coordinate and error; the trace's
task, outcome, final answer, agents and ground truth): they are read back, so a round
trip keeps them.

Final answer: the ``finish`` call's ``message`` argument (OpenHands), else the message
of the last ``mark_task_complete`` step (terminus-2), else the last agent message; a
message that writes the call as text (``<function=finish><parameter=message>...``, the
prompt-based tool format) gives the parameter's value (``message``, ``result``,
``answer``, ``conclusion``), else its text before the markup.
Outcome: ``unknown`` (a trajectory states none; a timeout only truncates it).
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.atif_write import EXTRA_KEY
from whenpro_core.formats.base import (
    DocumentImporter,
    LoadContext,
    as_text,
    dict_or_empty,
    expect,
    list_or_empty,
    read_json_file,
    redact_secrets,
    text_or_none,
)
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Agent, Annotation, GroundTruth, MediaRef, Outcome, Step, Task, ToolCall, Trace

_BULKY_METRICS = ("prompt_token_ids", "completion_token_ids", "logprobs")
_FINISH = ("finish", "mark_task_complete", "submit")
#: How deep sub-agent references are followed (a file that refers to itself stops too).
MAX_DEPTH = 4


def is_trajectory(doc: Any) -> bool:
    """An ATIF trajectory: ``schema_version`` ``ATIF-v...`` and a ``steps`` list."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("schema_version"), str)
        and doc["schema_version"].upper().startswith("ATIF")
        and isinstance(doc.get("steps"), list)
    )


def _usage(metrics: Any) -> JSONObject | None:
    if not isinstance(metrics, dict):
        return None
    return {k: v for k, v in metrics.items() if k not in _BULKY_METRICS} or None


def _raw(step: JSONObject) -> JSONObject:
    raw = dict(step)
    if isinstance(raw.get("metrics"), dict):
        raw["metrics"] = _usage(raw["metrics"])
    return redact_secrets(raw)


def _observation(results: list[Any], calls: list[ToolCall]) -> tuple[str | None, list[JSONObject]]:
    names = {c.id: c.name for c in calls if c.id}
    texts: list[str] = []
    refs: list[JSONObject] = []
    for r in results:
        if not isinstance(r, dict):
            texts.append(as_text(r))
            continue
        for ref in list_or_empty(r.get("subagent_trajectory_ref")):
            if isinstance(ref, dict):
                refs.append(ref)
                texts.append(f"[sub-agent] {as_text(ref.get('session_id'))}: {as_text(ref.get('trajectory_path'))}")
        if r.get("content") is not None:
            text = as_text(r.get("content"))
            name = names.get(str(r.get("source_call_id")))
            texts.append(f"[{name}] {text}" if name and len(calls) > 1 else text)
    return ("\n".join(texts) if texts else None), refs


def referenced_file(parent: Path, trajectory_path: str) -> Path | None:
    """The file a ``subagent_trajectory_ref`` names, looked for only beside ``parent``:
    its file name, or ``<parent's prefix>`` + file name when ``parent`` is named
    ``<prefix>trajectory.json`` (Harbor's golden files). Never outside that folder."""
    name = Path(trajectory_path.replace("\\", "/")).name
    if not name or name in (".", ".."):
        return None
    candidates = [parent.parent / name]
    if parent.name.endswith("trajectory.json") and name.startswith("trajectory."):
        candidates.append(parent.parent / (parent.name[: -len("trajectory.json")] + name))
    return next((c for c in candidates if c.is_file() and c != parent), None)


class _Reader:
    """Turns one trajectory (and the sub-trajectories beside it) into steps."""

    def __init__(self, ctx: LoadContext) -> None:
        self.ctx = ctx
        self.steps: list[Step] = []
        self.agents: dict[str, str | None] = {}
        self.warnings: list[str] = []
        self.copied = 0
        self.numbered: dict[str, int] = {}  # coordinate prefix -> sub-agent steps numbered under it

    def read(self, doc: JSONObject, where_file: Path, prefix: str, depth: int, seen: set[Path]) -> None:
        agent_info = dict_or_empty(doc.get("agent"))
        agent = text_or_none(agent_info.get("name")) or "agent"
        self.agents.setdefault(agent, text_or_none(agent_info.get("model_name")))
        for i, step in enumerate(expect(doc.get("steps"), list, self.ctx, "$.steps", "a list of steps")):
            where = f"$.steps[{i}]"
            expect(step, dict, self.ctx, where, "a step object {step_id, source, message}")
            if prefix and step.get("is_copied_context"):
                self.copied += 1
                continue
            built, refs = self._step(step, agent, prefix, where)
            self.steps.append(built)
            for ref in refs:
                self._subagent(ref, where_file, built.coord or str(i + 1), depth, seen)

    def _step(self, step: JSONObject, agent: str, prefix: str, where: str) -> tuple[Step, list[JSONObject]]:
        source = step.get("source")
        if not isinstance(source, str):
            raise self.ctx.error(
                "missing source" if source is None else "wrong type", f"{where}.source", "system, user or agent"
            )
        calls = []
        for j, call in enumerate(list_or_empty(step.get("tool_calls"))):
            expect(call, dict, self.ctx, f"{where}.tool_calls[{j}]", "a tool call {tool_call_id, function_name}")
            calls.append(
                ToolCall(
                    id=text_or_none(call.get("tool_call_id")),
                    name=text_or_none(call.get("function_name")) or "tool",
                    arguments=call.get("arguments"),
                )
            )
        obs = dict_or_empty(step.get("observation"))
        results = list_or_empty(obs.get("results"))
        observation, refs = _observation(results, calls)
        sid = step.get("step_id")
        coord = f"{prefix}{sid}" if sid is not None else None
        if prefix:
            self.numbered[prefix] = self.numbered.get(prefix, 0) + 1
            coord = f"{prefix}{self.numbered[prefix]}"
        kind = source if source in ("system", "user") else ("action" if calls else "assistant")
        meta: dict[str, Any] = {"step_id": sid, "timestamp": step.get("timestamp"), "model": step.get("model_name")}
        if text_or_none(step.get("reasoning_content")):
            meta["reasoning"] = step["reasoning_content"]
        usage = _usage(step.get("metrics"))
        if usage:
            meta["usage"] = usage
        if step.get("is_copied_context"):
            meta["is_copied_context"] = True
        built = Step(
            index=len(self.steps),
            coord=coord,
            agent=agent if source == "agent" else source,
            kind=kind,
            content=as_text(step.get("message")),
            tool_calls=calls,
            observation=observation,
            meta=meta,
            raw=_raw(step),
        )
        mine = dict_or_empty(dict_or_empty(step.get("extra")).get(EXTRA_KEY))
        if mine:
            _restore(built, mine, self.ctx, f"{where}.extra.{EXTRA_KEY}")
        return built, refs

    def _subagent(self, ref: JSONObject, parent: Path, coord: str, depth: int, seen: set[Path]) -> None:
        tpath = text_or_none(ref.get("trajectory_path"))
        found = referenced_file(parent, tpath) if tpath else None
        if found is None or depth >= MAX_DEPTH or found.resolve() in seen:
            if found is None:
                self.warnings.append(f"sub-agent trajectory {tpath!r} not found beside the file")
            return
        try:
            child = read_json_file(found)
        except TraceFormatError as exc:
            self.warnings.append(f"sub-agent trajectory {found.name}: {exc.what}")
            return
        if not is_trajectory(child):
            self.warnings.append(f"sub-agent trajectory {found.name} is not an ATIF trajectory")
            return
        sub = _Reader(LoadContext(path=found, root=self.ctx.root))
        sub.numbered = self.numbered
        try:
            sub.read(child, found, f"{coord}.", depth + 1, seen | {found.resolve()})
        except TraceFormatError as exc:
            self.warnings.append(exc.one_line())
            return
        for step in sub.steps:
            step.meta["subagent_file"] = found.name
            step.index = len(self.steps)
            self.steps.append(step)
        for a, model in sub.agents.items():
            self.agents.setdefault(a, model)
        self.warnings.extend(sub.warnings)
        self.copied += sub.copied


def _restore(step: Step, mine: JSONObject, ctx: LoadContext, where: str) -> None:
    """Put back what whenpro wrote in a step's ``extra.whenpro`` (:mod:`.atif_write`):
    agent, kind, coordinate, error, calls of non-agent steps, made-up call ids, wrapped
    arguments, media (an invalid media reference is left out)."""
    for name in ("agent", "kind"):
        if text_or_none(mine.get(name)):
            setattr(step, name, mine[name])
    if "coord" in mine:
        step.coord = text_or_none(mine.get("coord"))
    if isinstance(mine.get("error"), str):
        step.error = mine["error"]
    for j, call in enumerate(list_or_empty(mine.get("tool_calls"))):
        expect(call, dict, ctx, f"{where}.tool_calls[{j}]", "a tool call {tool_call_id, function_name}")
        step.tool_calls.append(
            ToolCall(
                id=text_or_none(call.get("tool_call_id")),
                name=text_or_none(call.get("function_name")) or "tool",
                arguments=call.get("arguments"),
            )
        )
    for j, ref in enumerate(list_or_empty(mine.get("media"))):
        expect(ref, dict, ctx, f"{where}.media[{j}]", "a media reference {kind, path or data}")
        with contextlib.suppress(ValidationError):  # an invalid one is left out: the step still opens
            step.media.append(MediaRef.model_validate(ref))
    for j in list_or_empty(mine.get("unnamed_calls")):
        if isinstance(j, int) and 0 <= j < len(step.tool_calls):
            step.tool_calls[j].id = None
    for j in list_or_empty(mine.get("wrapped_arguments")):
        if isinstance(j, int) and 0 <= j < len(step.tool_calls):
            args = step.tool_calls[j].arguments
            if isinstance(args, dict) and set(args) == {"input"}:
                step.tool_calls[j].arguments = args["input"]


def _trace_fields(doc: JSONObject) -> dict[str, Any]:
    """Trace fields whenpro wrote in the trajectory's ``extra.whenpro`` (invalid ones
    are left out: the trajectory still opens)."""
    mine = dict_or_empty(dict_or_empty(doc.get("extra")).get(EXTRA_KEY))
    agent_mine = dict_or_empty(dict_or_empty(dict_or_empty(doc.get("agent")).get("extra")).get(EXTRA_KEY))
    fields: dict[str, Any] = {}
    try:
        if isinstance(mine.get("task"), dict):
            fields["task"] = Task.model_validate(mine["task"])
        if mine.get("outcome") in {o.value for o in Outcome}:
            fields["outcome"] = Outcome(mine["outcome"])
        if "final_answer" in mine and isinstance(mine["final_answer"], (str, type(None))):
            fields["final_answer"] = mine["final_answer"]
        if isinstance(mine.get("ground_truth"), dict):
            fields["ground_truth"] = GroundTruth.model_validate(mine["ground_truth"])
        if isinstance(mine.get("annotations"), list):
            fields["annotations"] = [Annotation.model_validate(a) for a in mine["annotations"]]
        if isinstance(agent_mine.get("agents"), list):
            fields["agents"] = [Agent.model_validate(a) for a in agent_mine["agents"]]
    except ValidationError:
        return {}
    if text_or_none(agent_mine.get("framework")):
        fields["framework"] = agent_mine["framework"]
    for name in ("benchmark", "modality"):
        if text_or_none(mine.get(name)):
            fields[name] = mine[name]
    return fields


_FINISH_MARKUP = re.compile(r"<function=(?:finish|submit)>", re.IGNORECASE)
_FINISH_PARAMETER = re.compile(
    r"<parameter=(?:message|result|answer|conclusion)>(.*?)(?:</parameter>|</function>|$)", re.IGNORECASE | re.DOTALL
)


def without_finish_markup(text: str) -> str:
    """``text`` without a finish call written as text (``<function=finish>``
    ``<parameter=message>...</parameter></function>``): the parameter's value, else the
    text before the markup, else ``text`` unchanged."""
    markup = _FINISH_MARKUP.search(text)
    if markup is None:
        return text
    value = _FINISH_PARAMETER.search(text, markup.end())
    answer = (value.group(1) if value else text[: markup.start()]).strip()
    return answer or text


def _final(steps: list[Step], main: str) -> str | None:
    answer = _final_message(steps, main)
    return without_finish_markup(answer) if answer else answer


def _final_message(steps: list[Step], main: str) -> str | None:
    for step in reversed(steps):
        if step.agent != main:
            continue
        for call in step.tool_calls:
            args = call.arguments if isinstance(call.arguments, dict) else {}
            message = text_or_none(args.get("message"))
            if call.name == "finish" and message:
                return message
            if call.name in _FINISH and step.content:
                return step.content
    return next((s.content for s in reversed(steps) if s.agent == main and s.content), None)


def trajectory_trace(doc: JSONObject, ctx: LoadContext) -> Trace:
    """The trace of one ATIF trajectory (rules in the module doc)."""
    reader = _Reader(ctx)
    reader.read(doc, ctx.path, "", 0, {ctx.path.resolve()})
    agent_info = dict_or_empty(doc.get("agent"))
    main = text_or_none(agent_info.get("name")) or "agent"
    query = next((s.content for s in reader.steps if s.kind == "user" and s.content), "")
    extras: dict[str, Any] = redact_secrets({k: v for k, v in doc.items() if k != "steps"})
    if reader.copied:
        extras["copied_context_steps_left_out"] = reader.copied
    if reader.warnings:
        extras["whenpro_warnings"] = reader.warnings
    sid = text_or_none(doc.get("session_id")) or ctx.path.stem
    fields: dict[str, Any] = {
        "id": f"atif-{ctx.path.name.removesuffix('.json')}" if sid == "NORMALIZED_SESSION_ID" else f"atif-{sid}",
        "framework": "harbor",
        "agents": [Agent(id=a, role=m) for a, m in reader.agents.items()],
        "task": Task(query=query),
        "steps": reader.steps,
        "final_answer": _final(reader.steps, main),
        "outcome": Outcome.unknown,
        "extras": extras,
        "source": ctx.source("atif"),
    }
    written = _trace_fields(doc)  # a trajectory whenpro wrote: its own fields back
    if written:
        fields.update(written, id=sid)
        extras.pop("extra", None)
    return Trace(**fields)


class AtifImporter(DocumentImporter):
    """A Harbor ATIF ``trajectory.json``."""

    name = "atif"
    priority = 9

    def matches(self, doc: Any) -> bool:
        return is_trajectory(doc)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        return [trajectory_trace(doc, ctx)]


__all__ = ["AtifImporter", "is_trajectory", "referenced_file", "trajectory_trace", "without_finish_markup"]
