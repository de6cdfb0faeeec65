"""Where a model is served and with which key: base URL and API key per provider
(docs/architecture.md, 'Configuration'), resolved from :class:`~whenpro_core.config.Settings` without touching the
network.

Rules:
- ``openai:`` / ``openai-responses:``: ``base_url`` > ``OPENAI_BASE_URL`` > api.openai.com;
  key ``OPENAI_API_KEY`` (required).
- ``anthropic:``: ``base_url`` > ``ANTHROPIC_BASE_URL`` > api.anthropic.com; key
  ``ANTHROPIC_API_KEY`` (required).
- ``openai-compatible:``: ``base_url`` > ``compatible_base_url`` > ``OPENAI_BASE_URL``
  (required); key ``compatible_api_key`` or the placeholder ``EMPTY``. ``OPENAI_API_KEY``
  is deliberately *not* used, so a real OpenAI key is never sent to a third-party server.
- ``local:``: ``base_url`` when given (a llama.cpp server already serving the model), else
  the server whenpro starts for the run (:mod:`whenpro_core.llm.local_server`); no key.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import SecretStr

from whenpro_core.config import Settings
from whenpro_core.errors import ConfigError
from whenpro_core.llm.anthropic_backend import ANTHROPIC_DEFAULT_BASE_URL
from whenpro_core.llm.models import ModelSpec
from whenpro_core.llm.openai_backend import OPENAI_DEFAULT_BASE_URL
from whenpro_core.safety.redact import public_url

PLACEHOLDER_KEY = "EMPTY"

KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openai-compatible": "WHENPRO_COMPATIBLE_API_KEY",
    "local": "WHENPRO_COMPATIBLE_API_KEY",
}


@dataclass(frozen=True)
class Endpoint:
    """A resolved endpoint. ``api_key`` is ``None`` when none is configured;
    ``base_url_source`` says where the URL came from (for ``whenpro models``)."""

    base_url: str | None
    base_url_source: str
    api_key: SecretStr | None
    key_required: bool


def _check_url(url: str, origin: str) -> str:
    if not (url.startswith("http://") or url.startswith("https://")):
        raise ConfigError(
            f"base URL from {origin} is not an http(s) URL: '{public_url(url)}'", expected="http://host:port/path"
        )
    return url.rstrip("/")


def resolve_endpoint(spec: ModelSpec, settings: Settings) -> Endpoint:
    """Base URL and key for ``spec`` (see the module docstring).

    Raises:
        ConfigError: a configured base URL is not http(s).
    """
    if spec.provider in ("openai", "openai-responses"):
        candidates = [(settings.base_url, "base_url"), (settings.openai_base_url, "OPENAI_BASE_URL")]
        default = OPENAI_DEFAULT_BASE_URL
        key, required = settings.openai_api_key, True
    elif spec.provider == "anthropic":
        candidates = [(settings.base_url, "base_url"), (settings.anthropic_base_url, "ANTHROPIC_BASE_URL")]
        default = ANTHROPIC_DEFAULT_BASE_URL
        key, required = settings.anthropic_api_key, True
    elif spec.provider == "local":
        if settings.base_url:
            return Endpoint(_check_url(settings.base_url, "base_url"), "base_url", None, False)
        return Endpoint(None, "started for the run", None, False)
    else:
        candidates = [
            (settings.base_url, "base_url"),
            (settings.compatible_base_url, "compatible_base_url"),
            (settings.openai_base_url, "OPENAI_BASE_URL"),
        ]
        default = None
        key, required = settings.compatible_api_key, False
    for url, origin in candidates:
        if url:
            return Endpoint(_check_url(url, origin), origin, key, required)
    return Endpoint(default, "default" if default else "unset", key, required)


def require_endpoint(spec: ModelSpec, settings: Settings) -> tuple[str, str]:
    """``(base_url, api_key)`` ready for an SDK client.

    Raises:
        ConfigError: no API key for OpenAI/Anthropic, or no base URL for an
            ``openai-compatible:`` model.
    """
    ep = resolve_endpoint(spec, settings)
    if ep.base_url is None:
        raise ConfigError(
            f"{spec.name} needs a base URL",
            expected="--base-url, WHENPRO_COMPATIBLE_BASE_URL or OPENAI_BASE_URL, e.g. http://localhost:8000/v1",
        )
    if ep.api_key is None:
        if ep.key_required:
            env = KEY_ENV[spec.provider]
            raise ConfigError(
                f"no API key for {spec.name}",
                expected=f"{env} (or WHENPRO_{env}, or {env.lower()} in config.toml)",
            )
        return ep.base_url, PLACEHOLDER_KEY
    return ep.base_url, ep.api_key.get_secret_value()
