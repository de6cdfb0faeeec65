"""Why the library list is a virtual ``ScrollView`` and not a ``DataTable``: time to
first paint with 10,000 listing rows, time to filter them down to 10 rows and to clear the
filter again (keystrokes in the find box), and keypress-to-repaint latency, for whenpro's
``TraceTable`` next to Textual's ``DataTable`` holding the same rows, in one run.

    /work/venv/bin/python benchmarks/tui_library.py [--rows 10000] [--presses 50]

Both run headless under ``App.run_test`` at 120x40; "paint" is the moment Textual hands
a screen update to the driver (``App._display``), encoded to terminal bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual import events  # noqa: E402
from textual.app import App, ComposeResult  # noqa: E402
from textual.widgets import DataTable  # noqa: E402

from whenpro_core.library.listing import RowFilter, filter_rows  # noqa: E402
from whenpro_core.trace.model import TraceSummary  # noqa: E402

SIZE = (120, 40)


def make_rows(n: int) -> list[TraceSummary]:
    frameworks = ["magentic-one", "smolagents", "captainagent", "debate", "metagpt"]
    return [
        TraceSummary(
            id=f"trace-{i:05d}",
            path=f"/data/{i}.json",
            framework=frameworks[i % len(frameworks)],
            benchmark=("gaia", "assistantbench", "mathvista")[i % 3],
            modality=("text", "image", "video")[i % 3],
            step_count=5 + i % 90,
            gt_mode=f"R.{1 + i % 4}",
            gt_step=str(i % 30),
        )
        for i in range(n)
    ]


class DataTableLibrary(App[None]):
    """The alternative: a DataTable with one row per trace; filtering rebuilds it."""

    def __init__(self, rows: list[TraceSummary]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        yield DataTable(cursor_type="row", id="table")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("id", "framework", "benchmark", "modality", "steps")
        self.fill(range(len(self.rows)))
        table.focus()

    def fill(self, positions) -> None:
        table = self.query_one(DataTable)
        table.clear()
        table.add_rows(
            (r.id, r.framework, r.benchmark, r.modality, str(r.step_count)) for r in (self.rows[i] for i in positions)
        )

    def apply_text(self, text: str) -> None:
        self.fill(filter_rows(self.rows, RowFilter(text=text)))

    def count(self) -> int:
        return self.query_one(DataTable).row_count

    def reset_cursor(self) -> None:
        self.query_one(DataTable).move_cursor(row=0)

    def cursor(self) -> int:
        return self.query_one(DataTable).cursor_row


class VirtualLibrary(App[None]):
    """whenpro's library screen on the same rows."""

    def __init__(self, rows: list[TraceSummary]) -> None:
        super().__init__()
        self.rows = rows

    def on_mount(self) -> None:
        from whenpro_tui.screens.library import LibraryScreen

        self.push_screen(LibraryScreen("/data", rows=self.rows))

    def _table(self):
        from whenpro_tui.widgets.trace_table import TraceTable

        return self.screen.query_one(TraceTable)

    def apply_text(self, text: str) -> None:
        from textual.widgets import Input

        self.screen.query_one("#lib-text", Input).value = text

    def count(self) -> int:
        try:
            return self._table().row_count
        except Exception:
            return 0

    def cursor(self) -> int:
        return self._table().cursor

    def reset_cursor(self) -> None:
        self._table().move_cursor(0)


async def measure(make: Callable[[], App], n_rows: int, presses: int, key: str):
    """(first paint, re-filter time, key latencies), seconds. Each paint records the
    app state it showed (row count, cursor), so a wait never misses a paint."""
    paints: list[tuple[float, int, int]] = []
    start = time.perf_counter()
    app = make()
    original = app._display

    def hook(screen, renderable) -> None:
        if renderable is not None:
            renderable.render_segments(app.console)
            try:
                state = (app.count(), app.cursor())
            except Exception:
                state = (0, -1)
            paints.append((time.perf_counter(), *state))
        original(screen, renderable)

    app._display = hook  # type: ignore[method-assign]

    async def paint_showing(after: float, test: Callable[[int, int], bool]) -> float:
        while True:
            for t, count, cursor in reversed(paints):
                if t < after:
                    break
                if test(count, cursor):
                    return t
            await asyncio.sleep(0.0005)

    async with app.run_test(size=SIZE) as pilot:
        first = await paint_showing(start, lambda c, _: c >= n_rows) - start
        await pilot.pause()
        t = time.perf_counter()
        app.apply_text("trace-0999")  # 10 matches in 10,000 rows
        filtered = await paint_showing(t, lambda c, _: c < n_rows) - t
        t = time.perf_counter()
        app.apply_text("")
        unfiltered = await paint_showing(t, lambda c, _: c >= n_rows) - t
        app.reset_cursor()  # clearing the filter kept the cursor on its row, near the end
        await pilot.pause()
        lat = []
        for _ in range(presses):
            before = app.cursor()
            sent = time.perf_counter()
            app._driver.send_message(events.Key(key, None))
            lat.append(await paint_showing(sent, lambda _, cur, before=before: cur != before) - sent)
    return first, filtered, unfiltered, lat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--presses", type=int, default=50)
    args = parser.parse_args()
    rows = make_rows(args.rows)
    results = {}
    for name, make, key in (
        ("whenpro TraceTable (virtual)", lambda: VirtualLibrary(rows), "j"),
        ("Textual DataTable", lambda: DataTableLibrary(rows), "down"),
    ):
        first, filtered, unfiltered, lat = asyncio.run(measure(make, args.rows, args.presses, key))
        results[name] = (first, filtered, unfiltered, statistics.median(lat))
        print(
            f"{name:<30} first paint {first * 1000:6.0f} ms | filter to 10 rows "
            f"{filtered * 1000:5.0f} ms | clear filter {unfiltered * 1000:6.0f} ms | "
            f"key median {statistics.median(lat) * 1000:5.1f} ms  ({args.rows:,} rows)"
        )
    (f1, r1, u1, k1), (f2, r2, u2, k2) = results.values()
    print(
        f"ratio (DataTable / whenpro): first paint {f2 / f1:.1f}x, filter {r2 / r1:.1f}x, "
        f"clear filter {u2 / u1:.1f}x, key {k2 / k1:.1f}x   "
        f"[load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores]"
    )


if __name__ == "__main__":
    main()
