"""Text orjson refuses (lone surrogates, integers beyond 64 bits) is written losslessly by
every whenpro writer of trace data: verdict sidecars, bench records, Who&When Pro rows."""

from __future__ import annotations

from conftest import SAMPLES
from whenpro_core.attribution.verdicts import load_verdicts, save_verdict
from whenpro_core.bench.records import ResultsFile, build_record, read_records
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.formats.whowhen_pro_write import check_round_trip, to_document, to_jsonl_row
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import Attribution

ODD = "the model wrote \ud83d and stopped"


def test_dumps_falls_back_losslessly_and_keeps_the_fast_path_format():
    assert jsonio.dumps({"a": [1, "é"]}) == b'{"a":[1,"\xc3\xa9"]}'
    value = {"s": ODD, "n": 10**400, "m": [-(2**64)]}
    assert jsonio.loads(jsonio.dumps(value)) == value
    assert jsonio.loads(jsonio.dumps(value, indent=True)) == value


def test_verdict_sidecar_keeps_a_lone_surrogate(tmp_path):
    trace = load_trace(write_trace(load_trace(SAMPLES / "team_text" / "trace.json"), tmp_path / "t.json"))
    verdict = Attribution(agent="Solver", step="2", reason=ODD, raw_outputs=[ODD])
    save_verdict(trace, verdict)
    [back] = load_verdicts(trace)
    assert back.reason == ODD and back.raw_outputs == [ODD]


def test_bench_record_keeps_a_lone_surrogate(tmp_path):
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    record = build_record(
        ref="t.json",
        protocol="heuristic",
        model="heuristic",
        with_gold=True,
        trace=trace,
        prediction=Attribution(agent="Solver", reason=ODD),
    )
    with ResultsFile(tmp_path / "results.jsonl") as out:
        out.append(record)
    records, problems = read_records(tmp_path / "results.jsonl")
    assert problems == [] and records[0].prediction.reason == ODD


def test_whowhen_pro_row_keeps_a_lone_surrogate():
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    trace.steps[1].content = ODD
    doc = to_document(trace)
    assert check_round_trip(trace, doc) == []
    row = jsonio.loads(to_jsonl_row(doc))
    assert ODD in row["trajectory"] or ODD in jsonio.loads(row["trajectory"])[1]["content"]
