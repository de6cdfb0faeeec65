"""Writing traces in the Who&When Pro release shapes (docs/architecture.md, 'Formats and step coordinates'): the
per-file document
and the JSONL row, so that :mod:`.whowhen_pro` and :mod:`.whowhen_pro_jsonl` read them
back with the same steps, coordinates and ground truth.

The release's own frameworks each have an entry shape of their own; a trace of another
framework (whenpro's built-in environments, a user's framework replayed through
``cmd:``) is written in the shape the importer's *generic* rule reads
(:func:`whenpro_core.trace.coords.layout`, unknown frameworks):

* framing steps (kind ``user``/``system``, or no coordinate) -> ``{kind, content}``;
* every other step -> ``{kind, agent, step_number, content, tool_calls, observation,
  error, images}``, with ``step_number`` the integer coordinate; when coordinates are
  ``R.P`` instead, ``round`` and ``position`` replace ``step_number``;
* ``Step.hidden`` fields that the importer moves back to ``hidden``
  (:data:`~whenpro_core.formats.whowhen_pro_steps.HIDDEN_FIELDS`: ``is_injected``,
  ``is_replayed``, ...) are written on the entry, as the release does;
* ``ground_truth`` is ``{agent, step, step_coord, mode, reason}`` (``step_coord``
  always wins on read);
* ``Trace.extras`` become top-level fields (the importer keeps them in ``extras``).

Not every trace fits (a coordinate like ``"a3"``, a plan step with tool calls, a tool
argument that is a string holding JSON): :func:`check_round_trip` reads the document
back in memory and lists what would differ; a writer should not write a document with
differences (``whenpro build`` drops it with reason ``not_representable``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from whenpro_core.errors import WhenproError
from whenpro_core.formats.base import LoadContext
from whenpro_core.formats.whowhen_pro import build_trace, prepare
from whenpro_core.formats.whowhen_pro_steps import HIDDEN_FIELDS
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import MediaRef, Step, Trace

_INT = re.compile(r"^\d+$")
_RP = re.compile(r"^(\d+)\.(\d+)$")
#: Step kinds written as framing entries (no coordinate, no agent).
FRAMING = ("user", "system")


def _media(ref: MediaRef) -> dict[str, Any]:
    if ref.data is not None:
        out: dict[str, Any] = {"__type__": "PIL.Image", "data": ref.data}
        if ref.mime:
            out["mime"] = ref.mime
    else:
        out = {"path": ref.path}
    if ref.kind == "frame":
        out.update({k: v for k, v in (("index", ref.index), ("time_s", ref.time_s)) if v is not None})
    if ref.label and ref.kind != "frame":
        out["source"] = ref.label
    return out


def _coord_fields(coord: str | None) -> dict[str, Any] | None:
    if coord is None:
        return None
    if _INT.match(coord):
        return {"step_number": int(coord)}
    m = _RP.match(coord)
    if m:
        return {"round": int(m.group(1)), "position": int(m.group(2))}
    return None


def step_entry(step: Step) -> dict[str, Any]:
    """One trajectory entry for ``step`` (module docstring)."""
    if step.kind in FRAMING or step.coord is None:
        entry: dict[str, Any] = {"kind": step.kind if step.kind in FRAMING else "user", "content": step.content}
        if step.media:
            entry["images"] = [_media(m) for m in step.media]
        return entry
    entry = {"kind": step.kind, "agent": step.agent, **(_coord_fields(step.coord) or {}), "content": step.content}
    if step.tool_calls:
        entry["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls]
    if step.observation is not None:
        entry["observation"] = step.observation
    if step.error is not None:
        entry["error"] = step.error
    images = [_media(m) for m in step.media if m.kind != "frame"]
    frames = [_media(m) for m in step.media if m.kind == "frame"]
    if images:
        entry["observation_images" if step.kind == "action" else "images"] = images
    if frames:
        entry["frames"] = frames
    for key, value in step.hidden.items():
        if key in HIDDEN_FIELDS:
            entry[key] = value
    return entry


def representable_coords(trace: Trace) -> bool:
    """True when every agent step's coordinate is an integer, or every one is ``R.P``
    (the two addressing schemes the generic rule reads)."""
    coords = [s.coord for s in trace.steps if s.kind not in FRAMING and s.coord is not None]
    return all(_INT.match(c) for c in coords) or all(_RP.match(c) for c in coords)


def to_document(trace: Trace, *, eval_status: str | None = None) -> dict[str, Any]:
    """The Who&When Pro per-file document of ``trace`` (see the module docstring).

    ``eval_status`` (``pass``/``fail``) is written when given, else derived from the
    outcome. The ground truth is written when the trace has one with a step."""
    task: dict[str, Any] = {"query": trace.task.query, "answer": trace.task.answer}
    if trace.task.options is not None:
        task["options"] = trace.task.options
    if trace.task.images:
        task["images"] = [_media(m) for m in trace.task.images]
    doc: dict[str, Any] = {
        "id": trace.id,
        "framework": trace.framework,
        "benchmark": trace.benchmark,
        "modality": trace.modality.value,
        "agents": [{"id": a.id, "role": a.role} for a in trace.agents],
        "task": task,
        "ground_truth": ground_truth_dict(trace),
        "trajectory": [step_entry(s) for s in trace.steps],
        "final_answer": trace.final_answer,
        "eval_status": eval_status or {"success": "pass", "failure": "fail"}.get(trace.outcome.value, "unknown"),
    }
    for key, value in trace.extras.items():
        if key not in doc and key != "whenpro_warnings":
            doc[key] = value
    return doc


def ground_truth_dict(trace: Trace) -> dict[str, Any] | None:
    """``{agent, step, step_coord, mode, reason}`` of the trace's ground truth (``step``
    as an integer when the coordinate is one), or None."""
    gt = trace.ground_truth
    if gt is None or gt.step is None:
        return None
    step: Any = int(gt.step) if _INT.match(gt.step) else gt.step
    out: dict[str, Any] = {"agent": gt.agent, "step": step, "step_coord": gt.step, "mode": gt.mode, "reason": gt.reason}
    if gt.agents:
        out["agents"] = list(gt.agents)
    return out


def _json(value: Any) -> str:
    return jsonio.dumps(value).decode("utf-8")


#: Fields of a document that a JSONL row keeps as its own columns (the rest go to extras).
_ROW_COLUMNS = ("id", "framework", "benchmark", "task", "trajectory", "ground_truth", "modality")


def to_jsonl_row(doc: dict[str, Any]) -> bytes:
    """One line of the JSONL release (without the newline): ``id, framework, benchmark``
    first as plain strings, then ``task, trajectory, ground_truth, extras`` as JSON
    strings (twice-encoded); ``extras`` holds every other field of ``doc`` except
    ``modality`` (the file name gives it)."""
    extras = {k: v for k, v in doc.items() if k not in _ROW_COLUMNS}
    row = {
        "id": str(doc["id"]),
        "framework": str(doc["framework"]),
        "benchmark": str(doc.get("benchmark") or ""),
        "task": _json(doc.get("task") or {}),
        "trajectory": _json(doc["trajectory"]),
        "ground_truth": _json(doc.get("ground_truth")),
        "extras": _json(extras),
    }
    return jsonio.dumps(row)


def _public(step: Step) -> dict[str, Any]:
    return step.model_dump(
        mode="json", include={"coord", "agent", "kind", "content", "tool_calls", "observation", "error", "hidden"}
    )


def check_round_trip(trace: Trace, doc: dict[str, Any]) -> list[str]:
    """Read ``doc`` back in memory with the Who&When Pro importer and list how it differs
    from ``trace`` (agent steps: coordinate, agent, kind, content, tool calls,
    observation, error, hidden markers; ground truth: agent, step, mode). Empty when the
    document is faithful. Never raises."""
    if not representable_coords(trace):
        return ["step coordinates are neither all integers nor all R.P"]
    try:
        ctx = LoadContext(path=Path(f"{trace.id}.json"))
        back = build_trace(prepare(jsonio.loads(jsonio.dumps(doc)), ctx), ctx)
    except WhenproError as exc:
        return [f"does not read back: {exc.one_line()}"]
    diffs = []
    mine = [s for s in trace.steps if s.kind not in FRAMING and s.coord is not None]
    theirs = [s for s in back.steps if s.coord is not None]
    if len(mine) != len(theirs):
        diffs.append(f"{len(mine)} numbered steps written, {len(theirs)} read back")
    for a, b in zip(mine, theirs, strict=False):
        pa, pb = _public(a), _public(b)
        for key in pa:
            if pa[key] != pb[key]:
                diffs.append(f"step {a.coord}: {key} differs")
    gt, bgt = trace.ground_truth, back.ground_truth
    if (gt is None) != (bgt is None) or (
        gt and bgt and (gt.agent, gt.step, gt.mode) != (bgt.agent, bgt.step, bgt.mode)
    ):
        diffs.append("ground truth differs")
    return diffs


__all__ = ["check_round_trip", "ground_truth_dict", "representable_coords", "step_entry", "to_document", "to_jsonl_row"]
