"""OpenHands event streams and evaluation output lines (SOURCE.md of
real_traces/openhands-trajectories).

* **Event list**: a JSON list of events ``{id, timestamp, source: user|agent|environment,
  message, ...}``. Actions add ``action`` (``message``, ``run``, ``edit``, ``read``,
  ``think``, ``finish``, ...), ``args`` and ``tool_call_metadata``; observations add
  ``observation``, ``content``, ``extras`` and ``cause`` (the id of the action they answer).
* **Evaluation output line** (JSON lines, one run a line; also read as one JSON object):
  Multi-SWE-bench ``{instance_id, instruction, instance, metadata, history, metrics, error,
  test_result: {git_patch}}``; resolver ``{issue, issue_type, instruction, base_commit,
  git_patch, history, success, comment_success, result_explanation, error}``, whose older
  ``history`` events carry neither ids nor ``source`` and flatten ``args`` into the event.
  Evaluation outputs of 2024 (OpenDevin/OpenHands 0.x, SWE-bench) keep ``history`` as
  ``[action, observation]`` pairs: read as the events of the pairs in order.

Steps: one per action, coordinate = the event ``id`` (ids are not contiguous: hidden
events are dropped) or the position for id-less events; the system prompt has none.
Observations join the action whose id is their ``cause`` (never by position), as
``observation``; an ``error`` observation sets ``Step.error``. Id-less observations join
the action just before them. Observations that answer nothing (``agent_state_changed``,
an ``error`` raised before any action) are steps of their own. ``"null"`` observations
(OpenHands' NullObservation, ``"No observation"``, a *string*) add nothing.

Final answer: the last ``finish`` action's thought or message; without one, a last
``message`` of the agent (no action of the agent after it: the run ended by answering).

Outcome: ``failure`` when ``error`` is set (``RuntimeError: Agent reached maximum
iteration ...`` is kept in ``extras["error"]`` and shown as the final ``error`` step's
message), resolver ``success`` true/false -> success/failure, else unknown. Secrets
(``metadata.llm_config.api_key``, masked as ``"**********"``) are replaced by
``"[redacted]"`` everywhere.
"""

from __future__ import annotations

from typing import Any

from whenpro_core.formats.base import (
    DocumentImporter,
    JsonLinesImporter,
    LoadContext,
    as_text,
    dict_or_empty,
    expect,
    final_answer_from_steps,
    maybe_json,
    redact_secrets,
    text_or_none,
)
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Agent, Outcome, Source, Step, Task, ToolCall, Trace

_KINDS = {
    "message": "assistant",
    "system": "system",
    "finish": "final_answer",
    "think": "plan",
    "change_agent_state": "state",
    "recall": "action",
}
_EVENT_KEYS = (
    "id",
    "timestamp",
    "source",
    "message",
    "action",
    "observation",
    "args",
    "cause",
    "content",
    "extras",
    "tool_call_metadata",
    "llm_metrics",
    "timeout",
)
_LINE_KEYS = ("history", "instruction")


def is_event(value: Any) -> bool:
    """An OpenHands event: an object with ``action`` or ``observation``."""
    return isinstance(value, dict) and ("action" in value or "observation" in value)


def is_event_list(value: Any) -> bool:
    """A non-empty list that starts with an event and holds at least one action (later
    entries that are not events are reported by JSON path when loading)."""
    return (
        isinstance(value, list)
        and bool(value)
        and is_event(value[0])
        and any(isinstance(e, dict) and "action" in e for e in value)
    )


def is_pair(value: Any) -> bool:
    """An ``[action, observation]`` pair of a 2024 ``history``: two events."""
    return isinstance(value, list) and len(value) == 2 and all(is_event(e) for e in value)


def history_events(history: list[Any]) -> tuple[list[Any], list[str]]:
    """``(events, their JSON paths under $.history)`` of a ``history``: its events, or the
    events of its ``[action, observation]`` pairs in order (2024 outputs)."""
    if not history or not all(is_pair(h) for h in history):
        return history, [f"$.history[{i}]" for i in range(len(history))]
    events = [e for pair in history for e in pair]
    paths = [f"$.history[{i}][{j}]" for i in range(len(history)) for j in (0, 1)]
    return events, paths


def is_output_line(value: Any) -> bool:
    """An evaluation output object: ``history`` events plus ``instance_id`` or ``issue``
    and ``instruction``. A ``history`` that is not a list still matches, so loading
    reports it at ``$.history``."""
    if not (
        isinstance(value, dict)
        and "history" in value
        and ("instance_id" in value or "issue" in value)
        and "instruction" in value
    ):
        return False
    history = value["history"]
    return not isinstance(history, list) or not history or is_event_list(history_events(history)[0])


def _args(event: JSONObject) -> JSONObject:
    args = maybe_json(event.get("args"))
    if isinstance(args, dict):
        return args
    flat = {k: v for k, v in event.items() if k not in _EVENT_KEYS}  # older events flatten args
    if "action" in event and "content" in event:
        flat["content"] = event["content"]
    return flat


def _usage(event: JSONObject) -> JSONObject | None:
    tcm = event.get("tool_call_metadata")
    if isinstance(tcm, dict) and isinstance(tcm.get("model_response"), dict):
        usage = tcm["model_response"].get("usage")
        if isinstance(usage, dict):
            return {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens") if k in usage}
    return None


def _raw(event: JSONObject) -> JSONObject:
    raw = dict(event)
    tcm = raw.get("tool_call_metadata")
    if isinstance(tcm, dict) and "model_response" in tcm:  # the whole LLM response: bulky
        raw["tool_call_metadata"] = {k: v for k, v in tcm.items() if k != "model_response"}
    return redact_secrets(raw)


def _event_id(event: JSONObject, ctx: LoadContext, where: str) -> str | None:
    eid = event.get("id")
    if eid is None:
        return None
    if isinstance(eid, bool) or not isinstance(eid, (int, str)):
        raise ctx.error("wrong type", f"{where}.id", "the event id (an integer)")
    return str(eid)


def _event_head(event: Any, ctx: LoadContext, where: str) -> tuple[str | None, str | None]:
    """``(event id, source)`` of an event; raises when it is not an object or they are malformed."""
    expect(event, dict, ctx, where, "an event object with action or observation")
    eid = _event_id(event, ctx, where)
    source = event.get("source")
    if source is not None and not isinstance(source, str):
        raise ctx.error("wrong type", f"{where}.source", "user, agent or environment")
    return eid, source


def _observation_type(event: dict[str, Any], ctx: LoadContext, where: str) -> str:
    """The ``observation`` type of a non-action event; raises when it has none or it is not a string."""
    if "observation" not in event:
        raise ctx.error("neither action nor observation", where, "an OpenHands event")
    obs = event.get("observation")
    if not isinstance(obs, str):
        raise ctx.error("wrong type", f"{where}.observation", "the observation type as a string")
    return obs


def _observation_target(
    event: dict[str, Any], eid: str | None, steps: list[Step], by_id: dict[str, Step]
) -> Step | None:
    """The action step an observation answers: its ``cause``; for an observation with
    neither cause nor id, the previous step if that has no observation yet and is not a
    state change; else None."""
    cause = event.get("cause")
    if cause is not None:
        return by_id.get(str(cause))
    if eid is None and steps and steps[-1].observation is None and steps[-1].kind != "state":
        return steps[-1]
    return None


def _attach_observation(target: Step, obs: str, text: str, extras: Any) -> None:
    """Append an observation's text to its action step, with its type, exit code and error."""
    target.observation = text if target.observation is None else f"{target.observation}\n{text}"
    target.meta["observation"] = obs
    if isinstance(extras, dict):  # {metadata: {exit_code}}, or {exit_code} in 2024 outputs
        code = dict_or_empty(extras.get("metadata")).get("exit_code", extras.get("exit_code"))
        if code is not None:
            target.meta["exit_code"] = code
    if obs == "error":
        target.error = text


def _observation_step(
    index: int, n: int, event: dict[str, Any], eid: str | None, source: str | None, obs: str, text: str, extras: Any
) -> Step:
    """A step of its own for an observation that answers no action: an ``error``, a
    ``state`` change or an ``observation`` (event ``n`` of the list)."""
    kind = "error" if obs == "error" else ("state" if obs == "agent_state_changed" else "observation")
    agent = source or ("environment" if kind != "error" else "agent")
    if kind == "state" and isinstance(extras, dict):
        text = text or f"agent state: {extras.get('agent_state')}"
    return Step(
        index=index,
        coord=eid if eid is not None else str(n),
        agent=agent,
        kind=kind,
        content=text,
        error=text if kind == "error" else None,
        meta={"event_id": eid, "observation": obs, "timestamp": event.get("timestamp")},
        raw=_raw(event),
    )


def _observation(
    event: dict[str, Any], n: int, eid: str | None, source: str | None, obs: str, target: Step | None, index: int
) -> Step | None:
    """The step of observation event ``n``, or None when it lands on its ``target`` action
    (a NullObservation only marks the target ``null_observation``)."""
    if obs == "null":  # NullObservation: "No observation"
        if target is not None:
            target.meta["null_observation"] = True
        return None
    text = as_text(event.get("content")) or as_text(event.get("message"))
    extras = maybe_json(event.get("extras"))
    if target is not None:
        _attach_observation(target, obs, text, extras)
        return None
    return _observation_step(index, n, event, eid, source, obs, text, extras)


def events_to_steps(events: list[Any], ctx: LoadContext, where: str, paths: list[str] | None = None) -> list[Step]:
    """Steps of an event list (rules in the module docstring). TraceFormatError names
    the event's JSON path (``paths[n]``, else ``where[n]``) when an event is not an
    object or has a malformed field."""
    steps: list[Step] = []
    by_id: dict[str, Step] = {}
    for n, event in enumerate(events):
        ew = paths[n] if paths else f"{where}[{n}]"
        eid, source = _event_head(event, ctx, ew)
        if "action" in event:
            steps.append(_action_step(len(steps), n, event, eid, source, ctx, ew))
            if eid is not None:
                by_id[eid] = steps[-1]
            continue
        obs = _observation_type(event, ctx, ew)
        target = _observation_target(event, eid, steps, by_id)
        step = _observation(event, n, eid, source, obs, target, len(steps))
        if step is not None:
            steps.append(step)
    return steps


def _action_step(
    index: int, n: int, event: JSONObject, eid: str | None, source: str | None, ctx: LoadContext, where: str
) -> Step:
    action = event.get("action")
    if not isinstance(action, str):
        raise ctx.error("wrong type", f"{where}.action", "the action type as a string")
    args = _args(event)
    agent = source or ("user" if action == "message" and index == 0 else "agent")
    kind = _KINDS.get(action, "action")
    if action == "message" and agent == "user":
        kind = "user"
    content = (
        text_or_none(args.get("thought"))
        or text_or_none(args.get("final_thought"))
        or text_or_none(args.get("content"))
        or as_text(event.get("message"))
    )
    calls: list[ToolCall] = []
    if kind in ("action", "final_answer") and action not in ("message",):
        tcm = dict_or_empty(event.get("tool_call_metadata"))
        call_args = {k: v for k, v in args.items() if k not in ("thought", "final_thought")}
        calls = (
            [
                ToolCall(
                    id=text_or_none(tcm.get("tool_call_id")),
                    name=text_or_none(tcm.get("function_name")) or action,
                    arguments=call_args,
                )
            ]
            if kind == "action"
            else []
        )
    meta: dict[str, Any] = {"event_id": eid, "action": action, "timestamp": event.get("timestamp")}
    usage = _usage(event)
    if usage:
        meta["usage"] = usage
    coord = None if kind == "system" else (eid if eid is not None else str(n))
    return Step(
        index=index, coord=coord, agent=agent, kind=kind, content=content, tool_calls=calls, meta=meta, raw=_raw(event)
    )


def _run_outcome(line: dict[str, Any]) -> Outcome:
    """Failure when the run has an ``error``; else its boolean ``success``; else unknown."""
    success = line.get("success")
    if text_or_none(line.get("error")):
        return Outcome.failure
    if isinstance(success, bool):
        return Outcome.success if success else Outcome.failure
    return Outcome.unknown


def _run_agents(steps: list[Step], line: dict[str, Any]) -> list[Agent]:
    """The agents of the non-system, non-state steps in order; ``agent`` carries the run's ``metadata.agent_class``."""
    agents: dict[str, None] = {}
    for s in steps:
        if s.kind not in ("system", "state"):
            agents.setdefault(s.agent, None)
    metadata = dict_or_empty(line.get("metadata"))
    return [Agent(id=a, role=metadata.get("agent_class") if a == "agent" else None) for a in agents]


def _run_patch(line: dict[str, Any]) -> Any:
    """The run's git patch: ``test_result.git_patch`` when there is a ``test_result`` object, else ``git_patch``."""
    if isinstance(line.get("test_result"), dict):
        return line.get("test_result", {}).get("git_patch")
    return line.get("git_patch")


def _final_answer(steps: list[Step]) -> str | None:
    """The last ``finish``'s text; else the agent's last message when no action of the
    agent follows it (module doc)."""
    final = final_answer_from_steps(steps)
    if final:
        return final
    last = next((s for s in reversed(steps) if s.agent == "agent" and s.kind not in ("state", "system")), None)
    return last.content if last is not None and last.kind == "assistant" and last.content else None


def _trace(
    events: list[Any],
    ctx: LoadContext,
    where: str,
    *,
    tid: str,
    line: JSONObject | None,
    paths: list[str] | None = None,
) -> Trace:
    steps = events_to_steps(events, ctx, where, paths)
    line = line or {}
    error = text_or_none(line.get("error"))
    outcome = _run_outcome(line)
    if error:  # the run's own error (iteration limit, crash): the last thing that happened
        steps.append(
            Step(
                index=len(steps), agent="environment", kind="error", content=error, error=error, meta={"from": "error"}
            )
        )
    query = as_text(line.get("instruction")) or next((s.content for s in steps if s.kind == "user"), "")
    final = _final_answer(steps)
    patch = _run_patch(line)
    extras = redact_secrets({k: v for k, v in line.items() if k not in ("history", "instruction")})
    if isinstance(patch, str) and patch:
        extras["git_patch"] = patch
    return Trace(
        id=tid,
        framework="openhands",
        benchmark="multi-swe-bench" if "instance" in line else "",
        agents=_run_agents(steps, line),
        task=Task(query=query),
        steps=steps,
        final_answer=final or text_or_none(patch),
        outcome=outcome,
        source=Source(format="openhands", path=str(ctx.path), key=ctx.key, root=str(ctx.root) if ctx.root else None),
        extras=extras,
    )


def output_line_trace(line: Any, ctx: LoadContext) -> Trace:
    """The trace of one evaluation output object (Multi-SWE-bench or resolver)."""
    expect(line, dict, ctx, "$", "an OpenHands output object {instruction, history, ...}")
    history = expect(line.get("history"), list, ctx, "$.history", "a list of events")
    issue = line.get("issue") if isinstance(line.get("issue"), dict) else None
    if line.get("instance_id") is not None:
        tid = f"openhands-{line['instance_id']}"
    elif issue is not None:
        tid = f"openhands-{issue.get('owner')}-{issue.get('repo')}-issue{issue.get('number')}"
    else:
        tid = f"openhands-{ctx.path.stem}" + (f"-{ctx.key}" if ctx.key else "")
    events, paths = history_events(history)
    return _trace(events, ctx, "$.history", tid=tid, line=line, paths=paths)


class OpenHandsImporter(DocumentImporter):
    """An OpenHands event list, or one evaluation output object stored as JSON."""

    name = "openhands"
    priority = 8

    def matches(self, doc: Any) -> bool:
        return is_event_list(doc) or is_output_line(doc)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        if isinstance(doc, list):
            return [_trace(doc, ctx, "$", tid=f"openhands-{ctx.path.stem}", line=None)]
        return [output_line_trace(doc, ctx)]


class OpenHandsJsonlImporter(JsonLinesImporter):
    """OpenHands ``output.jsonl``: one evaluation run a line (key = row number)."""

    name = "openhands"
    priority = 8

    def line_matches(self, obj: Any) -> bool:
        return is_output_line(obj)

    def keys_match(self, keys: list[str]) -> bool:
        has = set(keys)
        return bool(
            ("instance_id" in has and has & {"instruction", "test_result", "history", "metadata"})
            or {"issue", "issue_type"} <= has
        )

    def load_row(self, obj: Any, ctx: LoadContext) -> Trace:
        return output_line_trace(obj, ctx)
