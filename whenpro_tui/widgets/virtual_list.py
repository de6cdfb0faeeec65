"""A virtual list: a ``ScrollView`` that renders only the rows on screen, one
``render_line`` call per visible line, with an LRU cache of rendered strips (the Line
API, as in Textualize/toolong's ``LogLines``).

Subclasses implement :meth:`VirtualList.render_row`; the base class owns the cursor,
scrolling, the cache and the messages. It handles a million rows as easily as ten: no
widget per row, no work proportional to the row count on a keypress.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip


class VirtualList(ScrollView, can_focus=True):
    """A cursor over ``row_count`` rows, rendered lazily.

    Messages:
        Highlighted: the cursor moved (coalesces: only the latest is handled).
        Selected: the user pressed enter or clicked the cursor row.
    """

    COMPONENT_CLASSES = {"vlist--cursor"}
    #: Navigation bindings. A subclass that leaves navigation to its screen declares
    #: itself with ``inherit_bindings=False`` and no BINDINGS.
    BINDINGS = [
        Binding("j,down", "cursor_down", "Next row", show=False),
        Binding("k,up", "cursor_up", "Previous row", show=False),
        Binding("g,home", "cursor_first", "First row", show=False),
        Binding("G,end", "cursor_last", "Last row", show=False),
        Binding("pagedown", "page_down_rows", "Page down", show=False),
        Binding("pageup", "page_up_rows", "Page up", show=False),
        Binding("enter", "select_row", "Open", show=True),
    ]
    DEFAULT_CSS = """
    VirtualList {
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        & > .vlist--cursor { background: $accent 40%; text-style: bold; }
        &:focus > .vlist--cursor { background: $accent 70%; }
    }
    """

    class Highlighted(Message):
        """The cursor moved to ``row``."""

        def __init__(self, vlist: VirtualList, row: int) -> None:
            super().__init__()
            self.vlist = vlist
            self.row = row

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, VirtualList.Highlighted) and message.vlist is self.vlist

        @property
        def control(self) -> VirtualList:
            return self.vlist

    class Selected(Message):
        """The user chose ``row`` (enter, or a click on the cursor row)."""

        def __init__(self, vlist: VirtualList, row: int) -> None:
            super().__init__()
            self.vlist = vlist
            self.row = row

        @property
        def control(self) -> VirtualList:
            return self.vlist

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None, cache_size: int = 2048
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._row_count = 0
        self._cursor = 0
        self._cache: LRUCache[tuple[int, int], Strip] = LRUCache(cache_size)
        self._cursor_style: Style | None = None
        self._base: Style | None = None

    # ------------------------------------------------------------------ subclass API

    def render_row(self, row: int, width: int) -> Strip:
        """The strip for ``row`` at ``width`` cells, without cursor styling. Called
        only for visible rows, and cached until :meth:`invalidate`."""
        raise NotImplementedError

    # ------------------------------------------------------------------ state

    @property
    def row_count(self) -> int:
        """Number of rows."""
        return self._row_count

    @property
    def cursor(self) -> int:
        """The cursor row (0 when empty)."""
        return self._cursor

    def set_row_count(self, count: int, *, cursor: int | None = None, announce: bool = True) -> None:
        """Change the number of rows (rows appended or the list replaced), optionally
        moving the cursor; clears the strip cache."""
        self._row_count = max(0, count)
        self._cache.clear()
        self.virtual_size = Size(self.size.width, self._row_count)
        target = self._cursor if cursor is None else cursor
        self._cursor = max(0, min(target, self._row_count - 1)) if self._row_count else 0
        self._scroll_cursor_into_view()
        self.refresh()
        if announce and self._row_count:
            self.post_message(self.Highlighted(self, self._cursor))

    def append_rows(self, count: int) -> None:
        """``count`` rows were appended: grow without clearing the cache or moving
        the cursor (streamed listings)."""
        was_empty = self._row_count == 0
        self._row_count += count
        self.virtual_size = Size(self.size.width, self._row_count)
        self.refresh()
        if was_empty and self._row_count:
            self.post_message(self.Highlighted(self, 0))

    def invalidate(self) -> None:
        """Drop every cached strip (the row content or styling changed)."""
        self._cache.clear()
        self.refresh()

    def invalidate_row(self, row: int) -> None:
        """Drop the cached strip of one row and repaint it."""
        # LRUCache has no __iter__ (iterating it would index it by 0, 1, ...): .keys() is needed
        for key in [k for k in self._cache.keys() if k[0] == row]:  # noqa: SIM118
            self._cache.discard(key)
        self.refresh_line(row)

    def move_cursor(self, row: int, *, center: bool = False) -> None:
        """Move the cursor to ``row`` (clamped), repaint the two rows involved,
        scroll it into view and post :class:`Highlighted`. A row off screen is brought
        to mid-view; ``center`` also re-centres a row at the very edge (jumps)."""
        if not self._row_count:
            return
        row = max(0, min(row, self._row_count - 1))
        old = self._cursor
        self._cursor = row
        if old != row:
            self.refresh_line(old)
        self.refresh_line(row)
        self._scroll_cursor_into_view(center=center)
        self.post_message(self.Highlighted(self, row))

    def _scroll_cursor_into_view(self, center: bool = False) -> None:
        height = self.scrollable_content_region.height or self.size.height
        if height <= 0:
            return
        top = round(self.scroll_y)
        row = self._cursor
        if top <= row < top + height and not (center and not top + 2 <= row < top + height - 2):
            return
        # Leaving the view: jump so the cursor sits mid-view (or centre it on request).
        # Stepping past the edge then repaints the whole list once per half page
        # instead of on every key, which keeps key-repeat cheap on huge lists.
        self.scroll_to(y=max(0, row - height // 2), animate=False, immediate=True)

    # ------------------------------------------------------------------ rendering

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cursor_style = None
        self._base = None
        self._cache.clear()

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, self._row_count)
        self._cache.clear()
        self._scroll_cursor_into_view()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        row = round(self.scroll_y) + y
        if self._base is None:
            self._base = self.rich_style
        base = self._base
        if row >= self._row_count or row < 0:
            return Strip.blank(width, base)
        key = (row, width)
        strip = self._cache.get(key)
        if strip is None:
            strip = self.render_row(row, width).adjust_cell_length(width)
            strip = Strip([Segment(t, base + s if s else base, c) for t, s, c in strip], width)
            self._cache[key] = strip
        if row == self._cursor:
            if self._cursor_style is None:
                self._cursor_style = self.get_component_rich_style("vlist--cursor")
            cursor = self._cursor_style
            strip = Strip(
                [Segment(t, (s or Style()) + Style(bgcolor=cursor.bgcolor, bold=cursor.bold), c) for t, s, c in strip],
                width,
            )
        return strip

    # ------------------------------------------------------------------ actions

    def action_cursor_down(self) -> None:
        self.move_cursor(self._cursor + 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self._cursor - 1)

    def action_cursor_first(self) -> None:
        self.move_cursor(0)

    def action_cursor_last(self) -> None:
        self.move_cursor(self._row_count - 1)

    def action_page_down_rows(self) -> None:
        self.move_cursor(self._cursor + max(1, self.scrollable_content_region.height - 1))

    def action_page_up_rows(self) -> None:
        self.move_cursor(self._cursor - max(1, self.scrollable_content_region.height - 1))

    def action_select_row(self) -> None:
        if self._row_count:
            self.post_message(self.Selected(self, self._cursor))

    def on_click(self, event: events.Click) -> None:
        row = round(self.scroll_y) + event.y - self.gutter.top
        if 0 <= row < self._row_count:
            if row == self._cursor and event.chain >= 2:
                self.post_message(self.Selected(self, row))
            self.move_cursor(row)
