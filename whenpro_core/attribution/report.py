"""A verdict as JSON-ready data (``whenpro attribute --json``): the attribution, and —
when the trace has a ground truth and labels are shown (``--labels``) — the ground truth
and the per-axis scores. With labels hidden nothing derived from the ground truth is
included. The terminal rendering is :func:`whenpro_core.cli.attribute.verdict_grid`."""

from __future__ import annotations

from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.score import score_prediction
from whenpro_core.views.traceview import shown_id, shown_ref


def verdict_record(trace: Trace, verdict: Attribution, tolerance: int = 0, *, labels: bool = True) -> JSONObject:
    """The verdict as JSON-ready data, with the ground truth and per-axis scores when a
    ground truth exists and ``labels`` is true (``whenpro attribute --labels``); without
    ``labels`` the id and reference are masked (:func:`~whenpro_core.views.traceview.shown_ref`)."""
    ref = trace.source.ref()
    rec = {
        "trace": shown_id(trace.id, labels),
        "ref": shown_ref(ref, labels) if ref else ref,
        "attribution": verdict.model_dump(mode="json"),
    }
    if labels and trace.ground_truth is not None:
        rec["score"] = score_prediction(trace, verdict, tolerance=tolerance).as_dict()
        rec["ground_truth"] = {
            k: v
            for k, v in trace.ground_truth.model_dump(mode="json").items()
            if k in ("agent", "agents", "step", "mode")
        }
    return rec
