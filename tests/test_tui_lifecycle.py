"""Screen lifecycle: Textual runs the ``on_mount`` (and every other handler) of each
class up the inheritance chain, so a handler defined twice in a hierarchy runs twice
(and a subclass that also calls ``super().on_mount()`` runs its parent's three times).
whenpro screens define each handler once and extend through explicit hooks; mounting a
results, review or live trace screen shows its trace and reads its verdicts once."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import pkgutil
from pathlib import Path

from rich.console import Console

import whenpro_tui
from bench_data import write_dataset
from tests.conftest import SAMPLES, busy_workers, settle
from whenpro_core.cli.bench import BenchOptions, bench_command
from whenpro_tui.app import WhenproApp
from whenpro_tui.messages import VerdictsLoaded
from whenpro_tui.screens.live_trace import LiveTraceScreen
from whenpro_tui.screens.result_trace import ResultTraceScreen
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.starts import LiveOptions, follow_start


def whenpro_classes():
    from textual.message_pump import MessagePump

    for info in pkgutil.walk_packages(whenpro_tui.__path__, "whenpro_tui."):
        if info.name in ("whenpro_tui.serve",):
            continue
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and issubclass(cls, MessagePump):
                yield cls


def test_each_handler_is_defined_once_per_hierarchy() -> None:
    """No two whenpro classes in one MRO define the same Textual handler (``on_*`` /
    ``_on_*``): Textual would call both."""
    problems = []
    for cls in whenpro_classes():
        owners: dict[str, list[str]] = {}
        for base in cls.__mro__:
            if not base.__module__.startswith("whenpro_tui"):
                continue
            for name, value in vars(base).items():
                if callable(value) and (name.startswith("on_") or name.startswith("_on_")):
                    owners.setdefault(name.lstrip("_"), []).append(base.__name__)
        problems += [f"{cls.__name__}.{name}: {', '.join(where)}" for name, where in owners.items() if len(where) > 1]
    assert not problems, "handlers defined twice (Textual runs each):\n" + "\n".join(sorted(set(problems)))


def test_workers_with_arguments_describe_themselves() -> None:
    """Every ``@work`` method that takes arguments passes ``description=``: Textual's
    default description is the repr of every argument, 0.35 s for a 10,000-step trace
    (paid on the event loop each time the worker starts)."""
    import ast

    missing = []
    for path in sorted(Path(whenpro_tui.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            takes_args = len(node.args.args) > 1 or node.args.vararg or node.args.kwonlyargs
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and getattr(deco.func, "id", None) == "work"
                    and takes_args
                    and not any(k.arg == "description" for k in deco.keywords)
                ):
                    missing.append(f"{path.name}:{node.lineno} {node.name}")
    assert not missing, "workers without a description:\n" + "\n".join(missing)


class Counting:
    """Counts ``show_trace`` calls on a screen instance (the screen runs unchanged)."""

    def __init__(self, screen: TraceScreen) -> None:
        self.calls = 0
        original = screen.show_trace

        def show_trace(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        screen.show_trace = show_trace  # type: ignore[method-assign]


async def test_a_results_trace_screen_loads_its_trace_once(tmp_path: Path) -> None:
    data = write_dataset(tmp_path)
    with open(os.devnull, "w") as devnull:
        await asyncio.to_thread(
            bench_command,
            str(data),
            BenchOptions(out=tmp_path / "r.jsonl", report=False),
            console=Console(file=devnull, width=100),
        )
    loaded: list[VerdictsLoaded] = []
    app = WhenproApp(str(tmp_path / "r.jsonl"), cursor_blink=False)
    async with app.run_test(
        size=(120, 30), message_hook=lambda m: loaded.append(m) if isinstance(m, VerdictsLoaded) else None
    ) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the traces behind the first cell
        await settle(pilot)
        original_push = app.push_screen
        counters: list[Counting] = []

        def push(screen, *args, **kwargs):  # count from the moment the screen is created
            if isinstance(screen, TraceScreen):
                counters.append(Counting(screen))
            return original_push(screen, *args, **kwargs)

        app.push_screen = push  # type: ignore[method-assign]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ResultTraceScreen)
        assert [c.calls for c in counters] == [1]
        assert len(loaded) == 1  # saved verdicts read once
        await pilot.press("]")  # the next trace of the cell: shown once more, read once more
        await settle(pilot)
        assert [c.calls for c in counters] == [2] and len(loaded) == 2


async def test_a_live_trace_screen_starts_once(tmp_path: Path) -> None:
    from tests.support.waiting import until
    from tests.test_tui_live import native_lines
    from whenpro_core.formats import load_trace

    sample = load_trace(SAMPLES / "team_text" / "trace.json")
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(native_lines(sample)))
    loaded: list[VerdictsLoaded] = []
    made: list[Counting] = []
    start = follow_start(str(path), LiveOptions(judge=False))

    def make():
        screen = start()
        made.append(Counting(screen))
        return screen

    app = WhenproApp("", cursor_blink=False, start=make)
    async with app.run_test(
        size=(120, 30), message_hook=lambda m: loaded.append(m) if isinstance(m, VerdictsLoaded) else None
    ) as pilot:
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, LiveTraceScreen) and len(app.screen.trace.steps) == len(sample.steps) and loaded
            ),
            "the live trace",
        )
        screen = app.screen
        # a second start would come from a message or a one-shot worker: let all of them end
        # (the live worker follows the file for ever) and every message they posted be handled
        await until(
            pilot,
            lambda: not [w for w in app.workers if w.group != "live" and not w.is_finished],
            "the one-shot workers",
            detail=lambda: f"busy: {busy_workers(app)}",
        )
        await pilot.pause()
        assert [c.calls for c in made] == [1] and len(loaded) == 1
        # the live source runs once: one worker in its group
        assert len([w for w in app.workers if w.group == "live"]) == 1
        assert screen.steps.step_index == len(sample.steps) - 1  # it follows the newest step
