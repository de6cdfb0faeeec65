"""Typed messages that thread workers post back to the UI (harlequin's pattern: a
worker does the blocking ``whenpro_core`` call and posts one of these; a handler updates
widgets), and the navigation messages screens post to the App, which opens the screen
asked for (screens never import each other to navigate). ``post_message`` is
thread-safe."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual.message import Message

from whenpro_core.errors import WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.library.opening import Opened
from whenpro_core.storage.gcpause import paused_gc
from whenpro_core.trace.model import Trace, TraceSummary
from whenpro_core.views.search import SearchResult

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

    from whenpro_core.attribution.interactive import ProgressView
    from whenpro_core.bench.explore import Column, Results, TableRow
    from whenpro_core.bench.records import Record
    from whenpro_core.dataset.validate import ReviewItem
    from whenpro_core.injection.diff import TraceDiff
    from whenpro_core.injection.executors import Executor
    from whenpro_core.injection.generate import GeneratedStep
    from whenpro_core.injection.inject import InjectionResult
    from whenpro_core.injection.provenance import AttributionCheck
    from whenpro_core.injection.verify import Verdict
    from whenpro_core.media.keyframes import KeyframeResult
    from whenpro_core.trace.model import Attribution, MediaRef, Step
    from whenpro_core.trace.taxonomy import Taxonomy


class TargetOpened(Message):
    """The path given on the command line was classified (and loaded, for one trace)."""

    def __init__(self, target: str, opened: Opened) -> None:
        super().__init__()
        self.target = target
        self.opened = opened


class TracePreviewed(Message):
    """The first steps of the large trace file given on the command line, to show while
    the whole file loads (:func:`whenpro_core.formats.native.read_native_prefix`)."""

    def __init__(self, target: str, trace: Trace) -> None:
        super().__init__()
        self.target = target
        self.trace = trace


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


class InsideFound(Message):
    """Progress of a search inside the listed traces (the library's ``F``): ``query``,
    the references of the traces ``found`` in this batch with their step counts, how many
    were ``searched`` of ``total``, and whether the search is ``done``."""

    def __init__(self, query: str, found: dict[str, int], searched: int, total: int, done: bool) -> None:
        super().__init__()
        self.query, self.found, self.searched, self.total, self.done = query, found, searched, total, done


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
    """Loading ``ref`` failed; ``error`` is the one-line message (``position`` in the
    sibling list, if any)."""

    def __init__(self, ref: str, error: str, position: int | None = None) -> None:
        super().__init__()
        self.ref = ref
        self.error = error
        self.position = position


def load_trace_message(ref: str, position: int | None = None) -> TraceLoaded | TraceLoadFailed:
    """Load ``ref`` (call it in a thread worker) and return the message to post:
    :class:`TraceLoaded`, or :class:`TraceLoadFailed` with the one-line error — also for
    an importer bug, which must not crash the viewer. ``position`` goes into both."""
    try:
        with paused_gc(keep=True):  # the trace stays open: no GC pass scans it again
            trace = load_trace(ref)
    except WhenproError as exc:
        return TraceLoadFailed(ref, exc.one_line(), position)
    except Exception as exc:  # noqa: BLE001 - an importer bug must not crash the viewer
        return TraceLoadFailed(ref, f"{type(exc).__name__}: {exc}", position)
    return TraceLoaded(ref, trace, position)


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


# ---------------------------------------------------------------- attribution (tuiattr)


class AttributionProgress(Message, bubble=False):
    """A running attribution (``run``) asks about ``view`` (steps, text, call number)."""

    def __init__(self, run: int, view: ProgressView) -> None:
        super().__init__()
        self.run = run
        self.view = view


class AttributionDone(Message, bubble=False):
    """Attribution ``run`` finished with ``verdict`` (not saved yet)."""

    def __init__(self, run: int, verdict: Attribution) -> None:
        super().__init__()
        self.run = run
        self.verdict = verdict


class AttributionFailed(Message, bubble=False):
    """Attribution ``run`` stopped on an error (one line)."""

    def __init__(self, run: int, error: str) -> None:
        super().__init__()
        self.run = run
        self.error = error


class VerdictsLoaded(Message, bubble=False):
    """Saved verdicts of the trace ``key`` (``problems``: unreadable lines; ``error``:
    the file could not be read at all), with the trace's ``taxonomy``; ``path`` is the
    file they were read from."""

    def __init__(
        self,
        key: str,
        verdicts: list[Attribution],
        taxonomy: Taxonomy,
        problems: list[str],
        error: str | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__()
        self.key = key
        self.verdicts = verdicts
        self.taxonomy = taxonomy
        self.problems = problems
        self.error = error
        self.path = path


class VerdictSaved(Message, bubble=False):
    """``verdict`` was written to ``path`` (``None``: the trace has no file; ``error``
    set when it could not be written)."""

    def __init__(self, verdict: Attribution, path: str | None, error: str | None = None) -> None:
        super().__init__()
        self.verdict = verdict
        self.path = path
        self.error = error


# ---------------------------------------------------------------- injection (tuiinject)


class ModesChecked(Message):
    """The failure modes whose offline mutator fits the dialog's step."""

    def __init__(self, applicable: list[str]) -> None:
        super().__init__()
        self.applicable = applicable


class PreviewReady(Message):
    """The injection dialog's generator produced the new step (``token`` names the
    request, so a superseded preview is ignored)."""

    def __init__(self, token: int, generated: GeneratedStep) -> None:
        super().__init__()
        self.token = token
        self.generated = generated


class PreviewFailed(Message):
    """The generator failed (``error`` is one line)."""

    def __init__(self, token: int, error: str) -> None:
        super().__init__()
        self.token = token
        self.error = error


class ReplayStep(Message):
    """A step of a running replay, as the executor produced it (the replaced step
    first, then each new step)."""

    def __init__(self, step: Step) -> None:
        super().__init__()
        self.step = step


class ReplayFinished(Message):
    """A replay ended: ``result`` (an InjectionResult) or ``error`` (one line);
    ``cancelled`` when the user stopped it."""

    def __init__(self, result: InjectionResult | None, error: str | None, cancelled: bool) -> None:
        super().__init__()
        self.result = result
        self.error = error
        self.cancelled = cancelled


class DiffSources(Message):
    """The seed of a counterfactual was loaded for the diff screen (``error`` when not)."""

    def __init__(self, seed: Trace | None, counterfactual: Trace, error: str | None = None) -> None:
        super().__init__()
        self.seed = seed
        self.counterfactual = counterfactual
        self.error = error


class DiffComputed(Message):
    """The step-aligned diff of the diff screen (a TraceDiff)."""

    def __init__(self, diff: TraceDiff) -> None:
        super().__init__()
        self.diff = diff


class CounterfactualAttributed(Message):
    """An attribution of the counterfactual finished: ``check`` (an AttributionCheck or
    ``None``), the ``attribution``, or ``error`` (one line)."""

    def __init__(
        self,
        protocol: str,
        check: AttributionCheck | None = None,
        attribution: Attribution | None = None,
        error: str | None = None,
    ) -> None:
        super().__init__()
        self.protocol = protocol
        self.check = check
        self.attribution = attribution
        self.error = error


class CounterfactualSaved(Message):
    """The counterfactual was written to ``path`` (or ``error``)."""

    def __init__(self, path: str, error: str | None = None) -> None:
        super().__init__()
        self.path = path
        self.error = error


# ---------------------------------------------------------------- tuimedia: images and keyframes


class ThumbLoaded(Message):
    """A thumbnail (or its error) for tile ``slot`` of strip ``strip`` of media
    generation ``gen`` (stale generations are ignored). ``image`` is a decoded Pillow
    image, ``detail`` the size line, ``error`` one safe line."""

    def __init__(
        self,
        gen: int,
        strip: str,
        slot: int,
        ref: MediaRef,
        *,
        image: PILImage | None = None,
        detail: str = "",
        error: str | None = None,
    ) -> None:
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

    def __init__(
        self,
        gen: int,
        label: str,
        *,
        result: KeyframeResult | None = None,
        thumbs: list[PILImage] | None = None,
        error: str | None = None,
    ) -> None:
        super().__init__()
        self.gen = gen
        self.label = label
        self.result = result
        self.thumbs = thumbs or []
        self.error = error


class FullImageLoaded(Message):
    """The media modal's image ``index`` decoded at screen size (``image``, Pillow),
    with its size line, or ``error``."""

    def __init__(
        self, index: int, *, image: PILImage | None = None, detail: str = "", error: str | None = None
    ) -> None:
        super().__init__()
        self.index = index
        self.image = image
        self.detail = detail
        self.error = error


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

    def __init__(self, items=None, counts=None, *, decided: str | None = None, error: str | None = None) -> None:
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


# ---------------------------------------------------------------- navigation: the App opens screens


@dataclass
class InjectionPlan:
    """What the injection dialog decided: inject ``generated`` (the previewed, maybe
    edited step) as failure ``mode`` at step ``index`` of ``trace`` and continue with
    ``executor``; ``seed`` is the generator's seed (provenance)."""

    trace: Trace
    index: int
    mode: str
    generated: GeneratedStep
    executor: Executor
    seed: int = 0


class OpenTrace(Message):
    """Open ``trace`` on a trace screen of its own; ``siblings`` and ``position`` are the
    traces ``[``/``]`` move through and its place among them; ``on_close`` gets the
    position the screen closed at (the library follows it); ``on_shown`` gets each
    sibling trace ``[``/``]`` shows and its reference (the library fills its row)."""

    def __init__(
        self,
        trace: Trace,
        *,
        siblings: list[str] | None = None,
        position: int | None = None,
        on_close: Callable[[int | None], None] | None = None,
        on_shown: Callable[[Trace, str], None] | None = None,
    ) -> None:
        super().__init__()
        self.trace = trace
        self.siblings = siblings
        self.position = position
        self.on_close = on_close
        self.on_shown = on_shown


class OpenDiff(Message):
    """Open the step-aligned diff of ``original`` and ``counterfactual`` (``verdict``:
    the injection's verification; ``slots``: agent colours to keep). ``replace``: the
    diff takes the place of the screen that asked (the finished replay)."""

    def __init__(
        self,
        original: Trace,
        counterfactual: Trace,
        verdict: Verdict | None = None,
        *,
        slots: dict[str, int] | None = None,
        replace: bool = False,
    ) -> None:
        super().__init__()
        self.original = original
        self.counterfactual = counterfactual
        self.verdict = verdict
        self.slots = slots
        self.replace = replace


class OpenReplay(Message):
    """Run ``plan`` on the live replay screen."""

    def __init__(self, plan: InjectionPlan) -> None:
        super().__init__()
        self.plan = plan


class OpenValidation(Message):
    """Open validation mode for the dataset built at ``root``."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root


class OpenResultsCell(Message):
    """Open the outcomes of one cell (``row`` × ``column``) of a results table
    (``by_id``: trace id -> reference in the dataset given with ``--results``)."""

    def __init__(
        self, results: Results, row: TableRow, column: Column | None, *, by_id: dict[str, str] | None = None
    ) -> None:
        super().__init__()
        self.results = results
        self.row = row
        self.column = column
        self.by_id = by_id


class OpenResultTrace(Message):
    """Open ``trace`` with its benchmark ``records`` (by trace reference);
    ``siblings``/``position``/``on_close`` as for :class:`OpenTrace`."""

    def __init__(
        self,
        trace: Trace,
        records: dict[str, Record],
        *,
        siblings: list[str],
        position: int | None,
        on_close: Callable[[int | None], None],
    ) -> None:
        super().__init__()
        self.trace = trace
        self.records = records
        self.siblings = siblings
        self.position = position
        self.on_close = on_close


class Review(Protocol):
    """What a trace under review reads and asks of the review it belongs to (the
    validation screen: :class:`~whenpro_tui.screens.validation.ValidationScreen`)."""

    @property
    def items(self) -> list[ReviewItem]:
        """The dataset's review items, in list order."""
        ...

    @property
    def counts(self) -> dict[str, Any]:
        """The review counts (:func:`whenpro_core.dataset.review.progress_line` reads them)."""
        ...

    @property
    def taxonomy(self) -> Taxonomy:
        """The dataset's taxonomy (mode names)."""
        ...

    def decide(self, verdict: str, item: ReviewItem, *, trace: Trace | None = None, step: str | None = None) -> None:
        """Record ``verdict`` (accept, reject, relabel) on ``item``."""
        ...


class ReviewView(Protocol):
    """The screen of a trace under review, as the validation screen sees it (the app
    opens it: :class:`OpenReviewTrace`)."""

    def after_decision(self, trace_id: str) -> None:
        """A decision on ``trace_id`` was saved."""
        ...


class OpenReviewTrace(Message):
    """Open ``trace`` under review: ``review`` is the validation screen's state (items,
    counts, taxonomy, decisions), ``siblings``/``position`` as for :class:`OpenTrace`;
    ``on_open`` gets the new screen (decisions are reported to it), ``on_close`` the
    position it closed at."""

    def __init__(
        self,
        trace: Trace,
        review: Review,
        *,
        siblings: list[str],
        position: int | None,
        on_open: Callable[[ReviewView], None],
        on_close: Callable[[int | None], None],
    ) -> None:
        super().__init__()
        self.trace = trace
        self.review = review
        self.siblings = siblings
        self.position = position
        self.on_open = on_open
        self.on_close = on_close
