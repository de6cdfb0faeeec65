"""MP-Bench (Adobe Research, "Rethinking Failure Attribution in Multi-Agent Systems: A
Multi-Perspective Benchmark and Evaluation", arXiv 2603.25001): Who&When and MAST logs,
each annotated step by step by several annotators.

The normalised files (``MP-Bench/<annotator_id>/<split>/<file>.json``, written by its
``build_annotated_from_log_source.py``) are Who&When documents whose ``history`` entries
carry the annotator's verdict: ``{content, role, name?, step: "0", fail_annotation: "0" |
"1", fail_category, fail_reason, ideal_action}``; they are read by the Who&When rules
(:mod:`whenpro_core.formats.whowhen`). An annotator may flag several steps:

* the ground truth is this annotator's earliest flagged step (its agent, its
  ``fail_category`` as the mode, its ``fail_reason`` as the reason);
* every step any annotator flagged for the same log (this file's other flags, and the
  files of the same ``<split>/<file>.json`` under the sibling annotator folders) is an
  accepted alternative, with its agent and category;
* each flag is an annotation naming its annotator.

A file that also has Who&When's ``mistake_agent``/``mistake_step`` keeps that label as the
ground truth; the flags are its annotations, and their steps, agents and categories its
accepted alternatives (:func:`mp_flags_beside`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import as_text, read_json_file, text_or_none
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Accepted, Annotation, GroundTruth, Step


def is_annotated_history(history: Any) -> bool:
    """A ``history`` whose entries carry MP-Bench's ``fail_annotation``."""
    return isinstance(history, list) and any(isinstance(h, dict) and "fail_annotation" in h for h in history)


def _flagged(history: list[Any]) -> list[tuple[int, JSONObject]]:
    """``(index, entry)`` of the entries an annotator flagged (``fail_annotation`` 1)."""
    return [
        (i, h)
        for i, h in enumerate(history)
        if isinstance(h, dict) and str(h.get("fail_annotation")).strip().lower() in ("1", "true", "1.0")
    ]


def _annotator(path: Path) -> str:
    return path.parent.parent.name or "annotator"


def _other_annotators(path: Path) -> list[tuple[str, list[Any]]]:
    """``(annotator, history)`` of the same log under the sibling annotator folders."""
    mine = path.parent.parent
    out = []
    for folder in sorted(p for p in mine.parent.iterdir() if p.is_dir() and p != mine):
        other = folder / path.parent.name / path.name
        if not other.is_file():
            continue
        try:
            doc = read_json_file(other)
        except TraceFormatError:
            continue
        history = doc.get("history") if isinstance(doc, dict) else None
        if isinstance(history, list) and is_annotated_history(history):
            out.append((folder.name, history))
    return out


def _flag_notes(history: list[Any], steps: list[Step], path: Path) -> list[Annotation]:
    """One annotation per step any annotator of this log flagged (module doc)."""
    notes: list[Annotation] = []
    for who, hist in [(_annotator(path), history), *_other_annotators(path)]:
        for i, entry in _flagged(hist):
            if i < len(steps):
                notes.append(
                    Annotation(
                        label=as_text(entry.get("fail_category")) or "flagged",
                        agent=steps[i].agent,
                        step=steps[i].coord,
                        reason=text_or_none(entry.get("fail_reason")),
                        source=f"mp-bench annotator {who}",
                    )
                )
    return notes


def _accepted(notes: list[Annotation], step: str | None, agent: str | None) -> Accepted:
    """The flagged steps, agents and categories of ``notes`` other than the ground truth's."""
    others = [n for n in notes if n.step != step]
    return Accepted(
        agent=list(dict.fromkeys(n.agent for n in others if n.agent and n.agent != agent)),
        step=list(dict.fromkeys(n.step for n in others if n.step)),
        mode=list(dict.fromkeys(n.label for n in others if n.label != "flagged")),
    )


def mp_flags_beside(gt: GroundTruth, history: list[Any], steps: list[Step], path: Path) -> list[Annotation]:
    """For a file that has Who&When's ``mistake_agent``/``mistake_step`` too: ``gt`` (that
    label) keeps its step, and every step an annotator flagged is added to its accepted
    alternatives (step, agent, category); returns the flags as annotations."""
    notes = _flag_notes(history, steps, path)
    extra = _accepted(notes, gt.step, gt.agent)
    gt.accepted = Accepted(
        agent=list(dict.fromkeys([*gt.accepted.agent, *extra.agent])),
        step=list(dict.fromkeys([*gt.accepted.step, *extra.step])),
        mode=list(dict.fromkeys([*gt.accepted.mode, *(m for m in extra.mode if m != gt.mode)])),
    )
    return notes


def mp_labels(history: list[Any], steps: list[Step], path: Path) -> tuple[GroundTruth | None, list[Annotation]]:
    """The ground truth and annotations of an MP-Bench file (module doc); ``(None, [])``
    when its annotator flagged no step."""
    notes = _flag_notes(history, steps, path)
    mine = [(i, e) for i, e in _flagged(history) if i < len(steps)]
    if not mine:
        return None, notes
    first, entry = mine[0]
    notes[0].decisive = True
    gt = GroundTruth(
        agent=steps[first].agent,
        step=steps[first].coord,
        step_index=first,
        mode=text_or_none(entry.get("fail_category")),
        reason=text_or_none(entry.get("fail_reason")),
        accepted=_accepted(notes[1:], steps[first].coord, steps[first].agent),
        native={"annotator": _annotator(path), "flagged_steps": [i for i, _ in mine]},
    )
    return gt, notes


__all__ = ["is_annotated_history", "mp_flags_beside", "mp_labels"]
