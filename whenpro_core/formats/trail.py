"""TRAIL (Patronus AI, "Trace Reasoning and Agentic Issue Localization", arXiv 2505.08638):
GAIA and SWE-bench runs of smolagents as OpenInference spans, with span-level error
annotations.

A trace is ``{trace_id, spans: [span, ...]}``, each span ``{trace_id, span_id,
parent_span_id, span_name, span_kind, timestamp (ISO 8601), duration (ISO 8601, e.g.
"PT1.25S"), status_code ("Unset"|"Ok"|"Error"), status_message, span_attributes: {flat
OpenInference keys: openinference.span.kind, input.value, output.value,
llm.input_messages..., tool.name, ...}, events, logs, child_spans: [span, ...]}``. Spans are
read by the OpenTelemetry rules (:mod:`whenpro_core.formats.otel`, OpenInference
convention): agent spans frame the steps of their agent; each step keeps its ``span_id``.

The labels are ``{trace_id, errors: [{category, location (a span id), evidence,
description, impact: LOW|MEDIUM|HIGH}], scores: [...]}``: in the document itself under
``labels`` (the Hugging Face rows ``{trace, labels}``, each a JSON string), else in a file
beside the trace named ``<stem>.labels.json`` or ``<trace_id>.json`` in a
``processed_annotations_*`` folder next to the trace's folder or one level up (the
benchmark repository's layout). An error located at a span that is no step (an agent
frame) belongs to the first step inside that span. Every error is an annotation; the
ground truth is the earliest HIGH-impact error (else the earliest MEDIUM, else LOW):
its step, its step's agent, its ``category`` as the mode, its description as the reason;
the other errors' steps and categories are accepted alternatives.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import (
    DocumentImporter,
    LoadContext,
    as_text,
    dict_or_empty,
    label_file_note,
    list_or_empty,
    maybe_json,
    read_json_file,
    text_or_none,
    wrong_type,
)
from whenpro_core.formats.otel import build_traces
from whenpro_core.formats.otlp import Span
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Accepted, Annotation, GroundTruth, Outcome, Step, Trace

IMPACTS = ("HIGH", "MEDIUM", "LOW")
_DURATION = re.compile(r"^P(?:T)?(?:(?P<h>[\d.]+)H)?(?:(?P<m>[\d.]+)M)?(?:(?P<s>[\d.]+)S)?$")
_STATUS = {"error": "ERROR", "ok": "OK"}


def is_trail_trace(doc: Any) -> bool:
    """A TRAIL trace ``{trace_id, spans: [{span_id, span_attributes | child_spans}]}``, or
    a Hugging Face row ``{trace: "<that, as JSON>", labels}``."""
    if isinstance(doc, dict) and isinstance(doc.get("trace"), str) and "labels" in doc:
        return is_trail_trace(maybe_json(doc["trace"]))
    if not (isinstance(doc, dict) and "trace_id" in doc and isinstance(doc.get("spans"), list) and doc["spans"]):
        return False
    first = doc["spans"][0]
    return isinstance(first, dict) and "span_id" in first and ("span_attributes" in first or "child_spans" in first)


def is_trail_labels(doc: Any) -> bool:
    """A TRAIL annotation file ``{trace_id, errors: [...], scores?}``."""
    return isinstance(doc, dict) and "trace_id" in doc and isinstance(doc.get("errors"), list) and "spans" not in doc


def _nanos(stamp: Any) -> int:
    if not isinstance(stamp, str) or not stamp:
        return 0
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return 0
    return int(when.timestamp() * 1e9)


def _duration_ns(value: Any) -> int:
    """Nanoseconds of an ISO 8601 duration (``PT1.5S``) or a number of seconds; 0 else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value * 1e9)
    m = _DURATION.match(value.strip()) if isinstance(value, str) else None
    if m is None:
        return 0
    hours, minutes, seconds = (float(m.group(g) or 0) for g in ("h", "m", "s"))
    return int((hours * 3600 + minutes * 60 + seconds) * 1e9)


def _spans(raw: list[Any], ctx: LoadContext, where: str, parent: str | None, out: list[Span]) -> None:
    for i, sp in enumerate(raw):
        w = f"{where}[{i}]"
        if not isinstance(sp, dict) or not text_or_none(sp.get("span_id")):
            raise ctx.error("not a span", w, "a span {span_id, span_name, span_attributes, child_spans}")
        start = _nanos(sp.get("timestamp"))
        out.append(
            Span(
                trace_id=str(sp.get("trace_id") or ""),
                span_id=sp["span_id"],
                parent_span_id=text_or_none(sp.get("parent_span_id")) or parent,
                name=as_text(sp.get("span_name")),
                start_ns=start,
                end_ns=start + _duration_ns(sp.get("duration")),
                attributes=dict(dict_or_empty(sp.get("span_attributes"))),
                status_code=_STATUS.get(as_text(sp.get("status_code")).lower(), ""),
                status_message=as_text(sp.get("status_message")),
                resource={"service.name": sp.get("service_name")} if sp.get("service_name") else {},
                where=w,
            )
        )
        children = sp.get("child_spans")
        if children is not None:
            if not isinstance(children, list):
                raise ctx.error("wrong type", f"{w}.child_spans", "a list of spans")
            _spans(children, ctx, f"{w}.child_spans", sp["span_id"], out)


def labels_beside(path: Path, trace_id: str, notes: list[str] | None = None) -> JSONObject | None:
    """The annotation file of a trace file (module doc), or ``None``. A candidate that does
    not parse, whose ``errors`` is not a list, or whose error has a field of the wrong type
    (:func:`_wrong_error_field`) is passed over with a note appended to
    ``notes`` (:func:`~whenpro_core.formats.base.label_file_note`)."""
    candidates = [path.with_name(f"{path.stem}.labels.json")]
    if trace_id and all(c.isalnum() or c in "-_" for c in trace_id):  # an id from the file: never a path or glob
        for folder in (path.parent.parent, path.parent.parent.parent):
            candidates += sorted(folder.glob(f"processed_annotations_*/{trace_id}.json"))
    notes = notes if notes is not None else []
    for candidate in candidates:
        if not candidate.is_file() or candidate == path:
            continue
        try:
            doc = read_json_file(candidate)
        except TraceFormatError as exc:
            notes.append(f"labels not read: {exc.one_line()}")
            continue
        if is_trail_labels(doc):
            bad = _wrong_error_field(candidate, doc)
            if bad is None:
                return dict(doc)
            notes.append(bad)
        elif not isinstance(doc, dict):
            notes.append(label_file_note(candidate, "$", wrong_type(doc), "an object {trace_id, errors: [...]}"))
        elif "spans" not in doc:  # a trace file is not a label file
            key, expected = ("trace_id", "the trace id") if "trace_id" not in doc else ("errors", "a list of errors")
            notes.append(label_file_note(candidate, f"$.{key}", wrong_type(doc.get(key)), expected))
    return None


#: The fields of a TRAIL error that are read as text (``$.errors[i].<field>``), when present.
_ERROR_TEXT_FIELDS = ("category", "location", "impact", "description", "evidence")


def _wrong_error_field(path: Path, doc: JSONObject) -> str | None:
    """The ``labels not read`` note for the first error of ``doc`` that is not an object or
    has a text field of another type; ``None`` when every error reads."""
    for i, err in enumerate(doc["errors"]):
        if not isinstance(err, dict):
            return label_file_note(path, f"$.errors[{i}]", wrong_type(err), "an object {category, location, ...}")
        for name in _ERROR_TEXT_FIELDS:
            value = err.get(name)
            if value is not None and not isinstance(value, str):
                return label_file_note(path, f"$.errors[{i}].{name}", wrong_type(value), "a string")
    return None


def _step_of(location: str, steps: list[Step], parents: dict[str, str | None]) -> Step | None:
    """The step of span ``location``: the step itself, else the first step inside it."""
    for step in steps:
        span = step.meta.get("span_id")
        while span is not None:
            if span == location:
                return step
            span = parents.get(span)
    return None


def _annotate(trace: Trace, labels: JSONObject, parents: dict[str, str | None]) -> None:
    """Every error as an annotation; the earliest most severe one as the ground truth."""
    found: list[tuple[int, int, JSONObject, Step | None]] = []  # (impact rank, step index, error, step)
    base = len(trace.annotations)
    for err in list_or_empty(labels.get("errors")):
        if not isinstance(err, dict):
            continue
        step = _step_of(as_text(err.get("location")), trace.steps, parents)
        impact = as_text(err.get("impact")).upper()
        rank = IMPACTS.index(impact) if impact in IMPACTS else len(IMPACTS)
        found.append((rank, step.index if step else 1 << 30, err, step))
        trace.annotations.append(
            Annotation(
                label=as_text(err.get("category")) or "error",
                agent=step.agent if step else None,
                step=step.coord if step else None,
                reason=text_or_none(err.get("description")),
                source=f"trail ({impact or 'no impact'}, span {as_text(err.get('location'))})",
            )
        )
    located = sorted(((r, i, e, s) for r, i, e, s in found if s is not None), key=lambda f: (f[0], f[1]))
    if not located:
        return
    trace.annotations[base + found.index(located[0])].decisive = True
    err, step = located[0][2], located[0][3]
    steps = [s.coord for _, _, _, s in located[1:] if s.coord and s.coord != step.coord]
    modes = [c for _, _, e, _ in located[1:] if (c := text_or_none(e.get("category")))]
    trace.ground_truth = GroundTruth(
        agent=step.agent,
        step=step.coord,
        step_index=step.index,
        mode=text_or_none(err.get("category")),
        reason=text_or_none(err.get("description")),
        accepted=Accepted(step=list(dict.fromkeys(steps)), mode=list(dict.fromkeys(modes))),
        native=labels,
    )
    trace.outcome = Outcome.failure


def trail_trace(doc: JSONObject, ctx: LoadContext) -> Trace:
    """The trace of a TRAIL document (module doc); TraceFormatError names the span."""
    labels: JSONObject | None = None
    if isinstance(doc.get("trace"), str):  # a Hugging Face row
        labels = dict_or_empty(maybe_json(doc.get("labels"))) or None
        doc = dict_or_empty(maybe_json(doc["trace"]))
    spans: list[Span] = []
    _spans(list_or_empty(doc.get("spans")), ctx, "$.spans", None, spans)
    if not spans:
        raise ctx.error("no spans", "$.spans", "the trace's spans")
    trace_id = as_text(doc.get("trace_id"))
    for span in spans:
        span.trace_id = span.trace_id or trace_id
    built = build_traces([s for s in spans if s.trace_id == spans[0].trace_id], ctx)
    trace = built[0]
    trace.id = f"trail-{trace_id}"
    trace.source = ctx.source("trail")
    trace.benchmark = "trail"
    notes: list[str] = []
    labels = labels or labels_beside(ctx.path, trace_id, notes)
    if notes:
        trace.extras.setdefault("whenpro_warnings", []).extend(notes)
    if labels is not None:
        _annotate(trace, labels, {s.span_id: s.parent_span_id for s in spans})
    return trace


class TrailImporter(DocumentImporter):
    """A TRAIL trace (its labels beside it or inside it)."""

    name = "trail"
    priority = 11

    def matches(self, doc: Any) -> bool:
        return is_trail_trace(doc)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        return [trail_trace(doc, ctx)]


__all__ = ["TrailImporter", "is_trail_labels", "is_trail_trace", "labels_beside", "trail_trace"]
