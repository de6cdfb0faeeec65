"""A horizontal strip of thumbnails with captions (images of a step, or a keyframe
strip with timestamps), with a cursor: ``←``/``→`` move it, ``enter`` or a click opens
the item full size, ``escape`` gives focus back to the step list.

The strip composes a fixed pool of tiles once; showing another step updates the tiles
in place (their image, caption and width), never re-mounts them. Images arrive
already decoded (Pillow) from a thread worker: nothing is decoded here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import HorizontalScroll, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from whenpro_tui import imaging

#: Narrowest and widest tile, in cells.
MIN_TILE = 16
MAX_TILE = 44


@dataclass
class Entry:
    """One item of a strip.

    Attributes:
        label: caption line 1 (safe text).
        detail: caption line 2: size (``900×532 · 61 KB``) or timestamp.
        image: the decoded thumbnail (Pillow), ``None`` while loading or on error.
        error: a short error for the tile (the full line goes under the strip).
        ref: the MediaRef to load full size in the modal (images, trace frames).
        jpeg: image bytes to show full size instead (video keyframes).
        loading: still waiting for the worker.
        name: the full name shown as the modal's title (default: ``label``).
    """

    label: str
    detail: str = ""
    image: Any = None
    error: str | None = None
    ref: Any = None
    jpeg: bytes | None = None
    loading: bool = True
    name: str = ""

    @property
    def title(self) -> str:
        """The modal's title for this entry."""
        return self.name or self.label


def tile_width(image: Any, rows: int, mode: str) -> int:
    """Cells a thumbnail ``rows`` high needs for its aspect ratio (clamped to
    :data:`MIN_TILE`..:data:`MAX_TILE`)."""
    if image is None or not image.height:
        return MIN_TILE + 2
    cw, ch = (1, 2) if mode == "halfcell" else imaging.cell_size()
    width = round(rows * ch * image.width / image.height / cw)
    return max(MIN_TILE, min(MAX_TILE, width))


def fit_rows(
    rows: int, entries: list[Entry], width: int, mode: str, *, visible: int = 6, floor: int = 5, aspect: float = 16 / 9
) -> int:
    """Thumbnail height for a strip of ``entries`` in ``width`` cells: at most ``rows``,
    lowered (not below ``floor``) so that up to ``visible`` tiles fit side by side.
    The aspect ratio is the widest loaded image's (``aspect`` before any has loaded)."""
    if not entries or width <= 0:
        return rows
    aspects = [e.image.width / e.image.height for e in entries if e.image is not None and e.image.height]
    aspect = max(aspects) if aspects else aspect
    cw, ch = (1, 2) if mode == "halfcell" else imaging.cell_size()
    per_tile = width / min(len(entries), visible) - 1  # a tile and its margin
    fit = int(per_tile * cw / (ch * aspect))
    return max(min(rows, floor), min(rows, fit))


class Tile(Vertical):
    """One thumbnail: the image (or a loading / error message) over a two-line caption."""

    DEFAULT_CSS = """
    Tile { width: 16; height: auto; margin-right: 1; }
    Tile > .t-img { width: auto; height: 4; }
    Tile > .t-msg { width: 100%; height: 4; display: none; color: $text-muted; }
    Tile > .t-cap { width: 100%; height: 2; text-wrap: nowrap; text-overflow: ellipsis; }
    Tile.-msg > .t-img { display: none; }
    Tile.-msg > .t-msg { display: block; }
    Tile.-error > .t-msg { color: $error; }
    """

    def __init__(self, slot: int, mode: str) -> None:
        super().__init__(classes="tile")
        self.slot = slot
        self.mode = mode

    def compose(self) -> ComposeResult:
        yield imaging.image_widget(self.mode, classes="t-img")
        yield Static(classes="t-msg", markup=False)
        yield Static(classes="t-cap", markup=False)

    def show(self, entry: Entry, rows: int) -> None:
        """Show ``entry`` with an image ``rows`` cells high."""
        img = self.query_one(".t-img")
        msg = self.query_one(".t-msg", Static)
        width = tile_width(entry.image, rows, self.mode)
        if self.styles.width is None or self.styles.width.value != width:
            self.styles.width = width
        if img.styles.height is None or img.styles.height.value != rows:
            img.styles.height = rows
            msg.styles.height = rows
        if entry.image is not None:
            if imaging.shown_image(img) is not entry.image:
                imaging.show_image(img, entry.image)
            self.set_class(False, "-msg", "-error")
        else:
            if imaging.shown_image(img) is not None:
                imaging.show_image(img, None)
            msg.update(Text(entry.error or "loading…"))
            self.set_class(True, "-msg")
            self.set_class(entry.error is not None, "-error")
        cap = Text(entry.label, style="bold")
        if entry.detail:
            cap.append("\n" + entry.detail, style="dim")
        self.query_one(".t-cap", Static).update(cap)

    def on_click(self, event: events.Click) -> None:
        strip = self.parent
        while strip is not None and not isinstance(strip, ThumbStrip):
            strip = strip.parent
        if isinstance(strip, ThumbStrip):
            event.stop()
            strip.cursor = self.slot
            strip.post_message(ThumbStrip.Chosen(strip, self.slot))


class ThumbStrip(HorizontalScroll, can_focus=True):
    """A row of up to ``pool`` tiles (see module docstring)."""

    BINDINGS = [
        Binding("left,h", "move(-1)", "Previous frame", show=False),
        Binding("right,l", "move(1)", "Next frame", show=False),
        Binding("home", "move(-1000000)", "First frame", show=False),
        Binding("end", "move(1000000)", "Last frame", show=False),
        Binding("enter,space", "choose", "Open full size", show=False),
        Binding("escape", "leave", "Back to the steps", show=False),
    ]
    DEFAULT_CSS = """
    ThumbStrip {
        height: auto; scrollbar-size-horizontal: 1; overflow-y: hidden;
        &:focus { background: $boost; }
        &:focus Tile.-cursor > .t-cap { background: $accent; color: $text; }
    }
    """

    cursor: reactive[int] = reactive(0, init=False)

    class Chosen(Message):
        """An item was clicked or chosen with enter: open it full size."""

        def __init__(self, strip: ThumbStrip, index: int) -> None:
            super().__init__()
            self.strip = strip
            self.index = index

        @property
        def control(self) -> ThumbStrip:
            return self.strip

    class Leave(Message):
        """Escape on the strip: give the focus back."""

        def __init__(self, strip: ThumbStrip) -> None:
            super().__init__()
            self.strip = strip

    def __init__(self, pool: int, mode: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pool = pool
        self.mode = mode
        self.entries: list[Entry] = []
        self.rows = 4

    def compose(self) -> ComposeResult:
        for slot in range(self.pool):
            tile = Tile(slot, self.mode)
            tile.display = False
            yield tile

    @property
    def tiles(self) -> list[Tile]:
        return list(self.query_children(Tile))

    @property
    def shown(self) -> int:
        """Tiles in use (at most ``pool``)."""
        return min(len(self.entries), self.pool)

    def set_entries(self, entries: list[Entry], rows: int) -> None:
        """Show ``entries`` (the first ``pool`` of them) with images ``rows`` high."""
        self.entries = entries
        self.rows = rows
        for slot, tile in enumerate(self.tiles):
            if slot < len(entries):
                tile.show(entries[slot], rows)
                if not tile.display:
                    tile.display = True
            elif tile.display:
                tile.display = False
        self.cursor = min(self.cursor, max(0, self.shown - 1))
        self._mark_cursor()
        self.scroll_to(0, 0, animate=False, immediate=True)

    def update_entry(self, slot: int) -> None:
        """Repaint tile ``slot`` after its entry changed."""
        if slot < self.shown:
            self.tiles[slot].show(self.entries[slot], self.rows)

    def set_rows(self, rows: int) -> None:
        """Change the thumbnail height of every shown tile."""
        if rows != self.rows:
            self.set_entries(self.entries, rows)

    def watch_cursor(self) -> None:
        self._mark_cursor()

    def _mark_cursor(self) -> None:
        for slot, tile in enumerate(self.tiles):
            tile.set_class(slot == self.cursor and slot < self.shown, "-cursor")
        if self.cursor < self.shown:
            self.scroll_to_widget(self.tiles[self.cursor], animate=False, immediate=True)

    def action_move(self, delta: int) -> None:
        if self.shown:
            self.cursor = max(0, min(self.shown - 1, self.cursor + delta))

    def action_choose(self) -> None:
        if self.shown:
            self.post_message(self.Chosen(self, self.cursor))

    def action_leave(self) -> None:
        self.post_message(self.Leave(self))
