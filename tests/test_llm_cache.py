"""The persistent response cache and the per-backend concurrency limit."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from whenpro_core.errors import BackendError
from whenpro_core.llm import LLMRequest, Message, ResponseCache, TextPart, open_backend


class Verdict(BaseModel):
    agent: str
    step: int


@pytest.mark.parametrize("model", ["openai:gpt-4.1", "openai-responses:gpt-4.1", "anthropic:claude-sonnet-4-6"])
async def test_repeat_request_makes_no_new_call(model, llm_settings, llm_server):
    llm_server.respond_with(lambda body: {"agent": "Coder", "step": 3})
    settings = llm_settings(model)
    request = LLMRequest.simple("Who failed?", system="judge", output_model=Verdict)
    async with open_backend(model, settings) as backend:
        first = await backend.complete(request)
        second = await backend.complete(request)
        assert len(llm_server.requests) == 1
        assert not first.from_cache and first.cache_hits == 0 and first.usage.calls == 1
        assert second.from_cache and second.cache_hits == 1
        assert second.parsed == first.parsed == Verdict(agent="Coder", step=3)
        assert second.text == first.text and second.structured == "schema"
        assert (second.usage.calls, second.usage.input_tokens, second.usage.cost_usd) == (0, 0, 0.0)
        assert backend.stats.calls == 1 and backend.stats.cache_hits == 1

    # persistent: a new backend (as in a new process) reads the same cache on disk
    async with open_backend(model, llm_settings(model)) as again:
        third = await again.complete(request)
        assert third.from_cache and len(llm_server.requests) == 1


async def test_cache_key_covers_content_and_params_not_the_key(llm_settings, llm_server):
    llm_server.respond_with(lambda body: "answer")
    async with open_backend("openai:gpt-4.1", llm_settings()) as backend:
        base = LLMRequest.simple("Who failed?")
        await backend.complete(base)
        await backend.complete(LLMRequest.simple("Who failed at step 2?"))  # other prompt
        await backend.complete(LLMRequest.simple("Who failed?", temperature=0.5))  # other param
        await backend.complete(LLMRequest.simple("Who failed?", output_model=Verdict))  # other schema
        await backend.complete(LLMRequest.simple("Who failed?", system="be brief"))  # other system
        assert len(llm_server.requests) == 5
        # a cache breakpoint changes the price, not the answer: still a hit
        marked = LLMRequest(
            messages=[Message(role="user", content=[TextPart(text="Who failed?", cache_breakpoint=True)])]
        )
        assert (await backend.complete(marked)).from_cache
    # another API key, same request: a hit (keys are not part of the cache key)
    async with open_backend("openai:gpt-4.1", llm_settings(openai_api_key="sk-other-key-987654321")) as other:
        assert (await other.complete(base)).from_cache
    # another model: a miss
    async with open_backend("openai:gpt-4.1-mini", llm_settings("openai:gpt-4.1-mini")) as mini:
        assert not (await mini.complete(base)).from_cache
    assert len(llm_server.requests) == 6


async def test_cache_bypass(llm_settings, llm_server):
    llm_server.respond_with(lambda body: "answer")
    request = LLMRequest.simple("Who failed?")
    async with open_backend("openai:gpt-4.1", llm_settings()) as backend:
        await backend.complete(request)
        bypass = await backend.complete(request, cache=False)  # per call (--no-cache)
        assert not bypass.from_cache and len(llm_server.requests) == 2
    async with open_backend("openai:gpt-4.1", llm_settings(cache=False)) as off:  # settings cache = false
        await off.complete(request)
        await off.complete(request)
    assert len(llm_server.requests) == 4


async def test_failures_are_not_cached(llm_settings, llm_server):
    from tests.support.llm_server import Fault

    llm_server.fail(Fault.http(400, message="nope"))
    llm_server.script("good")
    async with open_backend("openai:gpt-4.1", llm_settings()) as backend:
        with pytest.raises(BackendError, match="nope"):
            await backend.complete(LLMRequest.simple("q"))
        reply = await backend.complete(LLMRequest.simple("q"))
        assert reply.text == "good" and not reply.from_cache


def test_cache_survives_a_corrupt_entry(tmp_path):
    cache = ResponseCache(tmp_path / "c")
    cache.set("k", {"text": "a"})
    assert cache.get("k")["text"] == "a"
    cache._open().set("k", b"\x00not json")
    assert cache.get("k") is None
    cache.close()
    blocked = tmp_path / "file"
    blocked.write_text("x")
    broken = ResponseCache(blocked / "sub")  # cannot create a folder inside a file
    assert broken.get("k") is None
    broken.set("k", {"text": "a"})  # degrades to no cache, no exception


async def test_concurrency_limit(llm_settings, llm_server):
    llm_server.latency_s = 1.0  # every answer is held long enough for the next two to arrive, loaded or not
    llm_server.respond_with(lambda body: "ok")
    async with open_backend("openai:gpt-4.1", llm_settings(concurrency=3, cache=False)) as backend:
        replies = await asyncio.gather(*[backend.complete(LLMRequest.simple(f"question {i}")) for i in range(9)])
    assert len(replies) == 9 and all(r.text == "ok" for r in replies)
    assert llm_server.max_in_flight == 3


async def test_backend_serves_several_event_loops(llm_settings, llm_server):
    """The TUI and a CLI may drive one backend from different loops (one SDK client per loop)."""
    llm_server.respond_with(lambda body: "ok")
    backend = open_backend("openai:gpt-4.1", llm_settings(cache=False))

    async def once() -> str:
        return (await backend.complete(LLMRequest.simple("q"))).text

    assert await once() == "ok"
    other = await asyncio.to_thread(asyncio.run, once())
    assert other == "ok" and backend.stats.calls == 2
    await backend.aclose()
