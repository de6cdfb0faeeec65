"""What ``whenpro view`` opens besides a trace or a dataset: the results screen
(``--results`` or a results file), validation mode (``--validate``), the follow view
(``--follow FILE``), the incoming-traces view (``--otlp``, also ``whenpro serve
--otlp --tui``) and the library of local coding-agent sessions (``--sessions``).

:func:`view_start` checks the options and prepares what can fail (a results file that
is not one, a dataset without a manifest, judge settings, the OTLP port) before the TUI
starts, raising :class:`~whenpro_core.errors.WhenproError` so the CLI prints one line and
exits 2. It returns a factory of the first screen for :class:`whenpro_tui.app.WhenproApp`
(``start=``), or ``None`` for a plain ``whenpro view PATH``.

Imports inside the functions are lazy on purpose (start-up cost): each start needs one
screen and a few core modules (0.1–0.7 s each to import: the benchmark, sessions,
live and attribution packages), and ``whenpro view`` imports this module for every
start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from textual.screen import Screen

from whenpro_core.errors import ConfigError, TraceFormatError, WhenproError


@dataclass(frozen=True)
class LiveOptions:
    """Live judging settings, as for ``whenpro watch``: ``judge`` False turns judging
    off; ``protocol`` ``heuristic`` (default) or ``step-by-step`` (with ``model``)."""

    judge: bool = True
    protocol: str | None = None
    model: str | None = None
    budget_calls: int | None = None
    budget_tokens: int | None = None
    budget_usd: float | None = None
    idle_timeout: float | None = None
    final_pass: bool = False
    with_gold: bool = True
    no_cache: bool = False


def _judges(opts: LiveOptions):
    """``(make, llm_judge, protocol name)`` or ``(None, None, None)`` without judging."""
    if not opts.judge:
        return None, None, None
    from whenpro_core.attribution.protocols import protocol_name
    from whenpro_core.live.viewer import live_judges

    make, llm = live_judges(
        opts.protocol,
        opts.model,
        budget_calls=opts.budget_calls,
        budget_tokens=opts.budget_tokens,
        budget_usd=opts.budget_usd,
        final_pass=opts.final_pass,
        with_gold=opts.with_gold,
        no_cache=opts.no_cache,
    )
    model = opts.model if opts.model and opts.model.strip().lower() != "heuristic" else None
    return make, llm, protocol_name(opts.protocol or ("step-by-step" if model else "heuristic"))


def results_start(paths: list[str], dataset: str | None = None) -> Callable[[], Screen]:
    """The results screen on ``paths`` (``dataset``: where to open traces from when a
    record's file is gone). TraceFormatError for a path that is no results file."""
    from whenpro_core.formats.whenpro_files import is_results_file

    for p in paths:
        if not Path(p).is_file():
            raise TraceFormatError("no such results file", path=Path(p))
        if not is_results_file(p):
            raise TraceFormatError(
                "not a whenpro bench results file", path=Path(p), expected="a results .jsonl written by whenpro bench"
            )

    def make() -> Screen:
        from whenpro_tui.screens.results import ResultsScreen

        return ResultsScreen(paths, dataset=dataset, is_root=True)

    return make


def diff_start(a: str, b: str) -> Callable[[], Screen]:
    """The diff screen on two traces (``path`` or ``path#key`` each), loaded now so a
    bad file is one error line before the TUI starts."""
    from whenpro_core.formats import load_trace

    first, second = load_trace(a), load_trace(b)

    def make() -> Screen:
        from whenpro_tui.screens.diff import DiffScreen

        return DiffScreen(first, second, plain=True, is_root=True)

    return make


def validate_start(root: str) -> Callable[[], Screen]:
    """Validation mode on the built dataset at ``root`` (WhenproError when it has no
    build manifest)."""
    from whenpro_core.dataset.build_store import read_manifest

    path = Path(root)
    if not path.is_dir() or read_manifest(path, fresh_validation=False) is None:
        raise WhenproError(
            "no manifest.json here: not a dataset built by whenpro build",
            path=path,
            expected="the --out folder of a whenpro build",
        )

    def make() -> Screen:
        from whenpro_tui.screens.validation import ValidationScreen

        return ValidationScreen(path, is_root=True)

    return make


def follow_start(file: str, opts: LiveOptions, line_format: str | None = None) -> Callable[[], Screen]:
    """The live trace view on a growing ``file``."""
    path = Path(file)
    if path.is_dir():
        raise ConfigError(f"{file} is a folder", expected="a trace file (JSON lines) to follow")
    make_judge, llm, protocol = _judges(opts)

    def make() -> Screen:
        from whenpro_tui.screens.live_trace import FollowSource, LiveTraceScreen

        source = FollowSource(
            path,
            make_judge=make_judge,
            idle_timeout=opts.idle_timeout,
            line_format=line_format,
            protocol=protocol,
            llm_judge=llm,
        )
        return LiveTraceScreen(source, is_root=True)

    return make


def otlp_start(
    address: str | None,
    opts: LiveOptions,
    *,
    store: Path | None = None,
    allow_remote: bool = False,
    max_traces: int = 64,
    token: str | None = None,
) -> Callable[[], Screen]:
    """The incoming-traces view; the receiver's port is bound now (ConfigError when it
    cannot be)."""
    from whenpro_core.live.setup import open_receiver

    make_judge, llm, protocol = _judges(opts)
    receiver = open_receiver(address, store, allow_remote=allow_remote, token=token, max_traces=max_traces)

    def make() -> Screen:
        from whenpro_tui.screens.incoming import IncomingScreen

        return IncomingScreen(
            receiver, make_judge=make_judge, llm_judge=llm, protocol=protocol, idle_timeout=opts.idle_timeout
        )

    return make


def sessions_start(tool: str | None = None) -> Callable[[], Screen]:
    """The library of the user's local coding-agent sessions (:mod:`whenpro_core.library.sessions`),
    newest first; ConfigError for an unknown tool."""
    from whenpro_core.library.sessions import list_sessions, tool_names

    tools = tool_names(tool)
    sessions = list_sessions(tools)

    def make() -> Screen:
        from whenpro_tui.screens.library import LibraryScreen

        return LibraryScreen(
            f"local sessions ({', '.join(tools)})", rows=[r.summary for r in sessions], sessions=sessions
        )

    return make


def view_start(
    path: str | None,
    *,
    results: list[str] | None = None,
    validate: bool = False,
    follow: str | None = None,
    otlp: str | None = None,
    live: LiveOptions | None = None,
    line_format: str | None = None,
    store: Path | None = None,
    allow_remote: bool = False,
    token: str | None = None,
    sessions: bool = False,
) -> Callable[[], Screen] | None:
    """The first screen for ``whenpro view`` (see module docstring). ConfigError for
    options that do not go together. ``sessions``: the local sessions library (``PATH``,
    if given, names the tool: claude, codex or gemini)."""
    modes = [
        name
        for name, on in (
            ("--results", bool(results)),
            ("--validate", validate),
            ("--follow", follow is not None),
            ("--otlp", otlp is not None),
            ("--sessions", sessions),
        )
        if on
    ]
    if len(modes) > 1:
        raise ConfigError(f"{' and '.join(modes)} do not go together", expected="one of them")
    if sessions:
        return sessions_start(path)
    live = live or LiveOptions()
    if follow is not None or otlp is not None:
        if path is not None:
            raise ConfigError(f"{modes[0]} takes no PATH", expected=f"whenpro view {modes[0]} ...")
        if follow is not None:
            return follow_start(follow, live, line_format)
        return otlp_start(otlp, live, store=store, allow_remote=allow_remote, token=token)
    if results:
        if path is not None:
            from whenpro_core.library.opening import check_target

            check_target(path)
        return results_start(results, dataset=path)
    if path is None:
        raise ConfigError("nothing to view", expected="a PATH, --follow FILE or --otlp [HOST:PORT]")
    if validate:
        return validate_start(path)
    return None
