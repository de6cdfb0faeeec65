"""Count prefixes as in vim and less: ``5j`` moves five steps, ``3n`` goes to the third
next match, ``12G`` goes to row 12.

A mixin for screens whose movement actions take a count. Digits typed on the screen
accumulate (``0`` only after another digit) and are not passed on; the next key takes
the count with it, so an action bound to that key reads it with :meth:`take_count`.
Any other key drops a count it does not use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events

if TYPE_CHECKING:
    from textual.screen import Screen

    _ScreenPart = Screen[Any]  # the type checker sees the host screen
else:
    _ScreenPart = object  # at run time a plain mixin

#: Counts above this are clamped (a held digit key must not build a huge number).
MAX_COUNT = 100_000


class CountPrefix(_ScreenPart):
    """Digit prefixes for the movement actions of a screen (see module docstring)."""

    _typing_count: int = 0
    #: the count the key being handled now carries (0: none)
    _key_count: int = 0

    def count_key(self, event: events.Key) -> None:
        """Take a digit of a count, or hand the count typed so far to the key now handled
        (the host screen's ``on_key`` calls this)."""
        if not self.is_current:
            return  # keys typed ahead into a prompt that is opening
        char = event.character or ""
        if len(char) == 1 and char.isdigit() and (char != "0" or self._typing_count):
            event.stop()
            self._typing_count = min(MAX_COUNT, self._typing_count * 10 + int(char))
            self.count_changed(self._typing_count)
            return
        self._key_count, had = self._typing_count, self._typing_count
        self._typing_count = 0
        if had:
            self.count_changed(0)

    def take_count(self, default: int = 1) -> int:
        """The count typed before the key now handled (``default`` when none), used once."""
        count, self._key_count = self._key_count, 0
        return count or default

    def has_count(self) -> bool:
        """Was a count typed before the key now handled?"""
        return bool(self._key_count)

    def count_changed(self, count: int) -> None:
        """Hook: the count being typed is now ``count`` (0 when it was used or dropped)."""
