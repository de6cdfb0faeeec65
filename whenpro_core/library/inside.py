"""Finding traces by what their steps say (the library's ``F``, issue 32: "search across
sessions"): each listed trace is loaded and its steps searched
(:func:`whenpro_core.views.search.search_steps`: content, tool calls, observations, errors;
the hidden label fields only with labels shown). UI-free; run it in a thread and stop it
with ``should_stop``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from whenpro_core.errors import WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.views.search import search_steps


@dataclass(frozen=True)
class InsideHit:
    """What one trace holds of the text: ``ref`` (``path`` or ``path#key``), ``steps`` (how
    many steps hold it; 0: none), ``matches`` (occurrences), ``error`` (the one-line reason
    the trace could not be read, then ``steps`` is 0)."""

    ref: str
    steps: int
    matches: int
    error: str | None = None


def search_inside(
    refs: Iterable[str], query: str, *, labels: bool = False, should_stop: Callable[[], bool] | None = None
) -> Iterator[InsideHit]:
    """One :class:`InsideHit` per trace of ``refs``, in order (a trace without the text
    too: callers count progress). A blank ``query`` yields nothing. Stops early when
    ``should_stop()`` turns True (checked between traces and every 256 steps)."""
    if not query.strip():
        return
    for ref in refs:
        if should_stop is not None and should_stop():
            return
        try:
            trace = load_trace(ref)
        except WhenproError as exc:
            yield InsideHit(ref, 0, 0, exc.one_line())
            continue
        found = search_steps(trace.steps, query, include_hidden=labels, should_stop=should_stop)
        if found.cancelled:
            return
        yield InsideHit(ref, len(found.steps), found.matches)


__all__ = ["InsideHit", "search_inside"]
