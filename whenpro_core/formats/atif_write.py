"""Write any trace as a Harbor ATIF ``trajectory.json`` (``whenpro convert IN OUT --to atif``),
the reverse of :mod:`whenpro_core.formats.atif`.

``{schema_version: "ATIF-v1.6", session_id: <trace id>, agent: {name, version, model_name?,
extra}, steps, final_metrics?, extra}``. One ATIF step per whenpro step, ``step_id`` = index
+ 1:

* ``source``: ``user`` for user steps, ``agent`` for steps spoken by an agent (those carry
  ``model_name``, ``reasoning_content`` from ``meta["reasoning"]``, ``tool_calls`` and
  ``metrics`` from ``meta["usage"]``: prompt tokens with cache reads and writes,
  completion and cached tokens, cost; cache writes and reasoning tokens in
  ``metrics.extra``; summed in ``final_metrics``), ``system`` for system prompts and for what the
  environment said (tool results of their own, errors, compaction notes), since ATIF
  allows those fields on agent steps only;
* ``message``: the content; a step's observation is its ``observation.results`` (one
  result, linked to the step's only call by ``source_call_id``);
* tool-call ``arguments`` must be objects: any other value is wrapped as ``{"input": ...}``
  (and unwrapped when read back);
* tool calls without an id get ``call_<step>_<n>`` (ATIF needs one);
* ``extra.whenpro``: what ATIF has no field for, so a round trip keeps it: the speaking
  agent (ATIF names one agent per trajectory), kind, coordinate, error, which call ids and
  arguments were made up or wrapped.

ATIF holds no outcome, ground truth or task answer: they are in the trajectory's
``extra.whenpro`` for whenpro only. Sub-agents stay in the one file (by
``extra.whenpro.agent``), not as separate referenced trajectories.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from whenpro_core.formats.base import redact_secrets
from whenpro_core.storage import jsonio
from whenpro_core.storage.fsutil import atomic_write_bytes
from whenpro_core.trace.model import Step, Trace

SCHEMA_VERSION = "ATIF-v1.6"
#: Key of ATIF ``extra`` objects holding whenpro's own fields.
EXTRA_KEY = "whenpro"
#: Where each ATIF count is found in the usage dicts importers keep (Anthropic, OpenAI
#: Chat and Responses, Codex, LangChain ``usage_metadata``, DeepSeek, ATIF itself); a
#: dotted name reads a nested object.
_PROMPT = ("prompt_tokens", "input_tokens", "input")
_COMPLETION = ("completion_tokens", "output_tokens", "output")
_CACHED = (
    "cached_tokens",
    "cache_read_input_tokens",
    "cached_input_tokens",
    "cached",
    "prompt_cache_hit_tokens",
    "prompt_tokens_details.cached_tokens",
    "input_tokens_details.cached_tokens",
    "input_token_details.cache_read",
)
_CACHE_CREATION = ("cache_creation_input_tokens", "input_token_details.cache_creation", "extra.cache_creation_tokens")
_REASONING = (
    "reasoning_output_tokens",
    "reasoning_tokens",
    "completion_tokens_details.reasoning_tokens",
    "output_tokens_details.reasoning_tokens",
    "output_token_details.reasoning",
    "extra.reasoning_tokens",
)
#: Anthropic's ``input_tokens`` leave out the cache reads and writes (both counted
#: apart); ATIF's ``prompt_tokens`` include them.
_ANTHROPIC_CACHE = ("cache_read_input_tokens", "cache_creation_input_tokens")


def _source(step: Step, people: set[str]) -> str:
    if step.kind == "user" or step.agent == "user":
        return "user"
    if step.kind == "system" or step.agent in people:
        return "system"
    return "agent"


def _count(usage: dict[str, Any], names: tuple[str, ...]) -> int | float | None:
    """The first number among ``names`` (dotted: nested) in ``usage``, else ``None``."""
    for name in names:
        value: Any = usage
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
            return value
    return None


def _metrics(usage: Any) -> dict[str, Any] | None:
    """ATIF ``metrics`` of a step's ``meta["usage"]``: prompt tokens (cache reads and
    writes included), completion tokens, cached tokens (the cache reads), cost; cache
    writes and reasoning tokens in ``extra`` (ATIF has no field for them)."""
    if not isinstance(usage, dict):
        return None
    out: dict[str, Any] = {}
    prompt, cached = _count(usage, _PROMPT), _count(usage, _CACHED)
    creation = _count(usage, _CACHE_CREATION)
    if prompt is not None and any(k in usage for k in _ANTHROPIC_CACHE):
        prompt += (cached or 0) + (creation or 0)
    for field, value in (("prompt_tokens", prompt), ("completion_tokens", _count(usage, _COMPLETION))):
        if value is not None:
            out[field] = int(value)
    if cached is not None:
        out["cached_tokens"] = int(cached)
    cost = _count(usage, ("cost_usd", "cost"))
    if cost is not None:
        out["cost_usd"] = float(cost)
    extra = {
        name: int(value)
        for name, value in (("cache_creation_tokens", creation), ("reasoning_tokens", _count(usage, _REASONING)))
        if value is not None
    }
    if extra:
        out["extra"] = extra
    return out or None


def _arguments(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else ({} if value is None else {"input": value})


def _atif_calls(step: Step) -> list[dict[str, Any]]:
    """The step's tool calls as ATIF ``{tool_call_id, function_name, arguments}`` (ids
    made up as ``call_<step>_<j>`` where missing)."""
    return [
        {
            "tool_call_id": call.id or f"call_{step.index}_{j}",
            "function_name": call.name,
            "arguments": _arguments(call.arguments),
        }
        for j, call in enumerate(step.tool_calls)
    ]


def _agent_fields(step: Step, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The fields only an agent step has: ``model_name``, ``reasoning_content``,
    ``tool_calls`` and ``metrics``, each when present."""
    out: dict[str, Any] = {}
    if isinstance(step.meta.get("model"), str):
        out["model_name"] = step.meta["model"]
    if isinstance(step.meta.get("reasoning"), str) and step.meta["reasoning"]:
        out["reasoning_content"] = step.meta["reasoning"]
    if calls:
        out["tool_calls"] = calls
    metrics = _metrics(step.meta.get("usage"))
    if metrics:
        out["metrics"] = metrics
    return out


def _whenpro_extra(step: Step, source: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """What ATIF has no field for: agent, kind, coordinate, the calls whose arguments
    were wrapped or whose ids were made up, the error, the calls of a non-agent step, and
    the step's media (images, videos, frames)."""
    mine: dict[str, Any] = {"agent": step.agent, "kind": step.kind, "coord": step.coord}
    wrapped = [
        j
        for j, call in enumerate(step.tool_calls)
        if call.arguments is not None and not isinstance(call.arguments, dict)
    ]
    if wrapped:
        mine["wrapped_arguments"] = wrapped
    unnamed = [j for j, call in enumerate(step.tool_calls) if call.id is None]
    if unnamed:  # ids made up for ATIF, which needs one
        mine["unnamed_calls"] = unnamed
    if step.error is not None:
        mine["error"] = step.error
    if calls and source != "agent":  # ATIF allows calls on agent steps only: kept here
        mine["tool_calls"] = calls
    if step.media:  # images, videos and frames (paths relative to the trace's folder)
        mine["media"] = [m.model_dump(mode="json") for m in step.media]
    return mine


def atif_step(step: Step, people: set[str]) -> dict[str, Any]:
    """One whenpro step as an ATIF step (rules in the module doc)."""
    source = _source(step, people)
    out: dict[str, Any] = {"step_id": step.index + 1, "source": source, "message": step.content}
    timestamp = step.meta.get("timestamp")
    if isinstance(timestamp, str) and timestamp:
        out["timestamp"] = timestamp
    calls = _atif_calls(step)
    if source == "agent":
        out.update(_agent_fields(step, calls))
    if step.observation is not None:
        result: dict[str, Any] = {"content": step.observation}
        if len(calls) == 1 and source == "agent":
            result["source_call_id"] = calls[0]["tool_call_id"]
        out["observation"] = {"results": [result]}
    out["extra"] = {EXTRA_KEY: _whenpro_extra(step, source, calls)}
    return out


def _final_metrics(totals: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """ATIF ``final_metrics``: the steps' metrics summed (cost, cache writes and reasoning
    tokens only when some step records them)."""
    out: dict[str, Any] = {
        f"total_{name}": sum(m.get(name, 0) for m in totals)
        for name in ("prompt_tokens", "completion_tokens", "cached_tokens")
    }
    costs = [m["cost_usd"] for m in totals if "cost_usd" in m]
    if costs:
        out["total_cost_usd"] = sum(costs)
    out["total_steps"] = steps
    extra: dict[str, int] = {}
    for m in totals:
        for name, value in (m.get("extra") or {}).items():
            extra[f"total_{name}"] = extra.get(f"total_{name}", 0) + value
    if extra:
        out["extra"] = extra
    return out


def trace_to_atif(trace: Trace) -> dict[str, Any]:
    """The ATIF trajectory of ``trace`` (a JSON-ready dict)."""
    people = {"system", "environment", "user"}
    speakers = [a for a in trace.agent_ids() if a not in people]
    main = speakers[0] if speakers else "agent"
    models = [s.meta["model"] for s in trace.steps if isinstance(s.meta.get("model"), str)]
    agent: dict[str, Any] = {
        "name": main,
        "version": "unknown",
        "extra": {EXTRA_KEY: {"agents": [a.model_dump() for a in trace.agents], "framework": trace.framework}},
    }
    if models:
        agent["model_name"] = models[0]
    steps = [atif_step(s, people) for s in trace.steps]
    totals = [m for s in steps if (m := s.get("metrics"))]
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "session_id": trace.id, "agent": agent, "steps": steps}
    if totals:
        doc["final_metrics"] = _final_metrics(totals, len(steps))
    doc["extra"] = {
        EXTRA_KEY: redact_secrets(
            {
                "task": trace.task.model_dump(mode="json"),
                "final_answer": trace.final_answer,
                "outcome": trace.outcome.value,
                "benchmark": trace.benchmark,
                "modality": trace.modality.value,
                "ground_truth": trace.ground_truth.model_dump(mode="json") if trace.ground_truth else None,
                "source": trace.source.model_dump(mode="json"),
                "annotations": [a.model_dump(mode="json") for a in trace.annotations],
            }
        )
    }
    return doc


def dumps_atif(trace: Trace) -> bytes:
    """The ATIF JSON of ``trace`` (indented UTF-8)."""
    return jsonio.dumps(trace_to_atif(trace), indent=True)


def write_atif(trace: Trace, path: str | Path) -> Path:
    """Write ``trace`` to ``path`` as ATIF, atomically."""
    return atomic_write_bytes(path, dumps_atif(trace) + b"\n")


__all__ = ["EXTRA_KEY", "SCHEMA_VERSION", "atif_step", "dumps_atif", "trace_to_atif", "write_atif"]
