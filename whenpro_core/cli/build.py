"""``whenpro build``, ``whenpro inject`` and ``whenpro run``: make traces — a benchmark
dataset from successful runs (:mod:`whenpro_core.dataset.build`), one counterfactual, or runs
of a built-in system. Progress lines go to stdout, the build's progress bar to stderr."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from whenpro_core.cli import output
from whenpro_core.cli.options import not_together
from whenpro_core.dataset.build import BuildOptions, BuildResult, Spread, run_build
from whenpro_core.dataset.journal import Entry, journal_layout
from whenpro_core.errors import ConfigError
from whenpro_core.injection.inject import InjectOptions, run_inject_command
from whenpro_core.scale.shards import parse_shard

#: Exit status of a build that kept no trace (the reasons on stderr).
NOTHING_KEPT_STATUS = 1


@dataclass(frozen=True)
class BuildRun:
    """What one ``whenpro build`` does beside the build's settings (:class:`BuildOptions`):
    ``force`` writes into a non-build folder or starts over; ``revalidate``/
    ``export_validated`` (no seeds) refresh the validation counts / export the accepted
    traces; ``ray``, ``ray_address``, ``ray_shards``, ``shard`` (``K/N``) and
    ``max_calls_per_s`` say where the attempts run (:meth:`spread`)."""

    force: bool = False
    revalidate: bool = False
    export_validated: Path | None = None
    ray: bool = False
    ray_address: str | None = None
    ray_shards: int | None = None
    shard: str | None = None
    max_calls_per_s: float | None = None

    def spread(self) -> Spread:
        """The :class:`Spread` of these flags; ConfigError for ``--shard`` with ``--ray``
        or a ``shard`` that is not ``K/N``."""
        if self.shard is not None and (self.ray or self.ray_address):
            not_together("--shard", "--ray", expected="--shard K/N (job arrays) or --ray (Ray shards itself)")
        return Spread(
            ray=self.ray or bool(self.ray_address),
            address=self.ray_address,
            shards=self.ray_shards,
            shard=parse_shard(self.shard) if self.shard is not None else None,
            max_calls_per_s=self.max_calls_per_s,
        )


def mode_list(modes: str | None) -> tuple[str, ...]:
    """``--modes``: comma-separated failure-mode codes -> a tuple (blanks dropped; none: all)."""
    return tuple(m for m in (modes or "").split(",") if m.strip())


def build(seeds: str | None, out: Path, opts: BuildOptions, run: BuildRun) -> dict[str, Any]:
    """What ``whenpro build`` does: build ``seeds`` into ``out`` with ``opts`` (with a Rich
    progress bar on stderr when it is a terminal) and print a summary; with
    ``run.revalidate`` and no ``seeds``, only refresh the manifest's validation counts; with
    ``run.export_validated`` and no ``seeds``, write the release of the accepted traces there
    (:mod:`whenpro_core.dataset.export`). Returns the manifest (of the release, for an
    export); exit status 1 with the reasons on stderr when a build from ``seeds`` kept no trace.

    ``run``'s Ray flags run the attempts as Ray tasks (``ray_shards`` per round),
    ``shard="K/N"`` only this job's share into its own journal part (no release: a build
    without it merges the parts and writes the release; returns an empty manifest);
    ``max_calls_per_s`` caps the model requests (:class:`~whenpro_core.dataset.build.Spread`)."""
    if seeds is not None and run.export_validated is not None:
        raise ConfigError(
            "--export-validated exports a built dataset; it takes no SEEDS",
            expected="whenpro build --out DATASET --export-validated OUT",
        )
    if seeds is None:
        return _without_seeds(out, revalidate=run.revalidate, export_validated=run.export_validated)
    if opts.model and opts.generator == "offline" and opts.executor != "simulate":
        raise ConfigError(
            "--model is for --generator llm or --executor simulate",
            expected="--generator llm --model provider:model, or --executor simulate --model ...",
        )
    spread = run.spread()
    result = _run_with_progress(seeds, out, opts, force=run.force, spread=spread)
    if spread.shard is not None:
        _say_shard(result, out, spread.shard)
        return result.manifest
    manifest = result.manifest
    _say_built(manifest, out, opts.layout)
    empty = nothing_kept(manifest, out)
    if empty:
        output.note(f"whenpro: {empty}")
        raise typer.Exit(NOTHING_KEPT_STATUS)
    return manifest


def _without_seeds(out: Path, *, revalidate: bool, export_validated: Path | None) -> dict[str, Any]:
    """``build --export-validated OUT`` (the accepted traces as a release) or ``build
    --revalidate`` (refresh the validation counts); ConfigError when neither is asked."""
    if export_validated is not None:
        from whenpro_core.dataset.export import export_validated as export  # only this path needs it

        manifest = export(out, export_validated)
        left = ", ".join(f"{k} {v}" for k, v in manifest["export"]["left_out"].items()) or "none"
        output.echo(f"exported {manifest['counts']['kept']} accepted traces to {export_validated} (left out: {left})")
        return manifest
    if not revalidate:
        raise ConfigError("no seed trajectories given", expected="whenpro build SEEDS --out DATASET")
    from whenpro_core.dataset.build_store import revalidate as refresh

    manifest = refresh(out)
    output.echo(_validation_line(manifest))
    return manifest


def _progress(err: Console) -> Progress:
    """The build's progress bar on ``err`` (off when it is not a terminal)."""
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]build"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("candidates {task.fields[kept]} · dropped {task.fields[dropped]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err,
        disable=not err.is_terminal,
        transient=False,
    )


def _run_with_progress(seeds: str, out: Path, opts: BuildOptions, *, force: bool, spread: Spread) -> BuildResult:
    """Run the build, saying its plan first and showing its progress; returns its result."""
    progress = _progress(output.live_console())  # renders only the constant label and counts
    task = progress.add_task("build", total=0, kept=0, dropped=0)
    shown = ExitStack()
    tally = {"kept": 0, "dropped": 0}

    def on_plan(res: BuildResult, todo: int) -> None:
        used = len(res.plan.used)
        output.echo(
            f"{len(res.plan.seeds)} seed traces, {used} used; {len(res.plan.attempts)} attempts planned, "
            f"{res.skipped} already done{' or not this shard' if spread.shard else ''}, up to {todo} to run"
        )
        progress.update(task, total=todo)
        shown.enter_context(output.live(progress))  # after the plan line, so the two do not interleave

    def on_entry(n: int, total: int, entry: Entry) -> None:
        tally["kept" if entry.status == "kept" else "dropped"] += 1
        progress.update(task, advance=1, kept=tally["kept"], dropped=tally["dropped"])

    try:
        result = asyncio.run(
            run_build(
                seeds,
                out,
                opts,
                force=force,
                spread=spread,
                on_plan=on_plan,
                on_entry=on_entry,
                on_stage=output.echo,
                warn=output.warning,
            )
        )
    finally:
        shown.close()
    return result


def _say_shard(result: BuildResult, out: Path, shard: tuple[int, int]) -> None:
    """What a ``--shard K/N`` job did, and what comes next."""
    k, n = shard
    part = journal_layout(out).part(k)
    state = (
        "a later round waits for the other jobs (run the jobs again when they are done)"
        if result.waiting
        else "every round is done"
    )
    output.echo(
        f"shard {k}/{n}: ran {result.ran} attempts into {part}; {state}; when every job is done: "
        f"whenpro build SEEDS --out {out} (the same options, no --shard) merges the parts and writes the release"
    )


def _say_built(m: dict[str, Any], out: Path, layout: str) -> None:
    """The build's summary: counts, drops by reason, skipped seeds, where it wrote."""
    c, d = m["counts"], {k: v for k, v in m["dropped"].items() if v}
    output.echo(
        f"attempted {c['attempted']}: generated {c['generated']}, replayed {c['replayed']}, "
        f"decisive {c['decisive']}, kept {c['kept']}"
    )
    if d:
        output.echo("dropped: " + ", ".join(f"{k} {v}" for k, v in d.items()))
    if m["seeds"].get("skipped"):
        output.echo("seeds skipped: " + ", ".join(f"{k} {v}" for k, v in m["seeds"]["skipped"].items()))
    output.echo(f"wrote {out} ({layout} layout, manifest.json)")


def nothing_kept(manifest: dict[str, Any], out: Path) -> str | None:
    """The one-line summary for a build whose dataset holds no trace (the manifest's drop
    reasons and skipped seeds), else ``None``. ``whenpro build`` prints it and exits 1."""
    if manifest.get("counts", {}).get("kept", 0):
        return None
    dropped = [f"{k} {v}" for k, v in manifest.get("dropped", {}).items() if v]
    skipped = [f"{k} {v}" for k, v in manifest.get("seeds", {}).get("skipped", {}).items() if v]
    why = [", ".join(dropped)] if dropped else []
    why += ["seeds skipped: " + ", ".join(skipped)] if skipped else []
    return f"no trace kept in {out} ({'; '.join(why) or 'nothing attempted'}); see {Path(out) / 'manifest.json'}"


def _validation_line(manifest: dict[str, Any]) -> str:
    """``N traces: A accepted, R rejected, L relabelled, P pending`` from the manifest."""
    v = manifest.get("validation", {})
    return (
        f"{v.get('total', 0)} traces: {v.get('accepted', 0)} accepted, {v.get('rejected', 0)} rejected, "
        f"{v.get('relabelled', 0)} relabelled, {v.get('pending', 0)} pending"
    )


def inject(trace: str, step: str, mode: str, options: InjectOptions) -> None:
    """``whenpro inject`` (:func:`whenpro_core.injection.inject.run_inject_command`)."""
    run_inject_command(trace, step, mode, options, echo=output.echo)


def run(env: str, n: int, out: Path, *, seed: int | None, model: str, force: bool) -> None:
    """``whenpro run`` (:func:`whenpro_core.envs.run.run_many`)."""
    from whenpro_core.envs.run import run_many

    run_many(env, n, out, seed=seed, model=model, force=force, echo=output.echo)
