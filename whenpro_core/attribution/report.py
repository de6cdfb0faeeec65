"""Show a verdict in the terminal (``whenpro attribute``): agent, step, mode with its
name, reason, confidence, calls, tokens, cost, seconds, and — when the trace has a
ground truth and labels are shown (``--labels``) — the ground truth and whether each
axis matched. With labels hidden nothing derived from the ground truth is printed."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from whenpro_core.bench.score import score_prediction
from whenpro_core.safety.textsafe import clean
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.taxonomy import Taxonomy


def verdict_record(trace: Trace, verdict: Attribution, tolerance: int = 0, *, labels: bool = True) -> JSONObject:
    """The verdict as JSON-ready data, with the ground truth and per-axis scores when a
    ground truth exists and ``labels`` is true (``whenpro attribute --labels``)."""
    rec = {"trace": trace.id, "ref": trace.source.ref(), "attribution": verdict.model_dump(mode="json")}
    if labels and trace.ground_truth is not None:
        rec["score"] = score_prediction(trace, verdict, tolerance=tolerance).as_dict()
        rec["ground_truth"] = {
            k: v
            for k, v in trace.ground_truth.model_dump(mode="json").items()
            if k in ("agent", "agents", "step", "mode")
        }
    return rec


def print_verdict(
    trace: Trace, verdict: Attribution, taxonomy: Taxonomy, console: Console | None = None, *, labels: bool = True
) -> None:
    """A Rich summary of ``verdict``; the ground truth and the ✓/✗ marks only when
    ``labels`` is true."""
    console = console or Console()
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold cyan", no_wrap=True)
    grid.add_column(overflow="fold")
    gt = trace.ground_truth if labels else None
    scored = score_prediction(trace, verdict) if gt else None

    def mark(ok: bool | None) -> Text:
        if ok is None:
            return Text("")
        return Text("  ✓ matches ground truth", style="green") if ok else Text("  ✗ differs", style="red")

    grid.add_row("trace", Text(clean(trace.id)))
    used = (
        verdict.protocol if verdict.model in (None, "", verdict.protocol) else f"{verdict.protocol} · {verdict.model}"
    )  # the heuristic is its own model
    grid.add_row("protocol", Text(clean(used) + ("" if verdict.with_gold else " · without gold answer")))
    grid.add_row("agent", Text(clean(verdict.agent) or "—") + mark(scored.agent if scored else None))
    grid.add_row("step", Text(clean(verdict.step) or "—") + mark(scored.step if scored else None))
    grid.add_row("mode", Text(clean(taxonomy.name(verdict.mode))) + mark(scored.mode if scored else None))
    grid.add_row("reason", Text(clean(verdict.reason) or "—"))
    if verdict.confidence is not None:
        grid.add_row("confidence", f"{verdict.confidence:.2f}")
    u = verdict.usage
    grid.add_row(
        "cost",
        Text(
            f"{u.calls} calls · {u.input_tokens:,} in / {u.output_tokens:,} out"
            f" ({u.cached_tokens:,} cached) tokens · ${u.cost_usd:.4f} · {u.seconds:.2f} s"
        ),
    )
    if verdict.spent.calls != u.calls:
        s = verdict.spent
        grid.add_row(
            "spent",
            Text(
                f"{s.calls} new calls · ${s.cost_usd:.4f} (the other "
                f"{u.calls - s.calls} answers came from the response cache)"
            ),
        )
    if gt:
        who = gt.agent or ", ".join(gt.agents) or "—"
        grid.add_row("ground truth", Text(clean(f"agent {who}, step {gt.step or '—'}, mode {taxonomy.name(gt.mode)}")))
    for w in dict.fromkeys(verdict.warnings):
        grid.add_row("warning", Text(clean(w), style="yellow"))
    console.print(grid)
