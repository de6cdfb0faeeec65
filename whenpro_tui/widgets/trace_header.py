"""The header of the trace screen: identity and outcome, the task (folded to one line
until ``W``), gold and final answers, the ground truth (only while labels are shown) and
the agent legend with per-agent step counts.

Built from :class:`whenpro_core.views.traceview.TraceHeader`; updated in place.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from whenpro_core.safety.textsafe import plural
from whenpro_core.views.traceview import TraceHeader, unlabelled_id
from whenpro_tui.widgets.palette import MARKER_STYLES, OUTCOME_STYLES, agent_style

#: Characters of the task shown when it is expanded.
TASK_EXPANDED_CAP = 4_000


class TraceHeaderView(Vertical):
    """Header pane (see module docstring)."""

    DEFAULT_CSS = """
    TraceHeaderView {
        height: auto;
        max-height: 50%;
        padding: 0 1;
        background: $boost;
        & > Static { height: auto; width: 1fr; }
        & > .nowrap { text-wrap: nowrap; text-overflow: ellipsis; }
        & > #h-task.expanded { max-height: 12; overflow-y: auto; text-wrap: wrap; }
        & > #h-gt { color: $warning; }
    }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="h-title", classes="nowrap", markup=False)
        yield Static(id="h-task", classes="nowrap", markup=False)
        yield Static(id="h-answers", classes="nowrap", markup=False)
        yield Static(id="h-gt", classes="nowrap", markup=False)
        yield Static(id="h-agents", markup=False)

    def show(
        self, header: TraceHeader, slots: dict[str, int], *, show_labels: bool, task_expanded: bool, position: str = ""
    ) -> None:
        """Render ``header``; ``position`` is e.g. ``"trace 3/58"`` when the trace is
        one of several."""
        title = Text()
        title.append(header.id if show_labels else unlabelled_id(header.id), style="bold")
        title.append("  ")
        title.append(header.outcome, style=OUTCOME_STYLES.get(header.outcome))
        if position:
            title.append(f"  {position}", style="bold")
        meta = [header.framework, header.benchmark or "—", header.modality, plural(header.steps, "step")]
        if header.usage:
            meta.append(header.usage)
        title.append("  " + " · ".join(meta), style="dim")
        self.query_one("#h-title", Static).update(title)

        task = self.query_one("#h-task", Static)
        task.set_class(task_expanded, "expanded")
        task.set_class(not task_expanded, "nowrap")
        label = Text("Task: ", style="bold")
        if task_expanded:
            body = header.task[:TASK_EXPANDED_CAP]
            if len(header.task) > TASK_EXPANDED_CAP:
                body += "…"
            task.update(label + Text(body))
        else:
            first = " ".join(header.task[:1000].split())
            task.update(label + Text(first or "—"))

        answers = Text()
        answers.append("Gold: ", style="bold")
        answers.append(" ".join((header.gold or "—").split())[:300])
        answers.append("   Final: ", style="bold")
        answers.append(" ".join((header.final or "—").split())[:300])
        for score in header.scores:  # the log's scorer verdicts and explanations
            answers.append("   Score: ", style="bold")
            answers.append(score)
        self.query_one("#h-answers", Static).update(answers)

        gt = self.query_one("#h-gt", Static)
        if show_labels:
            if header.gt is None:
                gt.update(Text("GT: this trace carries no ground-truth label", style="dim"))
            else:
                line = Text()
                line.append("★ ", style=MARKER_STYLES["★"])
                line.append(header.gt.line(), style="bold")
                if header.gt.reason:
                    line.append("  " + " ".join(header.gt.reason.split()), style="dim")
                gt.update(line)
            gt.display = True
        else:
            gt.display = False

        legend = Text(no_wrap=False)
        for agent, count in header.agents:
            legend.append("■ ", style=agent_style(slots.get(agent)))
            legend.append(agent, style=agent_style(slots.get(agent)))
            legend.append(f" {count}  ", style="dim")
        self.query_one("#h-agents", Static).update(legend)
