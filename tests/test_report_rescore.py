"""``whenpro report`` scores each saved record from its prediction and its labels, not from
the ``score`` stored with it (a results file edited by hand or by another tool), and says
which lines it left out and why (the first bad line's JSON path and what was expected),
counting them in the rules line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SAMPLES
from tests.support.cli import run_whenpro
from whenpro_core.bench.records import Record, Scores, build_record, read_records, score_from_labels
from whenpro_core.bench.report import prepare_report
from whenpro_core.trace.model import Accepted, Attribution, GroundTruth, Step, Trace

RESCORED = ("score", "score_tol", "strict_step", "step_distance")


@pytest.fixture(scope="module")
def bench_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The lines of a heuristic bench run over the bundled samples."""
    out = tmp_path_factory.mktemp("bench") / "b1.jsonl"
    ran = run_whenpro("bench", str(SAMPLES), "--protocol", "heuristic", "--out", str(out), "--no-report")
    assert ran.returncode == 0, ran.stderr
    return out.read_text().splitlines()


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def _edited(lines: list[str], n: int, edit) -> list[str]:
    """``lines`` with line ``n`` (1-based) decoded, changed by ``edit`` and encoded again."""
    doc = json.loads(lines[n - 1])
    edit(doc)
    return [*lines[: n - 1], json.dumps(doc), *lines[n:]]


def _line_where(lines: list[str], agent_right: bool) -> int:
    """The 1-based number of the first line whose record is right (or wrong) on Agent (a
    bench run writes its items in the order they finish)."""
    return next(n for n, line in enumerate(lines, 1) if json.loads(line)["score"]["agent"] is agent_right)


def _prepared(path: Path, tmp_path: Path):
    warnings: list[str] = []
    prepared = prepare_report([path], tmp_path / "rep", warn=warnings.append)
    return prepared, warnings


def _numbers(prepared) -> list[dict]:
    return [g.overall.model_dump() for g in prepared.report.groups]


def _report(path: Path, tmp_path: Path):
    out = run_whenpro("report", str(path), "--out", str(tmp_path / "rep"), columns=200)
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if line.startswith("whenpro: warning:")]
    rules = next(line for line in out.stdout.splitlines() if line.startswith("rules: whenpro"))
    return warnings, rules


def _all_true(doc: dict) -> None:
    doc["score"] = doc["score_tol"] = {"agent": True, "step": True, "mode": True, "joint": True}


def test_untouched_records_score_again_to_what_they_store(bench_lines, tmp_path):
    records, problems = read_records(_write(tmp_path / "b1.jsonl", bench_lines))
    assert problems == [] and len(records) == 6
    for rec in records:
        again = score_from_labels(rec)
        assert {f: getattr(again, f) for f in RESCORED} == {f: getattr(rec, f) for f in RESCORED}
    prepared, warnings = _prepared(tmp_path / "b1.jsonl", tmp_path)
    assert warnings == []


def test_a_stored_score_that_contradicts_the_prediction_is_not_believed(bench_lines, tmp_path):
    plain, _ = _prepared(_write(tmp_path / "plain.jsonl", bench_lines), tmp_path / "a")
    n = _line_where(bench_lines, agent_right=False)
    wrong = json.loads(bench_lines[n - 1])
    assert (wrong["prediction"]["agent"], wrong["trace"]["gt_agent"]) == ("solver", "planner")
    edited = _write(tmp_path / "b1.jsonl", _edited(bench_lines, n, _all_true))
    prepared, warnings = _prepared(edited, tmp_path / "b")
    assert _numbers(prepared) == _numbers(plain)
    assert warnings == [
        f"{edited}: 1 record's stored score disagrees with its prediction and labels (line {n}); "
        "scored from the prediction"
    ]


def test_the_warning_counts_every_record_that_disagrees(bench_lines, tmp_path):
    n = _line_where(bench_lines, agent_right=False)
    other = 1 if n != 1 else 2
    lines = _edited(_edited(bench_lines, n, _all_true), other, lambda d: d.update(strict_step=not d["strict_step"]))
    _, warnings = _prepared(_write(tmp_path / "b1.jsonl", lines), tmp_path)
    first, second = sorted((n, other))
    assert warnings == [
        f"{tmp_path / 'b1.jsonl'}: 2 records' stored scores disagree with their predictions and labels "
        f"(lines {first}, {second}); scored from the predictions"
    ]


def test_a_failed_record_scores_wrong_whatever_it_stores(bench_lines, tmp_path):
    def failed(doc: dict) -> None:
        _all_true(doc)
        doc.update(prediction=None, error="backend: HTTP 500", error_kind="backend", strict_step=True)

    plain, _ = _prepared(_write(tmp_path / "plain.jsonl", bench_lines), tmp_path / "a")
    n = _line_where(bench_lines, agent_right=True)
    edited = _edited(bench_lines, n, failed)
    prepared, warnings = _prepared(_write(tmp_path / "b1.jsonl", edited), tmp_path / "b")
    assert len(warnings) == 1 and f"(line {n})" in warnings[0]
    before, after = plain.report.groups[0].overall, prepared.report.groups[0].overall
    assert after.agent_acc == pytest.approx(before.agent_acc - 1 / 6)
    assert (after.n, after.failed) == (6, 1)


def test_a_record_without_prediction_or_error_is_left_out_as_unreadable(bench_lines, tmp_path):
    edited = _write(tmp_path / "b1.jsonl", _edited(bench_lines, 2, lambda d: d.pop("prediction")))
    warnings, rules = _report(edited, tmp_path)
    assert warnings == [
        f"whenpro: warning: {edited}: skipped 1 line that is not a whenpro bench record "
        "(line 2 at $.prediction: no prediction and no error: not a finished record)"
    ]
    assert "unlabelled or unreadable rows left out: 1;" in rules
    prepared, _ = _prepared(edited, tmp_path / "b")
    assert prepared.report.groups[0].overall.n == 5


def test_a_wrong_type_is_named_by_its_json_path_and_counted_as_left_out(bench_lines, tmp_path):
    edited = _write(tmp_path / "v.jsonl", _edited(bench_lines, 2, lambda d: d["trace"].update(gt_step=4)))
    warnings, rules = _report(edited, tmp_path)
    assert warnings == [
        f"whenpro: warning: {edited}: skipped 1 line that is not a whenpro bench record "
        "(line 2 at $.trace.gt_step: expected a string)"
    ]
    assert "unlabelled or unreadable rows left out: 1;" in rules


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda d: d.update(with_gold="no"), "$.with_gold"),  # read as False: a new "no-gold" row appeared
        (lambda d: d["score"].update(agent="yes"), "$.score.agent"),
        (lambda d: d["trace"].update(labelled=0), "$.trace.labelled"),
    ],
)
def test_a_true_false_field_holding_another_type_is_named_not_read_as_a_boolean(bench_lines, tmp_path, edit, where):
    edited = _write(tmp_path / "v.jsonl", _edited(bench_lines, 2, edit))
    warnings, rules = _report(edited, tmp_path)
    assert warnings == [
        f"whenpro: warning: {edited}: skipped 1 line that is not a whenpro bench record "
        f"(line 2 at {where}: expected true or false)"
    ], warnings
    assert "unlabelled or unreadable rows left out: 1;" in rules


def test_a_deleted_score_is_not_a_disagreement(bench_lines, tmp_path):
    edited = _write(tmp_path / "v.jsonl", _edited(bench_lines, 2, lambda d: d.pop("score")))
    warnings, _ = _report(edited, tmp_path)
    assert warnings == []


def test_several_bad_lines_name_the_first_ones_reason(bench_lines, tmp_path):
    results = _write(tmp_path / "r.jsonl", ["garbage", *bench_lines[:2], "{}", *bench_lines[2:]])
    warnings, rules = _report(results, tmp_path)
    assert warnings == [
        f"whenpro: warning: {results}: skipped 2 lines that are not whenpro bench records "
        "(lines 1, 4; line 1: not valid JSON)"
    ]
    assert "unlabelled or unreadable rows left out: 2;" in rules


def _trace() -> Trace:
    steps = [Step(index=i, coord=str(i + 1), agent="a" if i % 2 else "b", content="x") for i in range(5)]
    gt = GroundTruth(agent="a", step="2", mode="R.3", accepted=Accepted(agent=["b"], mode=["R.2"]))
    return Trace(id="t", framework="made-up", steps=steps, ground_truth=gt)


def test_accepted_alternatives_and_the_step_distance_survive_scoring_again():
    pred = Attribution(agent="b", step="3", mode="R.2")
    rec = build_record(
        ref="/t.json", protocol="h", model="h", with_gold=True, trace=_trace(), prediction=pred, tolerance=1
    )
    assert rec.score == Scores(agent=True, step=False, mode=True, joint=False)
    assert rec.score_tol == Scores(agent=True, step=True, mode=True, joint=True)
    again = score_from_labels(rec)
    assert {f: getattr(again, f) for f in RESCORED} == {f: getattr(rec, f) for f in RESCORED}


def test_a_record_written_before_alternatives_were_kept_keeps_its_stored_score():
    pred = Attribution(agent="b", step="2", mode="R.2")
    rec = build_record(ref="/t.json", protocol="h", model="h", with_gold=True, trace=_trace(), prediction=pred)
    old = Record.model_validate({**rec.model_dump(), "trace": rec.trace.model_dump(exclude={"gt_accepted"})})
    assert old.trace.gt_accepted is None and old.score == rec.score
    assert score_from_labels(old).score == rec.score  # "b" and "R.2" score through alternatives it does not hold
