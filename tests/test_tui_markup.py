"""Markup-like text is plain text everywhere in the TUI.

Trace content, file names and what a user types can look like Textual/Rich markup
(``[b]x[/i]``, ``[/]``, links, ``@click`` actions). Shown as markup it either crashes
the app (``MarkupError``: a closing tag that matches nothing) or turns into live links
and actions. These tests feed each such string through every place that shows it (go
to, search, the library's find box, the filter dialog, error rows, trace ids, agent
names, task text, notifications, verdict reasons, the injection preview, results
table cells) and check that the app keeps running and shows the text as typed.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from bench_data import write_dataset
from tests.conftest import WHOWHEN, screen_text, settle
from tests.support.waiting import until as wait_for
from whenpro_core.attribution.verdicts import save_verdict
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import Agent, Attribution, GroundTruth, Outcome, Step, Task, Trace
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.screens.inject_dialog import InjectDialog
from whenpro_tui.screens.library import LibraryScreen
from whenpro_tui.screens.picker import FacetPicker
from whenpro_tui.screens.result_trace import ResultTraceScreen
from whenpro_tui.screens.results import ResultsScreen
from whenpro_tui.screens.results_cell import CellScreen
from whenpro_tui.screens.trace import TraceScreen

#: Each string breaks markup differently: unbalanced tags (MarkupError), a bare closing
#: tag, a link and a click action (live if rendered as markup).
MARKUPS = ["[b]x[/i]", "[/]", "[link=javascript:x]y[/link]", "[@click=app.quit]q[/]"]
IDS = ["unbalanced", "bare-close", "link", "click"]


def notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def until(pilot, cond, what: str) -> None:
    """:func:`tests.support.waiting.until`, every worker done between checks."""
    await wait_for(
        pilot, cond, what, between=lambda: settle(pilot, rounds=1), detail=lambda: f"screen:\n{screen_text(pilot.app)}"
    )


def marked_trace(m: str) -> Trace:
    """A two-agent trace whose id, framework, benchmark, agents, task, steps and
    ground truth all carry the markup-like string ``m``."""
    agent = f"coder{m}"
    steps = [
        Step(index=0, coord="0", agent="user", kind="user", content=f"Task: add 2 and 2 {m}"),
        Step(index=1, coord="1", agent=agent, kind=f"act{m}", content=f"2 + 2 = 5 {m}"),
        Step(index=2, coord="2", agent="checker", kind="final_answer", content=f"Final: 5 {m}"),
    ]
    return Trace(
        id=f"trace{m}",
        framework=f"fw{m}",
        benchmark=f"bench{m}",
        agents=[Agent(id="user"), Agent(id=agent), Agent(id="checker")],
        task=Task(query=f"Add 2 and 2 {m}\nsecond line {m}", answer=f"4 {m}"),
        steps=steps,
        final_answer=f"5 {m}",
        outcome=Outcome.failure,
        ground_truth=GroundTruth(agent=agent, step="1", mode="R.3", reason=f"why {m}"),
    )


def assert_running(app) -> None:
    assert app.is_running and app._exception is None and app.return_code is None


@pytest.mark.parametrize("m", MARKUPS, ids=IDS)
async def test_trace_screen_shows_markup_like_text_as_typed(tmp_path: Path, m: str) -> None:
    """Trace id, agent names, task, step text, verdict reason; go to, search, the filter
    dialog, help and notifications: all literal, and the app keeps running."""
    trace = marked_trace(m)
    path = write_trace(trace, tmp_path / "t.json")
    trace = load_trace(path)
    save_verdict(trace, Attribution(agent=f"coder{m}", step="1", mode="R.3", reason=f"reason {m}"))
    app = WhenproApp(str(path), cursor_blink=False, show_labels=True)
    async with app.run_test(size=(150, 45), notifications=True) as pilot:
        await until(
            pilot,
            lambda: isinstance(app.screen, TraceScreen) and app.screen.attribution.verdicts,
            "the trace and its verdict",
        )
        text = screen_text(app)
        for shown in (f"trace{m}", f"coder{m}", f"Add 2 and 2 {m}", f"2 + 2 = 5 {m}"[:12], f"reason {m}"):
            assert shown in text, shown
        await pilot.press("j")  # step 1: its content, agent and kind in the detail pane
        await pilot.pause()
        assert f"2 + 2 = 5 {m}" in screen_text(app)

        await pilot.press(":", *m, "enter")  # go to an unknown coordinate
        await until(pilot, lambda: any(m in n for n in notes(app)), "the go-to notice")
        assert m in screen_text(app)  # the toast shows it as typed
        assert_running(app)

        await pilot.press("/", *f"zz{m}", "enter")  # a search that finds nothing
        await until(pilot, lambda: any(f"zz{m}" in n for n in notes(app)), "the search notice")
        assert f"zz{m}" in screen_text(app)
        await pilot.press("/", *m, "enter")  # a search that finds the steps
        await settle(pilot)
        assert f"/{m}:" in screen_text(app)  # the status line
        assert_running(app)

        await pilot.press("l")  # no later step by this agent: names it in a toast
        await until(pilot, lambda: any(f"coder{m}" in n for n in notes(app)), "the agent notice")

        await pilot.press("W")  # task in full
        await pilot.pause()
        assert f"second line {m}" in screen_text(app)

        await pilot.press("f")  # the filter dialog lists agents and kinds
        await until(pilot, lambda: isinstance(app.screen, FacetPicker), "the filter dialog")
        assert f"coder{m}" in screen_text(app) and f"act{m}" in screen_text(app)
        await pilot.press("space", "a")  # tick the first agent, apply
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)

        await pilot.press("?")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        await pilot.press("escape")
        await pilot.pause()

        app.notify(f"direct {m}", title=f"title {m}")  # any notification, any caller
        app.screen.notify(f"from a screen {m}")
        await settle(pilot)
        text = screen_text(app)
        assert f"direct {m}" in text and f"title {m}" in text and f"from a screen {m}" in text
        assert_running(app)


@pytest.mark.parametrize("m", MARKUPS, ids=IDS)
async def test_injection_preview_shows_markup_like_text_as_typed(tmp_path: Path, m: str) -> None:
    path = write_trace(marked_trace(m), tmp_path / "t.json")
    app = WhenproApp(str(path), cursor_blink=False)
    async with app.run_test(size=(150, 45), notifications=True) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TraceScreen), "the trace")
        await pilot.press("j", "i")
        await until(pilot, lambda: isinstance(app.screen, InjectDialog), "the injection dialog")
        await settle(pilot)
        dialog = app.screen
        assert m in dialog.query_one("#inj-content").text  # the editable preview
        assert f"coder{m}" in screen_text(app)  # the dialog's title names the step's agent
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        assert_running(app)


def who_when_file(folder: Path, name: str, mistake_step: str) -> Path:
    """A real Who&When Hand-Crafted record with its ``mistake_step`` replaced."""
    doc = json.loads((WHOWHEN / "Hand-Crafted" / "1.json").read_text())
    doc["mistake_step"] = mistake_step
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("m", MARKUPS, ids=IDS)
async def test_library_error_rows_paths_and_find_box(tmp_path: Path, whowhen: Path, m: str) -> None:
    """Error messages quoting bad fields, file names with markup, the find box and the
    library's filter dialog."""
    folder = tmp_path / "ds"
    who_when_file(folder, "bad.json", m)  # the error message quotes the field
    shutil.copy(whowhen / "Hand-Crafted" / "1.json", folder / "1.json")
    odd = folder / "[b]x[" / "y].json"  # a folder and file name that read as markup
    odd.parent.mkdir()
    write_trace(marked_trace(m), odd)
    (odd.parent / "z].json").write_text("{ not json")  # an error row naming that path
    app = WhenproApp(str(folder), cursor_blink=False)
    async with app.run_test(size=(150, 40), notifications=True) as pilot:
        await until(pilot, lambda: isinstance(app.screen, LibraryScreen) and not app.screen.scanning, "the library")
        await settle(pilot)
        text = screen_text(app)
        assert f"trace{m}" in text and "[b]x[/z].json" in text
        table = app.screen.table
        for want in ("bad.json", "z].json"):  # enter on an error row: its message is a toast
            table.move_cursor(
                next(p for p, i in enumerate(table.shown) if table.rows[i].error and table.rows[i].path.endswith(want))
            )
            await pilot.press("enter")
            await settle(pilot)
            assert isinstance(app.screen, LibraryScreen)
        assert any(m in n for n in notes(app)) and any("[b]x[/z].json" in n for n in notes(app))
        assert m in screen_text(app)
        assert_running(app)

        await pilot.press("/", *m)  # the find box
        await settle(pilot)
        assert_running(app)
        await pilot.press("escape", "f")  # the dataset filter dialog lists frameworks
        await until(pilot, lambda: isinstance(app.screen, FacetPicker), "the filter dialog")
        assert f"fw{m}" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert_running(app)


@pytest.mark.parametrize("m", MARKUPS, ids=IDS)
async def test_results_cells_and_drill_down(tmp_path: Path, m: str) -> None:
    data = write_dataset(tmp_path)
    for t in data.rglob("team-7.json"):
        trace = load_trace(t)
        trace.framework, trace.benchmark = f"fw{m}", f"bench{m}"
        write_trace(trace, t)
    out = tmp_path / "r.jsonl"
    with open(os.devnull, "w") as devnull:  # bench runs its own event loop: not in this one
        await asyncio.to_thread(
            bench_command, str(data), BenchOptions(out=out, report=False), console=Console(file=devnull, width=120)
        )
    app = WhenproApp(str(out), cursor_blink=False)
    async with app.run_test(size=(150, 40), notifications=True) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen.results, "the results")
        await pilot.press("2")  # by framework: a row named by the trace's framework
        await until(pilot, lambda: f"fw{m}" in screen_text(app), "the framework rows")
        await pilot.press("3")  # by benchmark
        await until(pilot, lambda: f"bench{m}" in screen_text(app), "the benchmark rows")
        await pilot.press("2")
        await settle(pilot)
        rows = app.screen.rows
        pos = next(i for i, r in enumerate(rows) if r.value == f"fw{m}")
        for _ in range(pos):
            await pilot.press("down")
        await pilot.press("enter")  # the traces behind that cell
        await until(pilot, lambda: isinstance(app.screen, CellScreen), "the cell's traces")
        await settle(pilot)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ResultTraceScreen), "the trace")
        assert "fw" in screen_text(app)
        assert_running(app)


# --------------------------------------------------------------------------- the rule, in source

#: Calls that render their first argument (a plain ``str`` is read as markup).
RENDERING = {
    "Static",
    "Label",
    "Button",
    "Checkbox",
    "RadioButton",
    "Selection",
    "Option",
    "update",
    "add_row",
    "add_column",
    "add_rows",
    "Hit",
    "DiscoveryHit",
}
#: Calls whose result is text from a trace, a path or the user (never markup).
STRINGY_CALLS = {"clean", "one_line", "str", "format", "join", "human_size", "repr"}


def _stringy(node) -> bool:
    """Is ``node`` a computed string (an f-string, a concatenation, a text helper)?
    Literal strings are the developer's own text and may stay plain ``str``."""
    import ast

    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return (
            _stringy(node.left)
            or _stringy(node.right)
            or (isinstance(node.left, ast.Constant) and isinstance(node.left.value, str))
        )
    if isinstance(node, ast.Call):
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
        return name in STRINGY_CALLS
    return False


def test_no_computed_string_reaches_a_markup_renderer() -> None:
    """Every computed string the package shows goes through ``Text`` (or a widget made
    with ``markup=False``); ``from_markup`` is never called on one; Select options are
    ``Text``. (Notifications are plain by :meth:`WhenproApp.notify`.)"""
    import ast

    root = Path(__file__).resolve().parent.parent / "whenpro_tui"
    problems = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and target.attr in ("title", "sub_title", "border_title", "border_subtitle", "tooltip")
                        and _stringy(node.value)
                    ):
                        problems.append(f"{path.name}:{node.lineno} .{target.attr} = computed str")
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
            plain = any(
                k.arg == "markup" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in node.keywords
            )
            if name == "from_markup" and node.args and not isinstance(node.args[0], ast.Constant):
                problems.append(f"{path.name}:{node.lineno} from_markup on a computed string")
            elif name in RENDERING and not plain and any(_stringy(a) for a in node.args):
                problems.append(f"{path.name}:{node.lineno} {name}() of a computed str")
            elif name == "Select" and node.args:
                options = node.args[0]
                elts = (
                    [options.elt]
                    if isinstance(options, (ast.ListComp, ast.GeneratorExp))
                    else getattr(options, "elts", [])
                )
                for elt in elts:
                    if (
                        isinstance(elt, ast.Tuple)
                        and elt.elts
                        and not (isinstance(elt.elts[0], ast.Call) and getattr(elt.elts[0].func, "id", "") == "Text")
                    ):
                        problems.append(f"{path.name}:{node.lineno} Select option label is a str")
    assert not problems, "\n".join(problems)
