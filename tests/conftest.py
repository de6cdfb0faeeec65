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


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory, monkeypatch):
    """Keep tests away from the user's config and cache folders and provider keys."""
    base = tmp_path_factory.mktemp("whenpro-home")
    monkeypatch.setenv("WHENPRO_CONFIG_DIR", str(base / "config"))
    monkeypatch.setenv("WHENPRO_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("WHENPRO_DATA_DIR", str(base / "data"))
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
