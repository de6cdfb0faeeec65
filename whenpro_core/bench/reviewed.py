"""Reviews reach the numbers (issue 14): ``whenpro bench`` and ``whenpro report`` score a
built dataset with the latest review decision of each trace (:mod:`.validate`) unless
``--labels built`` asks for the labels the build gave.

* **rejected**: the trace is left out (``bench`` does not run it; ``report`` drops its
  records).
* **relabelled**: the trace is scored with its new label (agent, step, mode): the
  record's prediction is scored again against the trace with that ground truth.
* **accepted** or **pending**: the built label.

A trace belongs to a built dataset when a folder above it (at most six levels) holds a
``manifest.json`` written by ``whenpro build``; traces of other datasets are untouched.
Traces are matched to decisions by id (the manifest's and the validation log's
``trace_id``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from whenpro_core.bench.records import Record, build_record
from whenpro_core.dataset.build_store import read_manifest
from whenpro_core.dataset.validate import Label, effective_label, review_items
from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.formats.build_meta import MANIFEST, ForeignManifestError
from whenpro_core.formats.registry import split_ref
from whenpro_core.trace.coords import normalize_coord
from whenpro_core.trace.model import Accepted, GroundTruth, Trace

#: ``--labels`` values: the latest review decisions (default) or the built labels.
LABEL_SOURCES = ("reviewed", "built")
#: Levels climbed from a trace file to find its dataset's manifest.
MAX_LEVELS = 6


@dataclass
class Reviews:
    """Review decisions of the built datasets a run touches, found from trace
    references: ``rejected`` and ``relabelled`` (trace id -> new label) per dataset
    root, and what was done (``left_out``, ``rescored``, ``problems``)."""

    roots: dict[Path, tuple[set[str], dict[str, Label]]] = field(default_factory=dict)
    _root_of: dict[Path, Path | None] = field(default_factory=dict)
    left_out: int = 0
    rescored: int = 0
    problems: list[str] = field(default_factory=list)

    def root(self, ref: str) -> Path | None:
        """The built dataset holding the trace at ``ref`` (``path`` or ``path#key``), or ``None``."""
        folder = split_ref(ref)[0].absolute().parent
        if folder not in self._root_of:
            self._root_of[folder] = _find_manifest(folder)
        return self._root_of[folder]

    def decisions(self, root: Path) -> tuple[set[str], dict[str, Label]]:
        """(rejected ids, relabelled id -> label) of the dataset at ``root``."""
        if root not in self.roots:
            rejected, relabelled = set(), {}
            try:
                items = review_items(root)
            except WhenproError as exc:
                self.problems.append(exc.one_line())
                items = []
            for item in items:
                label = effective_label(item)
                if label is None:
                    rejected.add(item.id)
                elif item.status == "relabelled":
                    relabelled[item.id] = label
            self.roots[root] = (rejected, relabelled)
        return self.roots[root]

    def decision(self, ref: str, trace_id: str) -> Label | None | bool:
        """``False`` to leave the trace out (rejected), a :class:`Label` to score it with
        (relabelled), ``None`` to keep its label."""
        root = self.root(ref)
        if root is None:
            return None
        rejected, relabelled = self.decisions(root)
        if trace_id in rejected:
            return False
        return relabelled.get(trace_id)

    def note(self) -> str:
        """The line a report's header shows: how many traces of the built datasets seen
        were rejected (left out) and relabelled (scored with the new label)."""
        if not self.roots:
            return "labels: as built (no reviewed dataset)"
        rejected = sum(len(r) for r, _ in self.roots.values())
        relabelled = sum(len(r) for _, r in self.roots.values())
        return (
            f"labels: the latest review decision of each trace ({rejected} rejected, left out; "
            f"{relabelled} relabelled, scored with the new label; --labels built for the built labels)"
        )


def _find_manifest(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` (at most :data:`MAX_LEVELS` up) whose
    ``manifest.json`` is a build manifest, or ``None``: the first ``manifest.json`` found
    decides, and one that is not a build manifest at all (another tool's) means none.
    Raises TraceFormatError for a build manifest that cannot be read back (its shape
    is wrong), which stops a reviewed bench or report rather than skipping the reviews."""
    for level, place in enumerate([folder, *folder.parents]):
        if level > MAX_LEVELS:
            break
        if (place / MANIFEST).is_file():
            try:
                return place if read_manifest(place, fresh_validation=False) is not None else None
            except ForeignManifestError:
                return None
    return None


def relabelled_trace(trace: Trace, label: Label) -> Trace:
    """``trace`` with its ground truth replaced by ``label`` (reason and round rule kept;
    the old accepted alternatives dropped, as they belonged to the old label)."""
    old = trace.ground_truth or GroundTruth()
    step = normalize_coord(label.step) if label.step else None
    found = trace.step_by_coord(step) if step else None
    gt = old.model_copy(
        update={
            "agent": label.agent,
            "agents": [],
            "step": step,
            "mode": label.mode,
            "step_index": found.index if found else None,
            "accepted": Accepted(),
        }
    )
    return trace.model_copy(update={"ground_truth": gt})


def rescore(record: Record, label: Label) -> Record:
    """``record`` scored again against its trace relabelled with ``label`` (the
    prediction, usage, timing and error kept). Raises WhenproError when the trace cannot
    be read."""
    trace = relabelled_trace(load_trace(record.ref), label)
    new = build_record(
        ref=record.ref,
        protocol=record.protocol,
        model=record.model,
        with_gold=record.with_gold,
        trace=trace,
        prediction=record.prediction,
        tolerance=record.tolerance,
        tokens=record.trace.tokens,
        seconds=record.seconds,
        error=record.error,
        error_kind=record.error_kind,
    )
    return new.model_copy(update={"finished_at": record.finished_at, "usage": record.usage})


def apply_reviews(records: Iterable[Record], reviews: Reviews | None = None) -> tuple[list[Record], Reviews]:
    """The records a reviewed report scores: rejected traces' records dropped, relabelled
    traces' records scored again with the new label. A trace that cannot be read again
    keeps its record as it was (said in ``problems``)."""
    reviews = reviews or Reviews()
    out: list[Record] = []
    seen_left: set[str] = set()
    seen_rescored: set[str] = set()
    for rec in records:
        decision = reviews.decision(rec.ref, rec.trace.id)
        if decision is False:
            seen_left.add(rec.ref)
            continue
        if isinstance(decision, Label):
            try:
                rec = rescore(rec, decision)
                seen_rescored.add(rec.ref)
            except WhenproError as exc:
                reviews.problems.append(f"{rec.ref}: kept its built label: {exc.one_line()}")
        out.append(rec)
    reviews.left_out += len(seen_left)
    reviews.rescored += len(seen_rescored)
    return out, reviews


def check_labels(labels: str) -> str:
    """``labels`` if it is a known ``--labels`` value, else a ConfigError."""
    if labels not in LABEL_SOURCES:
        raise ConfigError(f"unknown --labels {labels!r}", expected=" or ".join(LABEL_SOURCES))
    return labels


__all__ = ["LABEL_SOURCES", "Reviews", "apply_reviews", "check_labels", "relabelled_trace", "rescore"]
