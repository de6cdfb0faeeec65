"""Accuracy of ``--protocol counterfactual`` (replay-verified attribution) next to the
offline heuristic and the exact random baseline, on a dataset built from whenpro's
built-in systems in the same run: ``whenpro run`` (arith_team and code_pair, reference
policy), then ``whenpro build`` (offline mutators, builtin executor); every kept
counterfactual is labelled by construction. The counterfactual protocol runs offline: the
reference policy corrects a step, the builtin executor replays the rest.

Usage: ``python benchmarks/counterfactual_accuracy.py [--seeds N] [--per-seed K] [--keep DIR] [--write-docs [PAGE]]``
Prints a Markdown table: docs/attribution.md's counterfactual table is this output (``--write-docs``
writes it into its ``counterfactual-accuracy`` block).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _docs_table import add_write_docs_option, write_docs  # noqa: E402

from whenpro_core.attribution.counterfactual import (  # noqa: E402
    ReferenceCorrector,
    attribute_counterfactual,
    replayable_offline,
)
from whenpro_core.attribution.heuristic import attribute_heuristic  # noqa: E402
from whenpro_core.bench.baselines import chance_interval, random_chance, wilson  # noqa: E402
from whenpro_core.formats import load_trace, walk  # noqa: E402
from whenpro_core.injection.registry import get_executor  # noqa: E402
from whenpro_core.trace.evidence import candidate_steps  # noqa: E402
from whenpro_core.trace.score import score_prediction  # noqa: E402

ENVS = ("arith_team", "code_pair")


def build_dataset(root: Path, seeds: int, per_seed: int) -> Path:
    """Run the built-in systems and build a dataset under ``root``; returns the dataset folder."""
    cli = [sys.executable, "-m", "whenpro_core.cli"]
    for env in ENVS:
        subprocess.run(
            [*cli, "run", env, "--n", str(seeds), "--out", str(root / "seeds" / env)], check=True, capture_output=True
        )
    subprocess.run(
        [*cli, "build", str(root / "seeds"), "--out", str(root / "dataset"), "-n", str(per_seed)],
        check=True,
        capture_output=True,
    )
    return root / "dataset"


def _cell(hits: float, n: int) -> str:
    lo, hi = wilson(hits, n)
    return f"{100 * hits / n:.1f} ({100 * lo:.0f}–{100 * hi:.0f})" if n else "—"


def _chance_cell(chances: list[float]) -> str:
    lo, hi = chance_interval(chances)
    return f"{100 * sum(chances) / len(chances):.1f} ({100 * lo:.0f}–{100 * hi:.0f})" if chances else "—"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=15)
    parser.add_argument("--per-seed", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="build the dataset here (kept) instead of a temporary folder")
    add_write_docs_option(parser, "attribution.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        dataset = build_dataset(root, args.seeds, args.per_seed)
        traces = [
            t for row in walk(dataset) if not row.error for t in [load_trace(row.ref())] if t.ground_truth is not None
        ]
        executor = get_executor("builtin")
        hits = {"heuristic": [0, 0], "counterfactual": [0, 0]}
        chances: list[float] = []
        agent_chances: list[float] = []
        replays, seconds = 0, 0.0
        for trace in traces:
            chance = random_chance(trace, candidate_steps(trace))
            chances.append(chance.step[0])
            agent_chances.append(chance.agent)
            s = score_prediction(trace, attribute_heuristic(trace))
            hits["heuristic"][0] += s.step
            hits["heuristic"][1] += s.agent
            # a built trace carries its env only in the dataset's provenance.json: take it from
            # there, as `attribute` and `bench` do (the heuristic above never sees it)
            replayable_offline(trace)
            started = time.perf_counter()
            verdict, run = attribute_counterfactual(trace, executor, ReferenceCorrector())
            seconds += time.perf_counter() - started
            replays += sum(t.outcome != "unchanged" for t in run.tries)
            s = score_prediction(trace, verdict)
            hits["counterfactual"][0] += s.step
            hits["counterfactual"][1] += s.agent
    n = len(traces)
    print(
        f"Built dataset: {n} labelled counterfactuals from {args.seeds} seeds each of {', '.join(ENVS)}; "
        "% (95% interval)\n"
    )
    table = "\n".join(
        [
            "| attributor | step | agent | replays/trace | s/trace |",
            "|---|---|---|---|---|",
            f"| random (exact) | {_chance_cell(chances)} | {_chance_cell(agent_chances)} | — | — |",
            f"| heuristic | {_cell(hits['heuristic'][0], n)} | {_cell(hits['heuristic'][1], n)} | 0 | — |",
            f"| counterfactual (reference policy + builtin replay) | {_cell(hits['counterfactual'][0], n)} "
            f"| {_cell(hits['counterfactual'][1], n)} | {replays / max(n, 1):.1f} | {seconds / max(n, 1):.2f} |",
        ]
    )
    print(table)
    write_docs(args.write_docs, {"counterfactual-accuracy": table})


if __name__ == "__main__":
    main()
