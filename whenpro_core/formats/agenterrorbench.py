"""AgentErrorBench labels (Zhu et al., "Where LLM Agents Fail and How They Can Learn From
Failures", arXiv 2509.25370; dataset released with ``ulab-uiuc/AgentDebug``): failed
ALFWorld, GAIA and WebShop trajectories, each labelled with its critical failure step.

The release is ``Original_Failure_Trajectory/**/<trajectory_id>.json`` (``{messages:
[{role, content}], metadata}``: an OpenAI chat log, read by
:mod:`whenpro_core.formats.chat`) and ``Label/{alfworld,gaia,webshop}_labels.json``, each a
list of ``{trajectory_id, LLM, task_type, critical_failure_step, critical_failure_module,
step_annotations: [{step, <module>: {failure_type, reasoning}}]}``.
``critical_failure_step`` is 1-based and counts the assistant messages only (the n-th
assistant message is the decision step n).

A chat log whose file stem is a ``trajectory_id`` of a label file in a ``Label`` folder
beside one of its four nearest ancestor folders gets that label as its ground truth: the
step of the n-th assistant message, its agent, ``failure_type`` as the mode (the module in
``native``), ``reasoning`` as the reason; its outcome is ``failure``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import (
    as_text,
    dict_or_empty,
    label_file_note,
    list_or_empty,
    read_json_file,
    text_or_none,
    wrong_type,
)
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import GroundTruth, Outcome, Trace


def is_label_list(doc: object) -> bool:
    """An AgentErrorBench label file: a list of ``{trajectory_id, critical_failure_step}``."""
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(d, dict) and "trajectory_id" in d and "critical_failure_step" in d for d in doc)
    )


_ROW = "a label object {trajectory_id, critical_failure_step, ...}"


@lru_cache(maxsize=16)
def _labels_in(path: Path, stamp: tuple[int, int]) -> tuple[dict[str, JSONObject], tuple[str, ...]]:
    """``({trajectory_id: label}, notes)`` of one label file (``stamp``: size and mtime, so
    an edited file is read again). A file that does not parse, or is not a list, gives no
    labels and one note; a row of the wrong shape is left out with one note naming its
    JSON path (:func:`~whenpro_core.formats.base.label_file_note`)."""
    try:
        doc = read_json_file(path)
    except TraceFormatError as exc:
        return {}, (f"labels not read: {exc.one_line()}",)
    if not isinstance(doc, list):
        return {}, (label_file_note(path, "$", wrong_type(doc), f"a list of {_ROW}s"),)
    labels: dict[str, JSONObject] = {}
    notes: list[str] = []
    for i, row in enumerate(doc):
        tid = row.get("trajectory_id") if isinstance(row, dict) else None
        if not isinstance(row, dict):
            notes.append(label_file_note(path, f"$[{i}]", wrong_type(row), _ROW))
        elif not isinstance(tid, (str, int)) or isinstance(tid, bool):
            notes.append(label_file_note(path, f"$[{i}].trajectory_id", wrong_type(tid), "a string"))
        else:
            labels[str(tid)] = row
    return labels, tuple(notes)


def label_for(path: Path) -> tuple[JSONObject | None, list[str]]:
    """``(label, notes)``: the label of the trajectory file ``path`` (module doc), or
    ``None``, and the notes on the label files looked at that could not be wholly read."""
    notes: list[str] = []
    for folder in list(path.parents)[:4]:
        labels = folder / "Label"
        if not labels.is_dir():
            continue
        for candidate in sorted(labels.glob("*_labels.json")):
            st = candidate.stat()
            rows, bad = _labels_in(candidate, (st.st_size, st.st_mtime_ns))
            notes += bad
            if path.stem in rows:
                return rows[path.stem], notes
    return None, notes


def apply_label(trace: Trace, label: JSONObject) -> None:
    """Set the ground truth of an AgentErrorBench trajectory from its label row."""
    n = label.get("critical_failure_step")
    assistants = [s for s in trace.steps if s.kind == "assistant" or s.meta.get("role") == "assistant"]
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(assistants):
        trace.extras.setdefault("whenpro_warnings", []).append(
            f"AgentErrorBench label: critical_failure_step {n!r} is not one of the {len(assistants)} assistant steps"
        )
        return
    step = assistants[n - 1]
    module = as_text(label.get("critical_failure_module"))
    note = next((dict_or_empty(a.get(module)) for a in list_or_empty(label.get("step_annotations"))), {})
    trace.ground_truth = GroundTruth(
        agent=step.agent,
        step=step.coord,
        step_index=step.index,
        mode=text_or_none(note.get("failure_type")),
        reason=text_or_none(note.get("reasoning")),
        native=label,
    )
    trace.outcome = Outcome.failure
    trace.benchmark = trace.benchmark or as_text(label.get("task_type")).lower()


__all__ = ["apply_label", "is_label_list", "label_for"]
