"""The results screen (``whenpro view RESULTS.jsonl``, or ``whenpro view DATASET
--results RESULTS.jsonl``): the leaderboard of a benchmark run (model × protocol × gold
setting, per modality and composite) and its breakdowns by framework, benchmark, gold
mode and transcript length, switched with ``1``-``5`` or ``b``/``B``. Every cell drills
down (enter) to the traces behind it (:class:`~whenpro_tui.screens.results_cell.CellScreen`).

Numbers come from :mod:`whenpro_core.bench.explore` (which calls
:func:`whenpro_core.bench.aggregate.aggregate`); this module lays them out. Reading
and aggregating run in a thread worker.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from whenpro_core.bench.aggregate import DIMENSIONS
from whenpro_core.bench.explore import (
    DIMENSION_TITLES,
    Column,
    Results,
    TableRow,
    columns,
    dataset_index,
    load_results,
    table_rows,
)
from whenpro_core.errors import WhenproError
from whenpro_core.safety.textsafe import clean, plural
from whenpro_tui.commands import collect_bindings
from whenpro_tui.messages import DatasetIndexed, OpenResultsCell, ResultsLoaded
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.screens.leaving import LEAVE_BINDINGS, Leaving
from whenpro_tui.widgets.footer import FittedFooter

#: Columns before the metric columns: the setting and the dimension's value.
LEAD = 2


class ResultsTable(DataTable):
    """The results table: enter (select a cell) lists the traces behind it."""

    BINDINGS = [
        Binding("enter", "select_cursor", "Traces behind cell"),
        # the same movement keys as every other screen (arrows still work)
        Binding("j", "cursor_down", "Row down", show=False),
        Binding("k", "cursor_up", "Row up", show=False),
        Binding("h", "cursor_left", "Column left", show=False),
        Binding("l", "cursor_right", "Column right", show=False),
        Binding("g", "scroll_top", "First row", show=False),
        Binding("G", "scroll_bottom", "Last row", show=False),
    ]


class ResultsScreen(Leaving, Screen[None]):
    """Leaderboard and breakdowns of benchmark results (see module docstring)."""

    BINDINGS = [
        Binding("1", "dimension(0)", "Leaderboard", show=False),
        Binding("2", "dimension(1)", "By framework", show=False),
        Binding("3", "dimension(2)", "By benchmark", show=False),
        Binding("4", "dimension(3)", "By gold mode", show=False),
        Binding("5", "dimension(4)", "By length", show=False),
        Binding("b", "cycle(1)", "Next breakdown"),
        Binding("B", "cycle(-1)", "Previous breakdown", show=False),
        Binding("r", "reload", "Reload"),
        Binding("?", "help", "Help", key_display="?"),
        *LEAVE_BINDINGS,  # q back (quit on the first screen); escape never quits
    ]

    def __init__(self, paths: list[str], *, dataset: str | None = None, is_root: bool = False) -> None:
        super().__init__()
        self.paths = [str(p) for p in paths]
        self.dataset = dataset
        self.is_root = is_root
        self.results: Results | None = None
        self.by_id: dict[str, str] | None = None
        self.dimension = DIMENSIONS[0]
        self.rows: list[TableRow] = []
        self.cols: list[Column] = []

    def compose(self) -> ComposeResult:
        yield Static(id="res-title", markup=False)
        yield Static(id="res-tabs", markup=False)
        yield ResultsTable(id="res-table", cursor_type="cell", zebra_stripes=True, fixed_columns=LEAD)
        yield Static(id="res-hint", markup=False)
        yield FittedFooter()

    def on_mount(self) -> None:
        self._title("reading…")
        self.load()
        if self.dataset:
            self.index_dataset()
        self.query_one(DataTable).focus()
        self.call_after_refresh(getattr(self.app, "first_paint", lambda: None))

    # ------------------------------------------------------------------ loading

    @work(thread=True, exclusive=True, group="results", exit_on_error=False)
    def load(self) -> None:
        try:
            self.post_message(ResultsLoaded(load_results(self.paths)))
        except WhenproError as exc:
            self.post_message(ResultsLoaded(error=exc.one_line()))
        except Exception as exc:  # never crash on a bad file
            self.post_message(ResultsLoaded(error=f"{type(exc).__name__}: {exc}"))

    @work(thread=True, exclusive=True, group="dataset-index", exit_on_error=False)
    def index_dataset(self) -> None:
        assert self.dataset is not None
        try:
            self.post_message(DatasetIndexed(dataset_index(self.dataset)))
        except WhenproError as exc:
            self.post_message(DatasetIndexed({}, exc.one_line()))
        except Exception as exc:
            self.post_message(DatasetIndexed({}, f"{type(exc).__name__}: {exc}"))

    def on_results_loaded(self, message: ResultsLoaded) -> None:
        message.stop()
        if message.error:
            self._title("could not be read")
            self.query_one("#res-hint", Static).update(Text(clean(message.error), style="red"))
            self.notify(
                clean(message.error), title="Could not read results", severity="error", timeout=15, markup=False
            )
            return
        self.results = message.results
        if self.results.problems:
            self.notify(
                f"{len(self.results.problems):,} lines skipped (not bench records), "
                f"e.g. {clean(self.results.problems[0])}",
                severity="warning",
                timeout=10,
                markup=False,
            )
        self._show()

    def on_dataset_indexed(self, message: DatasetIndexed) -> None:
        message.stop()
        self.by_id = message.by_id
        if message.error:
            self.notify(
                clean(message.error), title="Could not list the dataset", severity="warning", timeout=10, markup=False
            )

    # ------------------------------------------------------------------ showing

    def _title(self, status: str = "") -> None:
        names = ", ".join(Path(p).name for p in self.paths)
        text = Text.assemble(("whenpro results  ", "bold"), (clean(names), ""))
        if self.results is not None:
            r = self.results
            n = len(r.report.groups)
            text.append(
                f"   {plural(len(r.records), 'record')} · {plural(n, 'setting')} · step tolerance ±{r.tolerance}",
                style="dim",
            )
        if self.dataset:
            text.append(f"   dataset {clean(self.dataset)}", style="dim")
        if status:
            text.append(f"   {status}", style="dim italic")
        self.query_one("#res-title", Static).update(text)

    def _tabs(self) -> None:
        text = Text()
        for i, dim in enumerate(DIMENSIONS):
            label = f" {i + 1} {DIMENSION_TITLES[dim]} "
            text.append(label, style="bold reverse" if dim == self.dimension else "dim")
            text.append(" ")
        text.append("  b/B switch · enter: traces behind a cell", style="dim")
        self.query_one("#res-tabs", Static).update(text)

    def _show(self, keep_cursor: bool = False) -> None:
        results = self.results
        if results is None:
            return
        self._title()
        self._tabs()
        table = self.query_one(DataTable)
        where = table.cursor_coordinate if keep_cursor else None
        self.cols = columns(results.tolerance)
        self.rows = table_rows(results, self.dimension)
        self._fill(table)
        if not self.rows:
            self.query_one("#res-hint", Static).update(
                Text("No scored traces in these results (every record failed or had no ground truth).", style="yellow")
            )
            return
        if where is not None:
            table.move_cursor(row=min(where.row, len(self.rows) - 1), column=where.column)
        else:
            table.move_cursor(row=0, column=LEAD + 1)
        self._hint()

    def _fill(self, table: DataTable) -> None:
        """Refill ``table`` with :attr:`cols` and :attr:`rows`. Every column gets the width
        of its widest cell up front: DataTable sizes auto-width columns only when it is next
        idle, and what it draws before that (a repaint on a busy machine) stays in its
        caches, cut at the header's width."""
        header = [
            ("setting", Text("setting")),
            ("value", Text(DIMENSION_TITLES[self.dimension] if self.dimension != "modality" else "modality")),
            *((col.key, Text(col.title, justify="right")) for col in self.cols),
        ]
        body: list[list[Text]] = []
        previous = None
        for row in self.rows:
            label = clean(row.label) if row.label != previous else ""
            previous = row.label
            style = "bold" if row.composite else ""
            value = Text("composite" if row.composite else clean(row.value), style=style)
            cells = [Text(row.cell(col), justify="right", style=style) for col in self.cols]
            body.append([Text(label, style="bold"), value, *cells])
        table.clear(columns=True)
        for i, (key, title) in enumerate(header):
            width = max([title.cell_len, *(cells[i].cell_len for cells in body)])
            table.add_column(title, key=key, width=width)
        for i, cells in enumerate(body):
            table.add_row(*cells, key=str(i))

    @on(DataTable.CellHighlighted, "#res-table")
    def _highlighted(self, event: DataTable.CellHighlighted) -> None:
        self._hint()

    def current(self) -> tuple[TableRow, Column | None] | None:
        """The row and column under the cursor (column ``None`` on the lead columns)."""
        if not self.rows:
            return None
        coord = self.query_one(DataTable).cursor_coordinate
        if not 0 <= coord.row < len(self.rows):
            return None
        row = self.rows[coord.row]
        col = self.cols[coord.column - LEAD] if coord.column >= LEAD else None
        return row, col

    def _hint(self) -> None:
        cur = self.current()
        if cur is None:
            return
        row, col = cur
        where = "all modalities" if row.composite else f"{row.dimension} {row.value}"
        if col is None or col.axis is None:
            what = f"{row.metrics.n:,} scored traces"
        else:
            what = f"{col.title} {row.cell(col)} over {plural(row.metrics.n, 'trace')}"
        self.query_one("#res-hint", Static).update(
            Text.assemble((clean(row.label), "bold"), f" · {clean(where)} · {what}", ("   enter: list them", "dim"))
        )

    # ------------------------------------------------------------------ actions

    def action_dimension(self, index: int) -> None:
        self.dimension = DIMENSIONS[index]
        self._show()

    def action_cycle(self, delta: int) -> None:
        i = DIMENSIONS.index(self.dimension)
        self.action_dimension((i + delta) % len(DIMENSIONS))

    def action_reload(self) -> None:
        self._title("reading…")
        self.load()

    def action_drill(self) -> None:
        cur = self.current()
        if cur is None or self.results is None:
            return
        row, col = cur
        self.app.post_message(OpenResultsCell(self.results, row, col, by_id=self.by_id))

    @on(DataTable.CellSelected, "#res-table")
    def _selected(self, event: DataTable.CellSelected) -> None:
        event.stop()
        self.action_drill()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen("Results keys", collect_bindings(self), markers=False))

    def action_back(self) -> None:
        if self.is_root:
            self.app.exit()
        else:
            self.dismiss(None)
