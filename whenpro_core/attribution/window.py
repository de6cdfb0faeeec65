"""Fitting a protocol's requests into the judge's context window (docs/architecture.md,
'Attribution protocols', 'The context window').

A judge whose server reported its window (``judge.context_window``, see
:mod:`whenpro_core.llm.capabilities`) must never be sent a request longer than it: a
server answers that with an error, and a run would only repeat it. Each protocol fits
its requests here:

- all-at-once: the whole transcript, its long fields cut (never below
  :data:`~whenpro_core.views.transcript.MIN_FIELD_CHARS`); when even that does not fit,
  :class:`WindowError` says so in one line and names the protocols that would fit;
- step-by-step: a sliding window over the conversation (the oldest asked steps leave
  it, a note says how many) and steps cut to share what is left;
- binary search: each call shows only the steps of the range it asks about, cut to fit;
- hybrid: the agent pick is all-at-once's (asked about every step when the trace cannot
  fit it); a step question that does not fit with the whole transcript shows the steps
  up to the one it asks about, as many of the latest as fit (:func:`fit_trailing`).

Tokens are estimated as :mod:`whenpro_core.llm.fitting` does (which also guards every
request a backend sends); the answer's tokens and a margin are kept free.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import replace

from whenpro_core.attribution.prompts import ImagePart, Message, system_prompt
from whenpro_core.errors import WhenproError
from whenpro_core.llm.fitting import CHARS_PER_TOKEN_FIT, estimate_tokens
from whenpro_core.llm.fitting import prompt_limit as limit_of
from whenpro_core.trace.taxonomy import Taxonomy
from whenpro_core.views.transcript import MIN_FIELD_CHARS, TextPart, Transcript, cut_middle, water_level

#: Characters of the marker :func:`~whenpro_core.views.transcript.cut_middle` puts in a cut field.
MARKER_CHARS = 40
#: Fewest characters a field keeps in a windowed view (step-by-step, binary search).
MIN_VIEW_CHARS = 60


#: Share of a request's tokens the system prompt (instructions and taxonomy) may take.
SYSTEM_SHARE = 1 / 3


def fit_taxonomy(taxonomy: Taxonomy, judge: object) -> tuple[Taxonomy, str | None]:
    """The taxonomy as the judge's system prompt can hold it: whole, or (a small window)
    one line per mode (its meaning), or its codes and names only, whichever first keeps
    the system prompt within :data:`SYSTEM_SHARE` of the request. Returns it and a note
    when shortened."""
    limit = prompt_limit(judge)

    def fits(candidate: Taxonomy) -> bool:
        return (
            limit is None or request_tokens([Message.text("system", system_prompt(candidate))]) <= limit * SYSTEM_SHARE
        )

    if fits(taxonomy):
        return taxonomy, None
    meanings = Taxonomy([replace(m, description="") for m in taxonomy], taxonomy.source)
    if fits(meanings):
        return meanings, "the failure-mode taxonomy was sent one line per mode to fit the model's context window"
    names = Taxonomy([replace(m, description="", meaning="") for m in taxonomy], taxonomy.source)
    return names, "the failure-mode taxonomy was sent as codes and names only to fit the model's context window"


class WindowError(WhenproError):
    """A request cannot be fitted into the judge's context window."""


def prompt_limit(judge: object) -> int | None:
    """Tokens a request to ``judge`` may hold: its reported context window
    (``judge.context_window``) less its answer's tokens (``judge.answer_tokens``), a
    margin and what its backend adds for the answer's schema (``judge.schema_tokens``);
    ``None`` when the window is not known (nothing to fit)."""
    window = getattr(judge, "context_window", None)
    if not isinstance(window, int) or window <= 0:
        return None
    answer = getattr(judge, "answer_tokens", 0)
    schema = getattr(judge, "schema_tokens", 0)
    limit = limit_of(window, answer if isinstance(answer, int) else 0)
    return max(1, limit - (schema if isinstance(schema, int) else 0))


def request_tokens(messages: Sequence[Message]) -> int:
    """Estimated prompt tokens of protocol ``messages``."""
    chars = sum(len(m.plain()) for m in messages)
    images = sum(1 for m in messages for p in m.parts if isinstance(p, ImagePart))
    return estimate_tokens(chars, images, len(messages))


def transcript_chars(transcript: Transcript) -> int:
    """Characters of the transcript's framing context and step fields."""
    return sum(len(t) for _, t in transcript.context) + sum(len(t) for b in transcript.blocks for _, t in b.fields)


def fitted_view(
    transcript: Transcript, coords: Sequence[str] | None, max_chars: int, floor: int = MIN_VIEW_CHARS
) -> Transcript:
    """A copy of ``transcript`` holding only the blocks of ``coords`` (all when ``None``),
    its context and step fields cut (longest first) until they total ``max_chars``
    characters, each keeping at least ``floor``. A warning says what was cut."""
    keep = None if coords is None else set(coords)
    view = Transcript(
        context=list(transcript.context),
        blocks=[copy.deepcopy(b) for b in transcript.blocks if keep is None or b.coord in keep],
        task_images=list(transcript.task_images),
        warnings=[],
    )
    sizes = [len(t) for _, t in view.context] + [len(t) for b in view.blocks for _, t in b.fields]
    if sum(sizes) <= max_chars or not sizes:
        return view
    room = max_chars - MARKER_CHARS * len(sizes)  # each cut field gains an "omitted" marker
    cap = max(water_level(sizes, max(room, 0)), floor)
    view.context = [(label, cut_middle(text, cap)) for label, text in view.context]
    for block in view.blocks:
        block.fields = [(label, cut_middle(text, cap)) for label, text in block.fields]
    view.warnings.append(f"cut to fit the model's context window: long fields keep {cap:,} characters")
    return view


def room_chars(limit: int, fixed: Sequence[Message], view: Transcript) -> int:
    """Characters left for ``view``'s fields in a request of ``limit`` tokens whose other
    text is ``fixed`` messages built around ``view`` (their size less the fields')."""
    fixed_chars = request_tokens(fixed) * CHARS_PER_TOKEN_FIT - transcript_chars(view)
    return int(limit * CHARS_PER_TOKEN_FIT - fixed_chars)


Build = Callable[[Transcript], list[Message]]


def fit_view(
    transcript: Transcript, coords: Sequence[str] | None, limit: int, build: Build, floor: int = MIN_VIEW_CHARS
) -> Transcript:
    """The view of ``coords`` (all blocks when ``None``) whose request ``build(view)``
    fits ``limit`` tokens: whole when it fits, else with its longest fields cut (each
    keeping at least ``floor`` characters, so it may still not fit: check
    :func:`request_tokens`)."""
    view = fitted_view(transcript, coords, 1 << 60)
    messages = build(view)
    if request_tokens(messages) <= limit:
        return view
    return fitted_view(transcript, coords, room_chars(limit, messages, view), floor)


def fit_whole(transcript: Transcript, limit: int | None, build: Build, protocol: str) -> Transcript:
    """The whole transcript cut to fit ``limit`` tokens as a budget cut would (fields keep
    at least :data:`~whenpro_core.views.transcript.MIN_FIELD_CHARS`); ``transcript`` itself
    when no limit is known or it fits.

    Raises:
        WindowError: even that cut does not fit (one line, naming the protocols that would).
    """
    if limit is None or request_tokens(build(transcript)) <= limit:
        return transcript
    view = fit_view(transcript, None, limit, build, MIN_FIELD_CHARS)
    need = request_tokens(build(view))
    if need > limit:
        raise WindowError(
            f"the trace does not fit the model's context window for {protocol}: about {need:,} prompt tokens "
            f"at the shortest cut, {limit:,} fit",
            expected="--protocol step-by-step or binary-search (they send a part of the trace per call)",
        )
    view.warnings[:0] = transcript.warnings
    return view


def fit_trailing(transcript: Transcript, coords: Sequence[str], limit: int, build: Build) -> Transcript:
    """The view of the longest tail of ``coords`` (the last always kept) whose request
    ``build(view)`` fits ``limit`` tokens once its fields are cut (:func:`fit_view`); with
    only the last step left it is cut as far as it goes (the backend's guard does the rest).
    A warning says how many earlier steps were left out."""

    def view_of(n: int) -> Transcript:
        return fit_view(transcript, coords[len(coords) - n :], limit, build)

    def fits(n: int) -> bool:
        return request_tokens(build(view_of(n))) <= limit

    lo, hi = 1, max(len(coords), 1)
    while lo < hi:  # the largest tail that fits (a longer tail never fits where a shorter one does not)
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    view = view_of(lo)
    if lo < len(coords):
        view.warnings.append(f"{len(coords) - lo} earlier steps left out to fit the model's context window")
    return view


def largest_cap(fits: Callable[[int], bool], most: int) -> int:
    """The largest field cap in ``[MIN_VIEW_CHARS, most]`` for which ``fits(cap)``
    (``MIN_VIEW_CHARS`` when none does)."""
    lo, hi = MIN_VIEW_CHARS, max(most, MIN_VIEW_CHARS)
    if fits(hi):
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def capped(transcript: Transcript, cap: int) -> Transcript:
    """A copy of ``transcript`` whose context and step fields keep at most ``cap``
    characters each (first and last parts, a marker between)."""
    view = fitted_view(transcript, None, 1 << 60)
    view.context = [(label, cut_middle(text, cap)) for label, text in view.context]
    for block in view.blocks:
        block.fields = [(label, cut_middle(text, cap)) for label, text in block.fields]
    return view


_SLID = "(The {n} steps asked about after the first are not shown again: each was judged not decisive.)\n"


def slide(messages: list[Message], limit: int) -> tuple[list[Message], int]:
    """A step-by-step conversation (system, opening user turn with the first step, its
    answer, then user/assistant pairs, a user turn last) without its oldest pairs after
    the opening until it fits ``limit`` tokens. Returns the messages and how many asked
    steps left the window; a note in the first kept user turn says so."""
    if request_tokens(messages) <= limit or len(messages) <= 4:
        return messages, 0
    head, rest = messages[:3], messages[3:]
    dropped = 0
    room = limit - estimate_tokens(len(_SLID.format(n=10_000)))  # the note takes some of it
    while len(rest) > 1 and request_tokens(head + rest) > room:
        rest = rest[2:]
        dropped += 1
    if dropped:
        note = TextPart(_SLID.format(n=dropped))
        first = rest[0]
        rest = [Message("user", [note, *first.parts], first.cache_breakpoint), *rest[1:]]
    return head + rest, dropped
