"""A server that reports its context window (llama.cpp's ``/props``) and refuses longer
prompts, as llama.cpp does: whenpro probes it once, and every protocol fits its requests,
so no request is refused (the server counts refusals in ``over_window``)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from tests.conftest import team_trace
from tests.support.cli import run_whenpro
from whenpro_core.attribution.llm_judge import make_judge
from whenpro_core.attribution.run import attribute
from whenpro_core.attribution.window import WindowError
from whenpro_core.formats.native import write_trace
from whenpro_core.llm import open_backend
from whenpro_core.llm.capabilities import server_info
from whenpro_core.trace.model import Trace

WINDOW = 5000  # tokens: the system prompt (the taxonomy, ~2,900) and a few steps fit
MODEL = "openai-compatible:smol"


def long_trace(steps: int = 12, chars: int = 6000) -> Trace:
    """The team trace with ``steps`` filler steps of ``chars`` characters each (far more
    than the window holds)."""
    trace = team_trace(n_extra=steps)
    for step in trace.steps[7:]:
        step.content = f"step {step.index} notes: " + "the quick brown fox jumps over the lazy dog. " * (chars // 45)
    return trace


def _run(trace, protocol, judge):
    async def go():
        try:
            return await attribute(trace, protocol, judge=judge)
        finally:
            await judge.aclose()

    return asyncio.run(go())


@pytest.fixture
def window_server(llm_server):
    llm_server.context_window = WINDOW
    return llm_server


def test_the_window_is_probed_once_per_base_url(window_server, llm_settings):
    backend = open_backend(MODEL, llm_settings(MODEL))
    assert backend.window_reported and backend.context_window == WINDOW
    info = server_info(window_server.openai_base_url)
    assert info.models == ["smol"] and info.context_source == "/props n_ctx" and info.server == "llama.cpp"
    assert backend.answer_tokens() == WINDOW // 4  # 4,096 configured: capped to a quarter of the window


@pytest.mark.parametrize("protocol", ["step-by-step", "binary-search", "hybrid"])
def test_windowed_protocols_fit_every_request(window_server, llm_settings, protocol):
    window_server.respond_with(lambda body: {"decisive": False, "half": "second", "error_mode": "R.3"})
    judge = make_judge(MODEL, settings=llm_settings(MODEL))
    verdict = _run(long_trace(), protocol, judge)
    assert window_server.over_window == 0 and len(window_server.answered) >= 3
    assert any("context window" in w for w in verdict.warnings)
    # the protocol fitted its requests itself, the schema the backend adds included: the
    # backend's last guard cuts at most the estimates' small difference (before: ~400 tokens)
    for w in verdict.warnings:
        if found := re.search(r"about ([\d,]+) tokens > ([\d,]+)", w):
            need, limit = (int(n.replace(",", "")) for n in found.groups())
            assert need <= limit * 1.1, w
    if protocol == "binary-search":
        assert verdict.step == "18"  # always "second": the last step


def test_hybrid_asks_every_step_when_the_agent_pick_does_not_fit(window_server, llm_settings):
    """A trace all-at-once cannot fit: hybrid says so, asks about every step, each call
    showing the steps up to the one it asks about that fit, and names the decisive one."""
    window_server.respond_with(lambda body: {"decisive": "Consider Step 11 (" in json.dumps(body), "error_mode": "R.3"})
    judge = make_judge(MODEL, settings=llm_settings(MODEL))
    verdict = _run(long_trace(steps=40), "hybrid", judge)
    assert window_server.over_window == 0 and verdict.usage.calls == len(window_server.answered)
    assert (verdict.step, verdict.agent) == ("11", "coder"), verdict.warnings
    assert any("does not fit the model's context window for the agent pick" in w for w in verdict.warnings)


def test_all_at_once_says_in_one_line_that_the_trace_does_not_fit(window_server, llm_settings):
    judge = make_judge(MODEL, settings=llm_settings(MODEL))
    with pytest.raises(WindowError) as caught:
        _run(long_trace(steps=40), "all-at-once", judge)
    line = caught.value.one_line()
    assert "does not fit the model's context window" in line and "step-by-step or binary-search" in line
    assert "\n" not in line and window_server.requests == []


def test_all_at_once_cuts_a_trace_that_fits_once_cut(window_server, llm_settings):
    window_server.script({"agent_name": "coder", "step_number": "3", "error_mode": "R.3", "reason": "tax"})
    judge = make_judge(MODEL, settings=llm_settings(MODEL))
    verdict = _run(long_trace(steps=1, chars=20000), "all-at-once", judge)
    assert (verdict.agent, verdict.step) == ("coder", "3") and window_server.over_window == 0
    assert any("cut to fit" in w for w in verdict.warnings), verdict.warnings


def test_a_preset_request_is_cut_by_the_backend(window_server, llm_settings):
    """Requests no protocol fits (here a --template all-at-once... or any caller of the
    backend) are cut by the backend's last guard."""
    from whenpro_core.llm.types import LLMRequest

    window_server.script("ok")
    backend = open_backend(MODEL, llm_settings(MODEL))

    async def go():
        try:
            return await backend.complete(LLMRequest.simple("x" * 100_000))
        finally:
            await backend.aclose()

    reply = asyncio.run(go())
    assert reply.text == "ok" and window_server.over_window == 0
    assert "request cut to fit the model's context window" in reply.warnings[0]


def test_bench_records_the_window_error_and_goes_on(window_server, llm_settings, tmp_path):
    folder = tmp_path / "ds"
    folder.mkdir()
    write_trace(long_trace(steps=40), folder / "long.json")
    long = long_trace(steps=1)
    long.id = "short"
    write_trace(long, folder / "short.json")
    window_server.respond_with(lambda body: {"agent_name": "coder", "step_number": "3", "error_mode": "R.3"})
    out = tmp_path / "results.jsonl"
    result = run_whenpro(
        "bench",
        str(folder),
        "--model",
        MODEL,
        "--base-url",
        window_server.openai_base_url,
        "--out",
        str(out),
        env={"WHENPRO_MAX_RETRIES": "0"},
    )
    assert result.returncode == 0, result.stderr
    records = [line for line in out.read_text().splitlines() if line.strip()]
    assert len(records) == 2
    assert any("does not fit the model's context window" in r for r in records), records
    assert window_server.over_window == 0
    assert "verdicts read: 1 of 1 name an agent or a step (parse rate)" in result.stderr


def test_models_probe_shows_what_the_server_reports(window_server):
    window_server.structured = False
    window_server.structured_status = 500  # as llama-cpp-python
    window_server.script("{}")  # the json_object probe's answer
    result = run_whenpro(
        "models", "--probe", "--model", MODEL, "--base-url", window_server.openai_base_url, columns=200
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"server        {window_server.openai_base_url}") and "(llama.cpp)" in lines[0]
    assert lines[1] == "models        smol"
    assert lines[2] == "context       5,000 tokens (from /props n_ctx)"
    assert lines[3] == "structured    json_object (json_schema refused)"


def test_models_probe_of_a_server_that_reports_nothing(llm_server):
    llm_server.script('{"ok": true}')
    result = run_whenpro("models", "--probe", "--model", MODEL, "--base-url", llm_server.openai_base_url, "--json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["context_window"] is None and found["structured_output"] == "json_schema"


def test_a_window_named_in_an_overflow_error_is_learnt(window_server, llm_settings):
    """A server that enforces its window without reporting it (llama-cpp-python): the first
    overflowing request's HTTP 400 names it; whenpro asks again fitted, and fits every
    later request of the run."""
    window_server.report_window = False
    window_server.respond_with(lambda body: {"decisive": False, "half": "first", "error_mode": "R.3"})
    judge = make_judge(MODEL, settings=llm_settings(MODEL))
    assert judge.context_window is None
    verdict = _run(long_trace(), "binary-search", judge)
    assert window_server.over_window == 1  # the first request only
    assert any("context window is 5,000 tokens" in w for w in verdict.warnings)
    assert verdict.step == "1"


def test_a_step_by_step_conversation_slides_oldest_steps_first():
    from whenpro_core.attribution.prompts import Message
    from whenpro_core.attribution.window import request_tokens, slide

    turns = [Message.text("system", "rules"), Message.text("user", "task and step 1")]
    for n in range(1, 9):
        turns += [Message.text("assistant", f"Decisive: No ({n})"), Message.text("user", f"step {n + 1} " + "x" * 300)]
    limit = request_tokens(turns[:3] + turns[-4:]) + 40  # the note says what left
    sent, dropped = slide(turns, limit)
    assert request_tokens(sent) <= limit and dropped == 6
    assert [m.role for m in sent] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert sent[:3] == turns[:3] and sent[-1] is turns[-1]
    assert "The 6 steps asked about after the first are not shown again" in sent[3].plain()
    assert slide(turns, 10**6) == (turns, 0)
