"""``whenpro build``, ``whenpro inject`` and ``whenpro run``: make traces — a benchmark
dataset from successful runs, one counterfactual, or runs of a built-in system. Progress
lines go through :func:`whenpro_core.cli.output.echo`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from whenpro_core.cli import output

#: Exit status of a build that kept no trace (the reasons on stderr).
NOTHING_KEPT_STATUS = 1


def build(seeds: str | None, out: Path, **options: Any) -> None:
    """``whenpro build`` (:func:`whenpro_core.bench.build.build_command` with ``options``);
    exit status 1 with the reasons on stderr when a build from ``seeds`` kept no trace."""
    from whenpro_core.bench.build import build_command, nothing_kept

    manifest = build_command(seeds, out, echo=output.echo, **options)
    empty = nothing_kept(manifest, out) if seeds is not None else None
    if empty:
        output.note(f"whenpro: {empty}")
        raise typer.Exit(NOTHING_KEPT_STATUS)


def inject(trace: str, step: str, mode: str, **options: Any) -> None:
    """``whenpro inject`` (:func:`whenpro_core.injection.inject.run_inject_command`)."""
    from whenpro_core.injection.inject import run_inject_command

    run_inject_command(trace, step, mode, echo=output.echo, **options)


def run(env: str, n: int, out: Path, **options: Any) -> None:
    """``whenpro run`` (:func:`whenpro_core.envs.run.run_many`)."""
    from whenpro_core.envs.run import run_many

    run_many(env, n, out, echo=output.echo, **options)
