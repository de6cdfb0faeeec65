"""Shared test fixtures.

``REAL_TRACES`` is ``$WHENPRO_REAL_TRACES`` or ``<repo>/../shared/real_traces``: real
traces written by others, present in CI and absent in a user's clone. Tests that read it
use the ``real_traces`` fixture and skip with a clear reason when it is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_TRACES = REAL = Path(os.environ.get("WHENPRO_REAL_TRACES") or REPO.parent / "shared" / "real_traces")
SAMPLES = REPO / "sample_traces"


@pytest.fixture
def real_traces() -> Path:
    """The real-traces folder, or skip: it is only present in CI and the dev sandbox."""
    if not REAL_TRACES.is_dir():
        pytest.skip(f"real traces not present at {REAL_TRACES} (set WHENPRO_REAL_TRACES)")
    return REAL_TRACES


# ``whenpro_env`` (autouse) isolates config/cache/data folders and provider keys;
# ``llm_server`` / ``llm_settings`` run the local LLM test server.
pytest_plugins = ["tests.support.fixtures"]
