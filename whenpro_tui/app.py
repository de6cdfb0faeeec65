"""The whenpro TUI application: opens a trace, a ``path#key``, a dataset folder, a glob
or a JSONL release, and shows the trace screen or the library screen.

Opening runs in a thread worker (``whenpro_core.library.opening.open_target``) that posts a
:class:`~whenpro_tui.messages.TargetOpened`; nothing blocking runs on the UI thread.

Screens never import each other to navigate: they post a navigation message
(:class:`~whenpro_tui.messages.OpenTrace`, ``OpenDiff``, ``OpenReplay``,
``OpenValidation``, ``OpenReviewTrace``, ``OpenResultsCell``, ``OpenResultTrace``) to
the app, which opens the screen. The app imports a screen's module when it first opens
one: the screen modules cost 0.1–0.8 s to import together, and the app paints its
"Opening…" line before that.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Center, Middle
from textual.driver import Driver
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import LoadingIndicator, Static

from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.formats.registry import split_ref
from whenpro_core.library.listing import walk_rows
from whenpro_core.library.opening import Opened, open_target
from whenpro_core.safety.textsafe import clean
from whenpro_core.storage.gcpause import paused_gc
from whenpro_tui import _start_time, imaging
from whenpro_tui.commands import BindingsProvider
from whenpro_tui.messages import (
    OpenDiff,
    OpenReplay,
    OpenResultsCell,
    OpenResultTrace,
    OpenReviewTrace,
    OpenTrace,
    OpenValidation,
    SiblingsFound,
    TargetFailed,
    TargetOpened,
    TracePreviewed,
)

if TYPE_CHECKING:
    from whenpro_tui.screens.trace import TraceScreen

ImagesMode = Literal["auto", "kitty", "sixel", "halfcell", "off"]
IMAGE_MODES: tuple[str, ...] = ("auto", "kitty", "sixel", "halfcell", "off")

log = logging.getLogger("whenpro.tui")
#: How long the load of a previewed trace waits for the preview's first paint (the load
#: holds the interpreter, so the paint would wait for the load instead), seconds.
PREVIEW_PAINT_WAIT_S = 5.0


class WhenproApp(App[None]):
    """The trace debugger.

    Args:
        target: what to open (file, ``path#key``, folder, glob, JSONL release).
        show_labels: start with ground-truth labels shown (default hidden, so a user
            judges the trace unbiased).
        images: the image renderer: an ``--images`` value (:data:`ImagesMode`), or what
            :func:`whenpro_tui.imaging.prepare` resolved it to before the app runs.
        started_ns: ``time.perf_counter_ns()`` at process start, for the startup log.
        cursor_blink: blink text cursors (tests turn it off for stable snapshots).
        start: a screen to open instead of ``target`` (results, validation, live views:
            :mod:`whenpro_tui.starts`); called once the app runs.
        opened: ``target`` already opened (``whenpro view`` opens it before the TUI
            starts, so a broken file is one line and exit 2); else opened in a worker.
    """

    CSS_PATH = "app.tcss"
    TITLE = "whenpro"
    COMMANDS = App.COMMANDS | {BindingsProvider}
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", show=False, priority=True)]

    show_labels: reactive[bool] = reactive(False)

    def __init__(
        self,
        target: str,
        *,
        show_labels: bool = False,
        images: str = "auto",
        started_ns: int | None = None,
        cursor_blink: bool = True,
        start: Callable[[], Screen] | None = None,
        opened: Opened | None = None,
        save_verdicts: bool = True,
    ) -> None:
        super().__init__()
        #: False (``--no-save``): verdicts stay in memory, no file is written next to a trace
        self.save_verdicts = save_verdicts
        self.start = start
        self.opened = opened
        self.cursor_blink = cursor_blink
        self.target = target
        self.set_reactive(WhenproApp.show_labels, show_labels)
        self.images = images
        self.started_ns = started_ns if started_ns is not None else _start_time.START_TIME_NS
        self.startup_ms: float | None = None
        #: the one-line error of a target that failed to open
        self.failure: str | None = None
        #: set at the first paint of the first screen (the preview waits for it)
        self._painted = threading.Event()
        #: the trace screen showing the first steps of a large file while it loads
        self._preview: TraceScreen | None = None

    def get_driver_class(self) -> type[Driver]:
        """Under textual-serve (a browser session), the web driver that ends the session
        when its browser or server goes (:mod:`whenpro_tui.web_session`); else Textual's."""
        if imaging.on_web():
            from whenpro_tui.web_session import SessionDriver  # lazy: browser sessions only

            return SessionDriver
        return super().get_driver_class()

    def compose(self) -> ComposeResult:
        with Middle():
            with Center():
                yield LoadingIndicator(id="opening-spinner")
            with Center():
                yield Static(Text(f"Opening {clean(self.target)}…"), id="opening-text")

    def on_mount(self) -> None:
        if self.start is not None:  # tuiresults: results, validation and live views
            self.query_one("#opening-spinner").remove()
            self.push_screen(self.start())
            return
        if self.opened is not None:
            self.post_message(TargetOpened(self.target, self.opened))
            return
        self.open_target_worker()

    @work(thread=True, exclusive=True, group="open", exit_on_error=False)
    def open_target_worker(self) -> None:
        previewed = self._post_preview()
        if previewed:  # the load below holds the interpreter for a second: paint first
            self._painted.wait(PREVIEW_PAINT_WAIT_S)
        try:
            with paused_gc(keep=True):  # the trace stays open: no GC pass scans it again
                opened = open_target(self.target, strict=previewed)
        except WhenproError as exc:
            self.post_message(TargetFailed(self.target, exc.one_line()))
            return
        except Exception as exc:  # never crash on bad input
            self.post_message(TargetFailed(self.target, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(TargetOpened(self.target, opened))

    def _post_preview(self) -> bool:
        """Post the first steps of a large native trace file (a plain path) for the trace
        screen to show while the whole file loads; whether it did. A file that then fails
        to load is reported as any target that fails to open (``strict``)."""
        from whenpro_core.formats.native import read_native_prefix

        path, key = split_ref(self.target)
        preview = read_native_prefix(path) if key is None else None
        if preview is not None:
            self.post_message(TracePreviewed(self.target, preview))
        return preview is not None

    def on_trace_previewed(self, message: TracePreviewed) -> None:
        from whenpro_tui.screens.trace import TraceScreen  # lazy: start-up cost

        self._drop_spinner()
        self._preview = TraceScreen(message.trace, is_root=True, partial=True)
        self.push_screen(self._preview)

    def _drop_spinner(self) -> None:
        """Remove the opening spinner (once): under a new screen it would keep repainting
        the whole screen."""
        for spinner in self.query("#opening-spinner"):
            spinner.remove()

    def on_target_opened(self, message: TargetOpened) -> None:
        # lazy (start-up cost, see module docstring): the screen modules
        from whenpro_tui.screens.library import LibraryScreen
        from whenpro_tui.screens.trace import TraceScreen

        opened = message.opened
        if self._preview is not None and opened.trace is not None:
            self._preview.finish_loading(opened.trace)
            self._preview = None
            return
        self._drop_spinner()
        if opened.results is not None:  # tuiresults: a benchmark results file
            from whenpro_tui.screens.results import ResultsScreen  # lazy: start-up cost

            self.push_screen(ResultsScreen([opened.results], is_root=True))
        elif opened.trace is not None:
            self.push_screen(TraceScreen(opened.trace, is_root=True))
            path, key = split_ref(message.target)
            if key is not None:
                self.find_siblings(str(path), opened.trace.source.ref() or message.target)
        else:
            self.push_screen(LibraryScreen(message.target, rows=opened.rows))

    def on_target_failed(self, message: TargetFailed) -> None:
        self.failure = message.error
        while self._preview is not None and self._preview in self.screen_stack:
            self.pop_screen()  # the preview, and any dialog over it
        self._preview = None
        self._drop_spinner()
        self.query_one("#opening-text", Static).update(
            Text(f"Could not open {clean(message.target)}:\n{clean(message.error)}\n\nPress q to quit.", style="red")
        )
        self.notify(clean(message.error), title="Could not open", severity="error", timeout=15)
        self.bind("q", "exit_failed", description="Quit")

    def action_exit_failed(self) -> None:
        """Quit after the target failed to open: exit status 2, as for any bad input."""
        self.exit(return_code=2)

    # ------------------------------------------------------------------ navigation
    # lazy imports: start-up cost (see module docstring)

    def on_open_trace(self, message: OpenTrace) -> None:
        from whenpro_tui.screens.trace import TraceScreen

        screen = TraceScreen(
            message.trace, siblings=message.siblings, position=message.position, on_shown=message.on_shown
        )
        self.push_screen(screen, message.on_close)

    def on_open_diff(self, message: OpenDiff) -> None:
        from whenpro_tui.screens.diff import DiffScreen

        screen = DiffScreen(message.original, message.counterfactual, message.verdict, slots=message.slots)
        if message.replace:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def on_open_replay(self, message: OpenReplay) -> None:
        from whenpro_tui.screens.replay import ReplayScreen

        self.push_screen(ReplayScreen(message.plan))

    def on_open_validation(self, message: OpenValidation) -> None:
        from whenpro_tui.screens.validation import ValidationScreen

        self.push_screen(ValidationScreen(message.root))

    def on_open_results_cell(self, message: OpenResultsCell) -> None:
        from whenpro_tui.screens.results_cell import CellScreen

        self.push_screen(CellScreen(message.results, message.row, message.column, by_id=message.by_id))

    def on_open_result_trace(self, message: OpenResultTrace) -> None:
        from whenpro_tui.screens.result_trace import ResultTraceScreen

        screen = ResultTraceScreen(message.trace, message.records, siblings=message.siblings, position=message.position)
        self.push_screen(screen, message.on_close)

    def on_open_review_trace(self, message: OpenReviewTrace) -> None:
        from whenpro_tui.screens.review_trace import ReviewTraceScreen

        screen = ReviewTraceScreen(message.trace, message.review, siblings=message.siblings, position=message.position)
        message.on_open(screen)
        self.push_screen(screen, message.on_close)

    @work(thread=True, exclusive=True, group="siblings", exit_on_error=False, description="list the trace's siblings")
    def find_siblings(self, path: str, ref: str) -> None:
        """For ``path#key``: the other traces of the same file, for ``[``/``]``."""
        try:
            refs = [r.ref() for r in walk_rows(path) if r.error is None]
        except Exception:  # siblings are a convenience; the trace is already open
            return
        if len(refs) > 1 and ref in refs:
            self.screen.post_message(SiblingsFound(refs, refs.index(ref)))

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A toast whose text is always plain: notifications quote trace content, file
        names and what the user typed, and markup-like text (``[b]x[/i]``) would crash
        the app or turn into live links and actions. ``markup`` is ignored (screens'
        and widgets' ``notify`` pass True by default)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def action_help_quit(self) -> None:
        """ctrl+c (a reflex to quit): say how to quit, in plain text (Textual's own
        message is markup)."""
        self.notify("Press q to quit (from the first screen), or ctrl+q from anywhere.", title="Do you want to quit?")

    def first_paint(self) -> None:
        """Called by the first screen after its first paint: logs the startup time once
        (``whenpro started in N ms``) to the Textual log and the debug log."""
        self._painted.set()
        if self.startup_ms is not None:
            return
        self.startup_ms = (time.perf_counter_ns() - self.started_ns) / 1e6
        line = f"whenpro started in {self.startup_ms:.0f} ms"
        self.log.info(line)
        log.info(line)


def _setup_debug_log() -> None:
    """Log to the file named by ``$WHENPRO_TUI_LOG`` (debug log), if set."""
    path = os.environ.get("WHENPRO_TUI_LOG")
    if path:
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)


def require_terminal() -> None:
    """Raise ConfigError unless stdin and stdout are a terminal (or a Textual driver is
    named by ``$TEXTUAL_DRIVER``, as ``textual serve`` does for browser sessions): the
    TUI would otherwise draw escape sequences into a pipe and wait for keys that never
    come."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError("whenpro view needs a terminal (--serve opens it in a browser instead)")


def run(
    target: str,
    *,
    show_labels: bool = False,
    images: ImagesMode = "auto",
    started_ns: int | None = None,
    start: Callable[[], Screen] | None = None,
    opened: Opened | None = None,
    save_verdicts: bool = True,
) -> None:
    """Run the TUI on ``target`` in this terminal (``start``, ``opened``,
    ``save_verdicts``: see :class:`WhenproApp`). ConfigError without a terminal (:func:`require_terminal`).
    Raises SystemExit with the app's return code when it is not 0: 1 after an
    uncaught exception (Textual prints the traceback), 2 after a target that failed to
    open (its one-line error is printed on stderr too)."""
    require_terminal()
    _setup_debug_log()
    from whenpro_tui.imaging import prepare  # tuimedia: ask the terminal before Textual runs

    app = WhenproApp(
        target,
        show_labels=show_labels,
        images=prepare(images),
        started_ns=started_ns,
        start=start,
        opened=opened,
        save_verdicts=save_verdicts,
    )
    app.run()
    if app.failure is not None:  # also said in the TUI; the shell gets the one line too
        print(f"whenpro: error: {app.failure}", file=sys.stderr)
    if app.return_code:
        raise SystemExit(app.return_code)
