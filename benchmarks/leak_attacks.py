"""Two label-leak attacks of issue 14 on a default build, next to the exact random
baseline in the same run (step accuracy):

* **re-run and diff**: re-run the same ``whenpro run ENV --n N`` command (no ``--seed``,
  as the dataset's maker ran it), match each built trace to a re-run by its task text,
  and predict the first step where the two differ; a trace with no match gets the
  random baseline's expectation.
* **grep**: the fixed phrases the offline mutators used to write (``The result is``,
  ``I looked over the work so far``, ``This also matches the figure``), else a premature
  ``Final answer`` that is not the last step, else the first agent step.

Random is the exact expectation of picking one of a trace's agent steps uniformly.

Usage (from the repository root; writes into a temporary folder):

    python benchmarks/leak_attacks.py [--env arith_team] [--n 60]

It runs ``whenpro run`` twice and ``whenpro build`` once through the CLI module, as a
user would, and prints one line per attack: ``attack  step  random  (traces, matched)``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from whenpro_core.formats import load_trace
from whenpro_core.injection.textedit import is_agent_step
from whenpro_core.trace.model import Trace

OLD_PHRASES = re.compile(r"The result is|I looked over the work so far|This also matches the figure of")


def whenpro(*args: str) -> None:
    """Run the CLI (this checkout's code) and fail loudly."""
    subprocess.run([sys.executable, "-m", "whenpro_core.cli", *args], check=True, capture_output=True, text=True)


def agent_steps(trace: Trace) -> list[int]:
    return [s.index for s in trace.steps if is_agent_step(s) and s.coord is not None]


def rerun_diff(trace: Trace, reruns: dict[str, list[Trace]]) -> int | None:
    """The first step where ``trace`` departs from a re-run of its task, or None."""
    for other in reruns.get(trace.task.query, []):
        for a, b in zip(trace.steps, other.steps, strict=False):
            if (a.agent, a.content) != (b.agent, b.content):
                return a.index
    return None


def grep(trace: Trace) -> int:
    steps = agent_steps(trace)
    for i in steps:
        if OLD_PHRASES.search(trace.steps[i].content or ""):
            return i
    for i in steps[:-1]:
        if trace.steps[i].kind == "final_answer":
            return i
    return steps[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="arith_team")
    ap.add_argument("--n", type=int, default=60)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        whenpro("run", args.env, "--n", str(args.n), "--out", str(root / "runs"))
        whenpro("run", args.env, "--n", str(args.n), "--out", str(root / "again"))
        whenpro("build", str(root / "runs"), "--out", str(root / "ds"))
        reruns: dict[str, list[Trace]] = {}
        for path in sorted((root / "again").glob("*.json")):
            t = load_trace(path)
            reruns.setdefault(t.task.query, []).append(t)
        built = [load_trace(p) for p in sorted((root / "ds" / "data_release").rglob("*.json"))]
        kept = json.loads((root / "ds" / "manifest.json").read_text())["counts"]["kept"]
    built = [t for t in built if t.ground_truth is not None]
    rnd = sum(1 / len(agent_steps(t)) for t in built) / max(1, len(built))
    hits, grep_hits, matched = 0.0, 0, 0
    for t in built:
        truth = t.ground_truth.step_index
        guess = rerun_diff(t, reruns)
        if guess is None:
            hits += 1 / len(agent_steps(t))
        else:
            matched += 1
            hits += guess == truth
        grep_hits += grep(t) == truth
    n = max(1, len(built))
    print(f"{args.env}: {len(built)} built traces (manifest kept {kept})")
    print(f"re-run and diff  step {hits / n:6.1%}  random {rnd:6.1%}  ({len(built)} traces, {matched} matched)")
    print(f"grep             step {grep_hits / n:6.1%}  random {rnd:6.1%}  ({len(built)} traces)")


if __name__ == "__main__":
    main()
