"""Who&When Pro ground truth -> :class:`~whenpro_core.trace.model.GroundTruth` on a
:class:`~whenpro_core.trace.coords.Layout` (docs/architecture.md, 'Formats and step coordinates'; reference scorer
``just1nlee/whowhen_pro`` ``whowhen_eval/score.py``).

Which field of ``ground_truth`` names the labelled step depends on the framework (see
:func:`resolve_ground_truth`); ``step_coord``, when present, always wins, and
``accepted_predictions`` [{agent_name, step_coord, mode}] become ``GroundTruth.accepted``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from whenpro_core.errors import TraceFormatError
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.coords import Layout, Slot, int_field, normalize_coord, round_of
from whenpro_core.trace.frameworks import (
    FIXED_AGENT_LABELS,
    ROUND_ONLY_FRAMEWORKS,
    SINGLE_AGENT_FRAMEWORKS,
    canonical_framework,
)
from whenpro_core.trace.model import Accepted, GroundTruth


def _gt_fields(fw: str, gt: JSONObject) -> tuple[Any, str, str] | None:
    """(value, json path, how) of the field that names the labelled step, or None.
    ``how``: ``coord`` (already a coordinate), ``native`` (a trajectory index),
    ``round`` (round only), ``rp`` (round/position), ``twice`` (mathchat), ``stage``."""
    if gt.get("step_coord") not in (None, ""):
        return gt["step_coord"], "$.ground_truth.step_coord", "coord"
    if fw in ROUND_ONLY_FRAMEWORKS and gt.get("round") is not None:
        return gt["round"], "$.ground_truth.round", "round"
    if fw == "mathchat" and gt.get("round") is not None and gt.get("position") is not None:
        return (gt["round"], gt["position"]), "$.ground_truth.round", "twice"
    if fw == "metagpt" and gt.get("stage") is not None:
        return gt["stage"], "$.ground_truth.stage", "stage"
    if gt.get("step") not in (None, ""):
        return gt["step"], "$.ground_truth.step", "native" if fw in ("dvd", "eva") else "coord"
    if gt.get("round") is not None:
        if gt.get("position") is None:
            return gt["round"], "$.ground_truth.round", "round"
        return (gt["round"], gt["position"]), "$.ground_truth.round", "rp"
    return None


def _coord_value(value: Any, path: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        found = f"got {type(value).__name__}"
        raise TraceFormatError(
            f"wrong type ({found})", json_path=path, expected='a step coordinate (integer or "R.P" string)'
        )
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return normalize_coord(value)


def gt_coord(framework: str, gt: Any) -> tuple[str | None, bool]:
    """The labelled step's coordinate and ``round_only`` from a ground-truth dict alone.

    Uses the reference scorer's formulas (dvd ``step - 2``, eva ``(step - 2) // 2``,
    mathchat ``2*round + position``, metagpt ``stage``, debate/dylan ``round``), so it
    needs no trajectory; :func:`resolve_ground_truth` maps through the actual entries.
    ``(None, False)`` when the dict names no step. Raises TraceFormatError on wrong
    types.
    """
    fw = canonical_framework(framework)
    if not isinstance(gt, dict):
        return None, False
    found = _gt_fields(fw, gt)
    if found is None:
        return None, False
    value, path, how = found
    round_only = fw in ROUND_ONLY_FRAMEWORKS
    if how == "coord":
        coord = _coord_value(value, path)
        return (round_of(coord) if round_only else coord), round_only
    if how == "round":
        return str(int_field(value, path)), True
    if how == "stage":
        return str(int_field(value, path)), False
    if how == "native":
        n = int_field(value, path)
        return str(n - 2 if fw == "dvd" else (n - 2) // 2), False
    r, p = int_field(value[0], path), int_field(value[1], "$.ground_truth.position")
    return (str(2 * r + p) if how == "twice" else f"{r}.{p}"), False


def describe_coords(coords: list[str]) -> str:
    """Valid coordinates for an error message: ``"0..6"`` for a run of integers, else
    the first twelve, comma-separated."""
    uniq = list(dict.fromkeys(coords))
    if not uniq:
        return "none: the trajectory has no numbered steps"
    if all(c.isdigit() for c in uniq):
        nums = sorted(int(c) for c in uniq)
        if nums == list(range(nums[0], nums[-1] + 1)):
            return f"{nums[0]}..{nums[-1]}"
    shown = ", ".join(uniq[:12]) + (", ..." if len(uniq) > 12 else "")
    return shown


def _out_of_range(path: str, value: Any, valid: str) -> TraceFormatError:
    return TraceFormatError(f"step index out of range ({value!r})", json_path=path, expected=f"a step in {valid}")


def _agent_list(value: Any, lay: Layout) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    out = [lay.resolve_agent(v) for v in value if isinstance(v, (str, int))]
    return [a for a in out if a]


def _accepted(gt: JSONObject, lay: Layout) -> Accepted:
    items = gt.get("accepted_predictions") or []
    if not isinstance(items, list):
        raise TraceFormatError(
            f"wrong type (got {type(items).__name__})",
            json_path="$.ground_truth.accepted_predictions",
            expected="a list of {agent_name, step_coord, mode}",
        )
    acc = Accepted()
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            raise TraceFormatError(
                f"wrong type (got {type(item).__name__})",
                json_path=f"$.ground_truth.accepted_predictions[{k}]",
                expected="an object {agent_name, step_coord, mode}",
            )
        agent = lay.resolve_agent(item.get("agent_name", item.get("agent")))
        step = item.get("step_coord", item.get("step"))
        mode = item.get("mode", item.get("error_mode"))
        if agent and agent not in acc.agent:
            acc.agent.append(agent)
        if step not in (None, ""):
            coord = normalize_coord(step)
            if coord not in acc.step:
                acc.step.append(coord)
        if isinstance(mode, str) and mode.strip() and mode.strip().upper() not in acc.mode:
            acc.mode.append(mode.strip().upper())
    return acc


def _native_step(lay: Layout, value: Any, path: str) -> tuple[int, str]:
    """``(slot index, coordinate)`` of the first numbered slot of trajectory entry ``value``
    (dvd, eva). Raises "step index out of range" naming the valid entries."""
    slots = lay.slots
    n = int_field(value, path)
    idx = lay.first_slot_of_entry(n) if n >= 0 else None
    coord = slots[idx].coord if idx is not None else None
    if idx is None or coord is None:
        body = [s.entry for s in slots if s.coord is not None]
        valid = f"trajectory indices {describe_coords([str(e) for e in dict.fromkeys(body)])} (non-framing entries)"
        raise _out_of_range(path, value, valid)
    return idx, coord


def _matching_slots(slots: list[Slot], coord: str, round_only: bool) -> list[int]:
    """Indices of the numbered slots at ``coord`` (in its round, when ``round_only``)."""
    return [
        i
        for i, s in enumerate(slots)
        if s.coord is not None and (round_of(s.coord) == coord if round_only else s.coord == coord)
    ]


def _valid_coords(slots: list[Slot], round_only: bool) -> str:
    """The numbered slots' coordinates (``"rounds ..."`` when ``round_only``) for an error message."""
    numbered = [s.coord for s in slots if s.coord is not None]
    valid = describe_coords([round_of(c) for c in numbered] if round_only else numbered)
    return ("rounds " if round_only else "") + valid


def _coord_step(lay: Layout, gt: dict[str, Any], value: Any, path: str) -> tuple[int, str]:
    """``(slot index, coordinate)`` of the labelled coordinate (a round for round-only
    frameworks): the first matching slot of the labelled agent, else the first matching
    slot. Raises "step index out of range" naming the valid coordinates or rounds."""
    slots = lay.slots
    round_only = lay.framework in ROUND_ONLY_FRAMEWORKS
    coord, _ = gt_coord(lay.framework, gt)
    assert coord is not None
    want_agent = lay.resolve_agent(gt.get("agent")) if isinstance(gt.get("agent"), str) else None
    matches = _matching_slots(slots, coord, round_only)
    if not matches:
        raise _out_of_range(path, value, _valid_coords(slots, round_only))
    preferred = [i for i in matches if want_agent and slots[i].agent == want_agent]
    return (preferred or matches)[0], coord


def _labelled_step(lay: Layout, gt: dict[str, Any]) -> tuple[str | None, int | None]:
    """``(coordinate, slot index)`` of the labelled step, ``(None, None)`` when the ground
    truth names no step. Raises TraceFormatError when it names one the trajectory lacks."""
    found = _gt_fields(lay.framework, gt)
    if found is None:
        return None, None
    value, path, how = found
    if not lay.slots:
        raise TraceFormatError(
            f"step {value!r} is out of range: the trajectory is empty",
            json_path=path,
            expected="trajectory entries for the labelled step",
        )
    index, coord = _native_step(lay, value, path) if how == "native" else _coord_step(lay, gt, value, path)
    return coord, index


def _labelled_agents(gt: dict[str, Any], lay: Layout) -> tuple[Any, list[str]]:
    """``(raw agent, acceptable agents)``: a list in ``agent`` moves to the front of
    ``agents`` and leaves no single raw agent. Raises TraceFormatError for an ``agent``
    that is neither a list, an id nor null."""
    raw_agent = gt.get("agent")
    agents = _agent_list(gt.get("agents"), lay)
    if isinstance(raw_agent, list):
        return None, _agent_list(raw_agent, lay) + [a for a in agents if a not in raw_agent]
    if raw_agent is not None and not isinstance(raw_agent, (str, int)):
        raise TraceFormatError(
            f"wrong type (got {type(raw_agent).__name__})",
            json_path="$.ground_truth.agent",
            expected="an agent id or null",
        )
    return raw_agent, agents


def _labelled_mode(gt: dict[str, Any]) -> str | None:
    """The stripped ``mode`` (None when absent or empty). Raises TraceFormatError for a non-string."""
    mode = gt.get("mode")
    if mode is not None and not isinstance(mode, str):
        raise TraceFormatError(
            f"wrong type (got {type(mode).__name__})",
            json_path="$.ground_truth.mode",
            expected='a failure-mode code such as "R.3"',
        )
    return mode.strip() if mode else None


def resolve_ground_truth(gt: Any, lay: Layout, agent_of: Callable[[int], str] | None = None) -> GroundTruth | None:
    """Map a native Who&When Pro ``ground_truth`` dict onto a :class:`Layout`.

    Which field names the step (``ground_truth.step_coord`` always wins):
    smolagents, alfagent and the GUI frameworks: ``step`` is the coordinate;
    magentic-one: ``step`` is the ``"R.P"`` string; macnet, pixelcraft: ``round`` and
    ``position``; debate, dylan: ``round`` (round only; ``agents`` lists acceptable
    agents); mathchat: ``2*round + position``; metagpt: ``stage``; dvd, eva: ``step`` is
    the native trajectory index of the labelled entry. Unknown frameworks: ``step``,
    else ``round``/``position``.

    ``agent_of(slot_index)`` gives the final agent id of a slot (defaults to the slot's
    agent); single-agent frameworks whose label has ``agent: null`` take the labelled
    step's agent. ``accepted_predictions`` become :class:`~whenpro_core.trace.model.Accepted`.

    Returns None for a missing/null ground truth. Raises TraceFormatError for a non-dict,
    wrong field types, or "step index out of range" when the step maps to no step
    (naming the field and the valid range).
    """
    if gt is None:
        return None
    if not isinstance(gt, dict):
        raise TraceFormatError(
            f"wrong type (got {type(gt).__name__})",
            json_path="$.ground_truth",
            expected="an object {agent, step, mode} or null",
        )
    fw = lay.framework
    round_only = fw in ROUND_ONLY_FRAMEWORKS
    coord, index = _labelled_step(lay, gt)
    raw_agent, agents = _labelled_agents(gt, lay)
    agent = lay.resolve_agent(raw_agent)
    agent_from_step = fw in SINGLE_AGENT_FRAMEWORKS or fw in FIXED_AGENT_LABELS
    if agent is None and index is not None and not round_only and agent_from_step:
        agent = agent_of(index) if agent_of else lay.slots[index].agent
    mode = _labelled_mode(gt)
    reason = next((gt[k] for k in ("reason", "explanation", "rationale") if isinstance(gt.get(k), str)), None)
    return GroundTruth(
        agent=agent,
        agents=agents,
        step=coord,
        step_index=index,
        mode=mode,
        reason=reason,
        accepted=_accepted(gt, lay),
        round_only=round_only,
        native=gt,
    )
