"""Accuracy of the offline ``heuristic`` attributor against exact baselines, on every
labelled subset of ``../shared/real_traces`` (Who&When, Who&When Pro samples and JSONL,
AgentRx Magentic-One and τ-bench retail), then on each labelled-benchmark reader's
samples (TracerTraj, TRAIL, TraceElephant, MP-Bench, AgentErrorBench; :data:`SAMPLES`),
computed in one run on the same traces, with 95% intervals; then a reliability table of
its confidence and the Brier score.

Baselines (see :mod:`whenpro_core.bench.baselines`): a uniformly random pick among the
steps the heuristic may name (exact expectation, for step, step ±1, step ±3 and agent);
the obvious priors, always answering the subset's most frequent gold agent (majority
agent), its most frequent gold step (most common step) and its most frequent gold mode
(majority mode) — chosen on the same traces they are scored on, so they are optimistic.
Agent accuracy is over multi-agent frameworks only (docs/architecture.md, 'Scoring'). A
cell reads ``37.5 (28–48)``: the accuracy in percent and its 95% interval.

Usage: ``python benchmarks/heuristic_accuracy.py [REAL_TRACES_DIR] [--no-gold] [--write-docs [PAGE]]``
Prints Markdown tables: docs/attribution.md's "How good is the offline heuristic?" is this output
(``--write-docs`` writes them into its ``heuristic-accuracy`` and ``heuristic-reliability`` blocks).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _docs_table import add_write_docs_option, write_docs  # noqa: E402

from whenpro_core.attribution.heuristic import attribute_heuristic  # noqa: E402
from whenpro_core.bench.baselines import (  # noqa: E402
    TOLERANCES,
    chance_interval,
    is_monotone,
    majority_mode,
    most_common,
    random_chance,
    reliability,
    wilson,
)
from whenpro_core.formats import load_trace, walk  # noqa: E402
from whenpro_core.trace.evidence import candidate_steps  # noqa: E402
from whenpro_core.trace.model import Attribution, Trace  # noqa: E402
from whenpro_core.trace.score import score_prediction  # noqa: E402

FOLDERS = {
    "Who&When Algorithm-Generated": "who-and-when/Who&When/Algorithm-Generated",
    "Who&When Hand-Crafted": "who-and-when/Who&When/Hand-Crafted",
    "Who&When Pro samples": "who-when-pro-samples",
    "Who&When Pro JSONL": "who-when-pro-jsonl",
    "AgentRx Magentic-One": "agentrx/magentic_one",
    "AgentRx τ-bench retail": "agentrx/tau_retail",
}


REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
HAND_CRAFTED = "who-and-when/Who&When/Hand-Crafted"


def _hand_crafted(real: Path) -> list[tuple[Path, dict]]:
    return [(f, json.loads(f.read_text(encoding="utf-8"))) for f in sorted((real / HAND_CRAFTED).glob("*.json"))]


def tracertraj_rows(real: Path, out: Path) -> Path:
    """The Who&When Hand-Crafted files as TracerTraj-style Parquet rows (``history`` a JSON
    string): no TracerTraj rows are stored here, so this checks the reader, and scores the
    same logs and labels as the Who&When Hand-Crafted row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for _, doc in _hand_crafted(real):
        row = {k: doc.get(k) for k in ("question", "ground_truth", "question_ID", "mistake_agent", "mistake_reason")}
        row["mistake_step"] = str(doc["mistake_step"])
        row["history"] = json.dumps([{k: h.get(k) for k in ("content", "role", "name")} for h in doc["history"]])
        rows.append(row)
    path = out / "tracertraj.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def mp_bench_files(real: Path, out: Path) -> Path:
    """The Who&When Hand-Crafted logs in MP-Bench's normalised shape
    (``MP-Bench/<annotator>/manual/<file>.json``), one annotator flagging each log's
    ``mistake_step``: no MP-Bench data is stored here, so this checks the reader, and scores
    the same logs and labels as the Who&When Hand-Crafted row."""
    for src, doc in _hand_crafted(real):
        flag = int(doc["mistake_step"])
        history = [
            {**h, "step": str(i), "fail_annotation": "1" if i == flag else "0", "fail_category": "", "fail_reason": ""}
            for i, h in enumerate(doc["history"])
        ]
        path = out / "MP-Bench" / "ann1" / "manual" / src.name
        path.parent.mkdir(parents=True, exist_ok=True)
        body = {"question": doc["question"], "ground_truth": doc["ground_truth"], "history": history}
        path.write_text(json.dumps(body), encoding="utf-8")
    return out / "MP-Bench"


#: The labelled-benchmark readers' rows: label -> the folder or file to walk, made from
#: ``(real traces dir, scratch dir)``. Three are the test samples written from each
#: benchmark's documentation (tests/fixtures/*/README.md); two are Who&When logs reshaped.
SAMPLES: dict[str, Callable[[Path, Path], Path]] = {
    "TracerTraj (Who&When Hand-Crafted as Parquet rows)": tracertraj_rows,
    "TRAIL (test sample)": lambda real, out: FIXTURES / "trail",
    "TraceElephant (test sample)": lambda real, out: FIXTURES / "traceelephant",
    "MP-Bench (Who&When Hand-Crafted, 1 annotator)": mp_bench_files,
    "AgentErrorBench (test sample)": lambda real, out: FIXTURES / "agenterrorbench",
}


@dataclass
class Tally:
    """Hits of the heuristic and per-trace random chances of one subset."""

    n: int = 0
    hits: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    chances: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    modes: list[str] = field(default_factory=list)
    mode_hits: int = 0
    gold_agents: list[str] = field(default_factory=list)
    gold_steps: list[str] = field(default_factory=list)
    confidence: list[tuple[float, bool]] = field(default_factory=list)
    ms: float = 0.0


def labelled(target: Path) -> Iterator[Trace]:
    """Every labelled trace under ``target`` (bad files and unlabelled runs skipped)."""
    for row in walk(target):
        if row.error:
            continue
        trace = load_trace(row.ref())
        if trace.ground_truth is not None:
            yield trace


def measure(trace: Trace, pred: Attribution, tally: Tally) -> None:
    """Add one verdict and the random chances on ``trace`` to ``tally``."""
    assert trace.ground_truth is not None
    chance = random_chance(trace, candidate_steps(trace))
    tally.n += 1
    tally.gold_steps.append(trace.ground_truth.step or "")
    for tol, p in zip(TOLERANCES, chance.step, strict=True):
        score = score_prediction(trace, pred, tolerance=tol)
        tally.hits[f"step{tol}"] += score.step
        tally.chances[f"step{tol}"].append(p)
        if tol == 0:
            tally.confidence.append((pred.confidence or 0.0, score.step))
            if not trace.is_single_agent:
                tally.hits["agent"] += score.agent
                tally.chances["agent"].append(chance.agent)
                tally.gold_agents.append(trace.ground_truth.agent or "")
            if trace.ground_truth.mode:
                tally.modes.append(trace.ground_truth.mode)
                tally.mode_hits += bool(score.mode)


def _pct(hits: float, n: int, interval: tuple[float, float]) -> str:
    if not n:
        return "—"
    lo, hi = interval
    return f"{100 * hits / n:.1f} ({100 * lo:.0f}–{100 * hi:.0f})"


def _random(chances: list[float]) -> str:
    return _pct(sum(chances), len(chances), chance_interval(chances))


def _prior(values: list[str]) -> str:
    """Accuracy of always answering the most frequent of ``values``, and that answer."""
    value, right = most_common(values)
    return _pct(right, len(values), wilson(right, len(values))) + (f" {value}" if value else "")


def row_cells(label: str, t: Tally) -> list[str]:
    """One Markdown row: heuristic, random and the prior on agent; heuristic, random and
    the prior on step; heuristic and random on ±1, ±3; then mode."""
    n_agent = len(t.chances["agent"])
    cells = [
        f"{label} ({t.n})",
        _pct(t.hits["agent"], n_agent, wilson(t.hits["agent"], n_agent)),
        _random(t.chances["agent"]),
        _prior(t.gold_agents),
    ]
    for tol in TOLERANCES:
        key = f"step{tol}"
        cells += [_pct(t.hits[key], t.n, wilson(t.hits[key], t.n)), _random(t.chances[key])]
        if tol == 0:
            cells.append(_prior(t.gold_steps))
    n_mode = len(t.modes)
    mode, mode_right = majority_mode(t.modes)
    cells += [
        _pct(t.mode_hits, n_mode, wilson(t.mode_hits, n_mode)),
        _pct(mode_right, n_mode, wilson(mode_right, n_mode)) + (f" {mode}" if mode else ""),
        f"{t.ms / max(t.n, 1):.0f}",
    ]
    return cells


def reliability_table(tallies: dict[str, Tally]) -> str:
    """A reliability table (confidence bin → verdicts, share right) per subset, and over
    the real subsets (:data:`FOLDERS`; the samples and reshaped logs would count twice), as Markdown."""
    everything = [p for label, t in tallies.items() if label in FOLDERS for p in t.confidence]
    bins, _ = reliability(everything)
    lines = [
        "| subset | " + " | ".join(f"{b.low:.1f}–{b.high:.1f}" for b in bins) + " | Brier | monotone |",
        "|---|" + "---|" * (len(bins) + 2),
    ]
    for label, pairs in [*((k, t.confidence) for k, t in tallies.items()), ("all real subsets", everything)]:
        bins, brier = reliability(pairs)
        cells = [f"{b.count} / {100 * b.accuracy:.0f}%" if b.accuracy is not None else "0" for b in bins]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {brier:.3f} | {'yes' if is_monotone(bins) else 'no'} |")
    return "\n".join(lines)


def run_subset(target: Path, with_gold: bool) -> Tally:
    """The heuristic's verdicts and the baselines on every labelled trace under ``target``."""
    tally = Tally()
    for trace in labelled(target):
        started = time.perf_counter()
        pred = attribute_heuristic(trace, with_gold=with_gold)
        tally.ms += (time.perf_counter() - started) * 1000
        measure(trace, pred, tally)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_root = Path(__file__).resolve().parents[2] / "shared" / "real_traces"
    parser.add_argument("root", nargs="?", type=Path, default=default_root, help="the real traces folder")
    parser.add_argument("--no-gold", action="store_true", help="attribute without the gold answer")
    add_write_docs_option(parser, "attribution.md")
    args = parser.parse_args()
    with_gold = not args.no_gold
    root = args.root
    if not root.is_dir():
        sys.exit(f"real traces not found at {root}")
    tallies: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory() as scratch:
        targets = {label: root / rel for label, rel in FOLDERS.items()}
        for number, (label, make) in enumerate(SAMPLES.items()):
            out = Path(scratch) / str(number)
            out.mkdir()
            targets[label] = make(root, out)
        for label in [label for label, target in targets.items() if not target.exists()]:
            print(f"{label}: left out, no folder at {targets.pop(label)}", file=sys.stderr)
        for label, target in targets.items():
            tally = run_subset(target, with_gold)
            if tally.n:
                tallies[label] = tally
    print(f"Heuristic vs exact baselines ({'with' if with_gold else 'without'} the gold answer); % (95% interval)\n")
    head = [
        "subset (traces)",
        "agent",
        "random agent",
        "majority agent",
        "step",
        "random step",
        "most common step",
        "step ±1",
        "random ±1",
        "step ±3",
        "random ±3",
        "mode",
        "majority mode",
        "ms/trace",
    ]
    accuracy = "\n".join(
        ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        + ["| " + " | ".join(row_cells(label, tally)) + " |" for label, tally in tallies.items()]
    )
    reliability_md = reliability_table(tallies)
    print(accuracy)
    print("\nReliability of the confidence (step axis): verdicts / share right in each bin\n")
    print(reliability_md)
    write_docs(args.write_docs, {"heuristic-accuracy": accuracy, "heuristic-reliability": reliability_md})


if __name__ == "__main__":
    main()
