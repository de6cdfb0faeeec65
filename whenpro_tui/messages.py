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


# ---------------------------------------------------------------- results, validation, live
# (tuiresults: the results screen, validation mode and the live views)


class ResultsLoaded(Message):
    """A results file was read and aggregated (``results``:
    :class:`whenpro_core.bench.explore.Results`), or could not be (``error``)."""

    def __init__(self, results=None, error: str | None = None) -> None:
        super().__init__()
        self.results = results
        self.error = error


class DatasetIndexed(Message):
    """The dataset given with ``--results`` was walked: trace id -> reference."""

    def __init__(self, by_id: dict[str, str], error: str | None = None) -> None:
        super().__init__()
        self.by_id = by_id
        self.error = error


class ReviewLoaded(Message):
    """Review items and counts of a built dataset (after opening it or after a
    decision, ``decided`` naming the trace id decided), or the error."""

    def __init__(self, items=None, counts=None, *, decided: str | None = None,
                 error: str | None = None) -> None:
        super().__init__()
        self.items = items
        self.counts = counts
        self.decided = decided
        self.error = error


class LiveEvents(Message):
    """A batch of live events (follower, store or judge events) for a live screen."""

    def __init__(self, events: list) -> None:
        super().__init__()
        self.events = events
