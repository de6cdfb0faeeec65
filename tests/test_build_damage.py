"""A built dataset's own files damaged by hand or by a crash: ``manifest.json`` with the
right tag but the wrong shape, or not JSON at all, and journal lines that are JSON but
not attempts. Each gives one clear line (an error naming the file, the JSON path and what
was expected, or a warning for a line the build skips and runs again), never a
traceback, and a damaged manifest is never listed as a trace that failed to import."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from support.cli import run_whenpro
from tests.support.cli import one_line_error
from whenpro_core.bench.report import prepare_report
from whenpro_core.bench.reviewed import Reviews
from whenpro_core.dataset import validate
from whenpro_core.dataset.build import BuildOptions, run_build
from whenpro_core.dataset.build_store import BUILD_DIR, read_manifest
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import walk

NOW = "2026-01-02T03:04:05+00:00"
#: Wrongly typed ``traces`` of a manifest whose ``format`` is right, and the JSON path
#: the error names.
BAD_TRACES = [
    ("5", "$.traces"),
    ("null", "$.traces"),
    ('"abc"', "$.traces"),
    ('{"a": 1}', "$.traces"),
    ("[1, 2]", "$.traces[0]"),
    ('[{"id": 5, "ref": 7}]', "$.traces[0].id"),
    ('[{"id": "a", "ref": 7}]', "$.traces[0].ref"),
    ('[{"id": "a", "ref": "../../outside.json"}]', "$.traces[0].ref"),
]


@pytest.fixture(scope="module")
def built(seeds, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("damage") / "ds"
    opts = BuildOptions(concurrency=2, detect=False)
    manifest = asyncio.run(run_build(seeds, root, opts, now=NOW, salt="damage")).manifest
    assert manifest["counts"]["kept"] >= 2
    return root


@pytest.fixture
def ds(built, tmp_path) -> Path:
    """A private copy of the built dataset."""
    return Path(shutil.copytree(built, tmp_path / "ds"))


def rebuild(seeds: Path, ds: Path, *more: str):
    return run_whenpro("build", str(seeds), "--out", str(ds), "-j", "2", "--keep-detectable", *more)


def wrong_traces(ds: Path, traces: str) -> None:
    (ds / "manifest.json").write_text('{"format": "whenpro.build.manifest/1", "traces": ' + traces + "}\n")


def truncated(ds: Path) -> None:
    data = (ds / "manifest.json").read_bytes()
    (ds / "manifest.json").write_bytes(data[: len(data) // 2])


# ---------------------------------------------------------------------- manifest shape


@pytest.mark.parametrize(("traces", "where"), BAD_TRACES)
def test_a_manifest_with_wrongly_typed_traces_is_one_error_naming_the_json_path(ds, traces, where):
    ref = next(r for r in walk(ds) if r.error is None).path
    wrong_traces(ds, traces)
    for read in (read_manifest, validate.review_items, validate.validation_counts):
        with pytest.raises(TraceFormatError) as caught:
            read(ds)
        assert caught.value.path == str(ds / "manifest.json") and caught.value.json_path == where
        assert caught.value.expected
    with pytest.raises(TraceFormatError, match=r"manifest\.json at \$\.traces"):
        Reviews().decision(ref, "x")


@pytest.mark.parametrize("traces", ["5", '[{"id": 5, "ref": 7}]'])
def test_bench_and_report_stop_with_one_line_on_a_wrongly_typed_manifest(ds, tmp_path, traces):
    results = tmp_path / "r.jsonl"
    assert run_whenpro("bench", str(ds), "--out", str(results), "--no-report").returncode == 0
    wrong_traces(ds, traces)
    for args in (("bench", str(ds), "--out", str(tmp_path / "x.jsonl"), "--no-report"), ("report", str(results))):
        out = run_whenpro(*args)
        assert one_line_error(out), out.stderr
        assert f"{ds / 'manifest.json'} at $.traces" in out.stderr and "(expected " in out.stderr
    with pytest.raises(TraceFormatError, match="manifest.json at"):
        prepare_report([results], tmp_path / "rep")


def test_a_written_manifest_still_reads(ds):
    manifest = read_manifest(ds)
    assert [i.id for i in validate.review_items(ds)] == [t["id"] for t in manifest["traces"]]


# ---------------------------------------------------------------------- damaged manifest


def test_a_damaged_manifest_is_not_a_trace_but_stops_bench_and_report(seeds, ds, tmp_path):
    ids = {r.id for r in walk(ds)}
    results = tmp_path / "r.jsonl"
    assert run_whenpro("bench", str(ds), "--out", str(results), "--no-report").returncode == 0
    truncated(ds)
    rows = list(walk(ds))
    assert not [r for r in rows if r.error] and {r.id for r in rows} == ids
    listed = run_whenpro("ls", str(ds))
    assert listed.returncode == 0 and "manifest.json" not in listed.stdout + listed.stderr
    info = run_whenpro("info", str(ds))
    assert info.returncode == 0 and "failed" not in info.stdout and "manifest.json" not in info.stderr
    audit = run_whenpro("audit", str(ds))
    assert audit.returncode == 0 and "could not be read" not in audit.stdout + audit.stderr
    alone = run_whenpro("ls", str(ds / "manifest.json"))  # named by itself: what is wrong with it
    assert one_line_error(alone) and "JSON ends too early" in alone.stderr
    for args in (("bench", str(ds), "--out", str(tmp_path / "x.jsonl"), "--no-report"), ("report", str(results))):
        out = run_whenpro(*args)
        assert one_line_error(out), out.stderr
        assert f"{ds / 'manifest.json'}: " in out.stderr and "(expected " in out.stderr
    assert not (tmp_path / "x.jsonl").exists()
    assert rebuild(seeds, ds).returncode == 0  # the same build command writes it again
    assert read_manifest(ds)["traces"] and run_whenpro("report", str(results)).returncode == 0


def test_a_manifest_json_outside_a_build_is_still_reported(tmp_path, ds):
    other = tmp_path / "other"
    shutil.copytree(ds / "data_release", other / "data_release")
    (other / "manifest.json").write_text('{"format": "whenpro.build.manifest/1", "tra')
    errors = [r for r in walk(other) if r.error]
    assert len(errors) == 1 and errors[0].path.endswith("manifest.json")


# ---------------------------------------------------------------------- the journal


def journal_lines(ds: Path) -> list[str]:
    return (ds / BUILD_DIR / "journal.jsonl").read_text().splitlines()


def test_a_journal_line_that_is_not_an_attempt_is_skipped_with_a_warning_and_runs_again(seeds, ds):
    before = read_manifest(ds)
    lines = journal_lines(ds)
    attempt = json.loads(lines[1])
    lines[1] = json.dumps({k: v for k, v in attempt.items() if k != "status"})
    lines.append('{"format":"whenpro.build.attempt/1","key":5}')
    (ds / BUILD_DIR / "journal.jsonl").write_text("\n".join(lines) + "\n")
    out = rebuild(seeds, ds)
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if line.startswith("whenpro: warning: ")]
    journal = ds / BUILD_DIR / "journal.jsonl"
    assert len(warnings) == 2 and "Traceback" not in out.stderr, out.stderr
    assert f"{journal}:2 at $.status" in warnings[0] and "runs again" in warnings[0]
    assert f"{journal}:{len(lines)} at $.key" in warnings[1]
    again = [json.loads(line) for line in journal_lines(ds)[len(lines) :]]
    assert [(a["key"], a["status"]) for a in again] == [(attempt["key"], attempt["status"])]
    after = read_manifest(ds)
    assert after["traces"] == before["traces"] and after["counts"] == before["counts"]


def test_force_starts_over_from_a_journal_with_a_line_that_is_not_an_attempt(seeds, ds):
    with (ds / BUILD_DIR / "journal.jsonl").open("a") as fh:
        fh.write('{"format":"whenpro.build.attempt/1","key":5}\n')
    out = rebuild(seeds, ds, "--force")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and read_manifest(ds)["counts"]["kept"] >= 2


@pytest.mark.parametrize("header", ['{"format":"whenpro.build.jour', None])
def test_a_broken_journal_header_says_how_to_start_over(seeds, ds, header):
    before = read_manifest(ds)
    lines = journal_lines(ds)
    lines = [header, *lines[1:]] if header is not None else lines[1:]  # torn, or lost
    (ds / BUILD_DIR / "journal.jsonl").write_text("\n".join(lines) + "\n")
    out = rebuild(seeds, ds)
    assert one_line_error(out), out.stderr
    assert "journal.jsonl:1" in out.stderr and "--force" in out.stderr
    assert journal_lines(ds) == lines  # nothing written
    over = rebuild(seeds, ds, "--force")
    assert over.returncode == 0, over.stderr
    assert read_manifest(ds)["traces"] != [] and len(read_manifest(ds)["traces"]) == len(before["traces"])
