"""Dataset listings: filters, facets, counts and a walk that survives bad files
(whenpro_core.library.listing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from whenpro_core.formats.base import DocumentImporter
from whenpro_core.library.listing import RowFilter, count_line, facet_counts, filter_rows, walk_rows
from whenpro_core.trace.model import TraceSummary


def rows() -> list[TraceSummary]:
    return [
        TraceSummary(
            id="a1",
            path="/d/a1.json",
            framework="magentic-one",
            benchmark="gaia",
            modality="text",
            step_count=10,
            gt_mode="R.3",
            gt_step="4",
        ),
        TraceSummary(
            id="b2",
            path="/d/b2.json",
            framework="smolagents",
            benchmark="",
            modality="image",
            step_count=5,
            gt_mode="P.1",
        ),
        TraceSummary(
            id="c3", path="/d/c3.json", framework="smolagents", benchmark="gaia", modality="text", step_count=3
        ),
        TraceSummary(id="bad", path="/d/bad.json", error="/d/bad.json: file is binary"),
    ]


def test_facets_text_and_error_rows() -> None:
    r = rows()
    assert filter_rows(r, RowFilter()) == [0, 1, 2, 3]
    only = RowFilter({"framework": frozenset({"smolagents"})})
    assert filter_rows(r, only) == [1, 2]
    assert filter_rows(r, RowFilter({"benchmark": frozenset({"(none)"})})) == [1]
    assert filter_rows(r, RowFilter(text="GAIA")) == [0, 2]
    assert filter_rows(r, RowFilter(text="binary")) == [3]
    both = RowFilter({"modality": frozenset({"text"}), "framework": frozenset({"smolagents"})})
    assert filter_rows(r, both) == [2]
    assert both.describe() == "modality: text · framework: smolagents"


def test_mode_facet_is_a_label() -> None:
    r = rows()
    counts = facet_counts(r)
    assert "mode" not in counts
    assert facet_counts(r, with_labels=True)["mode"] == [("(none)", 1), ("P.1", 1), ("R.3", 1)]
    assert counts["framework"] == [("smolagents", 2), ("magentic-one", 1)]
    flt = RowFilter({"mode": frozenset({"R.3"})})
    assert filter_rows(r, flt) == [0]
    assert filter_rows(r, flt.without_labels()) == [0, 1, 2, 3]


def test_count_line() -> None:
    assert count_line(312, 10_000, 0) == "312 of 10,000 traces"
    assert count_line(1, 1, 0) == "1 of 1 trace"
    assert count_line(5, 5, 2, scanning=True) == "5 of 5 rows (3 traces, 2 failed to import) · scanning…"


def test_walk_rows_reports_bad_files_and_carries_on(dataset_dir: Path) -> None:
    listed = list(walk_rows(dataset_dir))
    assert [r.id for r in listed if r.error is None] == ["team-1", "team-2", "team-3"]
    errors = {Path(r.path).name: r.error for r in listed if r.error}
    assert "binary" in errors["binary.json"]
    assert "truncated" in errors["truncated.json"]


class ExplodingImporter(DocumentImporter):
    """A plugin importer with a bug: it claims documents with ``explode`` and raises a
    KeyError (not a WhenproError) while listing them."""

    name = "exploding"
    priority = 10_000

    def matches(self, doc):
        return isinstance(doc, dict) and bool(doc.get("explode"))

    def load(self, doc, ctx):
        raise KeyError("bug in an importer")


def test_walk_rows_turns_importer_bugs_into_error_rows(tmp_path: Path) -> None:
    from whenpro_core.formats import registry

    (tmp_path / "boom.json").write_text('{"explode": true}')
    (tmp_path / "fine.json").write_text('{"history": [], "question": "q"}')
    spec = "tests.test_listing:ExplodingImporter"
    registry.register(spec)
    try:
        listed = list(walk_rows(tmp_path))
    finally:
        registry.IMPORTERS.remove(spec)
    assert "internal error while importing: KeyError" in listed[0].error
    assert listed[1].error is None and listed[1].framework == "magentic-one"


@pytest.mark.real_traces
def test_walk_rows_on_who_and_when(whowhen: Path) -> None:
    listed = list(walk_rows(whowhen))
    assert all(r.error is None for r in listed)
    counts = facet_counts(listed)
    assert dict(counts["framework"]).keys() == {"magentic-one", "captainagent"}
    assert sum(n for _, n in counts["framework"]) == len(listed)
