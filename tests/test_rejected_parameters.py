"""Issue 29, item 3: a parameter the model rejects (temperature on o3 / gpt-5: HTTP 400
naming it) is dropped and the call sent once more, with a warning naming it, as the
official harness drops unsupported parameters; later calls of the run leave it out. The
real openai SDK talks to the local LLM test server, which answers as OpenAI does."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from whenpro_core.attribution.llm_judge import make_judge
from whenpro_core.attribution.protocols import preset_protocol
from whenpro_core.attribution.run import attribute
from whenpro_core.errors import BackendError
from whenpro_core.formats import load_trace
from whenpro_core.llm import LLMRequest, open_backend

ANSWER = "Agent Name: agent\nStep Number: 2\nError Mode: R.3\nReason: the sum is wrong."


@pytest.mark.parametrize(
    ("model", "code"), [("openai:o3", "unsupported_value"), ("openai-responses:gpt-5", "unsupported_parameter")]
)
def test_the_preset_drops_a_rejected_temperature_and_says_so(
    real_traces: Path, llm_server: Any, llm_settings: Any, model: str, code: str
) -> None:
    llm_server.reject_parameter("temperature", code)
    llm_server.respond_with(lambda body: ANSWER)
    data = real_traces / "who-when-pro-jsonl" / "data" / "text.jsonl"
    judge = make_judge(model, settings=llm_settings(model), use_cache=False)

    async def two_rows() -> list[Any]:
        return [
            await attribute(load_trace(f"{data}#{n}"), preset_protocol("whowhen-pro", None), judge=judge)
            for n in (1, 2)
        ]

    first, second = asyncio.run(two_rows())
    sent = [r.body for r in llm_server.requests]
    assert [r.status for r in llm_server.requests] == [400, 200, 200]
    assert sent[0]["temperature"] == 0 and "temperature" not in sent[1] and "temperature" not in sent[2]
    assert (first.agent, first.step, first.mode) == ("agent", "2", "R.3") and not first.raw_outputs[0].startswith("{")
    assert any("rejected the parameter temperature (HTTP 400): sent again without it" in w for w in first.warnings)
    assert any("temperature not sent" in w and "rejected it earlier" in w for w in second.warnings)
    assert first.usage.calls == 1 and second.usage.calls == 1


def test_a_400_for_another_reason_still_fails_at_once(llm_server: Any, llm_settings: Any) -> None:
    """Only a droppable parameter is dropped: a 400 naming anything else is the error it was."""
    llm_server.reject_parameter("max_completion_tokens")
    llm_server.respond_with(lambda body: "ok")

    async def call() -> None:
        async with open_backend("openai:o3", llm_settings("openai:o3"), cache=None) as llm:
            await llm.complete(LLMRequest.simple("hello", temperature=0))

    with pytest.raises(BackendError, match="max_completion_tokens"):
        asyncio.run(call())
    assert len(llm_server.requests) == 1
