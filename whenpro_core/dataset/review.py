"""Helpers for reviewing a built dataset one trace at a time (the TUI's validation
mode; decisions are recorded by :func:`whenpro_core.dataset.validate.record`): what a
relabel may choose from, the progress line, the next trace to review, and a label as
one line. UI-free.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whenpro_core.dataset.build_store import BUILD_DIR, read_manifest, revalidate
from whenpro_core.dataset.journal import take_lock
from whenpro_core.dataset.validate import Label, ReviewItem
from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.safety.textsafe import clean
from whenpro_core.trace.model import Trace
from whenpro_core.trace.taxonomy import taxonomy_for
from whenpro_core.views.stepview import step_summary

#: Status -> one-character marker for review lists.
STATUS_MARKS = {"pending": "·", "accepted": "✓", "rejected": "✗", "relabelled": "✎"}


@dataclass(frozen=True)
class RelabelChoices:
    """What a relabel of one trace may pick (docs/architecture.md, 'The trace model' and 'Failure-mode taxonomy'):
    ``agents`` (the trace's
    agent ids), ``steps`` (``(coordinate, agent, summary)`` for each distinct
    coordinate, in trajectory order), ``modes`` (``(code, name)`` from the dataset's
    taxonomy) and the ``built`` label. Text is cleaned for display."""

    agents: list[str]
    steps: list[tuple[str, str, str]]
    modes: list[tuple[str, str]]
    built: Label


def relabel_choices(root: str | Path, trace: Trace, item: ReviewItem) -> RelabelChoices:
    """The choices for relabelling ``item`` (whose loaded trace is ``trace``) in the
    dataset at ``root``; modes come from the dataset's ``taxonomy.yaml`` (else the
    built-in table)."""
    seen: set[str] = set()
    steps = []
    for s in trace.steps:
        if s.coord is None or s.coord in seen:
            continue
        seen.add(s.coord)
        steps.append((s.coord, s.agent, step_summary(s, 80)))
    modes = [(m.code, clean(m.name)) for m in taxonomy_for(root)]
    return RelabelChoices(agents=trace.agent_ids(), steps=steps, modes=modes, built=item.built)


def progress_line(counts: dict[str, Any]) -> str:
    """``"37 of 120 reviewed · 30 accepted · 4 rejected · 3 relabelled"`` from
    :func:`~whenpro_core.dataset.validate.validation_counts`."""
    total = int(counts.get("total", 0))
    done = total - int(counts.get("pending", 0))
    return (
        f"{done:,} of {total:,} reviewed · {counts.get('accepted', 0):,} accepted · "
        f"{counts.get('rejected', 0):,} rejected · {counts.get('relabelled', 0):,} relabelled"
    )


def label_counts_line(counts: dict[str, Any]) -> str:
    """The labels by mode from the counts' ``validated_modes`` (rejected traces left out):
    ``"labels as built (none reviewed yet): A.3 4 · V.2 3"`` before any decision, then
    ``"labels after review (pending ones as built): ..."``; ``""`` when there are none."""
    modes = counts.get("validated_modes") or {}
    if not modes:
        return ""
    reviewed = int(counts.get("total", 0)) - int(counts.get("pending", 0))
    head = "labels after review (pending ones as built)" if reviewed else "labels as built (none reviewed yet)"
    return f"{head}: " + " · ".join(f"{clean(str(m))} {n}" for m, n in modes.items())


def next_pending(items: Sequence[ReviewItem], after: int) -> int | None:
    """The position of the first pending item after position ``after`` (wrapping round
    to the start), or ``None`` when every item has a decision."""
    n = len(items)
    for k in range(1, n + 1):
        i = (after + k) % n
        if items[i].status == "pending":
            return i
    return None


def save_counts(root: str | Path) -> dict[str, Any]:
    """Write the current review counts into the dataset's ``manifest.json`` (what
    ``whenpro build --revalidate`` does) and return them
    (:func:`~whenpro_core.dataset.validate.validation_counts`). While a ``whenpro build``
    holds the dataset's lock the file is left to it (its finish writes the counts) and
    the counts are only computed. Raises WhenproError when ``root`` is not a built
    dataset."""
    root = Path(root)
    lock = root / BUILD_DIR / "lock"
    fd = None
    if lock.parent.is_dir():
        try:
            fd = take_lock(lock)
        except ConfigError:  # a build is running: it writes the counts when it finishes
            manifest = read_manifest(root)
            if manifest is None:
                raise WhenproError(
                    "no manifest.json here: not a dataset built by whenpro build",
                    path=root,
                    expected="the --out folder of a whenpro build",
                ) from None
            counts: dict[str, Any] = manifest["validation"]
            return counts
    try:
        counts = revalidate(root)["validation"]
        return counts
    finally:
        if fd is not None:
            os.close(fd)


def label_line(label: Label | None, taxonomy: Any = None) -> str:
    """``"agent solver · step 3 · R.3 Numerical/calculation error"`` (``"rejected"``
    for ``None``). Cleaned for display."""
    if label is None:
        return "rejected"
    mode = label.mode or "—"
    if taxonomy is not None and label.mode:
        mode = taxonomy.name(label.mode)
    return f"agent {clean(label.agent or '—')} · step {clean(label.step or '—')} · {clean(mode)}"


__all__ = [
    "RelabelChoices",
    "STATUS_MARKS",
    "label_line",
    "next_pending",
    "progress_line",
    "relabel_choices",
    "save_counts",
    "label_counts_line",
]
