"""``whenpro view``, ``whenpro diff`` on a terminal and ``whenpro serve --tui``: open the TUI.

The only CLI module that starts :mod:`whenpro_tui`; it imports the TUI inside each function
(never at module import), so that importing every core module loads no Textual.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from whenpro_core.cli import START_NS, output
from whenpro_core.cli.options import not_together
from whenpro_core.errors import ConfigError
from whenpro_core.formats.native import is_previewable
from whenpro_core.library.opening import open_target


@dataclass(frozen=True)
class LiveJudging:
    """The live-judging options of ``whenpro view --follow/--otlp`` as given."""

    judge: bool = True
    protocol: str | None = None
    model: str | None = None
    budget_calls: int | None = None
    budget_tokens: int | None = None
    budget_usd: float | None = None
    idle_timeout: float = 0.0  #: seconds; 0 never ends judging

    def given(self) -> list[str]:
        """The options set away from their defaults, as their flags."""
        flags = (
            ("--no-judge", not self.judge),
            ("--protocol", self.protocol is not None),
            ("--model", self.model is not None),
            ("--budget-calls", self.budget_calls is not None),
            ("--budget-tokens", self.budget_tokens is not None),
            ("--budget-usd", self.budget_usd is not None),
            ("--idle-timeout", self.idle_timeout > 0),
        )
        return [name for name, on in flags if on]


#: How the TUI draws images (``--images``), as :data:`whenpro_tui.app.ImagesMode` names them.
ImagesName = Literal["auto", "kitty", "sixel", "halfcell", "off"]


@dataclass(frozen=True)
class Display:
    """How the app shows a trace: ground-truth labels, image drawing, verdicts kept on disk."""

    labels: bool = False
    images: ImagesName = "auto"
    save: bool = True


@dataclass(frozen=True)
class ViewStart:
    """Which screen ``whenpro view`` opens instead of a trace or dataset, as typed (at most
    one of them; :func:`whenpro_tui.starts.view_start` refuses two): ``results`` (bench
    results files), ``validate`` (review a built dataset), ``follow`` (a trace file being
    written), ``otlp`` (``[HOST:PORT]``, with the receiver's ``store`` folder,
    ``allow_remote`` and ``token``) or ``sessions`` (the local agent sessions library)."""

    results: tuple[str, ...] | None = None
    validate: bool = False
    follow: str | None = None
    otlp: str | None = None
    store: Path | None = None
    allow_remote: bool = False
    token: str | None = None
    sessions: bool = False


def diff(a: str, b: str, display: Display | None = None) -> None:
    """Open the TUI's side-by-side diff of the runs ``a`` and ``b`` (trace files or path#key)."""
    from whenpro_tui.app import run
    from whenpro_tui.starts import diff_start

    display = display or Display()
    run(
        f"{a} {b}",
        show_labels=display.labels,
        images=display.images,
        started_ns=START_NS,
        start=diff_start(a, b),
        save_verdicts=display.save,
    )


def view(
    path: str | None,
    other: str | None,
    *,
    diff_runs: bool,
    display: Display,
    live: LiveJudging,
    starts: ViewStart = ViewStart(),
    serve_port: int | None = None,
) -> None:
    """``whenpro view``: refuse contradicting options (ConfigError), then open the diff of
    ``path`` and ``other``, the screen ``starts`` asks for (see
    :func:`whenpro_tui.starts.view_start`), or the trace/dataset at ``path`` — in a browser
    on ``serve_port`` when given."""
    if starts.follow is None and starts.otlp is None and live.given():
        first = live.given()[0]  # live-judging options would be dropped silently
        not_together(first, "PATH", expected=f"{first} with --follow FILE or --otlp [HOST:PORT]")
    if diff_runs or other is not None:
        if not (diff_runs and path and other):
            not_together("a second PATH" if other else "--diff", "one PATH", expected="whenpro view --diff A B")
        diff(str(path), str(other), display)
        return
    from whenpro_tui.starts import view_start

    start = view_start(
        path,
        live=_live_options(live),
        results=list(starts.results) if starts.results is not None else None,
        validate=starts.validate,
        follow=starts.follow,
        otlp=starts.otlp,
        store=starts.store,
        allow_remote=starts.allow_remote,
        token=starts.token,
        sessions=starts.sessions,
    )
    # one file (or path#key) that fails to import: one line and exit 2, like `info`; a
    # large native trace opens on its first steps and loads in the TUI (which then says so)
    opened = None
    if start is None and path is not None and not is_previewable(Path(path)):
        opened = open_target(path, strict=True)
    if serve_port is not None:
        if start is not None:
            raise ConfigError("--serve opens a PATH only", expected="whenpro view PATH --serve")
        _serve(path, display, serve_port)
        return
    from whenpro_tui.app import run

    run(
        path or "",
        show_labels=display.labels,
        images=display.images,
        started_ns=START_NS,
        start=start,
        opened=opened,
        save_verdicts=display.save,
    )


def _live_options(live: LiveJudging) -> Any:
    """``live`` as the TUI's :class:`whenpro_tui.starts.LiveOptions` (idle 0: none)."""
    from whenpro_tui.starts import LiveOptions

    return LiveOptions(
        judge=live.judge,
        protocol=live.protocol,
        model=live.model,
        budget_calls=live.budget_calls,
        budget_tokens=live.budget_tokens,
        budget_usd=live.budget_usd,
        idle_timeout=live.idle_timeout if live.idle_timeout > 0 else None,
    )


def _serve(path: str | None, display: Display, port: int) -> None:
    """Serve the app on ``path`` in a browser at 127.0.0.1:``port`` until ctrl+c, behind
    a fresh token (printed in the URL)."""
    from whenpro_tui.serve import Gate, check_port
    from whenpro_tui.serve import serve as serve_app

    if path is None:
        raise ConfigError("--serve opens a PATH", expected="whenpro view PATH --serve")
    check_port(port)
    gate = Gate(port)
    output.note(f"whenpro: serving on {gate.url} (ctrl+c stops; the token in the URL is its key)")
    serve_app(path, show_labels=display.labels, images=display.images, gate=gate, save=display.save)


def otlp_view(otlp: str, *, store: Path | None, allow_remote: bool, max_traces: int, token: str | None = None) -> None:
    """``whenpro serve --tui``: the incoming-traces view of ``whenpro view --otlp``."""
    from whenpro_tui.app import run
    from whenpro_tui.starts import LiveOptions, otlp_start

    start = otlp_start(otlp, LiveOptions(), store=store, allow_remote=allow_remote, max_traces=max_traces, token=token)
    run("", started_ns=START_NS, start=start)
