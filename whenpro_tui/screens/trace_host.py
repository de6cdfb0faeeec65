"""The typed host of the trace screen's parts.

:class:`~whenpro_tui.screens.trace.TraceScreen` is put together from parts, one file
each: finding steps (:mod:`.trace_find`), media (:mod:`.trace_media`) and injection
(:mod:`.trace_inject`); attribution is a controller the screen owns
(:mod:`.trace_attribute`), typed against the same host. The parts read the
state the screen shares and call each other through the screen. :class:`TraceHost`
declares that shared state and those calls once, with their types; each part is a
:class:`TracePart`, which the type checker sees as a screen with that state, and the
screen implements it (``mypy`` checks that it does).

At run time :class:`TracePart` is a plain ``object`` base: the parts add methods to the
screen and nothing else (no Textual type names, handlers or bindings of their own).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from textual.screen import Screen

    from whenpro_core.trace.model import Trace
    from whenpro_core.views.search import SearchResult, StepFilter
    from whenpro_core.views.traceview import TraceHeader
    from whenpro_tui.widgets.step_list import StepList


class TraceHost(Protocol):
    """What the parts of the trace screen share (see module docstring)."""

    #: the trace shown
    trace: Trace
    #: the sibling traces ``[``/``]`` move through (``path#key`` refs), and this one's place
    trace_refs: list[str]
    position: int | None
    #: the first screen of the app (``q`` quits there)
    is_root: bool
    #: the step filter (``f``) and the last search (``/``; ``None``: none or cleared)
    step_filter: StepFilter
    search: SearchResult | None = None
    #: how far each step's detail is unfolded (``o``), by step index
    levels: dict[int, int]
    #: the header's model and the colour slot of each agent
    header_model: TraceHeader
    slots: dict[str, int]

    @property
    def steps(self) -> StepList:
        """The step list."""
        ...

    @property
    def show_labels(self) -> bool:
        """Ground-truth labels are shown (the app's setting, ``t``)."""
        ...

    def take_count(self, default: int = 1) -> int:
        """The count typed before the key handled now (``5j``), used once."""
        ...

    def _go_to_step(self, idx: int, *, center: bool = True) -> None:
        """Move the cursor to step ``idx`` (clearing a filter that hides it)."""
        ...

    def _show_current(self) -> None:
        """Show the step under the cursor in the detail pane now."""
        ...

    def _update_status(self) -> None:
        """Repaint the status line under the step list."""
        ...

    def show_media(self, idx: int | None) -> None:
        """Fill the media panel for step ``idx`` (media)."""
        ...

    def media_resized(self) -> None:
        """Refit the thumbnails after a resize (media)."""
        ...


if TYPE_CHECKING:

    class TracePart(Screen[int | None], TraceHost):
        """A part of the trace screen as the type checker sees it."""

else:
    TracePart = object
