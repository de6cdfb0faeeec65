"""The key footer of every whenpro screen, fitted to the terminal width.

At 80 columns Textual's footer cuts off its last keys (``q Quit`` among them). This one
drops the padding around keys below :data:`COMPACT_BELOW` columns and the ``^p palette``
hint below :data:`PALETTE_HINT_BELOW`, so the keys a person needs stay on screen.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Footer

#: Terminal widths (cells) under which the footer tightens.
COMPACT_BELOW = 120
PALETTE_HINT_BELOW = 100


class FittedFooter(Footer):
    """A :class:`~textual.widgets.Footer` that tightens on narrow terminals."""

    def on_resize(self, event: events.Resize) -> None:
        width = event.size.width
        self.compact = width < COMPACT_BELOW
        self.show_command_palette = width >= PALETTE_HINT_BELOW
