"""Pytest fixtures for the LLM layer (registered by ``tests/conftest.py``).

- ``whenpro_env`` (autouse): every test gets its own ``WHENPRO_CONFIG_DIR`` and
  ``WHENPRO_CACHE_DIR`` under ``tmp_path``, and no provider or ``WHENPRO_*`` variable from
  the developer's shell, so a real key or config can never leak into a test.
- ``llm_server``: a started :class:`tests.support.llm_server.LLMServer`, stopped after the test.
- ``llm_settings``: a factory ``(model, **overrides) -> Settings`` pointing at ``llm_server``
  with fast retries (backoff 10 ms; timeout 10 s, generous for a loaded machine) unless overridden.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.support.llm_server import LLMServer
from tests.support.waiting import TIMEOUT_S

PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
)

TEST_KEY = "sk-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def whenpro_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """Isolate settings: tmp config/cache dirs, no provider or WHENPRO_* env vars."""
    for name in list(os.environ):
        if name.startswith("WHENPRO_") or name in PROVIDER_ENV:
            monkeypatch.delenv(name, raising=False)
    config_dir = tmp_path / "whenpro-config"
    cache_dir = tmp_path / "whenpro-cache"
    monkeypatch.setenv("WHENPRO_CONFIG_DIR", str(config_dir))
    monkeypatch.setenv("WHENPRO_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("WHENPRO_DATA_DIR", str(tmp_path / "whenpro-data"))
    return SimpleNamespace(config_dir=config_dir, cache_dir=cache_dir, config_file=config_dir / "config.toml")


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    """A running fake LLM server on 127.0.0.1 (chat completions, Responses, messages)."""
    from whenpro_core.llm.capabilities import forget

    with LLMServer() as server:
        yield server
    forget(server.openai_base_url)  # what a run learnt about it; a later server may get its port


@pytest.fixture
def llm_settings(llm_server: LLMServer) -> Callable[..., Any]:
    """``make(model="openai:gpt-4.1", **overrides) -> Settings`` aimed at ``llm_server``."""
    from whenpro_core.config import load_settings

    def make(model: str = "openai:gpt-4.1", **overrides: Any) -> Any:
        values: dict[str, Any] = {
            "model": model,
            "openai_api_key": TEST_KEY,
            "anthropic_api_key": TEST_KEY,
            "openai_base_url": llm_server.openai_base_url,
            "anthropic_base_url": llm_server.anthropic_base_url,
            "compatible_base_url": llm_server.openai_base_url,
            "timeout_s": TIMEOUT_S,  # a hang guard: a loaded machine never trips it
            "max_retries": 3,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
        }
        values.update(overrides)
        return load_settings(**values)

    return make
