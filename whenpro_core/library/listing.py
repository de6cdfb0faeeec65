"""Filtering dataset listings: the one row filter (:class:`RowFilter`) deciding which
:class:`~whenpro_core.trace.model.TraceSummary` rows pass a choice of outcome, modality,
framework, benchmark, GT mode, id or format and a free text, and the values (with
counts) each facet can take.

UI-free; the TUI's library screen, ``whenpro ls --where`` and ``whenpro bench --where``
(:func:`parse_where`) share it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from whenpro_core.errors import ConfigError
from whenpro_core.formats.registry import (
    error_summary,
    find_root,
    iter_files,
    names_a_file,
    summarize_file,
    without_merged,
)
from whenpro_core.injection.verify import check_answer
from whenpro_core.storage.fsutil import exists
from whenpro_core.trace.model import Modality, Outcome, TraceSummary
from whenpro_core.trace.taxonomy import Taxonomy
from whenpro_core.views.traceview import unlabelled_id, unlabelled_ref

#: Every key a row filter understands (``--where KEY=VALUE``), and the TraceSummary
#: attribute it reads.
FILTER_KEYS = {
    "outcome": "outcome",
    "modality": "modality",
    "framework": "framework",
    "benchmark": "benchmark",
    "mode": "gt_mode",
    "id": "id",
    "format": "format",
}
#: The facets the library offers a choice of values for, as (facet, TraceSummary attribute).
FACETS = tuple((k, FILTER_KEYS[k]) for k in ("outcome", "modality", "framework", "benchmark", "mode"))
#: Value shown for a row whose facet attribute is empty.
NONE_VALUE = "(none)"


def facet_value(row: TraceSummary, facet: str) -> str:
    """The value of ``facet`` (a key of :data:`FILTER_KEYS`) for ``row``;
    :data:`NONE_VALUE` when empty."""
    return getattr(row, FILTER_KEYS[facet]) or NONE_VALUE


@dataclass(frozen=True)
class RowFilter:
    """A choice of facet values (keys of :data:`FILTER_KEYS`; empty set = any; values
    compare case-insensitively) and a free-text query (case-insensitive substring of the
    id, path, framework, benchmark, the task's first words, a session's first prompt, or error).

    Error rows (files that failed to import) pass only when no facet is chosen, so a
    broken file stays visible in the unfiltered list and can be found by text. With
    ``labels`` False the text matches ids and file names as shown with labels hidden
    (:func:`whenpro_core.views.traceview.unlabelled_id`): typing ``R.4`` must not find the
    traces whose id carries that failure mode.
    """

    facets: dict[str, frozenset[str]] = field(default_factory=dict)
    text: str = ""
    labels: bool = True
    #: Text searched inside the traces' steps (:mod:`whenpro_core.library.inside`) and the
    #: references of the traces found to hold it so far: only those pass (``None``: no
    #: such search).
    inside: tuple[str, frozenset[str]] | None = None

    @property
    def active(self) -> bool:
        """True when the filter hides anything."""
        return bool(self.text.strip()) or any(self.facets.values()) or self.inside is not None

    def keeps(self, row: TraceSummary) -> bool:
        """True if ``row`` passes."""
        chosen = {k: v for k, v in self.facets.items() if v}
        if self.inside is not None and row.ref() not in self.inside[1]:
            return False
        if row.error is not None:
            if chosen:
                return False
        else:
            for facet, values in chosen.items():
                if facet_value(row, facet).casefold() not in {v.casefold() for v in values}:
                    return False
        needle = self.text.strip().lower()
        if needle:
            ident, ref = row.id, row.ref()
            if not self.labels:
                ident = unlabelled_id(ident)
                ref = unlabelled_ref(ref)
            hay = " ".join(filter(None, (ident, ref, row.framework, row.benchmark, row.task, row.error))).lower()
            return needle in hay
        return True

    def describe(self) -> str:
        """``"framework: magentic-one · text: gaia"`` (``""`` when inactive)."""
        parts = [f"{k}: {', '.join(sorted(v))}" for k, v in self.facets.items() if v]
        if self.text.strip():
            parts.append(f"text: {self.text.strip()}")
        if self.inside is not None:
            parts.append(f"steps say: {self.inside[0]}")
        return " · ".join(parts)

    def without_labels(self) -> RowFilter:
        """The same filter minus the ``mode`` facet (a GT label: hidden when labels are),
        its text matched against ids with their labels masked."""
        return RowFilter(
            {k: v for k, v in self.facets.items() if k != "mode"}, self.text, labels=False, inside=self.inside
        )


def parse_where(specs: str | Sequence[str] | None) -> RowFilter:
    """The filter of ``--where`` options: ``"modality=image,framework=smolagents|debate"``
    (or several options) -> facets ``{"modality": {"image"}, "framework": {"smolagents",
    "debate"}}``; ``|`` separates alternatives; no options -> the empty filter.
    ConfigError for an empty option or term, an unknown key, a term without ``=`` (or with
    ``==``), or a value outside the fixed set of its key (:func:`fixed_values`: outcome,
    modality and the built-in failure-mode codes; :data:`NONE_VALUE` is always allowed)."""
    given = [specs] if isinstance(specs, str) else list(specs or [])
    if any(not spec.strip(" ,") for spec in given):
        raise ConfigError("empty --where", expected="KEY=VALUE[,KEY=VALUE]")
    facets: dict[str, set[str]] = {}
    for term in (t.strip() for spec in given for t in spec.split(",")):
        key, values = _where_term(term)
        facets.setdefault(key, set()).update(values)
    return RowFilter({k: frozenset(v) for k, v in facets.items()})


def fixed_values(key: str) -> tuple[str, ...] | None:
    """The values ``--where KEY=`` may take when the set is fixed (``outcome``: the
    :class:`~whenpro_core.trace.model.Outcome` values, ``modality``: the
    :class:`~whenpro_core.trace.model.Modality` values, ``mode``: the built-in taxonomy
    codes), each with :data:`NONE_VALUE`; ``None`` for an open key (framework, id, ...)."""
    if key == "outcome":
        return (*(o.value for o in Outcome), NONE_VALUE)
    if key == "modality":
        return (*(m.value for m in Modality), NONE_VALUE)
    if key == "mode":
        return (*(m.code for m in Taxonomy.builtin()), NONE_VALUE)
    return None


def _where_term(term: str) -> tuple[str, list[str]]:
    """``"mode=R.3|R.4"`` -> ``("mode", ["R.3", "R.4"])``; ConfigError for an empty or
    malformed term, an unknown key or a value outside :func:`fixed_values`."""
    if not term:
        raise ConfigError("empty --where term (a stray comma)", expected="KEY=VALUE[,KEY=VALUE]")
    key, eq, value = term.partition("=")
    key = key.strip().lower()
    values = [v.strip() for v in value.split("|")]
    if not eq or value.lstrip().startswith("=") or not all(values):
        raise ConfigError(f"bad --where term {term!r}", expected="KEY=VALUE[|VALUE...]")
    if key not in FILTER_KEYS:
        raise ConfigError(f"unknown --where key {key!r}", expected=", ".join(FILTER_KEYS))
    allowed = fixed_values(key)
    if allowed is not None:
        known = {a.casefold() for a in allowed}
        for v in values:
            if v.casefold() not in known:
                raise ConfigError(f"unknown --where value {key}={v!r}", expected="one of " + ", ".join(allowed))
    return key, values


def filter_rows(rows: Sequence[TraceSummary], flt: RowFilter) -> list[int]:
    """Positions in ``rows`` of the rows ``flt`` keeps, in order."""
    if not flt.active:
        return list(range(len(rows)))
    return [i for i, r in enumerate(rows) if flt.keeps(r)]


#: Columns a library can be sorted by, in the order ``s`` cycles through them.
SORT_COLUMNS = ("id", "outcome", "task", "answer", "steps", "agents", "framework", "benchmark", "modality", "gt")
#: Outcomes in the order a sort by outcome shows them: the failed runs first.
_OUTCOME_ORDER = {"failure": 0, "unknown": 1, "success": 2}
_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """A sort key that orders the digit runs of ``text`` by value: ``ag-2`` before
    ``ag-10``, ``1.2`` before ``1.10``; case-insensitive."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(text.casefold()) if part
    )


def answer_mark(row: TraceSummary) -> bool | None:
    """Whether the row's final answer matches its gold answer (``None``: no gold known).
    The same check as :func:`whenpro_core.injection.verify.check_answer`."""
    if not row.gold:
        return None
    return check_answer(row.final_answer, row.gold).success


def sort_key(row: TraceSummary, column: str) -> tuple[object, ...]:
    """The key of ``row`` for a sort by ``column`` (one of :data:`SORT_COLUMNS`); rows
    without a value sort last, error rows after them."""
    if row.error is not None:
        return (2,)
    value: object
    if column == "id":
        value = natural_key(row.id)
    elif column == "outcome":
        value = _OUTCOME_ORDER.get(row.outcome or "unknown", 1)
    elif column == "answer":
        mark = answer_mark(row)
        value = None if mark is None else int(mark)
    elif column == "steps":
        value = row.step_count
    elif column == "agents":
        value = row.agent_count
    elif column == "gt":
        value = natural_key(f"{row.gt_step or ''}/{row.gt_mode or ''}") if row.gt_step or row.gt_mode else None
    else:  # text columns
        text = getattr(row, column) or ""
        value = natural_key(text) if text else None
    return (1,) if value is None else (0, value, natural_key(row.id))


def sort_rows(
    rows: Sequence[TraceSummary], shown: list[int], column: str | None, *, reverse: bool = False
) -> list[int]:
    """``shown`` (positions in ``rows``) ordered by ``column``; arrival order when
    ``column`` is ``None``. ``reverse`` flips the order of the rows that have a value
    (empty values and error rows stay last)."""
    if column is None:
        return list(shown)
    keyed = [(sort_key(rows[i], column), i) for i in shown]
    valued = sorted((k for k in keyed if k[0][0] == 0), reverse=reverse)
    rest = sorted(k for k in keyed if k[0][0] != 0)
    return [i for _, i in valued + rest]


def facet_counts(rows: Iterable[TraceSummary], *, with_labels: bool = False) -> dict[str, list[tuple[str, int]]]:
    """For each facet, its values with row counts, most frequent first. Error rows are
    left out; the ``mode`` facet (a GT label) only ``with_labels``."""
    counters: dict[str, Counter[str]] = {f: Counter() for f, _ in FACETS if with_labels or f != "mode"}
    for row in rows:
        if row.error is not None:
            continue
        for facet, counter in counters.items():
            counter[facet_value(row, facet)] += 1
    return {f: sorted(c.items(), key=lambda kv: (-kv[1], kv[0])) for f, c in counters.items()}


def count_line(shown: int, total: int, errors: int, *, scanning: bool = False) -> str:
    """The live count of a library: ``"312 of 10,000 traces"``, or with files that
    failed to import ``"312 of 10,002 rows (10,000 traces, 2 failed to import)"``; a
    ``" · scanning…"`` suffix while the walk runs."""
    traces = total - errors
    if errors:
        head = f"{shown:,} of {total:,} rows ({traces:,} trace{'s' * (traces != 1)}, {errors:,} failed to import)"
    else:
        head = f"{shown:,} of {total:,} trace{'s' * (total != 1)}"
    return head + (" · scanning…" if scanning else "")


def walk_rows(target: str | Path) -> Iterator[TraceSummary]:
    """Like :func:`whenpro_core.formats.walk`, but a file whose importer fails in an
    unexpected way (a bug, not a WhenproError) also becomes an error row instead of
    ending the listing. Raises TraceFormatError only when ``target`` names nothing."""
    text = str(target)
    start = Path(text) if exists(text) else None
    stop = start if start is not None and start.is_dir() else None
    direct = start is not None and names_a_file(start)
    files = ((path, _file_rows(path, stop, direct)) for path in iter_files(target))
    yield from without_merged(files, direct=direct)


def _file_rows(path: Path, stop: Path | None, direct: bool) -> list[TraceSummary]:
    """The listing rows of one file; an importer bug gives one error row."""
    try:
        return summarize_file(path, find_root(path, stop=stop), direct=direct)
    except Exception as exc:  # noqa: BLE001 - an importer bug must not end the walk
        return [error_summary(path, f"{path}: internal error while importing: {type(exc).__name__}: {exc}")]


def split_list(text: str | Sequence[str] | None) -> list[str]:
    """``"a,b"`` or ``["a,b", "c"]`` -> ``["a", "b", "c"]`` (blanks dropped, order kept,
    duplicates removed)."""
    if text is None:
        return []
    parts = [text] if isinstance(text, str) else list(text)
    out: dict[str, None] = {}
    for part in parts:
        for tok in str(part).split(","):
            if tok.strip():
                out[tok.strip()] = None
    return list(out)
