"""Whether there is any settings input to check, read without pydantic-settings: a
``config.toml`` in the config folder, or a settings variable (``WHENPRO_<FIELD>`` or a
provider's standard name, any case, as :class:`whenpro_core.config.Settings` reads them).

Offline paths (the heuristic) only warn about broken settings; with no input there is
nothing that could be broken, so they skip :mod:`whenpro_core.config` and its import
(pydantic-settings, asyncio: a third of the heuristic's start-up, issue 18).
``tests/test_llm_config.py`` checks :data:`FIELDS` against the settings' fields.
"""

from __future__ import annotations

import os

from whenpro_core.storage import paths

#: The fields of :class:`whenpro_core.config.Settings` (their ``WHENPRO_`` variables).
FIELDS = frozenset(
    {
        "model",
        "api",
        "base_url",
        "temperature",
        "max_tokens",
        "reasoning_effort",
        "timeout_s",
        "max_retries",
        "backoff_base_s",
        "backoff_max_s",
        "retry_after_max_s",
        "concurrency",
        "images",
        "vision_models",
        "cache",
        "context_window",
        "openai_api_key",
        "openai_base_url",
        "anthropic_api_key",
        "anthropic_base_url",
        "compatible_api_key",
        "compatible_base_url",
        "claude_sessions",
        "codex_sessions",
        "gemini_sessions",
        "verdicts_dir",
        "prices",
    }
)
#: The providers' own variable names the settings also read.
STANDARD = frozenset({"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"})
_PREFIX = "WHENPRO_"


def settings_given() -> bool:
    """True when ``config.toml`` exists or a settings variable is set (even empty: the
    careful check decides what it means); then :func:`whenpro_core.config.settings_problem`
    has something to check."""
    for name in os.environ:
        up = name.upper()
        if up in STANDARD or (up.startswith(_PREFIX) and up[len(_PREFIX) :].lower() in FIELDS):
            return True
    try:
        return paths.config_file().is_file()
    except (OSError, ValueError):
        return True  # the careful check words whatever is wrong
