"""The form of a step's text, with its meaning masked: shape features (markup, fences,
labels, line structure, casing), size measures and templates (issue 14).

Pure functions of a string (and, for :func:`trace_shapes` and :func:`trace_tokens`, of a
trace's judge view); nothing here reads a label. :func:`line_templates`,
:func:`trace_shapes` and :func:`trace_tokens` are memoised by content (the text, or the
whole frozen judge view: equal content, equal key), so a build that reads the same
traces under many corpora computes each once (issue 33); their results are immutable
(frozensets, tuples) and must not be mutated. :func:`clear_caches` empties them. Used by
the audit baselines (:mod:`whenpro_core.audit.baselines`) and the corpus
(:mod:`whenpro_core.audit.corpus`).
"""

from __future__ import annotations

import functools
import math
import re

from whenpro_core.audit.view import AuditTrace

_FENCE = re.compile(r"^\s*(```|~~~)", re.M)
_TAG = re.compile(r"</?([a-zA-Z][\w-]{0,20})>")
_LABEL = re.compile(r"^\s*([A-Z][A-Za-z ]{0,24}):(?:\s|$)", re.M)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+", re.M)
_HEADING = re.compile(r"^\s*#{1,6}\s", re.M)
_EMPH = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?", re.I)
_QUOTED = re.compile(r"\"[^\"\n]{0,200}\"|'[^'\n]{0,200}'|`[^`\n]{1,200}`")
_WORD = re.compile(r"[A-Za-z]{2,}")
_CODE_BLOCK = re.compile(r"(```|~~~).*?(\1|\Z)|<code>.*?(</code>|\Z)", re.S)


def _bucket(n: int) -> int:
    """0, 1, 2, 3-4, 5-8, 9-16, ... as 0, 1, 2, 3, 4, 5, ..."""
    return n if n < 3 else 2 + math.ceil(math.log2(n - 1))


def prose(text: str) -> str:
    """``text`` without its code blocks (fenced or in ``<code>`` tags)."""
    return _CODE_BLOCK.sub("\n", text)


def shape(text: str) -> dict[str, object]:
    """Categorical shape features of ``text``: which fences, tags and line labels it
    uses; whether its prose (code blocks left out: a ``#`` comment is no heading) has
    bullets, headings, emphasis, blank lines, shouting; a trailing punctuation mark,
    its first character's case, and its prose line count bucket. Values are hashable;
    two steps written the same way give equal dicts."""
    words = prose(text)
    lines = [ln for ln in words.splitlines() if ln.strip()]
    stripped = text.strip()
    return {
        "fence": bool(_FENCE.search(text)),
        "tags": frozenset(t.lower() for t in _TAG.findall(text)),
        "labels": frozenset(_LABEL.findall(words)),
        "bullets": bool(_BULLET.search(words)),
        "heading": bool(_HEADING.search(words)),
        "emphasis": bool(_EMPH.search(words)),
        "blank_lines": "\n\n" in words.strip(),
        "lines": _bucket(len(lines)),
        "first_case": stripped[:1].isupper() if stripped[:1].isalpha() else stripped[:1].isdigit(),
        "ends": stripped[-1:] if stripped[-1:] in ".!?:)`>" else "",
        "shouting": sum(w.isupper() and len(w) > 3 for w in _WORD.findall(words)) > 2,
    }


def template(text: str) -> str:
    """``text`` with its meaning masked: quoted strings -> ``"_"``, numbers -> ``0``,
    whitespace collapsed, lower case."""
    masked = _NUMBER.sub("0", _QUOTED.sub('"_"', text))
    return " ".join(masked.split()).lower()


#: Entries each memoised function keeps (least recently used dropped first).
CACHE_SIZE = 1 << 15


@functools.lru_cache(maxsize=CACHE_SIZE)
def line_templates(text: str) -> frozenset[str]:
    """The distinct :func:`template` of each non-blank line of ``text`` (memoised by text)."""
    return frozenset(t for ln in text.splitlines() if (t := template(ln)))


def digit_share(text: str) -> float:
    """Share of characters of ``text`` that are digits (0 for empty text)."""
    return sum(c.isdigit() for c in text) / len(text) if text else 0.0


def log_length(text: str) -> float:
    """``log(1 + characters)``: a length scale where doubling is one step."""
    return math.log1p(len(text))


#: Shape features that are markup (how a step is formatted) rather than style that
#: follows from what it says; they weigh more in a format comparison.
MARKUP = ("fence", "tags", "labels", "heading")


def _value(value: object) -> str:
    return ",".join(sorted(map(str, value))) if isinstance(value, frozenset) else str(value)


def departures(mine: dict[str, object], peers: list[dict[str, object]]) -> dict[str, float]:
    """Shape feature -> the share of ``peers`` that keep the habit ``mine`` departs from
    (only features where a majority of peers agree on a value ``mine`` does not have)."""
    out: dict[str, float] = {}
    if not peers:
        return out
    for key, value in mine.items():
        counts: dict[object, int] = {}
        for p in peers:
            counts[p[key]] = counts.get(p[key], 0) + 1
        common = max(counts, key=lambda v: counts[v])
        share = counts[common] / len(peers)
        if value != common and share > 0.5:
            out[key] = share
    return out


def shape_tokens(mine: dict[str, object], peers: list[dict[str, object]]) -> set[str]:
    """Tokens describing a step's form for a classifier: ``key=value`` for each shape
    feature and ``key:departs`` where it breaks its peers' habit (:func:`departures`)."""
    tokens = {f"{k}={_value(v)}" for k, v in mine.items()}
    tokens |= {f"{k}:departs" for k in departures(mine, peers)}
    return tokens


@functools.lru_cache(maxsize=CACHE_SIZE)
def trace_shapes(t: AuditTrace) -> tuple[dict[str, object], ...]:
    """:func:`shape` of each candidate step's content (its text when it has no content),
    by rank; memoised by the view's content (read-only: do not mutate the dicts)."""
    return tuple(shape(s.content or s.text) for s in t.steps)


@functools.lru_cache(maxsize=CACHE_SIZE)
def trace_tokens(t: AuditTrace) -> tuple[frozenset[str], ...]:
    """:func:`shape_tokens` of each candidate step against its peers, plus its kind,
    by rank; memoised by the view's content."""
    shapes = trace_shapes(t)
    return tuple(
        frozenset(shape_tokens(shapes[s.rank], [shapes[p.rank] for p in t.peers(s)]) | {f"kind={s.kind}"})
        for s in t.steps
    )


def clear_caches() -> None:
    """Empty the memo of :func:`line_templates`, :func:`trace_shapes` and :func:`trace_tokens`
    (:mod:`~whenpro_core.audit.features` keeps its own, of templates and word 3-grams)."""
    for cached in (line_templates, trace_shapes, trace_tokens):
        cached.cache_clear()


__all__ = [
    "CACHE_SIZE",
    "MARKUP",
    "clear_caches",
    "departures",
    "prose",
    "digit_share",
    "line_templates",
    "log_length",
    "shape",
    "shape_tokens",
    "template",
    "trace_shapes",
    "trace_tokens",
]
