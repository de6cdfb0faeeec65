"""``q`` and ``escape`` on full screens, the same everywhere.

* ``escape`` closes what is open on the screen (a zoomed pane, the task in full),
  cancels running work (screens bind that first, e.g. a running attribution) and leaves
  a sub-screen, but **never quits the app**: on the first screen it only says that
  ``q`` quits.
* ``q`` leaves the screen; on the first screen (``is_root``) it quits. The footer says
  which ("Back" or "Quit").

Mix :class:`Leaving` into a screen before ``Screen``, add :data:`LEAVE_BINDINGS` to its
bindings, define ``action_back`` (what ``q`` does) and, when the screen has something
to close first, :meth:`Leaving.close_local`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.binding import Binding

if TYPE_CHECKING:
    from textual.screen import Screen

    _ScreenPart = Screen[Any]  # the type checker sees the host screen
else:
    _ScreenPart = object  # at run time a plain mixin

#: ``q`` (one of the two shows, by ``is_root``) and ``escape``.
LEAVE_BINDINGS = [
    Binding("q", "back", "Back"),
    Binding("q", "quit_here", "Quit"),
    Binding("escape", "escape", "Close / back (never quits)", show=False),
]


class Leaving(_ScreenPart):
    """The ``q``/``escape`` behaviour (see module docstring)."""

    is_root: bool = False

    if TYPE_CHECKING:

        def action_back(self) -> None:
            """What ``q`` does (every screen defines it)."""

    def close_local(self) -> bool:
        """Close something open on this screen; True when something was closed (then
        ``escape`` does nothing more). Screens override it."""
        return False

    def action_escape(self) -> None:
        if self.close_local():
            return
        if self.is_root:
            self.notify("Esc never quits: press q to quit.", timeout=3)
            return
        self.action_back()

    def action_quit_here(self) -> None:
        """``q`` on the first screen: ``action_back`` quits there."""
        self.action_back()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # one q binding shows: "Quit" on the first screen, "Back" elsewhere
        if action == "back":
            return not self.is_root
        if action == "quit_here":
            return bool(self.is_root)
        return super().check_action(action, parameters)
