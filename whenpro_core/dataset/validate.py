"""Validation of a built dataset: a person reviews each injected trace and accepts it,
rejects it, or relabels it (agent, step, failure mode), with a reason (docs/architecture.md,
'Injection and warm-start replay': labels
come by construction; review catches injections that are not the failure they claim).

Every decision is one line of ``validation.jsonl`` at the dataset root, append-only
(:mod:`whenpro_core.storage.jsonl_log`: one locked write per line, so a TUI and a CLI can
record at the same time, and a kill never corrupts earlier lines). The latest decision
on a trace wins; earlier ones stay as history. Counts appear in the manifest's
``validation`` section, recomputed whenever the manifest is read
(:func:`whenpro_core.dataset.build_store.read_manifest`) and written by
``whenpro build --out DATASET --revalidate``.

API for a review screen (all functions take the dataset root; none imports a UI)::

    from whenpro_core.dataset import validate

    items = validate.review_items(root)          # [ReviewItem]: id, ref, seed, built label,
                                                 # status, latest decision
    trace = load_trace(root / items[0].ref)      # whenpro_core.formats.load_trace
    validate.record(root, items[0].id, "accept")
    validate.record(root, items[1].id, "reject", reason="the flaw does not change the answer")
    validate.record(root, items[2].id, "relabel", reason="a reasoning slip, not arithmetic",
                    mode="R.2")                  # also agent=..., step=... (a coordinate)
    validate.validation_counts(root)             # {"total", "accepted", "rejected", ...}
    validate.effective_label(item)               # (agent, step, mode) after review, None if rejected

``record`` raises :class:`~whenpro_core.errors.ConfigError` for an unknown trace id, a
bad verdict, a missing reason (reject and relabel need one), a relabel that changes
nothing, a mode outside the dataset's taxonomy, a step that is not a coordinate of the
trace, or an agent that is not one of its agents. Reasons are stored as plain text
(control characters removed, at most :data:`MAX_REASON` characters).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.formats.build_meta import VALIDATION_FORMAT, load_manifest
from whenpro_core.safety.textsafe import strip_controls
from whenpro_core.storage import jsonl_log
from whenpro_core.trace.coords import normalize_coord
from whenpro_core.trace.taxonomy import taxonomy_for

VALIDATION_FILE = "validation.jsonl"

VERDICTS = ("accept", "reject", "relabel")
#: Status of a trace after review (``pending``: no decision yet).
STATUSES = ("pending", "accepted", "rejected", "relabelled")
MAX_REASON = 2000

Verdict = Literal["accept", "reject", "relabel"]


class Label(BaseModel):
    """Who, when, what: ``agent`` id, ``step`` coordinate, ``mode`` code."""

    model_config = ConfigDict(extra="ignore")

    agent: str | None = None
    step: str | None = None
    mode: str | None = None


class ValidationEntry(BaseModel):
    """One review decision (one line of ``validation.jsonl``).

    Attributes:
        trace_id: the dataset trace's id.
        verdict: ``accept``, ``reject`` or ``relabel``.
        reason: why (required for reject and relabel).
        label: the label after the decision (relabel: the new one, unchanged fields
            kept; accept: the built one; reject: the built one, for the record).
        original: the label the build gave (by construction).
        reviewer: who decided, when known.
        at: ISO 8601 UTC time of the decision.
    """

    model_config = ConfigDict(extra="ignore")

    format: str = VALIDATION_FORMAT
    trace_id: str
    verdict: Verdict
    reason: str = ""
    label: Label = Field(default_factory=Label)
    original: Label = Field(default_factory=Label)
    reviewer: str | None = None
    at: str = ""

    @property
    def status(self) -> str:
        """``accepted``, ``rejected`` or ``relabelled``."""
        return {"accept": "accepted", "reject": "rejected", "relabel": "relabelled"}[self.verdict]


class ReviewItem(BaseModel):
    """A dataset trace to review: ``id``, ``ref`` (relative to the root; give
    ``root / ref`` to :func:`whenpro_core.formats.load_trace`), the ``seed`` trace it
    came from, the built label (``agent``, ``step``, ``mode``), ``framework``,
    ``modality``, the review ``status`` and the ``latest`` decision."""

    id: str
    ref: str
    seed: str | None = None
    agent: str | None = None
    step: str | None = None
    mode: str | None = None
    framework: str | None = None
    modality: str | None = None
    status: str = "pending"
    latest: ValidationEntry | None = None

    @property
    def built(self) -> Label:
        """The label given by construction."""
        return Label(agent=self.agent, step=self.step, mode=self.mode)


def _manifest(root: Path) -> dict[str, Any]:
    manifest = load_manifest(root)
    if manifest is None:
        raise WhenproError(
            "no manifest.json here: not a dataset built by whenpro build",
            path=root,
            expected="the --out folder of a whenpro build",
        )
    return manifest


def read_validations(root: str | Path) -> list[ValidationEntry]:
    """Every decision in ``validation.jsonl``, in the order recorded (torn or foreign
    lines skipped)."""
    records, _ = jsonl_log.read(Path(root) / VALIDATION_FILE, VALIDATION_FORMAT)
    out = []
    for r in records:
        try:
            out.append(ValidationEntry.model_validate(r))
        except ValueError:
            continue
    return out


def latest_validations(root: str | Path) -> dict[str, ValidationEntry]:
    """Trace id -> its latest decision."""
    return {e.trace_id: e for e in read_validations(root)}


def review_items(root: str | Path) -> list[ReviewItem]:
    """The dataset's traces (from the manifest, sorted by id) with their review status.
    Raises WhenproError when ``root`` is not a built dataset."""
    root = Path(root)
    latest = latest_validations(root)
    items = []
    for t in _manifest(root).get("traces", []):
        entry = latest.get(t["id"])
        items.append(
            ReviewItem(
                id=t["id"],
                ref=t.get("ref") or "",
                seed=t.get("seed"),
                agent=t.get("agent"),
                step=t.get("step"),
                mode=t.get("mode"),
                framework=t.get("framework"),
                modality=t.get("modality"),
                status=entry.status if entry else "pending",
                latest=entry,
            )
        )
    return items


def effective_label(item: ReviewItem) -> Label | None:
    """The label a benchmark should use after review: the relabelled one, the built one
    when accepted or pending, ``None`` when rejected."""
    if item.latest is None or item.latest.verdict == "accept":
        return item.built
    if item.latest.verdict == "reject":
        return None
    return item.latest.label


def _clean(text: str | None) -> str:
    return strip_controls(" ".join(str(text or "").split()))[:MAX_REASON]


def _check_relabel(root: Path, item: ReviewItem, agent: str | None, step: str | None, mode: str | None) -> Label:
    new = item.built.model_copy()
    if mode is not None:
        found = taxonomy_for(root).get(mode.strip().upper())
        if found is None:
            raise ConfigError(f"unknown failure mode {mode!r}", expected=", ".join(m.code for m in taxonomy_for(root)))
        new.mode = found.code
    if agent is not None or step is not None:
        trace = load_trace(root / item.ref)
        if step is not None:
            s = trace.step_by_coord(str(step))
            if s is None:
                coords = [c for c in dict.fromkeys(x.coord for x in trace.steps) if c is not None]
                raise ConfigError(
                    f"no step {step!r} in trace {item.id!r}", expected="a coordinate: " + ", ".join(coords[:20])
                )
            new.step = normalize_coord(step)
            if agent is None:
                new.agent = s.agent
        if agent is not None:
            ids = trace.agent_ids()
            match = next((a for a in ids if a.lower() == agent.strip().lower()), None)
            if match is None:
                raise ConfigError(f"no agent {agent!r} in trace {item.id!r}", expected=", ".join(ids))
            new.agent = match
    if new == item.built:
        raise ConfigError("the relabel changes nothing", expected="a new agent, step or mode (or accept)")
    return new


def record(
    root: str | Path,
    trace_id: str,
    verdict: str,
    reason: str = "",
    *,
    agent: str | None = None,
    step: str | None = None,
    mode: str | None = None,
    reviewer: str | None = None,
    now: str | None = None,
) -> ValidationEntry:
    """Record a decision on trace ``trace_id`` of the dataset at ``root`` and return it.

    ``verdict``: ``accept``, ``reject`` (needs ``reason``) or ``relabel`` (needs
    ``reason`` and at least one of ``agent``, ``step`` (a coordinate of the trace; the
    agent follows the step unless given), ``mode``). Raises ConfigError as listed in the
    module docstring, WhenproError when ``root`` is not a built dataset, OSError when the
    folder is not writable."""
    root = Path(root)
    if verdict not in VERDICTS:
        raise ConfigError(f"unknown verdict {verdict!r}", expected=", ".join(VERDICTS))
    items = {i.id: i for i in review_items(root)}
    item = items.get(trace_id)
    if item is None:
        raise ConfigError(
            f"no trace {trace_id!r} in this dataset", path=root, expected="an id from the manifest's traces"
        )
    reason = _clean(reason)
    if verdict != "accept" and not reason:
        raise ConfigError(f"a {verdict} needs a reason", expected="a short reason why")
    if verdict == "relabel":
        if agent is None and step is None and mode is None:
            raise ConfigError("a relabel needs a new label", expected="a new agent, step or mode")
        label = _check_relabel(root, item, agent, step, mode)
    else:
        if agent is not None or step is not None or mode is not None:
            raise ConfigError(f"agent, step and mode are for relabel, not {verdict}", expected="verdict relabel")
        label = item.built
    entry = ValidationEntry(
        trace_id=trace_id,
        verdict=verdict,
        reason=reason,
        label=label,
        original=item.built,
        reviewer=_clean(reviewer)[:200] or None,
        at=now or datetime.now(UTC).isoformat(timespec="seconds"),
    )
    jsonl_log.append(root / VALIDATION_FILE, entry.model_dump(mode="json"))
    return entry


def validation_counts(root: str | Path, manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """Review counts of the dataset at ``root``: ``total`` traces, ``pending``,
    ``accepted``, ``rejected``, ``relabelled``, ``decisions`` (lines recorded, history
    included), ``relabelled_fields`` (how many relabels changed agent / step / mode),
    ``by_mode`` (built mode -> status counts) and ``validated_modes`` (mode -> traces
    whose label after review has that mode, rejected ones left out). Decisions on ids
    that are not in the dataset are counted in ``unknown_ids``."""
    root = Path(root)
    manifest = manifest if manifest is not None else _manifest(root)
    traces = manifest.get("traces", [])
    decisions = read_validations(root)
    latest = {e.trace_id: e for e in decisions}
    ids = {t["id"] for t in traces}
    counts: dict[str, Any] = {"total": len(traces), "decisions": len(decisions)}
    counts.update({s: 0 for s in STATUSES})
    fields = {"agent": 0, "step": 0, "mode": 0}
    by_mode: dict[str, dict[str, int]] = {}
    validated: dict[str, int] = {}
    for t in traces:
        entry = latest.get(t["id"])
        status = entry.status if entry else "pending"
        counts[status] += 1
        row = by_mode.setdefault(t.get("mode") or "?", {s: 0 for s in STATUSES})
        row[status] += 1
        if entry and entry.verdict == "relabel":
            for f in fields:
                if getattr(entry.label, f) != getattr(entry.original, f):
                    fields[f] += 1
        if status != "rejected":
            mode = entry.label.mode if entry and entry.verdict == "relabel" else t.get("mode")
            validated[mode or "?"] = validated.get(mode or "?", 0) + 1
    counts["relabelled_fields"] = fields
    counts["by_mode"] = dict(sorted(by_mode.items()))
    counts["validated_modes"] = dict(sorted(validated.items()))
    counts["unknown_ids"] = sum(1 for i in latest if i not in ids)
    return counts


__all__ = [
    "Label",
    "MAX_REASON",
    "ReviewItem",
    "STATUSES",
    "VALIDATION_FILE",
    "VALIDATION_FORMAT",
    "VERDICTS",
    "ValidationEntry",
    "effective_label",
    "latest_validations",
    "read_validations",
    "record",
    "review_items",
    "validation_counts",
]
