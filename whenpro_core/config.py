"""User settings (docs/architecture.md, 'Configuration'): pydantic-settings with the precedence

    flags (keyword arguments)  >  environment  >  config.toml  >  built-in defaults

Environment variables are ``WHENPRO_<FIELD>`` (``WHENPRO_MODEL``, ``WHENPRO_TEMPERATURE``,
``WHENPRO_PRICES='{"m": {"input": 1, "output": 2}}'`` ...) plus the providers' standard
names ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``
(the ``WHENPRO_`` spelling of those wins when both are set). The file is
``<config dir>/config.toml`` (see :mod:`whenpro_core.storage.paths`), with the same keys as the
fields below, e.g.::

    model = "anthropic:claude-sonnet-4-6"
    temperature = 0
    concurrency = 8
    vision_models = ["qwen2.5-vl-7b"]   # openai-compatible models that read images

    [prices."my-model"]          # USD per 1M tokens
    input = 0.5
    output = 1.5

API keys are :class:`pydantic.SecretStr`: they print as ``**********`` and never appear in
errors raised here. Modelled on darrenburns/posting ``src/posting/config.py``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from whenpro_core.errors import ConfigError
from whenpro_core.llm.models import parse_model
from whenpro_core.llm.pricing import DEFAULT_PRICES, Price
from whenpro_core.safety.redact import public_url
from whenpro_core.storage import paths

ENV_PREFIX = "WHENPRO_"

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]


def _env(name: str, standard: str | None = None) -> AliasChoices:
    names = [ENV_PREFIX + name.upper()]
    if standard:
        names.append(standard)
    return AliasChoices(*names)


class Settings(BaseSettings):
    """All whenpro settings. Build one with :func:`load_settings` (which turns invalid
    input into :class:`ConfigError`); ``Settings()`` works too and raises pydantic's
    ``ValidationError``."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="forbid",
        case_sensitive=False,
        env_ignore_empty=True,
        validate_by_name=True,
        validate_by_alias=True,
        validate_default=True,
    )

    model: str = Field("heuristic", description="Default model, `provider:model` or `heuristic`.")
    api: Literal["chat", "responses"] = Field(
        "chat", description="OpenAI API for `openai:`/`openai-compatible:` models: chat completions or Responses."
    )
    base_url: str | None = Field(
        None, description="Base URL for the selected model's provider (overrides the provider's own)."
    )
    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature; unset = provider default.")
    max_tokens: int = Field(4096, gt=0, description="Maximum output tokens per call.")
    reasoning_effort: ReasoningEffort | None = Field(None, description="Reasoning effort for models that support it.")
    timeout_s: float = Field(120.0, gt=0, description="Seconds before one HTTP call is abandoned (then retried).")
    max_retries: int = Field(4, ge=0, le=20, description="Retries after the first attempt on 429/5xx/timeouts.")
    backoff_base_s: float = Field(1.0, ge=0, description="First exponential backoff wait, seconds.")
    backoff_max_s: float = Field(30.0, ge=0, description="Longest exponential backoff wait, seconds.")
    retry_after_max_s: float = Field(60.0, ge=0, description="Cap on a server's Retry-After, seconds.")
    concurrency: int = Field(4, ge=1, le=256, description="Calls in flight at once per backend.")
    images: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Send images to the judge: auto = OpenAI and Anthropic models, and "
        "openai-compatible models listed in vision_models; on/off = always/never.",
    )
    vision_models: list[str] = Field(
        default_factory=list,
        description="openai-compatible models that read images (`model` or "
        '`openai-compatible:model`), e.g. ["qwen2.5-vl-7b"].',
    )
    cache: bool = Field(True, description="Use the persistent response cache.")
    context_window: int | None = Field(
        None,
        gt=0,
        description="Tokens of the model's context window when its server does not report it "
        "(`whenpro models --probe` shows what it reports); also the window of a `local:` model's server.",
    )

    openai_api_key: SecretStr | None = Field(None, validation_alias=_env("openai_api_key", "OPENAI_API_KEY"))
    openai_base_url: str | None = Field(None, validation_alias=_env("openai_base_url", "OPENAI_BASE_URL"))
    anthropic_api_key: SecretStr | None = Field(None, validation_alias=_env("anthropic_api_key", "ANTHROPIC_API_KEY"))
    anthropic_base_url: str | None = Field(None, validation_alias=_env("anthropic_base_url", "ANTHROPIC_BASE_URL"))
    compatible_api_key: SecretStr | None = Field(
        None, description="Key for `openai-compatible:` servers (never OPENAI_API_KEY, so it is not sent to them)."
    )
    compatible_base_url: str | None = Field(None, description="Base URL for `openai-compatible:` servers.")

    # whenpro sessions: where each coding agent keeps its sessions (unset: the tool's own default)
    claude_sessions: str | None = Field(None, description="Claude Code sessions folder (default ~/.claude/projects).")
    codex_sessions: str | None = Field(None, description="Codex CLI sessions folder (default ~/.codex/sessions).")
    gemini_sessions: str | None = Field(None, description="Gemini CLI sessions folder (default ~/.gemini/tmp).")
    verdicts_dir: str | None = Field(
        None, description="Folder of saved verdicts (default: `verdicts` in whenpro's user data folder)."
    )

    prices: dict[str, Price] = Field(
        default_factory=dict, description="Extra or overriding prices, USD per 1M tokens, keyed by model."
    )

    @field_validator("model")
    @classmethod
    def _model_name(cls, v: str) -> str:
        try:
            parse_model(v)
        except ConfigError as exc:
            raise ValueError(f"{exc.what}; expected {exc.expected}") from None
        return v.strip()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        conf = paths.config_file()
        if conf.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=conf))
        return tuple(sources)

    def price_table(self) -> dict[str, Price]:
        """The built-in prices updated with the user's ``prices``."""
        return {**DEFAULT_PRICES, **self.prices}

    def public_dict(self) -> dict[str, Any]:
        """The settings as plain data, safe to print or store: keys become ``"set"``/``None``,
        base URLs lose any ``user:password@``, query and fragment."""
        data = self.model_dump(exclude={"prices"})
        for name in ("openai_api_key", "anthropic_api_key", "compatible_api_key"):
            data[name] = "set" if getattr(self, name) is not None else None
        for name in ("base_url", "openai_base_url", "anthropic_base_url", "compatible_base_url"):
            data[name] = public_url(data[name])
        return data


_ALIASES = {
    "openai_api_key": "OPENAI_API_KEY",
    "openai_base_url": "OPENAI_BASE_URL",
    "anthropic_api_key": "ANTHROPIC_API_KEY",
    "anthropic_base_url": "ANTHROPIC_BASE_URL",
}


def _read_toml() -> dict[str, Any]:
    conf = paths.config_file()
    if not conf.is_file():
        return {}
    try:
        with conf.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=conf, expected="a TOML settings file") from None
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text", path=conf, expected="a TOML settings file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", path=conf) from None


def _where(key: str, flags: dict[str, Any], toml_data: dict[str, Any]) -> tuple[str | None, str | None]:
    """(file path, prefix text) naming where a bad value came from."""
    if key in flags:
        return None, f"option {key}"
    env_names = [ENV_PREFIX + key.upper()] + ([_ALIASES[key]] if key in _ALIASES else [])
    for name in env_names:
        if os.environ.get(name):
            return None, f"environment variable {name}"
    if key in toml_data:
        return str(paths.config_file()), None
    return None, f"setting {key}"


def settings_problem() -> str | None:
    """The one-line :class:`ConfigError` :func:`load_settings` would raise (a broken
    ``config.toml``, a bad ``WHENPRO_*`` variable), or ``None``. For offline paths (the
    heuristic) that need no settings, so they warn instead of hiding the problem."""
    try:
        load_settings()
    except ConfigError as exc:
        return exc.one_line()
    return None


def warn_offline(echo: Callable[[str], None]) -> None:
    """Call ``echo`` with one ``whenpro: warning: ...`` line when the settings are broken
    (see :func:`settings_problem`); an offline run goes on without them."""
    problem = settings_problem()
    if problem:
        echo(f"whenpro: warning: {problem}; the offline heuristic runs without settings")


def load_settings(**flags: Any) -> Settings:
    """Build the settings: ``flags`` (e.g. from CLI options; ``None`` values are ignored)
    override the environment, which overrides ``config.toml``.

    Raises:
        ConfigError: the config file is not valid TOML, or a value (from a flag, an
            environment variable or the file) is unknown or invalid. The message names the
            file and key (``.../config.toml at $.prices.m.input: ...``) or the variable,
            and never contains the value itself.
    """
    flags = {k: v for k, v in flags.items() if v is not None}
    toml_data = _read_toml()
    try:
        return Settings(**flags)
    except tomllib.TOMLDecodeError as exc:  # pragma: no cover - _read_toml saw it first
        raise ConfigError(f"not valid TOML: {exc}", path=paths.config_file()) from None
    except ValidationError as exc:
        err = exc.errors(include_input=False, include_url=False)[0]
        loc = [str(p) for p in err.get("loc", ())]
        key = loc[0] if loc else "?"
        path, prefix = _where(key, flags, toml_data)
        msg = err.get("msg", "invalid value")
        if err.get("type") == "extra_forbidden":
            msg = f"unknown setting '{key}'"
            expected = "one of: " + ", ".join(Settings.model_fields)
        else:
            msg = f"invalid value for '{'.'.join(loc)}': {msg}"
            expected = None
        if prefix:
            msg = f"{prefix}: {msg}"
        json_path = "$." + ".".join(loc) if path else None
        raise ConfigError(msg, path=path, json_path=json_path, expected=expected) from None
