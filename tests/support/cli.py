"""Running the ``whenpro`` command line in a child process, as a user's shell would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

#: The checkout under test: its packages win over an installed whenpro from any cwd.
REPO = Path(__file__).resolve().parents[2]


def run_whenpro(
    *args: str,
    cwd: Path | str = REPO,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
    columns: int | None = None,
    **kw: Any,
) -> subprocess.CompletedProcess[str]:
    """``python -m whenpro_core.cli ARGS`` with text output captured, never raising for its
    exit status. ``env`` adds to the inherited environment; ``columns`` sets ``COLUMNS``
    (Rich wraps at 80 columns without a terminal); ``timeout`` (seconds) only bounds a hang."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **({"COLUMNS": str(columns)} if columns else {}), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **kw,
    )


def one_line_error(out: subprocess.CompletedProcess[str]) -> bool:
    """Whether a finished command failed as bad input should: exit status 2 and one
    ``whenpro: error: ...`` line on stderr, no traceback."""
    return (
        out.returncode == 2
        and out.stderr.startswith("whenpro: error: ")
        and out.stderr.count("\n") == 1
        and "Traceback" not in out.stderr
    )
