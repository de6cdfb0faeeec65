"""The verdict panel of the detail pane (:class:`VerdictPanel`, ``#d-verdict``): the
verdicts of the trace side by side (one ◆ colour each), the current one in full — agent,
step, mode with its taxonomy name, reason, confidence, calls, tokens, cost, seconds,
warnings, and with labels shown its per-axis comparison with the ground truth — or, while
an attribution runs, its live progress. Presentation only: what it shows is set through
two reactives (:attr:`VerdictPanel.verdict`, :attr:`VerdictPanel.running`) by the trace
screen's :class:`~whenpro_tui.screens.trace_attribute.AttributionController`; the
comparison is :func:`whenpro_core.attribution.interactive.verdict_score`. Its CSS is here
(:attr:`VerdictPanel.DEFAULT_CSS`) and nowhere else."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from whenpro_core.attribution.interactive import ProgressView, verdict_score
from whenpro_core.attribution.request import AttributionRequest
from whenpro_core.safety.textsafe import clean, one_line, whole_sentences
from whenpro_core.trace.model import Attribution, GroundTruth, Trace, Usage
from whenpro_core.trace.taxonomy import Taxonomy

#: One colour per verdict (its ◆ in the step list and in the panel), by creation order.
VERDICT_COLOURS = ("#d787d7", "#5fd7ff", "#ffaf00", "#87d75f", "#ff8787", "#afafff", "#d7d75f", "#5fafaf")
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
#: Longest reason shown (characters); the rest is in the saved verdict.
REASON_CAP = 600
#: The reason on a short screen (80x24): about three lines, cut after a whole sentence.
SHORT_REASON_CAP = 200
WARNINGS_SHOWN = 3

OK = Style(color="#5fd787", bold=True)
BAD = Style(color="#ff5f5f", bold=True)
LABEL = Style(bold=True, color="#87afd7")
DIM = Style(dim=True)


def verdict_style(slot: int) -> Style:
    """The bold colour of verdict number ``slot`` (0-based)."""
    return Style(color=VERDICT_COLOURS[slot % len(VERDICT_COLOURS)], bold=True)


def verdict_label(verdict: Attribution) -> str:
    """``"heuristic"`` or ``"step-by-step · openai:gpt-4.1"`` (safe text)."""
    model = verdict.model or ""
    if not model or model == "heuristic" or model == verdict.protocol:
        return clean(verdict.protocol)
    return clean(f"{verdict.protocol} · {model}")


def usage_text(usage: Usage, *, seconds: float | None = None) -> str:
    """``"3 calls · 1,234 tokens (1,000 cached) · $0.0042 · 2.4 s"``."""
    tokens = usage.input_tokens + usage.output_tokens
    cached = f" ({usage.cached_tokens:,} cached)" if usage.cached_tokens else ""
    secs = usage.seconds if seconds is None else seconds
    calls = "1 call" if usage.calls == 1 else f"{usage.calls:,} calls"
    return f"{calls} · {tokens:,} tokens{cached} · ${usage.cost_usd:.4f} · {secs:.2f} s"


def _mark(ok: bool | None) -> Text:
    if ok is None:
        return Text(" –", style=DIM)
    return Text(" ✓", style=OK) if ok else Text(" ✗", style=BAD)


def render_verdict(
    trace: Trace,
    verdicts: list[Attribution],
    current: int,
    taxonomy: Taxonomy,
    *,
    show_labels: bool,
    note: str = "",
    reason_cap: int = REASON_CAP,
    compact: bool = False,
) -> Text:
    """The panel for ``verdicts[current]`` with the list of all verdicts; ``note`` says
    where the verdict is kept ("saved in trace.json.verdicts.jsonl"). The reason is
    cut after the last whole sentence within ``reason_cap`` characters; ``compact`` (short
    screens) puts the confidence and cost on the title line."""
    verdict = verdicts[current]
    out = _title(verdicts, current, compact=compact)
    out.append("\n")
    out.append(_answer_line(trace, verdict, taxonomy, show_labels=show_labels))
    if not compact:
        out.append("\n")
        out.append(_cost_line(verdict))
    out.append(_warnings(verdict))
    # the reason (and where the verdict is kept) last: on a short pane it is what gets
    # clipped (z zooms the pane)
    out.append("\n")
    out.append("reason ", style=LABEL)
    out.append(whole_sentences(verdict.reason or "—", reason_cap, more="… (z: the whole reason)"))
    if note:  # after the reason: on a short pane the reason matters more
        out.append("\n" + clean(note), style=DIM)
    return out


def _title(verdicts: list[Attribution], current: int, *, compact: bool) -> Text:
    """``◆ Verdict 2/3 · protocol · model · with gold   A: next`` and, with several
    verdicts, a second line listing them (the current one reversed)."""
    verdict = verdicts[current]
    style = verdict_style(current)
    out = Text()
    out.append("◆ ", style=style)
    out.append("Verdict", style="bold")
    if len(verdicts) > 1:
        out.append(f" {current + 1}/{len(verdicts)}", style="bold")
    out.append(f" · {verdict_label(verdict)}", style=style)
    out.append(" · with gold" if verdict.with_gold else " · without gold", style=DIM)
    out.append("   A: next" if current + 1 < len(verdicts) else "   A: hide", style=DIM)
    if compact:  # 80x24: confidence and cost on the title line, short
        out.append("  ")
        out.append(_cost_line(verdict, short=True))
    if len(verdicts) > 1:
        out.append("\n")
        for i, other in enumerate(verdicts):
            item = Text(f"◆{i + 1} {verdict_label(other)}", style=verdict_style(i))
            if i == current:
                item.stylize("reverse")
            out.append("  ")
            out.append(item)
    return out


def _answer_line(trace: Trace, verdict: Attribution, taxonomy: Taxonomy, *, show_labels: bool) -> Text:
    """``agent X ✓   step 3 ✗ (GT 4)   mode M ✓``: the answer, and with labels shown
    each axis compared with the ground truth (the GT after a miss; for the mode only
    after a wrong one, not an unknown one)."""
    score = verdict_score(trace, verdict) if show_labels else None
    marks = (score.agent, score.step, score.mode) if score is not None else None
    gt = _gt_answer(trace.ground_truth) if show_labels else None
    mode = clean(taxonomy.name(verdict.mode)) if verdict.mode else "—"
    answer = (clean(verdict.agent or "—"), clean(verdict.step or "—"), mode)
    out = Text()
    for axis, (label, value) in enumerate(zip(("agent ", "   step ", "   mode "), answer, strict=True)):
        out.append(label, style=LABEL)
        out.append(value, style="bold")
        if marks is None:
            continue
        out.append(_mark(marks[axis]))
        missed = marks[axis] is False if axis == 2 else not marks[axis]
        if missed and gt is not None:
            out.append(f" (GT {clean(gt[axis])})", style=DIM)
    if show_labels and trace.ground_truth is None:
        out.append("   (no ground truth to compare)", style=DIM)
    return out


def _gt_answer(gt: GroundTruth | None) -> tuple[str, str, str] | None:
    """The ground truth's agent(s), step and mode as shown after a miss."""
    if gt is None:
        return None
    return (gt.agent or ", ".join(gt.agents) or "—", gt.step or "—", gt.mode or "—")


def _warnings(verdict: Attribution) -> Text:
    """The first warnings, one line each, and how many more there are."""
    out = Text()
    for w in verdict.warnings[:WARNINGS_SHOWN]:
        out.append("\n")
        out.append("⚠ " + one_line(w, 200), style="#e5c07b")
    if len(verdict.warnings) > WARNINGS_SHOWN:
        out.append(f"\n⚠ +{len(verdict.warnings) - WARNINGS_SHOWN} more warnings", style="#e5c07b")
    return out


def _cost_line(verdict: Attribution, *, short: bool = False) -> Text:
    """``confidence 0.75  3 calls · 1,234 tokens · $0.0042 · 2.4 s`` (or offline);
    ``short``: ``conf 0.75 · $0.0042``."""
    out = Text()
    if verdict.confidence is not None:
        out.append("conf " if short else "confidence ", style=LABEL)
        out.append(f"{verdict.confidence:.2f}  ")
    if short:
        out.append("offline" if verdict.protocol == "heuristic" else f"${verdict.usage.cost_usd:.4f}", style=DIM)
    elif verdict.protocol == "heuristic":
        out.append(f"offline, no model calls · {verdict.usage.seconds:.2f} s", style=DIM)
    else:
        out.append(usage_text(verdict.usage), style=DIM)
    return out


def render_progress(
    request: AttributionRequest,
    view: ProgressView | None,
    usage: Usage | None,
    seconds: float,
    frame: int,
    retry_note: str | None = None,
) -> Text:
    """The panel while an attribution runs: spinner, what is asked, calls, tokens,
    cost and seconds so far, and ``retry_note`` while a failed call waits to be retried."""
    out = Text()
    out.append(SPINNER[frame % len(SPINNER)] + " ", style="bold #e5c07b")
    out.append("Attributing", style="bold")
    out.append(f" · {clean(request.label)}", style="bold #e5c07b")
    out.append(" · with gold" if request.with_gold else " · without gold", style=DIM)
    out.append("\n")
    if view is not None:
        out.append(clean(view.text))
        out.append(f"  (call {view.call})", style=DIM)
    elif request.model is None:
        out.append("reading the trace's own signals (offline)")
    else:
        out.append("opening the model…")
    out.append("  esc: cancel", style="bold")
    out.append("\n")
    if retry_note:
        out.append(f"⟳ {clean(retry_note)}\n", style="#e5c07b")
    out.append(usage_text(usage or Usage(), seconds=seconds), style=DIM)
    return out


# --------------------------------------------------------------------------- the widget


@dataclass(frozen=True)
class VerdictShown:
    """A verdict as the panel shows it: ``verdicts[current]`` of ``trace`` in full, the
    others in its list; ``note`` says where it is kept ("saved in whenpro's verdicts
    folder"); ``compact`` (a short screen, the pane not zoomed) cuts the reason to
    :data:`SHORT_REASON_CAP` characters and puts confidence and cost on the title line."""

    trace: Trace
    verdicts: tuple[Attribution, ...]
    current: int
    taxonomy: Taxonomy
    show_labels: bool
    note: str = ""
    compact: bool = False


@dataclass(frozen=True)
class AttributionRunning:
    """An attribution in flight as the panel shows it: the ``request``, where the protocol
    is (``view``; ``None`` before its first call), the ``usage`` so far, the ``seconds``
    since it started, the spinner ``frame`` and what a failed call waits for
    (``retry_note``)."""

    request: AttributionRequest
    view: ProgressView | None = None
    usage: Usage | None = None
    seconds: float = 0.0
    frame: int = 0
    retry_note: str | None = None


class VerdictPanel(Static):
    """The verdict slot under the step detail: hidden while :attr:`running` and
    :attr:`verdict` are both ``None``; the live progress while :attr:`running` is set;
    else the verdict. Setting either reactive repaints it (every time, even to an equal
    value: the seconds and spinner move on)."""

    DEFAULT_CSS = """
    VerdictPanel {
        display: none; height: auto; max-height: 50%; padding: 0 1 0 0;
        border-top: hkey $accent 60%; background: $boost;
    }
    /* short terminals (80x24): a verdict gets most of the detail pane */
    TraceScreen.short VerdictPanel { max-height: 80%; overflow-y: auto; scrollbar-size-vertical: 1; }
    """
    #: the CSS above names the screen the panel sits in (``TraceScreen.short``), so it is
    #: not scoped to the widget
    SCOPED_CSS = False

    #: the verdict shown when no attribution runs (``None``: none, or hidden with ``A``)
    verdict: reactive[VerdictShown | None] = reactive(None, always_update=True)
    #: the attribution in flight (``None``: none runs)
    running: reactive[AttributionRunning | None] = reactive(None, always_update=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)

    def watch_verdict(self) -> None:
        self._show()

    def watch_running(self) -> None:
        self._show()

    def _show(self) -> None:
        run = self.running
        if run is not None:  # no relayout per tick: only when it appears
            text = render_progress(run.request, run.view, run.usage, run.seconds, run.frame, run.retry_note)
            self.update(text, layout=self.display is False)
            self.display = True
            return
        shown = self.verdict
        if shown is None:
            self.display = False
            return
        self.update(
            render_verdict(
                shown.trace,
                list(shown.verdicts),
                shown.current,
                shown.taxonomy,
                show_labels=shown.show_labels,
                note=shown.note,
                reason_cap=SHORT_REASON_CAP if shown.compact else REASON_CAP,
                compact=shown.compact,
            )
        )
        self.display = True
