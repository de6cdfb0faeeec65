"""Where whenpro keeps its files (docs/architecture.md, 'Module map' and 'Configuration'): the user config folder
and the cache folder.

Both come from :mod:`platformdirs` (``~/.config/whenpro`` and ``~/.cache/whenpro`` on Linux)
unless the environment variables ``WHENPRO_CONFIG_DIR`` / ``WHENPRO_CACHE_DIR`` name other
folders (tests point them at temporary folders). Nothing here creates folders: callers that
write create what they need.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "whenpro"
CONFIG_DIR_ENV = "WHENPRO_CONFIG_DIR"
CACHE_DIR_ENV = "WHENPRO_CACHE_DIR"
CONFIG_FILE_NAME = "config.toml"


def config_dir() -> Path:
    """The user config folder: ``$WHENPRO_CONFIG_DIR`` if set, else platformdirs' user config dir."""
    override = os.environ.get(CONFIG_DIR_ENV)
    if override:
        return Path(override).expanduser()

    return platformdirs.user_config_path(APP_NAME, appauthor=False)


def cache_dir() -> Path:
    """The user cache folder: ``$WHENPRO_CACHE_DIR`` if set, else platformdirs' user cache dir."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override).expanduser()

    return platformdirs.user_cache_path(APP_NAME, appauthor=False)


def config_file() -> Path:
    """The settings file, ``<config_dir>/config.toml`` (it may not exist)."""
    return config_dir() / CONFIG_FILE_NAME


def llm_cache_dir() -> Path:
    """The folder of the persistent LLM response cache, ``<cache_dir>/llm``."""
    return cache_dir() / "llm"


DATA_DIR_ENV = "WHENPRO_DATA_DIR"


def data_dir() -> Path:
    """The user data folder: ``$WHENPRO_DATA_DIR`` if set, else platformdirs' user data
    dir (``~/.local/share/whenpro`` on Linux)."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()

    return platformdirs.user_data_path(APP_NAME, appauthor=False)


def live_dir() -> Path:
    """Where the OTLP receiver stores traces by default, ``<data_dir>/live``."""
    return data_dir() / "live"
