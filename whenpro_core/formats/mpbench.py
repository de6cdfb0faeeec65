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


def mp_labels(history: list[Any], steps: list[Step], path: Path) -> tuple[GroundTruth | None, list[Annotation]]:
    """The ground truth and annotations of an MP-Bench file (module doc); ``(None, [])``
    when its annotator flagged no step."""
    views = [(_annotator(path), history), *_other_annotators(path)]
    notes: list[Annotation] = []
    for who, hist in views:
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
    mine = [(i, e) for i, e in _flagged(history) if i < len(steps)]
    if not mine:
        return None, notes
    first, entry = mine[0]
    notes[0].decisive = True
    others = [n for n in notes[1:] if n.step != steps[first].coord]
    gt = GroundTruth(
        agent=steps[first].agent,
        step=steps[first].coord,
        step_index=first,
        mode=text_or_none(entry.get("fail_category")),
        reason=text_or_none(entry.get("fail_reason")),
        accepted=Accepted(
            agent=list(dict.fromkeys(n.agent for n in others if n.agent and n.agent != steps[first].agent)),
            step=list(dict.fromkeys(n.step for n in others if n.step)),
            mode=list(dict.fromkeys(n.label for n in others if n.label != "flagged")),
        ),
        native={"annotator": _annotator(path), "flagged_steps": [i for i, _ in mine]},
    )
    return gt, notes


__all__ = ["is_annotated_history", "mp_labels"]
