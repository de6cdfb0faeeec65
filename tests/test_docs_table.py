"""benchmarks/_docs_table.py writes a benchmark's table into its marked block of a docs page
(issue 34): only that block changes, the write is atomic, and a page without the markers is
refused with one line before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.cli import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import _docs_table  # noqa: E402
from _docs_table import MarkerError, replace_blocks, write_blocks, write_docs  # noqa: E402

PAGE = """# Page

Prose before.

<!-- bench:speed -->

| old | table |
|---|---|
| 1 | 2 |

<!-- /bench:speed -->

- a list item with a table:

  <!-- bench:inner -->

  | x |
  |---|

  <!-- /bench:inner -->

Prose after, with `<!-- bench:` in code.
"""


def test_only_the_named_block_changes():
    new = replace_blocks(PAGE, {"speed": "| new |\n|---|\n| 3 |\n"})
    before, after = PAGE.split("<!-- bench:speed -->")[0], PAGE.split("<!-- /bench:speed -->")[1]
    assert new == before + "<!-- bench:speed -->\n\n| new |\n|---|\n| 3 |\n\n<!-- /bench:speed -->" + after
    assert replace_blocks(new, {"speed": "| old | table |\n|---|---|\n| 1 | 2 |"}) == PAGE  # the round trip


def test_a_block_inside_a_list_item_keeps_its_indentation():
    new = replace_blocks(PAGE, {"inner": "| y |\n|---|\n\n| z |"})
    assert "  <!-- bench:inner -->\n\n  | y |\n  |---|\n\n  | z |\n\n  <!-- /bench:inner -->\n" in new


@pytest.mark.parametrize(
    ("page", "said"),
    [
        (PAGE, "marker '<!-- bench:missing -->' not found (expected exactly one)"),
        (PAGE + "<!-- bench:missing -->\n<!-- bench:missing -->\n", "found 2 times"),
        ("<!-- /bench:missing -->\n<!-- bench:missing -->\n", "'<!-- /bench:missing -->' comes before"),
        ("text <!-- bench:missing --> x\n<!-- /bench:missing -->\n", "must start its line"),
    ],
)
def test_a_page_without_its_markers_is_refused_and_left_alone(tmp_path, page, said):
    doc = tmp_path / "page.md"
    doc.write_text(page, encoding="utf-8")
    with pytest.raises(MarkerError) as err:
        write_blocks(doc, {"missing": "| t |"})
    assert said in str(err.value) and str(doc) in str(err.value) and "\n" not in str(err.value)
    assert doc.read_text(encoding="utf-8") == page


def test_a_missing_marker_ends_the_script_with_one_line(tmp_path, capsys):
    doc = tmp_path / "page.md"
    doc.write_text(PAGE, encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        write_docs(doc, {"speed": "| ok |", "missing": "| t |"})
    assert str(stop.value).startswith(f"--write-docs: {doc}: marker '<!-- bench:missing -->' not found")
    assert doc.read_text(encoding="utf-8") == PAGE  # the block that could be written was not either
    assert capsys.readouterr().out == ""


def test_the_write_is_atomic(tmp_path, monkeypatch):
    doc = tmp_path / "page.md"
    doc.write_text(PAGE, encoding="utf-8")

    def interrupted(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(Exception, match="No space left on device"):
        write_blocks(doc, {"speed": "| new |"})
    assert doc.read_text(encoding="utf-8") == PAGE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.md"]  # no temp file left behind


def test_write_docs_stamps_the_measuring_command(tmp_path, monkeypatch):
    doc = tmp_path / "page.md"
    doc.write_text(PAGE, encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["/x/benchmarks/speed.py", "--runs", "3", "--write-docs", str(doc)])
    write_docs(doc, {"speed": "| t |\n|---|"})
    block = doc.read_text(encoding="utf-8").split("<!-- bench:speed -->")[1].split("<!-- /bench:speed -->")[0]
    assert block.startswith("\n\n| t |\n|---|\n\nWritten by `python benchmarks/speed.py --runs 3` on ")
    assert block.rstrip().endswith("UTC (one run).")
    assert _docs_table._measuring_arguments(["a", "--write-docs", "--n", "2", "--write-docs=p"]) == ["a", "--n", "2"]


def run_benchmark(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python benchmarks/SCRIPT ARGS`` as a user runs it, output captured."""
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_the_heuristic_benchmark_writes_its_tables(real_traces, tmp_path):
    """The real script, on the Who&When Pro samples alone, rewrites both of its blocks in a copy
    of docs/attribution.md and leaves the rest of the page as it was."""
    root = tmp_path / "real"
    root.mkdir()
    (root / "who-when-pro-samples").symlink_to(real_traces / "who-when-pro-samples")
    page = tmp_path / "attribution.md"
    original = (REPO / "docs" / "attribution.md").read_text(encoding="utf-8")
    page.write_text(original, encoding="utf-8")
    done = run_benchmark("heuristic_accuracy.py", str(root), "--write-docs", str(page))
    assert done.returncode == 0, done.stderr
    written = page.read_text(encoding="utf-8")
    for name in ("heuristic-accuracy", "heuristic-reliability"):
        block = written.split(f"<!-- bench:{name} -->")[1].split(f"<!-- /bench:{name} -->")[0]
        assert "Who&When Pro samples" in block and "Who&When Hand-Crafted" not in block
        assert "Written by `python benchmarks/heuristic_accuracy.py " in block
    outside = [part.split("<!-- /bench:")[-1] for part in written.split("<!-- bench:")]
    assert outside == [part.split("<!-- /bench:")[-1] for part in original.split("<!-- bench:")]


def test_the_counterfactual_benchmark_replays_built_traces_from_their_provenance(tmp_path):
    """docs/attribution.md: replay finds the injected step every time. The script's dataset is a
    built one, whose traces carry their env only in provenance.json; the script must take it from
    there as `attribute` and `bench` do, and writes its row into its block."""
    page = tmp_path / "attribution.md"
    page.write_text((REPO / "docs" / "attribution.md").read_text(encoding="utf-8"), encoding="utf-8")
    done = run_benchmark("counterfactual_accuracy.py", "--seeds", "2", "--per-seed", "1", "--write-docs", str(page))
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("| counterfactual"))
    assert row.split(" | ")[1].startswith("100.0 ("), row
    block = page.read_text(encoding="utf-8").split("<!-- bench:counterfactual-accuracy -->")[1]
    assert row in block.split("<!-- /bench:counterfactual-accuracy -->")[0]
