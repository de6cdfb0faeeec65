"""Built-in runnable multi-agent systems (docs/architecture.md, 'Module map' ``envs/``): a registry by name.

``get_env("arith_team")`` returns an :class:`~whenpro_core.envs.base.Env`; modules are
imported on first use. :func:`env_for_trace` finds the env that produced a trace (from
``extras["env"]["name"]``), for warm-start replay and verification.
"""

from __future__ import annotations

import importlib

from whenpro_core.envs.base import Env
from whenpro_core.errors import ConfigError
from whenpro_core.trace.model import Trace

#: Registry: env name -> ``module:Class``.
ENVS: dict[str, str] = {
    "arith_team": "whenpro_core.envs.arith_team:ArithTeam",
    "code_pair": "whenpro_core.envs.code_pair:CodePair",
}


def env_names() -> list[str]:
    """Names of the built-in environments."""
    return sorted(ENVS)


def get_env(name: str) -> Env:
    """The environment called ``name``. Raises ConfigError listing the valid names."""
    spec = ENVS.get(name)
    if spec is None:
        raise ConfigError(f"unknown environment {name!r}", expected=" or ".join(env_names()))
    module, _, cls = spec.partition(":")
    env: Env = getattr(importlib.import_module(module), cls)()
    return env


def env_for_trace(trace: Trace) -> Env | None:
    """The built-in env that produced ``trace`` (``Trace.env_run``'s ``name``), or ``None``."""
    run = trace.env_run
    return get_env(run.name) if run is not None and run.name in ENVS else None
