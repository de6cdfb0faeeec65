"""Write ``sample_traces/arith_team/``: seed runs of the built-in ``arith_team``
environment and injected counterfactuals made from them (deterministic).

Run from the repository root: ``python sample_traces/make_arith_team.py``. Everything is
produced offline by whenpro itself (reference policies, offline mutators, the builtin
executor). The provenance timestamp is fixed and the replay's wall-clock seconds are
zeroed so that re-running the script rewrites identical files.
"""

from __future__ import annotations

from pathlib import Path

from whenpro_core.envs import get_env
from whenpro_core.envs.run import run_env
from whenpro_core.formats.native import write_trace
from whenpro_core.injection.executors import BuiltinExecutor
from whenpro_core.injection.generate import OfflineGenerator
from whenpro_core.injection.inject import inject
from whenpro_core.trace.model import Trace

HERE = Path(__file__).resolve().parent / "arith_team"
TIMESTAMP = "2026-01-01T00:00:00+00:00"

#: (seed, step index, mode): what each counterfactual shows.
INJECTIONS = [
    (1, 4, "R.3"),  # the solver's total is off; nobody re-checks it -> decisive
    (2, 2, "A.1"),  # lookup of the wrong item; the verifier only re-multiplies -> decisive
    (0, 1, "PL.1"),  # the plan leaves out a line item -> decisive
    (0, 2, "R.3"),  # a line item is off; the verifier re-derives it from the task -> caught
]


def build() -> list[Trace]:
    """Three seed runs, then the four counterfactuals of :data:`INJECTIONS`."""
    env = get_env("arith_team")
    seeds = {s: run_env(env, s, plain=True) for s in (0, 1, 2)}
    out = list(seeds.values())
    for seed, index, mode in INJECTIONS:
        result = inject(seeds[seed], index, mode, OfflineGenerator(), BuiltinExecutor(), now=TIMESTAMP)
        cf = result.counterfactual
        cf.extras["injection"]["replay"]["seconds"] = 0.0
        out.append(cf)
    return out


def main() -> None:
    """Write every trace of :func:`build` as ``arith_team/<id>.json``."""
    for trace in build():
        write_trace(trace, HERE / f"{trace.id}.json")


if __name__ == "__main__":
    main()
