"""One attribution request and one run for the CLI and the TUI
(:mod:`whenpro_core.attribution.request`): the request ``whenpro attribute``'s options
make, the configured model filling it in, the offline heuristic's verdict, and the same
protocol on the same trace giving the same verdict through ``whenpro attribute`` (a child
process, the real openai SDK against the local server) and through the TUI's dialog
choice run with :func:`run_request`."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES
from tests.support.cli import run_whenpro
from tests.support.fixtures import TEST_KEY
from tests.support.judge_oracle import oracle_for
from whenpro_core.attribution.heuristic import attribute_heuristic
from whenpro_core.attribution.protocols import PRESET_PROTOCOLS
from whenpro_core.attribution.request import (
    AttributionRequest,
    make_request,
    offline_verdict,
    request_from_options,
    run_request,
    with_configured_model,
)
from whenpro_core.config import load_settings
from whenpro_core.errors import ConfigError
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Outcome


@pytest.fixture
def sample_file(tmp_path: Path) -> Path:
    copy = tmp_path / "trace.json"
    shutil.copy(SAMPLES / "team_text" / "trace.json", copy)
    return copy


def _options(**given: object) -> AttributionRequest:
    options: dict[str, object] = {"protocol": None, "model": None, "preset": None, "with_gold": True, **given}
    return request_from_options(**options)  # type: ignore[arg-type]


def test_the_options_make_one_request():
    assert _options() == AttributionRequest("heuristic", None, True)
    assert _options(model="openai:gpt-4.1") == AttributionRequest("all-at-once", "openai:gpt-4.1", True)
    assert _options(model=" Heuristic ") == AttributionRequest("heuristic", None, True)  # heuristic is no model
    assert _options(protocol="binary_search", with_gold=False).protocol == "binary-search"
    assert _options(preset="whowhen-pro").protocol == PRESET_PROTOCOLS["whowhen-pro"]
    assert _options(protocol="step-by-step", use_cache=False) == AttributionRequest(
        "step-by-step", None, True, use_cache=False
    )
    with pytest.raises(ConfigError, match="--protocol heuristic and --model do not go together"):
        _options(protocol="heuristic", model="openai:gpt-4.1")
    with pytest.raises(ConfigError):
        _options(protocol="no-such-protocol")


def test_an_llm_protocol_takes_the_configured_model():
    request = _options(protocol="hybrid", with_gold=False)
    filled = with_configured_model(request, load_settings(model="anthropic:claude-haiku-4-5"))
    assert filled == AttributionRequest("hybrid", "anthropic:claude-haiku-4-5", False)
    assert with_configured_model(
        _options(model="openai:gpt-4o"), load_settings(model="anthropic:claude-haiku-4-5")
    ).model == ("openai:gpt-4o")
    with pytest.raises(ConfigError, match="protocol hybrid needs a model") as info:
        with_configured_model(request, load_settings())  # the default model is heuristic
    assert "WHENPRO_MODEL" in str(info.value.expected)


def test_the_offline_verdict_is_the_heuristics(sample_file: Path):
    trace = load_trace(sample_file)
    request = _options(with_gold=False)
    verdict = offline_verdict(trace, request)
    expected = attribute_heuristic(trace, with_gold=False)
    assert (verdict.agent, verdict.step, verdict.mode, verdict.with_gold) == (
        expected.agent,
        expected.step,
        expected.mode,
        False,
    )
    trace.outcome = Outcome.success
    nothing = offline_verdict(trace, request)
    assert nothing.step is None and "the run succeeded" in nothing.warnings[0]


def test_the_cli_and_the_tui_request_give_the_same_verdict(llm_server, llm_settings, sample_file: Path):
    trace = load_trace(sample_file)
    llm_server.respond_with(oracle_for(trace))
    env = {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": llm_server.openai_base_url}
    out = run_whenpro(
        "attribute",
        str(sample_file),
        "-p",
        "step-by-step",
        "-m",
        "openai:gpt-4.1",
        "--json",
        "--no-save",
        "--no-cache",
        env=env,
    )
    assert out.returncode == 0, out.stderr
    cli = json.loads(out.stdout)["attribution"]
    cli_calls = len(llm_server.answered)
    settings = llm_settings(cache=False)  # the model answers again, not the CLI's cached answers
    tui_request = make_request(trace, "step-by-step", "openai:gpt-4.1", True, settings)
    tui = asyncio.run(run_request(trace, tui_request, settings=settings))
    assert (cli["agent"], cli["step"], cli["mode"]) == (tui.agent, tui.step, tui.mode) == ("solver", "3", "R.3")
    assert cli["usage"]["calls"] == tui.usage.calls == cli_calls == len(llm_server.answered) - cli_calls
    assert (cli["protocol"], cli["model"]) == (tui.protocol, tui.model) == ("step-by-step", "openai:gpt-4.1")
