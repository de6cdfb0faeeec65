"""Typed messages that thread workers post back to the UI (harlequin's pattern: a
worker does the blocking ``whenpro_core`` call and posts one of these; a handler updates
widgets). ``post_message`` is thread-safe."""

from __future__ import annotations

from textual.message import Message

from whenpro_core.model import Trace, TraceSummary
from whenpro_core.opening import Opened
from whenpro_core.search import SearchResult


class TargetOpened(Message):
    """The path given on the command line was classified (and loaded, for one trace)."""

    def __init__(self, target: str, opened: Opened) -> None:
        super().__init__()
        self.target = target
        self.opened = opened


class TargetFailed(Message):
    """The path given on the command line could not be opened at all."""

    def __init__(self, target: str, error: str) -> None:
        super().__init__()
        self.target = target
        self.error = error


class RowsFound(Message):
    """A batch of listing rows from a dataset walk."""

    def __init__(self, rows: list[TraceSummary]) -> None:
        super().__init__()
        self.rows = rows


class WalkDone(Message):
    """The dataset walk finished (``error`` set when it stopped early)."""

    def __init__(self, seconds: float, error: str | None = None) -> None:
        super().__init__()
        self.seconds = seconds
        self.error = error


class TraceLoaded(Message):
    """A trace was loaded for ``ref`` (``position`` in the sibling list, if any)."""

    def __init__(self, ref: str, trace: Trace, position: int | None = None) -> None:
        super().__init__()
        self.ref = ref
        self.trace = trace
        self.position = position


class TraceLoadFailed(Message):
    """Loading ``ref`` failed; ``error`` is the one-line message."""

    def __init__(self, ref: str, error: str) -> None:
        super().__init__()
        self.ref = ref
        self.error = error


class SiblingsFound(Message):
    """The other traces of the file a ``path#key`` trace came from."""

    def __init__(self, refs: list[str], position: int) -> None:
        super().__init__()
        self.refs = refs
        self.position = position


class SearchDone(Message):
    """A step search finished (or was superseded: then ``result.cancelled``)."""

    def __init__(self, result: SearchResult, backwards: bool = False) -> None:
        super().__init__()
        self.result = result
        self.backwards = backwards

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SearchDone)


# ---------------------------------------------------------------- tuimedia: images and keyframes

class ThumbLoaded(Message):
    """A thumbnail (or its error) for tile ``slot`` of strip ``strip`` of media
    generation ``gen`` (stale generations are ignored). ``image`` is a decoded Pillow
    image, ``detail`` the size line, ``error`` one safe line."""

    def __init__(self, gen: int, strip: str, slot: int, ref: object, *, image: object = None,
                 detail: str = "", error: str | None = None) -> None:
        super().__init__()
        self.gen = gen
        self.strip = strip
        self.slot = slot
        self.ref = ref
        self.image = image
        self.detail = detail
        self.error = error


class KeyframesProgress(Message):
    """Keyframe extraction of generation ``gen`` decoded ``done`` frames (of ``total``
    announced by the container, if known)."""

    def __init__(self, gen: int, done: int, total: int | None) -> None:
        super().__init__()
        self.gen = gen
        self.done = done
        self.total = total

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, KeyframesProgress) and message.gen == self.gen


class KeyframesLoaded(Message):
    """Keyframes of a video for generation ``gen``: ``result`` is a
    :class:`whenpro_core.media.keyframes.KeyframeResult`, ``thumbs`` its images decoded
    small (Pillow), or ``error`` one safe line."""

    def __init__(self, gen: int, label: str, *, result: object = None,
                 thumbs: list | None = None, error: str | None = None) -> None:
        super().__init__()
        self.gen = gen
        self.label = label
        self.result = result
        self.thumbs = thumbs or []
        self.error = error


class FullImageLoaded(Message):
    """The media modal's image ``index`` decoded at screen size (``image``, Pillow),
    with its size line, or ``error``."""

    def __init__(self, index: int, *, image: object = None, detail: str = "",
                 error: str | None = None) -> None:
        super().__init__()
        self.index = index
        self.image = image
        self.detail = detail
        self.error = error
