"""A modal picker of facet values (agents and kinds of a trace; modality, framework,
benchmark and mode of a dataset), each with its count. Dismisses with the chosen values
per facet (an empty set means "any"), or ``None`` when cancelled. A ticked value shows
``✓`` in its box and an unticked one a blank box, readable without colour."""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.widgets import SelectionList, Static
from textual.widgets.selection_list import Selection

from whenpro_core.safety.textsafe import clean
from whenpro_tui.widgets.footer import FittedFooter

Choice = dict[str, frozenset[str]]


class TickList(SelectionList[str]):
    """A SelectionList whose box shows ``✓`` when ticked and stays blank when not
    (Textual draws ``X`` in both states, told apart by colour only); ``j``/``k`` move as
    in every other list of the app."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        segments = list(strip)
        index = self.scroll_offset.y + y
        if len(segments) < 4 or index >= self.option_count:
            return strip
        ticked = self.get_option_at_index(index).value in self.selected
        segments[1] = Segment("✓" if ticked else " ", segments[1].style)
        return Strip(segments, strip.cell_length)


class FacetPicker(ModalScreen[Choice | None]):
    """Choose values per facet (space toggles; ``a`` applies; ``c`` clears)."""

    BINDINGS = [
        Binding("a", "apply", "Apply", show=True),
        Binding("c", "clear", "Clear all", show=True),
        Binding("escape", "cancel", "Cancel", show=True),
    ]
    DEFAULT_CSS = """
    FacetPicker { align: center middle; }
    FacetPicker > Vertical {
        width: 70%; min-width: 40; max-width: 100; height: 80%;
        background: $panel; border: round $accent; padding: 0 1;
    }
    FacetPicker .facet-title { text-style: bold; margin-top: 1; }
    FacetPicker SelectionList { height: auto; max-height: 12; border: none; padding: 0; }
    FacetPicker SelectionList:focus { background: $boost; }
    FacetPicker #picker-help { color: $text-muted; }
    """

    def __init__(self, title: str, facets: dict[str, list[tuple[str, int]]], chosen: Choice | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.facets = facets
        self.chosen = chosen or {}

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"))
            yield Static(
                Text("nothing ticked = all · space/enter: tick · a: apply · c: clear · esc: cancel"), id="picker-help"
            )
            with VerticalScroll():
                for facet, values in self.facets.items():
                    if not values:
                        continue
                    yield Static(Text(facet), classes="facet-title")
                    chosen = self.chosen.get(facet, frozenset())
                    yield TickList(
                        *(Selection(Text(f"{clean(v)}  ({n:,})"), v, v in chosen) for v, n in values),
                        id=f"facet-{facet}",
                    )
        yield FittedFooter()

    def on_mount(self) -> None:
        # the keys in the help line (space/enter) work at once: focus the first list
        lists = self.query(SelectionList)
        if lists:
            first = lists.first(SelectionList)
            first.focus()
            if first.highlighted is None and first.option_count:
                first.highlighted = 0

    def selection(self) -> Choice:
        """The values ticked per facet."""
        out: Choice = {}
        for facet in self.facets:
            lists = self.query(f"#facet-{facet}")
            if lists:
                out[facet] = frozenset(lists.first(SelectionList).selected)
        return out

    def action_apply(self) -> None:
        self.dismiss(self.selection())

    def action_clear(self) -> None:
        for sl in self.query(SelectionList):
            sl.deselect_all()

    def action_cancel(self) -> None:
        self.dismiss(None)
