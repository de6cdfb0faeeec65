"""The incoming-traces screen (``whenpro view --otlp [HOST:PORT]`` or ``whenpro serve
--otlp --tui``): the OTLP receiver runs while the screen is open and every trace it
gets is listed live (trace id, service, step count, last update, the live judge's
suspect and decisive markers). Enter opens a trace in the live trace view, which keeps
following it.

The receiver is :class:`~whenpro_core.live.otlp_server.OtlpReceiver` over a
:class:`~whenpro_core.live.store.LiveStore`; with judging, events come from
:func:`whenpro_core.live.session.attribute_store` (one live judge per trace), else from
the store's subscription. Rows are :class:`whenpro_core.live.listing.LiveListing`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from whenpro_core.live.events import DecisiveError, ExportRejected, TraceEvicted, TraceStarted, TraceUpdated
from whenpro_core.live.listing import LiveListing
from whenpro_core.safety.textsafe import clean, one_line, plural
from whenpro_tui.commands import collect_bindings
from whenpro_tui.messages import LiveEvents
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.screens.leaving import LEAVE_BINDINGS, Leaving
from whenpro_tui.widgets.footer import FittedFooter
from whenpro_tui.widgets.live_table import LiveTable
from whenpro_tui.widgets.virtual_list import VirtualList

if TYPE_CHECKING:
    from whenpro_tui.screens.live_trace import LiveTraceScreen


class IncomingScreen(Leaving, Screen[None]):
    """Traces arriving over OTLP (see module docstring). ``receiver`` is an
    :class:`OtlpReceiver` not yet started (the port is already bound); ``make_judge``
    gives a live judge per trace (``None``: no judging) and ``llm_judge`` is closed at
    the end."""

    BINDINGS = [
        Binding("?", "help", "Help", key_display="?"),
        *LEAVE_BINDINGS,  # q back (quit on the first screen); escape never quits
    ]

    def __init__(
        self,
        receiver: Any,
        *,
        make_judge: Callable[..., Any] | None = None,
        llm_judge: Any = None,
        protocol: str | None = None,
        idle_timeout: float | None = None,
        is_root: bool = True,
    ) -> None:
        super().__init__()
        self.receiver = receiver
        self.make_judge = make_judge
        self.llm_judge = llm_judge
        self.protocol = protocol if make_judge is not None else None
        self.idle_timeout = idle_timeout
        self.is_root = is_root
        self.listing = LiveListing()
        self.started = False
        self.rejected = 0
        self.live_screen: LiveTraceScreen | None = None  # the live trace screen opened from here, if any
        self._pending: list[Any] = []
        self._flush_scheduled = False

    def compose(self) -> ComposeResult:
        yield Static(id="in-title", markup=False)
        yield Static(id="in-columns", markup=False)
        yield LiveTable(id="incoming")
        yield Static(id="in-status", markup=False)
        yield FittedFooter()

    def on_mount(self) -> None:
        self.query_one("#in-columns", Static).update(Text(LiveTable.header_line(), style="bold dim"))
        self._title()
        self.query_one(LiveTable).focus()
        self.set_interval(1.0, self._tick)
        self.receive()
        self.call_after_refresh(getattr(self.app, "first_paint", lambda: None))

    def on_unmount(self) -> None:
        self.receiver.stop()  # flushes what is pending to the store folder

    @property
    def table(self) -> LiveTable:
        return self.query_one(LiveTable)

    def _title(self) -> None:
        rx = self.receiver
        text = Text.assemble(("whenpro live  ", "bold"), ("OTLP ", "dim"), (rx.endpoint, "bold cyan"))
        text.append(f"   store {clean(str(rx.store.folder))}", style="dim")
        text.append(f"   {self.protocol + ' judging' if self.protocol else 'judging off'}", style="dim")
        self.query_one("#in-title", Static).update(text)

    def _status(self) -> None:
        n = len(self.listing.rows)
        text = plural(n, "trace")
        if not self.started:
            text += " · starting the receiver…"
        elif not n:
            text = (
                f"waiting for traces: point an OpenTelemetry exporter at {self.receiver.endpoint} "
                "(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)"
            )
            if self.receiver.client_note:
                text += f"; {self.receiver.client_note}"
        if self.rejected:
            text += f" · {self.rejected} exports refused"
        if n:
            text += " · enter: open live"
        self.query_one("#in-status", Static).update(Text(text, style="dim"))

    # ------------------------------------------------------------------ receiving

    @work(exclusive=True, group="otlp", exit_on_error=False)
    async def receive(self) -> None:
        rx = self.receiver
        try:
            await asyncio.to_thread(rx.start)
            infos = await asyncio.to_thread(rx.store.traces)
        except Exception as exc:  # noqa: BLE001 - shown, never a crash
            self.notify(clean(str(exc)), title="Receiver failed", severity="error", timeout=15, markup=False)
            return
        self.started = True
        self.listing.seed(infos)
        self.table.set_rows(self.listing.ordered())
        self._status()
        try:
            if self.make_judge is not None:
                from whenpro_core.live.session import attribute_store  # lazy: only with live judging

                async for ev in attribute_store(rx.store, self.make_judge, idle_timeout=self.idle_timeout):
                    self._queue(ev)
            else:
                sub = rx.store.subscribe()
                try:
                    async for ev in sub:
                        self._queue(ev)
                finally:
                    sub.close()
        except Exception as exc:  # noqa: BLE001
            message = exc.one_line() if hasattr(exc, "one_line") else f"{type(exc).__name__}: {exc}"
            self.notify(clean(message), title="Live judging stopped", severity="error", timeout=15, markup=False)
        finally:
            if self.llm_judge is not None:
                await self.llm_judge.aclose()

    def _queue(self, ev: Any) -> None:
        self._pending.append(ev)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.call_after_refresh(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        events, self._pending = self._pending, []
        forward: list[Any] = []
        for ev in events:
            if isinstance(ev, ExportRejected):
                self.rejected += 1
                self.notify(
                    f"export refused ({ev.status}): {clean(one_line(ev.reason, 200))}", severity="warning", markup=False
                )
                continue
            self.listing.apply(ev)
            if isinstance(ev, DecisiveError) and self.live_screen is None:
                row = self.listing.rows.get(ev.trace_id)
                service = f" ({row.service})" if row is not None and row.service else ""
                self.notify(
                    f"trace {ev.trace_id[:16]}{clean(one_line(service, 60))}: step "
                    f"{clean(ev.step)} [{clean(ev.agent)}] {clean(ev.mode or '?')}",
                    title="Decisive error",
                    severity="error",
                    timeout=15,
                    markup=False,
                )
            live = self.live_screen
            if live is not None and getattr(ev, "trace_id", None) == getattr(live.source, "trace_id", None):
                forward.append(ev)
        if forward and self.live_screen is not None:
            # store events reach the open view through its own subscription; judge events from here
            judge = [e for e in forward if not isinstance(e, (TraceStarted, TraceUpdated, TraceEvicted))]
            if judge:
                self.live_screen.post_message(LiveEvents(judge))
        self.table.set_rows(self.listing.ordered())
        self._status()

    def _tick(self) -> None:
        if self.listing.rows:
            self.table.invalidate()  # the age column

    # ------------------------------------------------------------------ opening

    @on(VirtualList.Selected, "#incoming")
    def _open(self, event: VirtualList.Selected) -> None:
        row = self.table.current
        if row is None:
            return
        self.open_live(row.trace_id)

    @work(exclusive=True, group="open-live", exit_on_error=False, description="open a live trace")
    async def open_live(self, trace_id: str) -> None:
        # lazy: start-up cost (the live trace screen imports the trace screen, ~0.3 s),
        # paid when a trace is first opened, not when the list opens
        from whenpro_tui.screens.live_trace import LiveTraceScreen, StoreSource

        source = StoreSource(self.receiver.store, trace_id, protocol=self.protocol)
        trace = await asyncio.to_thread(source.trace)  # an evicted trace is read from disk

        def closed() -> None:
            self.live_screen = None

        screen = LiveTraceScreen(source, trace=trace, events=self.listing.judge_state(trace_id), on_close=closed)
        self.live_screen = screen
        await self.app.push_screen(screen)

    # ------------------------------------------------------------------ help, back

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Incoming traces keys", collect_bindings(self), markers=False))

    def action_back(self) -> None:
        if self.is_root:
            self.app.exit()
        else:
            self.dismiss(None)
