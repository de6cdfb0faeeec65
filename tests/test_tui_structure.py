"""The TUI's module graph has no cycle, counting every import: at module level, inside
functions and under ``TYPE_CHECKING``. Screens navigate through app messages
(:mod:`whenpro_tui.messages`), so no screen module imports another to open it; the
trace screen's parts are typed through :mod:`whenpro_tui.screens.trace_host`."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = "whenpro_tui"


def _module_graph() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (any import statement)."""
    modules: dict[str, Path] = {}
    for path in (REPO / PACKAGE).rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def _cycle_from(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    """A path of imports from ``start`` back to ``start``, if there is one."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(graph[node]):
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def test_the_tui_has_no_import_cycle():
    graph = _module_graph()
    assert "whenpro_tui.screens.trace" in graph and graph["whenpro_tui.screens.trace"]  # the walk found imports
    cycles = [cycle for name in sorted(graph) if (cycle := _cycle_from(name, graph))]
    assert not cycles, "import cycle: " + " -> ".join(cycles[0])


def test_screens_open_other_screens_through_the_app():
    """Only the app (and the start-up module) import a screen to open it; a screen
    imports another only to extend it (a subclass) or to show a dialog over itself."""
    graph = _module_graph()
    full_screens = {
        "whenpro_tui.screens.diff",
        "whenpro_tui.screens.replay",
        "whenpro_tui.screens.validation",
        "whenpro_tui.screens.review_trace",
        "whenpro_tui.screens.results_cell",
        "whenpro_tui.screens.result_trace",
        "whenpro_tui.screens.library",
    }
    importers = {name for name, targets in graph.items() if targets & full_screens}
    assert importers <= {"whenpro_tui.app", "whenpro_tui.starts"}, sorted(importers - {"whenpro_tui.app"})
