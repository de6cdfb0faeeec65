"""``whenpro watch`` and ``whenpro serve``: follow a running agent, receive OTLP exports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from whenpro_core.errors import ConfigError


def watch(file: str | None, **options: Any) -> None:
    """``whenpro watch`` (:func:`whenpro_core.cli.watch.watch_command`); exits with its
    status (0 nothing flagged, 1 a decisive error flagged)."""
    from whenpro_core.cli.watch import watch_command

    raise typer.Exit(watch_command(file, **options))


def serve(
    otlp: str | None,
    *,
    store: Path | None,
    allow_remote: bool,
    max_traces: int,
    tui: bool,
    token: str | None = None,
    **options: Any,
) -> None:
    """``whenpro serve --otlp``: the receiver storing traces as they arrive (``options``:
    as_json, quiet, fsync), or with ``tui`` its live view in the TUI."""
    if otlp is None:
        raise ConfigError("nothing to serve", expected="--otlp [HOST:PORT]")
    if tui:  # tuiresults: the incoming-traces view of whenpro view --otlp
        from whenpro_core.cli import view

        view.otlp_view(otlp, store=store, allow_remote=allow_remote, max_traces=max_traces, token=token)
        return
    from whenpro_core.cli.watch import serve_command

    serve_command(otlp, store=store, allow_remote=allow_remote, max_traces=max_traces, token=token, **options)
