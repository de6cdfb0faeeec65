"""Accuracy of the offline ``heuristic`` attributor against the random baseline, on the
real labelled traces of ``../shared/real_traces`` (Who&When, Who&When Pro samples and
JSONL rows), computed in one run on the same traces.

The random baseline is exact, not sampled: for each trace it is the chance that a
uniformly random agent step names the right agent / the right step, and 1/17 for the
mode. Agent accuracy is over multi-agent frameworks only (DESIGN §7).

Usage: ``python benchmarks/heuristic_accuracy.py [REAL_TRACES_DIR] [--no-gold]``
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from whenpro_core.attribution.evidence import is_candidate  # noqa: E402
from whenpro_core.attribution.heuristic import attribute_heuristic  # noqa: E402
from whenpro_core.bench.score import accepted_agents, accepted_steps, score_prediction  # noqa: E402
from whenpro_core.coords import normalize_coord, round_of  # noqa: E402
from whenpro_core.formats import load_trace, walk  # noqa: E402

FOLDERS = {
    "Who&When Algorithm-Generated": "who-and-when/Who&When/Algorithm-Generated",
    "Who&When Hand-Crafted": "who-and-when/Who&When/Hand-Crafted",
    "Who&When Pro samples": "who-when-pro-samples",
    "Who&When Pro JSONL": "who-when-pro-jsonl",
}


def random_baseline(trace) -> tuple[float, float]:
    """Chance that a uniformly random candidate step has the right agent / step."""
    gt = trace.ground_truth
    cands = [s for s in trace.steps if is_candidate(s)] or [s for s in trace.steps if s.coord]
    if not cands:
        return 0.0, 0.0
    agents, steps = accepted_agents(trace, gt), accepted_steps(gt)
    def step_ok(s):
        return (round_of(s.coord) if gt.round_only else normalize_coord(s.coord)) in steps
    agent_name = (lambda s: "agent") if trace.is_single_agent else (lambda s: s.agent)
    p_agent = sum(agent_name(s).lower() in agents for s in cands) / len(cands)
    p_step = sum(step_ok(s) for s in cands) / len(cands)
    return p_agent, p_step


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    with_gold = "--no-gold" not in sys.argv
    root = Path(args[0]) if args else Path(__file__).resolve().parents[2] / "shared" / "real_traces"
    if not root.is_dir():
        sys.exit(f"real traces not found at {root}")
    table = Table(title=f"heuristic vs random ({'with' if with_gold else 'without'} gold answer)")
    for col in ("traces", "agent", "random agent", "step", "random step", "step ±1", "step ±3",
                "mode", "random mode", "ms/trace"):
        table.add_column(col, justify="right")
    table.add_column("folder", justify="left")
    totals: dict[str, float] = defaultdict(float)
    for label, rel in FOLDERS.items():
        acc: dict[str, float] = defaultdict(float)
        for row in walk(root / rel):
            if row.error:
                continue
            trace = load_trace(row.ref())
            if trace.ground_truth is None:
                continue
            started = time.perf_counter()
            pred = attribute_heuristic(trace, with_gold=with_gold)
            acc["ms"] += (time.perf_counter() - started) * 1000
            s0, s1, s3 = (score_prediction(trace, pred, tolerance=k) for k in (0, 1, 3))
            r_agent, r_step = random_baseline(trace)
            acc["n"] += 1
            if not trace.is_single_agent:
                acc["n_multi"] += 1
                acc["agent"] += s0.agent
                acc["r_agent"] += r_agent
            acc["step"] += s0.step
            acc["step1"] += s1.step
            acc["step3"] += s3.step
            acc["r_step"] += r_step
            if trace.ground_truth.mode:
                acc["n_mode"] += 1
                acc["mode"] += bool(s0.mode)
        if not acc["n"]:
            continue
        for k, v in acc.items():
            totals[k] += v
        table.add_row(*_cells(acc), label)
    table.add_section()
    table.add_row(*_cells(totals), "all")
    Console(width=150).print(table)


def _cells(acc: dict[str, float]) -> list[str]:
    def pct(k, n):
        return f"{100 * acc[k] / acc[n]:.1f}%" if acc.get(n) else "—"
    return [str(int(acc["n"])), pct("agent", "n_multi"), pct("r_agent", "n_multi"),
            pct("step", "n"), pct("r_step", "n"), pct("step1", "n"), pct("step3", "n"),
            pct("mode", "n_mode"), f"{100 / 17:.1f}%" if acc.get("n_mode") else "—",
            f"{acc['ms'] / acc['n']:.1f}"]


if __name__ == "__main__":
    main()
