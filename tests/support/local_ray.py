"""A local Ray for the tests that run whenpro on Ray (``bench --ray``, ``build --ray``):
``ray.init(num_cpus=2)``, once per test module since Ray starts slowly on a small machine,
with workers that reach the local LLM test server with a test key and keep whenpro's
folders apart from the user's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.fixtures import TEST_KEY
from tests.support.llm_server import LLMServer

REPO = Path(__file__).resolve().parents[2]


@contextmanager
def local_ray(server: LLMServer, home: Path) -> Iterator[Any]:
    """The ``ray`` module with a local cluster started (shut down on exit); its workers'
    whenpro config, cache and data folders are under ``home``."""
    import ray

    env = {
        "OPENAI_API_KEY": TEST_KEY,
        "OPENAI_BASE_URL": server.openai_base_url,
        "WHENPRO_CONFIG_DIR": str(home / "config"),
        "WHENPRO_CACHE_DIR": str(home / "cache"),
        "WHENPRO_DATA_DIR": str(home / "data"),
        "WHENPRO_BACKOFF_BASE_S": "0.01",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    try:
        yield ray
    finally:
        ray.shutdown()
