"""The full-size media modal (tuimedia, ``m``): one image of the step at the size of the
screen, with its label, position and size; ``←``/``→`` or ``n``/``p`` move between the
step's images and frames, ``escape`` closes.

Images are decoded at screen resolution in a thread worker (never on the UI thread)
through :func:`whenpro_core.media.preview.load_image`; decoded images are kept while
the modal is open, so moving back and forth is instant. A bad image shows its error
line instead.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Center, Vertical
from textual.screen import ModalScreen
from textual.widgets import Static
from textual.worker import get_current_worker

from whenpro_core.media.preview import FULL_MAX_SIDE, jpeg_size, load_image
from whenpro_core.media.preview import error_line as media_error_line
from whenpro_core.trace.model import Trace
from whenpro_tui import imaging
from whenpro_tui.messages import FullImageLoaded
from whenpro_tui.widgets.footer import FittedFooter
from whenpro_tui.widgets.media_strip import Entry

#: Decoded full-size images kept while the modal is open.
KEEP = 8


class MediaModal(ModalScreen[None]):
    """Full-size view of ``entries[index]`` (see module docstring)."""

    BINDINGS = [
        Binding("right,n,l", "move(1)", "Next image"),
        Binding("left,p,h", "move(-1)", "Previous image"),
        Binding("home", "move(-1000000)", "First image", show=False),
        Binding("end", "move(1000000)", "Last image", show=False),
        Binding("escape,q,m", "close", "Close"),
    ]
    DEFAULT_CSS = """
    MediaModal { align: center middle; }
    MediaModal > #mm-box {
        width: 96%; height: 94%; background: $panel; border: round $accent; padding: 0 1;
    }
    MediaModal #mm-title { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    MediaModal #mm-view { height: 1fr; align: center middle; }
    MediaModal #mm-image { width: auto; height: auto; }
    MediaModal #mm-msg { width: auto; height: auto; color: $text-muted; }
    MediaModal #mm-msg.-error { color: $error; }
    """

    def __init__(self, entries: list[Entry], index: int, trace: Trace, mode: str) -> None:
        super().__init__()
        self.entries = entries
        self.index = max(0, min(index, len(entries) - 1))
        self.trace = trace
        self.mode = mode
        self._images: OrderedDict[int, tuple[Any, str]] = OrderedDict()

    def compose(self) -> ComposeResult:
        with Vertical(id="mm-box"):
            yield Static(id="mm-title", markup=False)
            with Center(id="mm-view"):
                yield imaging.image_widget(self.mode, id="mm-image")
                yield Static(id="mm-msg", markup=False)
            yield FittedFooter()

    def on_mount(self) -> None:
        self.show(self.index)

    @property
    def image_widget(self) -> Any:
        return self.query_one("#mm-image")

    def show(self, index: int) -> None:
        """Show entry ``index`` (decoding it in a worker unless kept)."""
        self.index = index
        entry = self.entries[index]
        kept = self._images.get(index)
        self._title(entry, kept[1] if kept else entry.detail)
        if kept is not None:
            self._images.move_to_end(index)
            self._set(kept[0], None)
            return
        self._set(None, "loading…")
        self.load_full(index, entry, self._max_side())

    def _title(self, entry: Entry, detail: str) -> None:
        title = Text()
        title.append(entry.title, style="bold")
        title.append(f"   {self.index + 1}/{len(self.entries)}", style="bold cyan")
        if detail:
            title.append(f"   {detail}", style="dim")
        self.query_one("#mm-title", Static).update(title)

    def _set(self, image: Any, message: str | None, *, error: bool = False) -> None:
        widget = self.image_widget
        if widget.image is not image:
            widget.image = image
        widget.display = image is not None
        msg = self.query_one("#mm-msg", Static)
        msg.update(Text(message or ""))
        msg.set_class(error, "-error")
        msg.display = message is not None

    def _max_side(self) -> int:
        """Pixels the image needs to fill the screen with the current renderer."""
        cols, rows = self.app.size
        if self.mode == "halfcell":
            px = max(cols, rows * 2)
        else:
            cw, ch = imaging.cell_size()
            px = max(cols * cw, rows * ch)
        return max(64, min(FULL_MAX_SIDE, px))

    @work(thread=True, exclusive=True, group="media-modal", exit_on_error=False, description="load the full-size image")
    def load_full(self, index: int, entry: Entry, max_side: int) -> None:
        """Decode entry ``index`` at ``max_side`` (thread worker)."""
        worker = get_current_worker()
        try:
            if entry.jpeg is not None:
                width, height = jpeg_size(entry.jpeg)
                image = imaging.pil_from_jpeg(entry.jpeg, max_side)
                detail = f"{width}×{height}"
            else:
                preview = load_image(
                    entry.ref, self.trace, max_side=max_side, thumbnail=False, cancelled=lambda: worker.is_cancelled
                )
                image = imaging.pil_from_jpeg(preview.jpeg)
                detail = preview.size_text()
        except Exception as exc:  # a bad image is an error line, never a crash
            self.post_message(FullImageLoaded(index, error=media_error_line(entry.label, exc)))
            return
        if not worker.is_cancelled:
            self.post_message(FullImageLoaded(index, image=image, detail=detail))

    def on_full_image_loaded(self, message: FullImageLoaded) -> None:
        message.stop()
        if message.image is not None:
            self._images[message.index] = (message.image, message.detail)
            while len(self._images) > KEEP:
                self._images.popitem(last=False)
        if message.index != self.index:
            return
        entry = self.entries[message.index]
        if message.image is None:
            self._set(None, message.error or "cannot show this image", error=True)
            return
        self._title(entry, message.detail)
        self._set(message.image, None)

    def action_move(self, delta: int) -> None:
        target = max(0, min(len(self.entries) - 1, self.index + delta))
        if target == self.index:
            self.notify("This is the " + ("last" if delta > 0 else "first") + " image.")
            return
        self.show(target)

    def action_close(self) -> None:
        self.dismiss(None)
