"""Start-up cost of the ``whenpro`` command line, next to importing its two core
dependencies, in one run (issue 18, item 4).

    /work/venv/bin/python benchmarks/cli_startup.py [--runs 15] [--sample TRACE] [--repo PATH]

Prints the median wall time (and the spread) of

* ``whenpro --version``
* ``whenpro info SAMPLE``
* ``whenpro attribute SAMPLE --protocol heuristic --no-save`` (the offline heuristic:
  the attribution itself takes ~10 ms, so this is almost all start-up)
* two references: the baseline plus one pydantic model defined (what validating a trace
  needs at least), and that plus ``import typer, rich.console, rich.table`` (the command
  line's own libraries): the floor of a command that loads a trace and prints with Rich
* the baseline ``python -c "import pydantic, orjson"``

and each command's ratio to the baseline; the target is attribute within 2x of it. The CPU
time (user + system) of each run is printed too: on a machine shared with other work the
wall times swing with the load, CPU times much less. Each
``whenpro`` runs as ``python -m whenpro_core.cli`` from ``--repo`` (default: this checkout;
pass an older checkout to compare before and after) — the console script imports the same
module. The runs are interleaved (one of each per round) so that a busy machine slows all
of them alike. Sources get a bytecode cache in a temporary folder (``PYTHONPYCACHEPREFIX``),
warmed by one unmeasured run of each command, as an installed package has one: without it
(``PYTHONDONTWRITEBYTECODE``, as on this sandbox) every run compiles whenpro's modules
again and the numbers say more about the compiler than about start-up.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_traces" / "team_text" / "trace.json"
#: The attribute command's target: at most this many times the baseline import.
TARGET_RATIO = 2.0
#: The baseline import plus defining one pydantic model (``import pydantic`` is lazy: the
#: first ``BaseModel`` subclass loads pydantic's schema machinery and builds a validator).
ONE_MODEL = "import pydantic, orjson\nclass M(pydantic.BaseModel):\n    x: int"


def commands(sample: Path) -> dict[str, list[str]]:
    """The timed command lines by label (the baseline last)."""
    cli = [sys.executable, "-m", "whenpro_core.cli"]
    return {
        "whenpro --version": [*cli, "--version"],
        "whenpro info SAMPLE": [*cli, "info", str(sample)],
        "whenpro attribute SAMPLE -p heuristic --no-save": [
            *cli,
            "attribute",
            str(sample),
            "--protocol",
            "heuristic",
            "--no-save",
        ],
        # references: what any command that validates a trace pays before whenpro's own code
        "reference: + one pydantic model": [sys.executable, "-c", ONE_MODEL],
        "reference: + one model, typer, rich": [
            sys.executable,
            "-c",
            ONE_MODEL + "\nimport typer, rich.console, rich.table",
        ],
        'python -c "import pydantic, orjson"': [sys.executable, "-c", "import pydantic, orjson"],
    }


def environment(repo: Path, cache: Path) -> dict[str, str]:
    """The environment of every run: ``repo`` first on the path, a bytecode cache in
    ``cache``, no colour codes, no user config that could make a run differ."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(repo), PYTHONPYCACHEPREFIX=str(cache), NO_COLOR="1", TERM="dumb")
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv``; exits the benchmark when the command fails."""
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir())
    seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return seconds, cpu


def measure(argvs: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, list[tuple[float, float]]]:
    """``runs`` (wall, CPU) seconds per command, interleaved, after one warm-up run of each."""
    for argv in argvs.values():
        run_once(argv, env)
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in argvs}
    for _ in range(runs):
        for label, argv in argvs.items():
            times[label].append(run_once(argv, env))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command (default 15)")
    parser.add_argument("--sample", type=Path, default=SAMPLE, help="the trace of info and attribute")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose whenpro_core runs")
    args = parser.parse_args()
    argvs = commands(args.sample.resolve())
    with tempfile.TemporaryDirectory(prefix="whenpro-pyc-") as cache:
        times = measure(argvs, environment(args.repo.resolve(), Path(cache)), args.runs)
    report(times, args.repo.resolve(), args.runs)


def report(times: dict[str, list[tuple[float, float]]], repo: Path, runs: int) -> None:
    """Print the table (median, min, max wall; median CPU; ratios to the baseline, the last
    command) and whether attribute (the third) meets the target."""
    labels = list(times)
    wall = {label: [w for w, _ in values] for label, values in times.items()}
    cpu = {label: statistics.median(c for _, c in values) for label, values in times.items()}
    base, base_cpu = statistics.median(wall[labels[-1]]), cpu[labels[-1]]
    print(f"whenpro_core from {repo}; {runs} runs each, interleaved; {os.cpu_count()} CPUs")
    print(f"{'command':<50} {'median':>8} {'min':>8} {'max':>8} {'ratio':>7} {'CPU':>8} {'ratio':>7}")
    for label in labels:
        median = statistics.median(wall[label])
        print(
            f"{label:<50} {median * 1000:>6.0f}ms {min(wall[label]) * 1000:>6.0f}ms "
            f"{max(wall[label]) * 1000:>6.0f}ms {median / base:>6.2f}x {cpu[label] * 1000:>6.0f}ms "
            f"{cpu[label] / base_cpu:>6.2f}x"
        )
    ratio = statistics.median(wall[labels[2]]) / base
    verdict = "meets" if ratio <= TARGET_RATIO else "misses"
    print(
        f"attribute / import pydantic, orjson = {ratio:.2f}x wall, {cpu[labels[2]] / base_cpu:.2f}x CPU "
        f"({verdict} the {TARGET_RATIO:g}x target)"
    )


if __name__ == "__main__":
    main()
