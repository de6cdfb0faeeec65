"""Settings precedence, config.toml errors, model names, endpoints, prices and `whenpro models`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from whenpro_core.cli import app
from whenpro_core.config import load_settings
from whenpro_core.errors import ConfigError
from whenpro_core.llm import DEFAULT_PRICES, cost_usd, find_price, is_llm, open_backend, parse_model
from whenpro_core.llm.endpoints import require_endpoint


def write_config(env, text: str) -> None:
    env.config_dir.mkdir(parents=True, exist_ok=True)
    env.config_file.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------- precedence


def test_flag_beats_env_beats_config_file(whenpro_env, monkeypatch):
    write_config(
        whenpro_env, 'model = "anthropic:claude-sonnet-4-6"\ntemperature = 0.1\nmax_tokens = 100\nconcurrency = 7\n'
    )
    monkeypatch.setenv("WHENPRO_TEMPERATURE", "0.2")
    monkeypatch.setenv("WHENPRO_MAX_TOKENS", "200")

    s = load_settings(temperature=0.3)
    assert s.temperature == 0.3  # flag
    assert s.max_tokens == 200  # env over file
    assert s.concurrency == 7  # file over default
    assert s.model == "anthropic:claude-sonnet-4-6"

    assert load_settings().temperature == 0.2
    monkeypatch.delenv("WHENPRO_TEMPERATURE")
    assert load_settings().temperature == 0.1
    # a flag left unset (None, as typer passes it) does not hide lower layers
    assert load_settings(temperature=None).temperature == 0.1


def test_standard_provider_env_names(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-standard-aaaaaaaa")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:9/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-bbbbbbbbbb")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://localhost:8")
    s = load_settings()
    assert s.openai_api_key.get_secret_value() == "sk-standard-aaaaaaaa"
    assert s.openai_base_url == "http://localhost:9/v1"
    assert s.anthropic_api_key.get_secret_value() == "sk-ant-bbbbbbbbbb"
    assert s.anthropic_base_url == "http://localhost:8"
    # the WHENPRO_ spelling wins over the standard one
    monkeypatch.setenv("WHENPRO_OPENAI_API_KEY", "sk-whenpro-cccccccc")
    assert load_settings().openai_api_key.get_secret_value() == "sk-whenpro-cccccccc"
    # keys are SecretStr: they never print
    assert "sk-whenpro" not in repr(load_settings()) and "sk-whenpro" not in str(load_settings().public_dict())


def test_user_price_table_extends_and_overrides_defaults(whenpro_env):
    write_config(
        whenpro_env,
        '[prices."my-local-model"]\ninput = 0.5\noutput = 1.5\n\n[prices."gpt-4.1"]\ninput = 9\noutput = 9\n',
    )
    table = load_settings().price_table()
    assert table["my-local-model"].input == 0.5
    assert table["gpt-4.1"].input == 9  # overridden
    assert table["claude-haiku-4-5"] == DEFAULT_PRICES["claude-haiku-4-5"]  # built-in kept


# ---------------------------------------------------------------- bad config


def test_invalid_toml_names_the_file(whenpro_env):
    write_config(whenpro_env, "model = \n")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert str(whenpro_env.config_file) in str(info.value)
    assert "not valid TOML" in str(info.value)


def test_unknown_key_names_file_and_key(whenpro_env):
    write_config(whenpro_env, "temprature = 0.5\n")
    with pytest.raises(ConfigError) as info:
        load_settings()
    msg = str(info.value)
    assert str(whenpro_env.config_file) in msg and "temprature" in msg and "temperature" in msg


def test_bad_nested_value_names_json_path(whenpro_env):
    write_config(whenpro_env, '[prices."m"]\ninput = "cheap"\noutput = 1\n')
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert info.value.path == str(whenpro_env.config_file)
    assert info.value.json_path == "$.prices.m.input"
    assert "cheap" not in str(info.value)  # the value itself is not echoed


def test_bad_env_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("WHENPRO_CONCURRENCY", "0")
    with pytest.raises(ConfigError, match="WHENPRO_CONCURRENCY"):
        load_settings()


# ---------------------------------------------------------------- model names


@pytest.mark.parametrize(
    "name, provider, model, api",
    [
        ("openai:gpt-4.1", "openai", "gpt-4.1", "chat"),
        ("openai-responses:gpt-4.1", "openai-responses", "gpt-4.1", "responses"),
        ("anthropic:claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6", "messages"),
        ("openai-compatible:qwen3:8b", "openai-compatible", "qwen3:8b", "chat"),
        ("  OpenAI:gpt-4o-mini ", "openai", "gpt-4o-mini", "chat"),
    ],
)
def test_parse_model(name, provider, model, api):
    spec = parse_model(name)
    assert (spec.provider, spec.model, spec.api) == (provider, model, api)
    assert is_llm(name)


def test_responses_api_by_option():
    assert parse_model("openai:gpt-4.1", api="responses").api == "responses"
    assert parse_model("anthropic:claude-haiku-4-5", api="responses").api == "messages"


def test_heuristic_is_not_an_llm():
    assert parse_model("heuristic") is None
    assert not is_llm("Heuristic")
    with pytest.raises(ConfigError, match="not an LLM backend"):
        open_backend("heuristic", load_settings())


@pytest.mark.parametrize("bad", ["gpt-4.1", "google:gemini", "openai:", "openai: gpt 4", "", "anthropic:\x1b[31m"])
def test_bad_model_names_list_accepted_forms(bad):
    with pytest.raises(ConfigError) as info:
        parse_model(bad)
    msg = str(info.value)
    assert "openai-compatible:<model>" in msg and "heuristic" in msg
    assert "\x1b" not in msg


# ---------------------------------------------------------------- endpoints


def test_missing_key_is_a_config_error():
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        open_backend("openai:gpt-4.1", load_settings())
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        open_backend("anthropic:claude-sonnet-4-6", load_settings())


def test_compatible_needs_base_url_and_never_takes_the_openai_key():
    with pytest.raises(ConfigError, match="base URL"):
        open_backend("openai-compatible:qwen3", load_settings())
    s = load_settings(openai_api_key="sk-real-openai-key-1234", compatible_base_url="http://localhost:11434/v1")
    base, key = require_endpoint(parse_model("openai-compatible:qwen3"), s)
    assert base == "http://localhost:11434/v1" and key == "EMPTY"
    with pytest.raises(ConfigError, match="http"):
        require_endpoint(parse_model("openai-compatible:qwen3"), load_settings(base_url="localhost:8000"))


# ---------------------------------------------------------------- prices


def test_price_lookup_and_cost():
    prices = {**DEFAULT_PRICES}
    assert find_price(prices, "openai", "gpt-4.1-2025-04-14") == DEFAULT_PRICES["gpt-4.1"]
    assert find_price(prices, "anthropic", "claude-sonnet-4-5-20250929") == DEFAULT_PRICES["claude-sonnet-4-5"]
    assert find_price(prices, "openai-compatible", "qwen3") is None
    p = DEFAULT_PRICES["claude-sonnet-4-5"]  # 3 in, 15 out, 0.3 cache read, 3.75 cache write
    usd = cost_usd(p, input_tokens=1_000_000, output_tokens=100_000, cached_tokens=500_000, cache_write_tokens=100_000)
    assert usd == pytest.approx(0.4 * 3 + 0.5 * 0.3 + 0.1 * 3.75 + 0.1 * 15)
    assert cost_usd(None, input_tokens=10, output_tokens=10) == 0.0


# ---------------------------------------------------------------- CLI


def test_models_command_shows_config_without_keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cli-secret-0123456789")
    monkeypatch.setenv("WHENPRO_MODEL", "openai:gpt-4.1")
    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 0, result.output
    assert "sk-cli-secret" not in result.output
    assert "openai:gpt-4.1" in result.output and "chat completions" in result.output
    rows = {line.split()[0]: line for line in result.output.splitlines() if line.strip()}
    assert rows["openai"].endswith("set") and rows["anthropic"].endswith("not set")
    assert "gpt-4.1-mini" in result.output  # the price table

    data = json.loads(CliRunner().invoke(app, ["models", "--json"]).output)
    assert data["providers"][0]["key"] == "set"
    assert "sk-cli-secret" not in json.dumps(data)


def test_models_command_bad_config_is_one_line_exit_2(whenpro_env):
    write_config(whenpro_env, "concurrency = 'lots'\n")
    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "concurrency" in result.output
    whenpro_env.config_file.unlink()
    result = CliRunner().invoke(app, ["models", "-m", "gemini"])
    assert result.exit_code == 2 and "has no provider" in result.output


def test_importing_llm_layer_does_not_import_sdks():
    code = (
        "import sys, whenpro_core.config, whenpro_core.llm, whenpro_core.llm.backend, whenpro_core.llm.describe;"
        "print([m for m in ('openai', 'anthropic', 'tenacity', 'diskcache') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_bad_model_in_config_file_names_file_and_key(whenpro_env):
    write_config(whenpro_env, 'model = "gpt-4.1"\n')
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert info.value.path == str(whenpro_env.config_file) and info.value.json_path == "$.model"
    assert "has no provider" in str(info.value) and "openai:<model>" in str(info.value)


# ---------------------------------------------------------------- offline check without pydantic-settings


def test_settings_inputs_names_every_setting_and_standard_variable():
    from whenpro_core.config import Settings
    from whenpro_core.settings_inputs import FIELDS, STANDARD

    assert set(Settings.model_fields) == FIELDS
    aliases = {
        choice.upper()
        for field in Settings.model_fields.values()
        if field.validation_alias is not None
        for choice in field.validation_alias.choices  # type: ignore[union-attr]
    }
    assert {a for a in aliases if not a.startswith("WHENPRO_")} == STANDARD


#: ``whenpro attribute SAMPLE --protocol heuristic`` in-process, then whether config was imported.
_PROBE = """
import sys
sys.argv = ["whenpro", "attribute", sys.argv[1], "--protocol", "heuristic", "--no-save"]
from whenpro_core.cli import main
try:
    main()
except SystemExit:
    pass
print("config imported:", "whenpro_core.config" in sys.modules, file=sys.stderr)
"""


@pytest.mark.parametrize(
    "env, config, checked, warned",
    [
        ({}, None, False, False),
        ({"WHENPRO_FOO": "1"}, None, False, False),  # not a setting (pydantic-settings ignores it too)
        ({"whenpro_model": "bad"}, None, True, True),  # any case, as pydantic-settings reads it
        ({"WHENPRO_CONCURRENCY": "0"}, None, True, True),
        ({"openai_base_url": "http://x"}, None, True, False),
        ({}, "model = \n", True, True),
        ({}, 'model = "openai:gpt-4.1"\n', True, False),  # a good file: checked, nothing to say
    ],
)
def test_offline_heuristic_checks_the_settings_only_when_there_are_some(whenpro_env, env, config, checked, warned):
    """The heuristic skips the settings check (and pydantic-settings' import) when there is
    no config.toml and no settings variable, and warns as before when one is bad."""
    import os
    import subprocess
    import sys

    from tests.support.cli import REPO
    from whenpro_core.settings_inputs import settings_given

    if config is not None:
        write_config(whenpro_env, config)
    sample = str(REPO / "sample_traces" / "team_text" / "trace.json")
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, sample],
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "mode" in proc.stdout, proc.stderr
    assert ("offline heuristic runs without settings" in proc.stderr) is warned, proc.stderr
    assert f"config imported: {checked}" in proc.stderr
    assert settings_given() is (config is not None)  # this process has no settings variable
