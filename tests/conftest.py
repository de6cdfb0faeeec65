"""Shared test fixtures.

Real traces written by others live in ``../shared/real_traces`` next to the repository
(override with ``WHENPRO_REAL_TRACES``). Tests read them in place and skip with a clear
reason when the folder is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
#: Folder of real traces (each subfolder has a SOURCE.md).
REAL_TRACES = Path(os.environ.get("WHENPRO_REAL_TRACES") or REPO_ROOT.parent / "shared" / "real_traces")
REAL = REAL_TRACES


@pytest.fixture
def real_traces() -> Path:
    """The real-traces folder; skips the test when it is absent."""
    if not REAL_TRACES.is_dir():
        pytest.skip(f"{REAL_TRACES} not present (set WHENPRO_REAL_TRACES to the real_traces folder)")
    return REAL_TRACES
