"""The waterfall (``w`` on the trace screen): the run as a tree with time. Steps nested by
parent (OpenTelemetry spans, Claude Code sub-agents, tool results under their call), a bar
per step from its start for its duration, its tokens and cost, and the totals per agent and
per tool below. ``e`` shows only steps with an error, ``o`` steps of one tool (each press
the next tool), enter goes to the step on the trace screen, ``w``/``q``/``escape`` go back.

Everything shown comes from :func:`whenpro_core.views.waterfall.waterfall`."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from whenpro_core.safety.textsafe import clean, compact, plural
from whenpro_core.trace.model import Trace
from whenpro_core.views.traceview import agent_slots
from whenpro_core.views.waterfall import Rollup, Waterfall, seconds_text, waterfall
from whenpro_tui.screens.leaving import LEAVE_BINDINGS, Leaving
from whenpro_tui.widgets.footer import FittedFooter
from whenpro_tui.widgets.palette import AGENT_COLOURS
from whenpro_tui.widgets.virtual_list import VirtualList
from whenpro_tui.widgets.waterfall_list import NUMBERS, WaterfallList

#: Roll-up lines shown per kind (agents, tools).
ROLLUP_LINES = 4


def rollup_line(kind: str, rollups: list[Rollup]) -> str:
    """``agents: claude 217 steps · 52m10s · 49.7K tok · $— · 12 err; ...`` (the first few)."""
    if not rollups:
        return f"{kind}: none"
    parts = []
    for r in rollups[:ROLLUP_LINES]:
        tokens = "— tok" if r.tokens is None else f"{compact(r.tokens)} tok"
        cost = "$—" if r.cost_usd is None else f"${r.cost_usd:.4f}"
        err = f" · {r.errors} err" if r.errors else ""
        parts.append(f"{clean(r.name)} {plural(r.steps, 'step')} · {seconds_text(r.seconds)} · {tokens} · {cost}{err}")
    more = f" (+{len(rollups) - ROLLUP_LINES} more)" if len(rollups) > ROLLUP_LINES else ""
    return f"{kind}: " + "; ".join(parts) + more


class WaterfallScreen(Leaving, Screen[int | None]):
    """See the module docstring. Dismisses with the chosen step's index, or ``None``."""

    BINDINGS = [
        Binding("e", "errors_only", "Errors only"),
        Binding("o", "next_tool", "By tool"),
        Binding("w", "back", "Back to steps"),
        *LEAVE_BINDINGS,
    ]
    DEFAULT_CSS = """
    WaterfallScreen #wf-title { height: 1; text-style: bold; padding: 0 1; }
    WaterfallScreen #wf-columns { height: 1; color: $text-muted; text-style: bold; padding: 0 1; }
    WaterfallScreen WaterfallList { height: 1fr; padding: 0 1; }
    WaterfallScreen #wf-rollup { height: 2; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, trace: Trace) -> None:
        super().__init__()
        self.trace = trace
        self.waterfall: Waterfall = waterfall(trace)
        self.errors_only = False
        self.tool: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="wf-title", markup=False)
        yield Static(id="wf-columns", markup=False)
        yield WaterfallList(id="wf-rows")
        yield Static(id="wf-rollup", markup=False)
        yield FittedFooter()

    def on_mount(self) -> None:
        self._refresh_rows()
        self.query_one(WaterfallList).focus()

    def on_resize(self) -> None:
        self._columns_line()

    def _refresh_rows(self) -> None:
        rows = self.waterfall.filtered(self.trace, errors_only=self.errors_only, tool=self.tool)
        slots = agent_slots(self.trace.agent_ids(), len(AGENT_COLOURS))
        self.query_one(WaterfallList).show(self.trace, rows, self.waterfall.span_s, slots)
        shown = "errors only" if self.errors_only else "all steps"
        if self.tool is not None:
            shown += f" · tool {clean(self.tool)}"
        span = "no times recorded" if self.waterfall.span_s is None else f"run {seconds_text(self.waterfall.span_s)}"
        depth = max((r.depth for r in self.waterfall.rows), default=0)
        title = f"Waterfall · {plural(len(rows), 'step')} ({shown}) · {span} · {depth + 1} levels"
        self.query_one("#wf-title", Static).update(Text(title))
        width = max(10, self.app.size.width - 2)
        lines = [rollup_line("agents", self.waterfall.agents), rollup_line("tools", self.waterfall.tools)]
        cut = [line if len(line) <= width else line[: width - 1] + "…" for line in lines]  # one line each
        self.query_one("#wf-rollup", Static).update(Text("\n".join(cut)))
        self._columns_line()

    def _columns_line(self) -> None:
        rows = self.query_one(WaterfallList)
        width = rows.size.width or self.app.size.width - 2
        label_w = rows.label_width(width)
        bar_w = max(0, width - label_w - NUMBERS - 3)
        numbers = f"{'dur':>7} {'tokens':>6} {'cost $':>7}"
        line = "step agent kind".ljust(label_w) + " " + "time →".ljust(bar_w) + " " + numbers
        self.query_one("#wf-columns", Static).update(Text(line))

    def action_errors_only(self) -> None:
        self.errors_only = not self.errors_only
        self._refresh_rows()

    def action_next_tool(self) -> None:
        names = [r.name for r in self.waterfall.tools]
        if not names:
            self.notify("No step of this trace calls a tool.")
            return
        at = names.index(self.tool) + 1 if self.tool in names else 0
        self.tool = names[at] if at < len(names) else None
        self._refresh_rows()

    @on(VirtualList.Selected, "#wf-rows")
    def _go(self, _event: VirtualList.Selected) -> None:
        row = self.query_one(WaterfallList).current
        self.dismiss(row.index if row is not None else None)

    def action_back(self) -> None:
        self.dismiss(None)
