"""Who&When Pro, per-file release: one trace per JSON document (docs/architecture.md, 'Formats and step coordinates').

Top level: ``id, framework, benchmark, modality, agents, task, ground_truth,
trajectory``; optional ``topology, final_answer, termination, eval_status,
video_context`` and anything else, which is kept in ``Trace.extras`` so a native export
loses nothing. The trajectory's entry shape depends on the framework; coordinates and
agents follow :mod:`whenpro_core.trace.coords`, steps :mod:`.whowhen_pro_steps`.

Outcome: a trace with a ground truth is a failure (the release injects one error into
a replayed run); without one, ``eval_status`` decides (``pass``/``success`` ->
success, ``fail``/``error`` -> failure), else unknown. Media paths are relative to the
dataset root (the folder holding ``assets/``, found by the registry).

The JSONL release (:mod:`.whowhen_pro_jsonl`) decodes a row into the same document
and calls :func:`build_trace`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import DocumentImporter, LoadContext, as_text, summary_text
from whenpro_core.formats.whowhen_pro_steps import build_step, final_answer_of, media_list, unread_media
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace import coords
from whenpro_core.trace.frameworks import canonical_framework
from whenpro_core.trace.gt_map import resolve_ground_truth
from whenpro_core.trace.model import (
    NATIVE_FORMAT,
    Agent,
    GroundTruth,
    MediaRef,
    Modality,
    Outcome,
    Source,
    Task,
    Trace,
    TraceSummary,
)

FORMAT = "whowhen-pro"

#: Top-level fields read into the model; every other field goes to ``Trace.extras``.
MODEL_FIELDS = (
    "id",
    "framework",
    "benchmark",
    "modality",
    "agents",
    "task",
    "ground_truth",
    "trajectory",
    "final_answer",
)
_TASK_FIELDS = ("query", "answer", "options", "images")
_PASS = ("pass", "success", "succeeded", "correct", "ok", "solved")
_FAIL = ("fail", "error", "wrong", "incorrect", "timeout", "exception")


@dataclass
class Prepared:
    """A document checked and laid out, before steps are built (what a listing needs)."""

    doc: JSONObject
    trace_id: str
    framework: str
    benchmark: str
    modality: Modality
    layout: coords.Layout
    ground_truth: GroundTruth | None
    split: str = ""


#: The release's splits (``data/<split>.jsonl``; a per-file document's ``modality``):
#: ``image_gui`` holds GUI-agent screenshots; whenpro reads it as modality ``image`` and
#: keeps the split name (``Trace.extras["split"]``) for the official leaderboard's cells.
SPLITS = ("text", "image", "image_gui", "video")


def _split_from(value: Any, hint: str | None, ctx: LoadContext) -> str:
    """The document's split name: its ``modality`` (one of :data:`SPLITS`), else the hint
    (a JSONL file's stem), else the modality found in the path."""
    if value is not None:
        if isinstance(value, str) and value.strip().lower() in SPLITS:
            return value.strip().lower()
        raise ctx.error(f"unknown modality {str(value)[:40]!r}", "$.modality", expected="one of " + ", ".join(SPLITS))
    if hint and hint.lower() in SPLITS:
        return hint.lower()
    return _modality_of_path(hint, ctx).value


def _modality_of_path(hint: str | None, ctx: LoadContext) -> Modality:
    if hint:
        return modality_of_name(hint)
    for part in reversed(ctx.path.parts[:-1]):
        if part.lower() in Modality._value2member_map_:
            return Modality(part.lower())
    return Modality.text


def modality_of_name(name: str) -> Modality:
    """``text``/``image``/``video`` from a split or folder name (``image_gui`` -> image);
    text when none fits."""
    low = name.lower()
    for m in Modality:
        if low == m.value or low.startswith(m.value + "_") or low.startswith(m.value + "-"):
            return m
    return Modality.text


def _required_str(doc: JSONObject, key: str, ctx: LoadContext) -> str:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        found = "missing" if key not in doc else f"got {type(value).__name__}"
        raise ctx.error(f"missing or wrong {key} ({found})", f"$.{key}", expected="a non-empty string")
    return str(value)


def prepare(doc: Any, ctx: LoadContext, *, modality_hint: str | None = None) -> Prepared:
    """Check a Who&When Pro document's top level, lay out its trajectory and resolve its
    ground truth (no Step models are built). Raises TraceFormatError naming the JSON
    path of the first problem."""
    if not isinstance(doc, dict):
        raise ctx.error(f"wrong type (got {type(doc).__name__})", "$", expected="a JSON object")
    trace_id = _required_str(doc, "id", ctx)
    framework_raw = _required_str(doc, "framework", ctx)
    bench = doc.get("benchmark")
    if bench is not None and not isinstance(bench, str):
        raise ctx.error(f"wrong type (got {type(bench).__name__})", "$.benchmark", expected="a string")
    if "trajectory" not in doc:
        raise ctx.error("missing field trajectory", "$.trajectory", expected="a list of trajectory entries")
    for key, want in (("task", "an object {query, answer, options?, images?}"), ("agents", "a list of {id, role}")):
        value = doc.get(key)
        if value is not None and not isinstance(value, dict if key == "task" else list):
            raise ctx.error(f"wrong type (got {type(value).__name__})", f"$.{key}", expected=want)
    split = _split_from(doc.get("modality"), modality_hint, ctx)
    modality = modality_of_name(split)
    try:
        lay = coords.layout(framework_raw, doc["trajectory"], doc.get("agents"))
        gt = resolve_ground_truth(doc.get("ground_truth"), lay)
    except TraceFormatError as exc:
        raise exc.located(path=ctx.path) from None
    return Prepared(doc, trace_id, lay.framework, bench or "", modality, lay, gt, split)


def summary_of(prep: Prepared, ctx: LoadContext, fmt: str = FORMAT) -> TraceSummary:
    """The listing row of a prepared document."""
    gt = prep.ground_truth
    task = prep.doc.get("task") or {}
    gold = task.get("answer")
    return TraceSummary(
        id=prep.trace_id,
        path=str(ctx.path),
        key=ctx.key,
        format=fmt,
        framework=prep.framework,
        benchmark=prep.benchmark,
        modality=prep.modality.value,
        step_count=len(prep.layout.slots),
        gt_mode=gt.mode if gt else None,
        gt_step=gt.step if gt else None,
        outcome=_outcome(prep.doc, gt).value,
        task=summary_text(as_text(task.get("query")) or None),
        final_answer=summary_text(final_answer_of(prep.doc, prep.doc["trajectory"], prep.framework)),
        gold=summary_text(None if gold is None else as_text(gold)),
        agent_count=len({s.agent for s in prep.layout.slots if s.coord is not None}),
    )


def _agents(prep: Prepared) -> list[Agent]:
    out: dict[str, Agent] = {}
    for a in prep.doc.get("agents") or []:
        if isinstance(a, dict) and isinstance(a.get("id"), (str, int)):
            role = a.get("role")
            out.setdefault(str(a["id"]), Agent(id=str(a["id"]), role=role if isinstance(role, str) else None))
    entries = prep.doc["trajectory"]
    for slot in prep.layout.slots:
        if slot.coord is None or slot.agent in out:
            continue
        src = entries[slot.entry]
        role = src.get("role") if prep.framework == "magentic-one" else None
        out[slot.agent] = Agent(id=slot.agent, role=role if isinstance(role, str) else None)
    return list(out.values())


def _task(prep: Prepared, media_prefix: str | None, extras: JSONObject) -> Task:
    task = prep.doc.get("task") or {}
    images = media_list(task.get("images"), label="query", prefix=media_prefix)
    query = as_text(task.get("query"))
    if not query:
        first_user = next((e for e in prep.doc["trajectory"] if e.get("kind") == "user"), None)
        query = as_text(first_user.get("content")) if first_user else ""
    rest = {k: v for k, v in task.items() if k not in _TASK_FIELDS}
    if rest:
        extras["task_extra"] = rest
    answer = task.get("answer")
    return Task(
        query=query, answer=None if answer is None else as_text(answer), options=task.get("options"), images=images
    )


def _outcome(doc: JSONObject, gt: GroundTruth | None) -> Outcome:
    if gt is not None:
        return Outcome.failure
    status = str(doc.get("eval_status") or "").strip().lower()
    if status.startswith(_PASS):
        return Outcome.success
    if status.startswith(_FAIL):
        return Outcome.failure
    return Outcome.unknown


def build_trace(prep: Prepared, ctx: LoadContext, *, fmt: str = FORMAT, media_prefix: str | None = None) -> Trace:
    """Build the :class:`Trace` of a prepared document. ``media_prefix`` is prepended to
    relative media paths (``video_assets/<framework>/`` for JSONL video rows)."""
    doc, lay = prep.doc, prep.layout
    entries = doc["trajectory"]
    extras = {k: v for k, v in doc.items() if k not in MODEL_FIELDS}
    if canonical_framework(doc["framework"]) != doc["framework"]:
        extras["framework_native"] = doc["framework"]
    steps = [
        build_step(i, slot, entries[slot.entry], lay.framework, agent=slot.agent, media_prefix=media_prefix)
        for i, slot in enumerate(lay.slots)
    ]
    task = _task(prep, media_prefix, extras)
    task.images += _video_refs(doc, ctx, media_prefix)
    warnings = list(lay.warnings) + _unread_media_notes(doc)
    if warnings:
        extras["whenpro_warnings"] = warnings
    if prep.split and prep.split != prep.modality.value:
        extras["split"] = prep.split
    return Trace(
        format=NATIVE_FORMAT,
        id=prep.trace_id,
        framework=lay.framework,
        benchmark=prep.benchmark,
        modality=prep.modality,
        agents=_agents(prep),
        task=task,
        steps=steps,
        ground_truth=prep.ground_truth,
        final_answer=final_answer_of(doc, entries, lay.framework),
        outcome=_outcome(doc, prep.ground_truth),
        source=Source(format=fmt, path=str(ctx.path), key=ctx.key, root=str(ctx.root) if ctx.root else None),
        extras=extras,
    )


def _unread_media_notes(doc: JSONObject) -> list[str]:
    """Notes for the images of ``task`` and of every trajectory entry (and turn) that are
    left out because they cannot be read (:func:`unread_media`), so none vanish silently."""
    notes = unread_media(doc.get("task"), "$.task")
    for i, entry in enumerate(doc["trajectory"]):
        notes += unread_media(entry, f"$.trajectory[{i}]")
        turns = entry.get("turns") if isinstance(entry, dict) else None
        for j, turn in enumerate(turns if isinstance(turns, list) else []):
            notes += unread_media(turn, f"$.trajectory[{i}].turns[{j}]")
    return notes


def _video_refs(doc: JSONObject, ctx: LoadContext, prefix: str | None) -> list[MediaRef]:
    """Whole-video MediaRefs for ``video_context.videos`` that exist under the root (the
    release ships sampled frames, often not the video itself)."""
    vc = doc.get("video_context")
    if not isinstance(vc, dict) or not isinstance(vc.get("videos"), list) or ctx.root is None:
        return []
    out = []
    for name in vc["videos"]:
        if not isinstance(name, str) or not name or Path(name).is_absolute() or ".." in Path(name).parts:
            continue
        for rel in ([prefix + name] if prefix else []) + [name, f"video_assets/{name}"]:
            if (Path(ctx.root) / rel).is_file():
                out.append(MediaRef(kind="video", path=rel, label=name))
                break
    return out


def looks_like_whowhen_pro(doc: Any) -> bool:
    """True for a dict with ``framework`` and ``trajectory`` plus one of ``id``,
    ``ground_truth``, ``task`` (and no native ``format`` or Who&When ``history``)."""
    return (
        isinstance(doc, dict)
        and "trajectory" in doc
        and "framework" in doc
        and doc.get("format") != NATIVE_FORMAT
        and "history" not in doc
        and any(k in doc for k in ("id", "ground_truth", "task"))
    )


class WhoWhenProImporter(DocumentImporter):
    """Reads Who&When Pro per-file traces (a JSON object, or a list of them)."""

    name = FORMAT
    priority = 50

    def matches(self, doc: Any) -> bool:
        if isinstance(doc, list) and doc:
            doc = doc[0]
        return looks_like_whowhen_pro(doc)

    def _each(self, doc: Any, ctx: LoadContext) -> Iterator[tuple[Prepared, LoadContext]]:
        if isinstance(doc, list):
            for i, d in enumerate(doc):
                sub = LoadContext(path=ctx.path, root=ctx.root, key=str(i + 1))
                try:
                    yield prepare(d, sub), sub
                except TraceFormatError as exc:
                    if exc.json_path and exc.json_path.startswith("$"):
                        exc.json_path = f"$[{i}]" + exc.json_path[1:]
                        exc.args = (exc.one_line(),)
                    raise
        else:
            yield prepare(doc, ctx), LoadContext(path=ctx.path, root=ctx.root, key=None)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        return [build_trace(prep, sub) for prep, sub in self._each(doc, ctx)]

    def summaries(self, doc: Any, ctx: LoadContext) -> list[TraceSummary]:
        """Listing rows from the checked layout and ground truth; no Step models."""
        return [summary_of(prep, sub) for prep, sub in self._each(doc, ctx)]
