"""How the TUI draws images: the renderer behind ``--images auto|kitty|sixel|halfcell|off``
(textual-image widgets), the terminal cell size, JPEG → Pillow conversion for workers,
and the per-MediaRef cache of decoded thumbnails.

textual-image picks its automatic renderer by querying the terminal **when it is
imported**, and reads the cell size in pixels then too; once Textual runs it owns
stdin and those queries cannot be answered (CRAFT, "Images"). So :func:`prepare` is
called by :func:`whenpro_tui.app.run` before ``App.run()``. Under ``textual serve``
(``$TEXTUAL_DRIVER`` names the web driver) the browser understands neither Kitty
graphics nor Sixel: half-cell blocks are forced. Only ``auto`` pays for the renderer
queries (about 0.2 s when the terminal answers neither); a named renderer reads just
the cell size. whenpro imports textual-image with its queries switched off and asks
itself, so that inside tmux or GNU screen the Kitty graphics probe (an APC sequence,
which they take as the pane title) is never sent. An app built without :func:`prepare` (tests) resolves ``auto`` to
half-cell and never queries the terminal; tests fix the cell size with
:func:`fix_cell_size`.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage
    from textual.widget import Widget

#: Values of ``--images``.
MODES = ("auto", "kitty", "sixel", "halfcell", "off")
#: Renderers an image widget can use.
RENDERERS = ("kitty", "sixel", "halfcell")

_prepared: dict[str, str] = {}
log = logging.getLogger("whenpro.tui")


def on_web() -> bool:
    """True when the app runs under ``textual serve`` (the web driver)."""
    return "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")


def fix_cell_size(width: int = 10, height: int = 20) -> None:
    """Make textual-image use a fixed terminal cell size in pixels (tests, snapshots)
    instead of asking the terminal. Call before any image widget renders."""
    from textual_image._terminal import CellSize, get_cell_size

    vars(get_cell_size)["_result"] = CellSize(width, height)  # the function's own cache attribute


def cell_size() -> tuple[int, int]:
    """The terminal cell size in pixels ``(width, height)`` textual-image uses."""
    from textual_image._terminal import get_cell_size

    try:
        size = get_cell_size()
    except Exception:  # stdout closed: textual-image's own default
        return 10, 20
    return size.width, size.height


def prepare(requested: str) -> str:
    """Resolve ``--images`` to the renderer to use, querying the terminal if needed.

    Must run before ``App.run()`` (see module docstring). Returns ``"off"``,
    ``"kitty"``, ``"sixel"`` or ``"halfcell"``; ``auto`` becomes Sixel or Kitty
    graphics when the terminal answers that it has them, else half-cell blocks. Inside
    tmux or GNU screen Kitty graphics are never asked for (:func:`kitty_probe_safe`).
    """
    if requested == "off":
        return "off"
    if requested in _prepared:
        return _prepared[requested]
    if on_web():
        mode = "halfcell"
    elif requested in RENDERERS:
        cell_size()  # the real cell size (ioctl), while the terminal can still answer
        import_widgets()  # no renderer queries: the renderer is named
        mode = requested
    else:
        cell_size()
        import_widgets()
        mode = _probe_renderer(kitty_probe_safe(os.environ))
    _prepared[requested] = mode
    log.info("images: --images %s -> %s renderer", requested, mode)
    return mode


def kitty_probe_safe(environ: Mapping[str, str]) -> bool:
    """False inside tmux or GNU screen (``$TMUX``, ``$STY`` set, or a ``screen*``/``tmux*``
    ``$TERM``): the Kitty graphics probe is an APC sequence (``ESC _ G ... ESC \\``), which
    they take as "set the pane title" instead of passing it on, so the title would show
    the probe (and keep it after whenpro quits)."""
    term = environ.get("TERM", "")
    in_multiplexer = bool(environ.get("TMUX") or environ.get("STY"))
    return not in_multiplexer and not term.startswith(("screen", "tmux"))


def _probe_renderer(kitty_probe: bool) -> str:
    """Ask the terminal (before Textual runs) for Sixel, then, if ``kitty_probe``, for Kitty
    graphics; ``"sixel"``, ``"kitty"`` or ``"halfcell"`` (no terminal, or no answer: each
    probe waits 0.1 s). textual-image's order: Kitty-capable terminals have no Sixel."""
    stdout = sys.__stdout__
    if stdout is None or not stdout.isatty():
        return "halfcell"
    from textual_image.renderable import sixel, tgp  # already imported without queries

    if sixel.query_terminal_support():  # Primary Device Attributes: safe everywhere
        return "sixel"
    if kitty_probe and tgp.query_terminal_support():
        return "kitty"
    return "halfcell"


def resolve(requested: str) -> str:
    """The renderer for ``requested`` inside a running app: what :func:`prepare`
    chose, else ``off`` or the named renderer, with ``auto`` meaning half-cell (no
    terminal query is possible once Textual runs). Under ``textual serve`` always
    half-cell."""
    if requested == "off":
        return "off"
    if on_web():
        return "halfcell"
    if requested in _prepared:
        return _prepared[requested]
    return requested if requested in RENDERERS else "halfcell"


@contextmanager
def _no_terminal_queries() -> Iterator[None]:
    """While importing textual-image, make ``sys.__stdout__`` look like no terminal, so
    its import-time queries (which read stdin, with 0.1 s timeouts each) are skipped."""
    real = sys.__stdout__

    class _NotATerminal:
        def isatty(self) -> bool:
            return False

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    # typeshed declares sys.__stdout__ Final, but it is assignable and textual-image reads it
    sys.__stdout__ = _NotATerminal()  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        sys.__stdout__ = real  # type: ignore[misc]  # Final in typeshed (see above)


def import_widgets() -> None:
    """Import textual-image's widgets without querying the terminal (a named renderer,
    or an app already running: Textual owns stdin then). Takes ~0.2 s the first time
    (it imports numpy): the app calls it from a thread, see
    :meth:`whenpro_tui.widgets.step_detail.StepDetail.request_media_panel`."""
    if "textual_image.widget" not in sys.modules:
        with _no_terminal_queries():
            import textual_image.widget  # noqa: F401


def image_widget(mode: str, *, classes: str | None = None, id: str | None = None) -> Widget:
    """A textual-image widget (no image yet) for renderer ``mode``."""
    import_widgets()
    from textual_image.widget import HalfcellImage, SixelImage, TGPImage

    cls: Any = {"kitty": TGPImage, "sixel": SixelImage}.get(mode, HalfcellImage)
    return cls(None, classes=classes, id=id)


class _ImageHolder(Protocol):
    """A textual-image widget (its classes are imported lazily: see :func:`import_widgets`)."""

    image: PILImage | None


def shown_image(widget: Widget) -> PILImage | None:
    """The image a widget of :func:`image_widget` shows (``None``: none yet)."""
    return cast(_ImageHolder, widget).image


def show_image(widget: Widget, image: PILImage | None) -> None:
    """Show ``image`` in a widget of :func:`image_widget` (``None``: clear it)."""
    cast(_ImageHolder, widget).image = image


def pil_from_jpeg(jpeg: bytes, max_side: int | None = None) -> PILImage:
    """Decode JPEG (or any Pillow-readable) bytes to a loaded RGB Pillow image, shrunk
    to ``max_side`` if given. Blocking: call from a worker thread.

    Raises:
        OSError / ValueError: Pillow cannot read the bytes.
    """
    from PIL import Image

    with Image.open(io.BytesIO(jpeg)) as im:
        if max_side:
            im.draft("RGB", (max_side, max_side))
        out = im.convert("RGB")
    if max_side and max(out.size) > max_side:
        out.thumbnail((max_side, max_side))
    out.load()
    return out


class ThumbCache:
    """Decoded thumbnails (or their errors) per :class:`~whenpro_core.trace.model.MediaRef`
    object, least-recently used first out. Keyed by the ref's identity; the entry
    keeps the ref alive so an id is never reused while cached. UI thread only."""

    def __init__(self, limit: int = 128) -> None:
        self.limit = limit
        self._items: OrderedDict[int, tuple[Any, Any]] = OrderedDict()

    def get(self, ref: Any) -> Any:
        """The cached value for ``ref`` or ``None``."""
        hit = self._items.get(id(ref))
        if hit is None or hit[0] is not ref:
            return None
        self._items.move_to_end(id(ref))
        return hit[1]

    def put(self, ref: Any, value: Any) -> None:
        """Cache ``value`` for ``ref``."""
        self._items[id(ref)] = (ref, value)
        self._items.move_to_end(id(ref))
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
