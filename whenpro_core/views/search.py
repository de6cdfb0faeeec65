"""Finding steps in a trace: text search across content, tool calls, observations and
errors; filtering by agent and kind; resolving a typed coordinate; moving to the next
step of the same agent; the ground-truth step.

Used by the TUI's ``/``, ``n``/``N``, ``f``, ``:``, ``h``/``l`` and ``T`` keys and usable
from scripts. UI-free and safe to run in a thread (``should_stop`` lets a caller cancel).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from whenpro_core.safety.textsafe import clean
from whenpro_core.storage import jsonio
from whenpro_core.trace.coords import normalize_coord, small_int
from whenpro_core.trace.model import Step, Trace


@dataclass
class SearchResult:
    """Steps matching a query.

    Attributes:
        query: the query as searched (case-insensitive substring).
        steps: indices (into ``Trace.steps``) of matching steps, ascending.
        matches: total occurrences over all searched fields.
        fields: per matching step, the fields that matched (``content``, ``tool_calls``,
            ``observation``, ``error``, ``hidden``).
        cancelled: the search stopped early; ``steps`` holds what was found so far.
    """

    query: str
    steps: list[int] = field(default_factory=list)
    matches: int = 0
    fields: dict[int, tuple[str, ...]] = field(default_factory=dict)
    cancelled: bool = False

    def next_after(self, index: int, *, backwards: bool = False) -> int | None:
        """The matching step after (or before) ``index``, wrapping around; ``None``
        when nothing matched."""
        if not self.steps:
            return None
        if backwards:
            earlier = [s for s in self.steps if s < index]
            return earlier[-1] if earlier else self.steps[-1]
        for s in self.steps:
            if s > index:
                return s
        return self.steps[0]

    def position(self, index: int) -> int | None:
        """1-based rank of step ``index`` among the matches, or ``None``."""
        try:
            return self.steps.index(index) + 1
        except ValueError:
            return None


def searchable_fields(step: Step, *, include_hidden: bool = False) -> Iterable[tuple[str, str]]:
    """``(field, text)`` pairs a search looks at: content, tool calls (name and
    arguments as JSON text), observation, error, and hidden fields when asked."""
    if step.content:
        yield "content", step.content
    if step.tool_calls:
        parts = []
        for call in step.tool_calls:
            args = call.arguments
            if not isinstance(args, str):
                args = jsonio.dumps(args, default=str).decode()  # any depth the readers take
            parts.append(f"{call.name} {args}")
        yield "tool_calls", "\n".join(parts)
    if step.observation:
        yield "observation", step.observation
    if step.error:
        yield "error", step.error
    if include_hidden and step.hidden:
        yield "hidden", jsonio.dumps(step.hidden, default=str).decode()


def search_steps(
    steps: Sequence[Step], query: str, *, include_hidden: bool = False, should_stop: Callable[[], bool] | None = None
) -> SearchResult:
    """Case-insensitive substring search over ``steps`` (see :func:`searchable_fields`).

    An empty or blank query matches nothing. ``should_stop`` is polled every 256
    steps; when it returns True the partial result comes back with ``cancelled``.
    Linear in the total text size (``str.lower`` + ``str.count``).
    """
    needle = query.strip().lower()
    result = SearchResult(query=query.strip())
    if not needle:
        return result
    for n, step in enumerate(steps):
        if should_stop is not None and n % 256 == 0 and should_stop():
            result.cancelled = True
            return result
        hit_fields = []
        for name, text in searchable_fields(step, include_hidden=include_hidden):
            count = text.lower().count(needle)
            if count:
                hit_fields.append(name)
                result.matches += count
        if hit_fields:
            result.steps.append(step.index)
            result.fields[step.index] = tuple(hit_fields)
    return result


@dataclass(frozen=True)
class FoldedHit:
    """The first search hit in the part of a long text a fold leaves out: its 1-based
    ``line``, an inert one-line ``excerpt`` around it (``…`` where cut) and how many
    ``more`` hits follow it."""

    line: int
    excerpt: str
    more: int


def folded_hit(text: str, shown_chars: int, query: str, *, width: int = 160) -> FoldedHit | None:
    """The first case-insensitive match of ``query`` in ``text`` at or past ``shown_chars``
    (what :func:`~whenpro_core.views.stepview.fold` shows), with about ``width``
    characters of its line around it; ``None`` when the query is blank or the folded part
    holds no match. Linear in the text's length."""
    needle = query.strip()
    if not needle or shown_chars >= len(text):
        return None
    pattern = re.compile(re.escape(needle), re.IGNORECASE)
    found = pattern.search(text, shown_chars)
    if found is None:
        return None
    at = found.start()
    line_start = text.rfind("\n", 0, at) + 1
    line_end = len(text) if (nl := text.find("\n", at)) < 0 else nl
    start, end = max(line_start, at - width // 2), min(line_end, found.end() + width // 2)
    excerpt = ("…" if start > line_start else "") + clean(text[start:end]) + ("…" if end < line_end else "")
    more = sum(1 for _ in pattern.finditer(text, found.end()))
    return FoldedHit(text.count("\n", 0, at) + 1, " ".join(excerpt.split()), more)


# ----------------------------------------------------------------------------- filters


@dataclass(frozen=True)
class StepFilter:
    """Which steps the list shows: agents and kinds to keep (empty = all)."""

    agents: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()

    @property
    def active(self) -> bool:
        """True when the filter hides anything."""
        return bool(self.agents or self.kinds)

    def keeps(self, step: Step) -> bool:
        """True if ``step`` passes the filter."""
        return (not self.agents or step.agent in self.agents) and (not self.kinds or step.kind in self.kinds)

    def describe(self) -> str:
        """``"agent: WebSurfer, Assistant · kind: plan"`` (``""`` when inactive)."""
        parts = []
        if self.agents:
            parts.append("agent: " + ", ".join(sorted(self.agents)))
        if self.kinds:
            parts.append("kind: " + ", ".join(sorted(self.kinds)))
        return " · ".join(parts)


def filter_steps(steps: Sequence[Step], flt: StepFilter) -> list[int]:
    """Indices of the steps that pass ``flt``, in order (all of them when inactive)."""
    if not flt.active:
        return list(range(len(steps)))
    return [s.index for s in steps if flt.keeps(s)]


def step_facets(trace: Trace) -> dict[str, list[tuple[str, int]]]:
    """Values a step filter can choose from, with step counts: ``{"agent": [...],
    "kind": [...]}``; agents in first-appearance order, kinds by count."""
    agents = Counter(s.agent for s in trace.steps)
    kinds = Counter(s.kind for s in trace.steps)
    return {
        "agent": [(a, agents.get(a, 0)) for a in trace.agent_ids() if agents.get(a)],
        "kind": sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])),
    }


# ----------------------------------------------------------------------------- moving


def find_coord(trace: Trace, typed: str) -> int | None:
    """The index of the step a user means by ``typed``: a coordinate (``12``,
    ``step 1.1``, ``Round 2``), or ``#N`` for the 0-based position. ``None`` when no
    step has it."""
    text = typed.strip()
    if not text:
        return None
    if text.startswith("#"):
        pos = small_int(text[1:])
        return pos if pos is not None and pos < len(trace.steps) else None
    step = trace.step_by_coord(text)
    if step is not None:
        return step.index
    want = normalize_coord(text)
    for s in trace.steps:  # coordinates stored un-normalised ("03")
        if s.coord is not None and normalize_coord(s.coord) == want:
            return s.index
    return None


def same_agent_step(
    steps: Sequence[Step], index: int, *, backwards: bool = False, allowed: Sequence[int] | None = None
) -> int | None:
    """The next (or previous) step after ``index`` spoken by the same agent as
    ``steps[index]``, restricted to ``allowed`` indices when given; ``None`` at the end."""
    if not 0 <= index < len(steps):
        return None
    agent = steps[index].agent
    order = allowed if allowed is not None else range(len(steps))
    candidates = [i for i in order if (i < index if backwards else i > index)]
    if backwards:
        candidates.reverse()
    for i in candidates:
        if steps[i].agent == agent:
            return i
    return None


def gt_step_index(trace: Trace) -> int | None:
    """Index of the ground-truth decisive step: ``GroundTruth.step_index`` when set,
    else the first step with the GT coordinate; ``None`` without a step label."""
    gt = trace.ground_truth
    if gt is None:
        return None
    if gt.step_index is not None and 0 <= gt.step_index < len(trace.steps):
        return gt.step_index
    if gt.step is not None:
        return find_coord(trace, gt.step)
    return None
