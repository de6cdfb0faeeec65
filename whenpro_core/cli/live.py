"""``whenpro watch`` and ``whenpro serve``: follow a running agent, receive OTLP exports."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from whenpro_core.errors import ConfigError

if TYPE_CHECKING:  # the watch module loads the live stack: only when a command runs
    from whenpro_core.cli.watch import WatchOptions


def watch(file: str | None, options: WatchOptions) -> None:
    """``whenpro watch`` (:func:`whenpro_core.cli.watch.watch_command`); exits with its
    status (0 nothing flagged, 1 a decisive error flagged)."""
    from whenpro_core.cli.watch import watch_command

    raise typer.Exit(watch_command(file, options))


def serve(
    otlp: str | None,
    *,
    store: Path | None,
    allow_remote: bool,
    max_traces: int,
    tui: bool,
    token: str | None = None,
    as_json: bool = False,
    quiet: bool = False,
    fsync: bool = False,
) -> None:
    """``whenpro serve --otlp``: the receiver storing traces as they arrive (one line per
    event, ``as_json`` as JSON, nothing with ``quiet``; ``fsync`` each export before it is
    acknowledged), or with ``tui`` its live view in the TUI."""
    if otlp is None:
        raise ConfigError("nothing to serve", expected="--otlp [HOST:PORT]")
    if tui:  # tuiresults: the incoming-traces view of whenpro view --otlp
        from whenpro_core.cli import view

        view.otlp_view(otlp, store=store, allow_remote=allow_remote, max_traces=max_traces, token=token)
        return
    from whenpro_core.cli.watch import serve_command

    serve_command(
        otlp,
        store=store,
        allow_remote=allow_remote,
        max_traces=max_traces,
        token=token,
        as_json=as_json,
        quiet=quiet,
        fsync=fsync,
    )
