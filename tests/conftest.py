"""Shared test fixtures.

Real traces written by others live in ``../shared/real_traces`` relative to the repo
root (``Path(__file__).resolve().parents[1].parent / "shared" / "real_traces"``); set
``WHENPRO_REAL_TRACES`` to read them from elsewhere (e.g. from a git worktree). Tests
that need them take the ``real_traces`` fixture, which skips with a clear reason when
the folder is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REAL_TRACES = Path(os.environ.get("WHENPRO_REAL_TRACES")
                   or Path(__file__).resolve().parents[1].parent / "shared" / "real_traces")
#: Short alias used by some test modules.
REAL = REAL_TRACES


@pytest.fixture
def real_traces() -> Path:
    """The real-traces folder; skips the test when it is absent."""
    if not REAL_TRACES.is_dir():
        pytest.skip(f"{REAL_TRACES} not present (../shared/real_traces; set WHENPRO_REAL_TRACES)")
    return REAL_TRACES
