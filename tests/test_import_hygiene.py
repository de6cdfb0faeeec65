"""whenpro_core never loads Textual (docs/architecture.md, 'Data flow'): a fresh interpreter imports every
core module, the CLI included, and ``textual`` must not be in ``sys.modules``
(harlequin's test_import_hygiene.py)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import whenpro_core

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("textual", "whenpro_tui", "textual_serve", "textual_image")


def core_modules() -> list[str]:
    names = ["whenpro_core"]
    for info in pkgutil.walk_packages(whenpro_core.__path__, "whenpro_core."):
        names.append(info.name)
    return sorted(names)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_core_module_list_includes_the_cli() -> None:
    names = core_modules()
    assert "whenpro_core.cli" in names and "whenpro_core.views.search" in names


def test_importing_every_core_module_loads_no_tui() -> None:
    imports = "\n".join(f"import {name}" for name in core_modules())
    proc = run_python(f"{imports}\nimport sys\nprint(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))\n")
    assert proc.returncode == 0, proc.stderr
    leaked = [m for m in proc.stdout.strip().split(",") if m]
    assert not leaked, f"whenpro_core imported {leaked}"


@pytest.mark.parametrize("argv", [["--help"], ["ls", "--help"], ["view", "--help"]])
def test_cli_commands_other_than_running_view_load_no_tui(argv: list[str]) -> None:
    proc = run_python(
        "import sys\nfrom whenpro_core import cli\n"
        f"try:\n    cli.main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules), file=sys.stderr)\n"
    )
    leaked = [m for m in proc.stderr.strip().splitlines()[-1].split(",") if m] if proc.stderr.strip() else []
    assert not leaked, f"`whenpro {' '.join(argv)}` imported {leaked}"


#: What a command that prints one plain line must not load: the rich renderer, the trace
#: model and importers, the settings, and every command module (issue 18: start-up).
HEAVY_FOR_PLAIN_LINES = (
    "rich.console",
    "whenpro_core.trace.model",
    "whenpro_core.formats",
    "pydantic_settings",
    "whenpro_core.cli.traces",
    "whenpro_core.cli.attribute",
    "whenpro_core.cli.bench",
)


@pytest.mark.parametrize("argv", [["--version"], ["info", "x.json", "--no-such-flag"], ["attribute"]])
def test_version_and_usage_errors_load_no_command_module(argv: list[str]) -> None:
    proc = run_python(
        "import sys\nfrom whenpro_core import cli\n"
        f"try:\n    cli.main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print('loaded:' + ','.join(m for m in {HEAVY_FOR_PLAIN_LINES!r} if m in sys.modules))\n"
    )
    assert proc.returncode == 0, proc.stderr
    loaded = [m for m in proc.stdout.split("loaded:")[-1].strip().split(",") if m]
    assert not loaded, f"`whenpro {' '.join(argv)}` imported {loaded}"


def test_a_command_imports_its_own_module_only() -> None:
    proc = run_python(
        "import sys\nfrom whenpro_core import cli\n"
        "try:\n    cli.main(['info', 'sample_traces/team_text/trace.json'])\nexcept SystemExit:\n    pass\n"
        "print('loaded:' + ','.join(sorted(m for m in sys.modules if m.startswith('whenpro_core.cli.'))))\n"
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stdout.split("loaded:")[-1].strip().split(","))
    assert "whenpro_core.cli.traces" in loaded
    assert not loaded & {"whenpro_core.cli.attribute", "whenpro_core.cli.bench", "whenpro_core.cli.view"}
