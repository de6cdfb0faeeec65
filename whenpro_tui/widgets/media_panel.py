"""The media part of the step detail pane (``#d-media-panel``, tuimedia): the step's
images as thumbnails with labels and sizes, and a strip of video frames with
timestamps — frames the trace references, or the keyframes of a video file — with one
red line per item that could not be shown.

Composed once (two :class:`~whenpro_tui.widgets.media_strip.ThumbStrip` pools);
:class:`whenpro_tui.screens.trace_media.MediaViewing` fills it from thread workers.
Hidden when the step has no media; absent with ``--images off`` (the phase-1 text
placeholders stay then).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from whenpro_tui.widgets.media_strip import Entry, ThumbStrip, fit_rows

#: Tiles per strip; more items are reachable in the full-size modal.
POOL = 12


def panel_enabled(app: object) -> bool:
    """True unless the app runs with ``--images off``."""
    return getattr(app, "images", "off") != "off"


class MediaPanel(Vertical):
    """Thumbnails, keyframe strip and error lines (see module docstring)."""

    DEFAULT_CSS = """
    MediaPanel {
        height: auto; max-height: 75%; /* trace_media._thumb_rows assumes this cap */
        overflow-y: auto; scrollbar-size-vertical: 1;
        border-top: hkey $primary 40%;
        & > .mp-head { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
        & > #mp-errors { height: auto; max-height: 6; color: $error; }
    }
    """

    def __init__(self, mode: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mode = mode

    def compose(self) -> ComposeResult:
        yield Static(id="mp-images-head", classes="mp-head", markup=False)
        yield ThumbStrip(POOL, self.mode, id="mp-images")
        yield Static(id="mp-frames-head", classes="mp-head", markup=False)
        yield ThumbStrip(POOL, self.mode, id="mp-frames")
        yield Static(id="mp-errors", markup=False)

    def on_mount(self) -> None:
        self.display = False

    def strip(self, name: str) -> ThumbStrip:
        """``"images"`` or ``"frames"``."""
        return self.query_one(f"#mp-{name}", ThumbStrip)

    def entries(self) -> list[Entry]:
        """Every item in display order (images, then frames): what the modal browses."""
        return self.strip("images").entries + self.strip("frames").entries

    def clear(self) -> None:
        """Nothing to show: hide the panel."""
        for name in ("images", "frames"):
            self.strip(name).entries = []
        if self.display:
            self.display = False

    def show_sections(
        self, images: list[Entry], frames: list[Entry], *, images_head: Text, frames_head: Text | None, rows: int
    ) -> None:
        """Show both sections (a section with no entries and no head is hidden)."""
        self.set_section("images", images, images_head if images else None, rows)
        self.set_section("frames", frames, frames_head, rows)
        self.show_errors()
        if not self.display:
            self.display = True

    def set_section(self, name: str, entries: list[Entry], head: Text | None, rows: int) -> None:
        """Show section ``name`` (``images`` or ``frames``) with ``entries`` under ``head``."""
        strip = self.strip(name)
        strip.set_entries(entries, self._fit(rows, entries, name))
        strip.display = bool(entries)
        head_widget = self.query_one(f"#mp-{name}-head", Static)
        if head is not None:
            head_widget.update(head)
        head_widget.display = head is not None

    def set_head(self, name: str, head: Text) -> None:
        """Replace the heading line of a section (progress, summary)."""
        widget = self.query_one(f"#mp-{name}-head", Static)
        widget.update(head)
        widget.display = True

    def show_errors(self, extra: list[str] | None = None) -> None:
        """Red lines for every entry with an error (plus ``extra`` lines)."""
        lines = [e.error for e in self.entries() if e.error] + list(extra or [])
        widget = self.query_one("#mp-errors", Static)
        if lines:
            widget.update(Text("\n".join(lines)))
        widget.display = bool(lines)

    def set_rows(self, rows: int) -> None:
        """Thumbnail height in cells, for both strips."""
        for name in ("images", "frames"):
            strip = self.strip(name)
            strip.set_rows(self._fit(rows, strip.entries, name))

    def _fit(self, rows: int, entries: list[Entry], name: str) -> int:
        width = (self.parent.size.width if isinstance(self.parent, Widget) else 0) - 2
        # before images load: photos are about 4:3, video frames 16:9
        return fit_rows(rows, entries, width, self.mode, aspect=4 / 3 if name == "images" else 16 / 9)
