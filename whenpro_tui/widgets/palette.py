"""Colours the TUI gives to agents, outcomes and markers (presentation only)."""

from __future__ import annotations

from rich.style import Style

#: Agent colours, readable on dark and light backgrounds; indexed by the slots of
#: :func:`whenpro_core.views.traceview.agent_slots`.
AGENT_COLOURS = (
    "#5fafff",
    "#ffaf5f",
    "#5fd787",
    "#d787d7",
    "#e5c07b",
    "#56b6c2",
    "#ff8787",
    "#afafff",
    "#d7af87",
    "#87afaf",
    "#afd75f",
    "#ff87af",
)

OUTCOME_STYLES = {
    "success": Style(color="#5fd787", bold=True),
    "failure": Style(color="#ff5f5f", bold=True),
    "unknown": Style(color="#a0a0a0", bold=True),
}

MARKER_STYLES = {
    "✗": Style(color="#ff5f5f", bold=True),
    "▣": Style(color="#56b6c2"),
    "▶": Style(color="#56b6c2"),
    "◆": Style(color="#d787d7", bold=True),
    "⚑": Style(color="#ffaf5f", bold=True),
    "★": Style(color="#ffd700", bold=True),
}


def agent_style(slot: int | None) -> Style:
    """The style of an agent's name for its colour slot (bold, no background)."""
    if slot is None:
        return Style(bold=True)
    return Style(color=AGENT_COLOURS[slot % len(AGENT_COLOURS)], bold=True)
