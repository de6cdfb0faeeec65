"""The three wire APIs through the real SDKs over HTTP against the local test server:
plain text, structured output (and its fallbacks), images, usage, cost, cached tokens."""

from __future__ import annotations

import base64
import random
import struct
import zlib

import pytest
from pydantic import BaseModel

from tests.support.llm_server import IMAGE_TOKENS, WRONG_FORMAT_TEXT, Fault, approx_tokens, prompt_text
from tests.support.llm_wire import SeenPrompts
from whenpro_core.injection.diff import common_prefix_len
from whenpro_core.llm import ImagePart, LLMRequest, Message, TextPart, open_backend
from whenpro_core.llm.pricing import DEFAULT_PRICES

MODELS = ["openai:gpt-4.1", "openai-responses:gpt-4.1", "anthropic:claude-sonnet-4-6"]


class Verdict(BaseModel):
    agent: str
    step: int
    mode: str


VERDICT = {"agent": "WebSurfer", "step": 4, "mode": "R.1"}


def tiny_png(width: int = 2, height: int = 2) -> bytes:
    """A valid RGB PNG (stdlib only)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@pytest.fixture
def make_backend(llm_settings):
    opened = []

    def make(model: str, **overrides):
        overrides.setdefault("cache", False)
        backend = open_backend(model, llm_settings(model, **overrides))
        opened.append(backend)
        return backend

    yield make


@pytest.mark.parametrize("model", MODELS)
async def test_plain_text_answer_and_usage(model, make_backend, llm_server):
    llm_server.script("The decisive error is at step 4.")
    backend = make_backend(model)
    request = LLMRequest.simple("Which step failed?", system="You are a careful judge.")
    reply = await backend.complete(request)

    assert reply.text == "The decisive error is at step 4."
    assert reply.model == model and reply.served_model == model.split(":", 1)[1]
    assert reply.structured == "none" and reply.parsed is None
    assert reply.finish_reason == "stop" and not reply.from_cache and reply.retries == 0
    sent = llm_server.requests[-1]
    assert "You are a careful judge." in sent.prompt and "Which step failed?" in sent.prompt
    expected_in = approx_tokens(sent.prompt)
    assert reply.usage.calls == 1
    assert reply.usage.input_tokens == expected_in
    assert reply.usage.output_tokens == approx_tokens(reply.text)
    price = DEFAULT_PRICES[model.split(":", 1)[1]]
    assert reply.usage.cost_usd == pytest.approx(
        (expected_in * price.input + reply.usage.output_tokens * price.output) / 1e6
    )
    assert reply.usage.seconds > 0
    assert backend.stats.calls == 1 and backend.stats.usage.input_tokens == expected_in
    await backend.aclose()


@pytest.mark.parametrize("model", MODELS)
async def test_structured_output_native_schema(model, make_backend, llm_server):
    llm_server.script(VERDICT)
    backend = make_backend(model)
    reply = await backend.complete(LLMRequest.simple("Attribute the failure.", output_model=Verdict))
    assert reply.structured == "schema"
    assert reply.parsed == Verdict(**VERDICT) and reply.parse_error is None
    body = llm_server.requests[-1].body
    schema = {
        "openai:gpt-4.1": lambda b: b["response_format"]["json_schema"]["schema"],
        "openai-responses:gpt-4.1": lambda b: b["text"]["format"]["schema"],
        "anthropic:claude-sonnet-4-6": lambda b: b["output_config"]["format"]["schema"],
    }[model](body)
    assert set(schema["properties"]) == {"agent", "step", "mode"}
    await backend.aclose()


@pytest.mark.parametrize("model", MODELS)
async def test_wrong_format_answer_keeps_text_and_usage(model, make_backend, llm_server):
    llm_server.fail(Fault.wrong_format())
    backend = make_backend(model)
    reply = await backend.complete(LLMRequest.simple("Attribute the failure.", output_model=Verdict))
    assert reply.parsed is None
    assert reply.text == WRONG_FORMAT_TEXT
    assert "does not match the schema" in reply.parse_error
    assert reply.usage.calls == 1 and reply.usage.output_tokens == approx_tokens(WRONG_FORMAT_TEXT)
    assert len(llm_server.requests) == 1  # not retried: the caller's lenient parser takes over
    await backend.aclose()


@pytest.mark.parametrize("model", MODELS)
async def test_structured_falls_back_to_text_when_server_rejects_it(model, make_backend, llm_server):
    llm_server.structured = False
    llm_server.json_object = False
    llm_server.tools = False
    llm_server.script(VERDICT, VERDICT)
    backend = make_backend(model)
    reply = await backend.complete(LLMRequest.simple("Attribute the failure.", output_model=Verdict))
    assert reply.structured == "text"
    assert reply.parsed == Verdict(**VERDICT)
    assert any("rejected structured output" in w for w in reply.warnings)
    statuses = [r.status for r in llm_server.requests]
    assert statuses[-1] == 200 and set(statuses[:-1]) == {400}
    # the backend remembers: the next call goes straight to plain text
    before = len(llm_server.requests)
    again = await backend.complete(LLMRequest.simple("Attribute it again.", output_model=Verdict))
    assert again.structured == "text" and again.parsed == Verdict(**VERDICT) and not again.warnings
    assert len(llm_server.requests) == before + 1
    await backend.aclose()


@pytest.mark.parametrize("status", [400, 500])
async def test_chat_falls_back_to_json_object_with_the_schema_in_the_prompt(status, make_backend, llm_server):
    """A server without JSON-schema output (llama-cpp-python answers HTTP 500 naming the
    response_format types it takes) gets json_object with the schema in the prompt: one
    refused request, never retried as a server fault, and the next call goes straight there."""
    llm_server.structured = False
    llm_server.structured_status = status
    llm_server.script(VERDICT, VERDICT)
    backend = make_backend("openai-compatible:smol")
    reply = await backend.complete(LLMRequest.simple("Attribute the failure.", output_model=Verdict))
    assert reply.structured == "json" and reply.parsed == Verdict(**VERDICT)
    assert [r.status for r in llm_server.requests] == [status, 200]
    assert any(f"rejected structured output by schema (HTTP {status})" in w for w in reply.warnings)
    sent = llm_server.requests[-1].body
    assert sent["response_format"]["type"] == "json_object"
    assert '"agent"' in sent["messages"][-1]["content"] and "JSON schema" in sent["messages"][-1]["content"]
    again = await backend.complete(LLMRequest.simple("Again.", output_model=Verdict))
    assert again.structured == "json" and len(llm_server.requests) == 3
    await backend.aclose()


async def test_a_server_error_not_about_the_format_is_still_retried(make_backend, llm_server):
    llm_server.fail(Fault.http(500, message="model crashed"))
    llm_server.script(VERDICT)
    backend = make_backend("openai-compatible:smol")
    reply = await backend.complete(LLMRequest.simple("Attribute the failure.", output_model=Verdict))
    assert reply.structured == "schema" and reply.retries == 1
    await backend.aclose()


async def test_anthropic_forced_tool_fallback(make_backend, llm_server):
    llm_server.structured = False  # output_config.format refused, tools accepted
    llm_server.script(VERDICT)
    backend = make_backend("anthropic:claude-sonnet-4-6")
    reply = await backend.complete(LLMRequest.simple("Attribute the failure.", output_model=Verdict))
    assert reply.structured == "tool"
    assert reply.parsed == Verdict(**VERDICT)
    body = llm_server.requests[-1].body
    assert body["tool_choice"] == {"type": "tool", "name": "answer"}
    assert body["tools"][0]["input_schema"]["required"] == ["agent", "step", "mode"]
    assert reply.finish_reason == "tool_use"
    await backend.aclose()


async def test_text_fallback_parses_json_inside_prose(make_backend, llm_server):
    llm_server.structured = False
    llm_server.json_object = False
    llm_server.script('Sure! Here it is:\n```json\n{"agent": "Coder", "step": 2, "mode": "A.1"}\n```')
    backend = make_backend("openai-compatible:qwen3")
    reply = await backend.complete(LLMRequest.simple("Attribute.", output_model=Verdict))
    assert reply.structured == "text" and reply.parsed == Verdict(agent="Coder", step=2, mode="A.1")
    await backend.aclose()


@pytest.mark.parametrize("model", MODELS)
async def test_images_in_content_parts(model, make_backend, llm_server):
    png = tiny_png()
    llm_server.respond_with(lambda body: "saw an image" if "<image " in prompt_text(body) else "no image")
    backend = make_backend(model)
    request = LLMRequest(
        messages=[
            Message(role="user", content=[TextPart(text="What is in the screenshot?"), ImagePart.from_bytes(png)])
        ]
    )
    reply = await backend.complete(request)
    assert reply.text == "saw an image"
    body = llm_server.requests[-1].body
    b64 = base64.b64encode(png).decode()
    content = body["messages" if "messages" in body else "input"][-1]["content"]
    image = [p for p in content if p["type"] in ("image_url", "input_image", "image")][0]
    if model.startswith("anthropic"):
        assert image["source"] == {"type": "base64", "media_type": "image/png", "data": b64}
    elif model.startswith("openai-responses"):
        assert image["image_url"] == f"data:image/png;base64,{b64}"
    else:
        assert image["image_url"]["url"] == f"data:image/png;base64,{b64}"
    assert reply.usage.input_tokens == approx_tokens(llm_server.requests[-1].prompt) + IMAGE_TOKENS
    await backend.aclose()


def test_image_part_rejects_non_images():
    with pytest.raises(ValueError, match="not a JPEG"):
        ImagePart.from_bytes(b"%PDF-1.4 not an image")
    with pytest.raises(ValueError):
        ImagePart(data="data:image/png;base64,AAAA")
    assert ImagePart.from_bytes(b"\xff\xd8\xff\xe0" + b"\x00" * 16).mime == "image/jpeg"


def test_the_test_servers_prefix_cache_finds_the_longest_prefix_shared_with_its_last_prompts():
    """The emulated OpenAI cache (two neighbours in sorted order) against every remembered
    prompt compared, prompts forgotten after ``keep``."""
    rng = random.Random(7)
    seen, kept = SeenPrompts(keep=20), []
    for _ in range(300):
        prompt = "".join(rng.choice("ab") for _ in range(rng.randint(0, 12)))
        expected = max((common_prefix_len(old, prompt) for old in kept), default=0)
        assert seen.add(prompt) == expected
        kept = (kept + [prompt])[-20:]


@pytest.mark.parametrize("model", ["openai:gpt-4.1", "openai-responses:gpt-4.1"])
async def test_openai_cached_prefix_tokens_and_cost(model, make_backend, llm_server):
    llm_server.script("no", "yes")
    backend = make_backend(model)
    transcript = "Step 1 | Agent: Planner\n" + "The plan is to search the web. " * 40
    first = await backend.complete(LLMRequest.simple(transcript + "\nIs step 1 the decisive error?"))
    second = await backend.complete(
        LLMRequest.simple(transcript + "\nStep 2 | Agent: Coder\nIs step 2 the decisive error?")
    )
    assert first.usage.cached_tokens == 0
    assert second.usage.cached_tokens > approx_tokens(transcript) - 5
    assert second.usage.cached_tokens < second.usage.input_tokens
    p = DEFAULT_PRICES["gpt-4.1"]
    u = second.usage
    assert u.cost_usd == pytest.approx(
        ((u.input_tokens - u.cached_tokens) * p.input + u.cached_tokens * p.cached_input + u.output_tokens * p.output)
        / 1e6
    )
    await backend.aclose()


async def test_anthropic_prefixes_under_the_minimum_are_not_cached(make_backend, llm_server):
    """As at Anthropic (1,024 tokens for Sonnet), a breakpoint ending a shorter prefix
    caches nothing; the longer one after it is written, then read."""
    llm_server.cache_min_tokens = 1024
    llm_server.script("no", "yes")
    backend = make_backend("anthropic:claude-sonnet-4-6")
    transcript = "Step 1 | Agent: Planner\n" + "The plan is to search the web. " * 150

    def request(text: str) -> LLMRequest:
        return LLMRequest(
            system="You attribute failures in multi-agent runs.",
            cache_system=True,
            messages=[Message(role="user", content=[TextPart(text=text, cache_breakpoint=True), TextPart(text="?")])],
        )

    first = await backend.complete(request("Step 1 | Agent: Planner\nsearch"))  # short: nothing cached
    again = await backend.complete(request("Step 1 | Agent: Planner\nsearch"))
    assert (first.cache_write_tokens, again.usage.cached_tokens) == (0, 0)
    llm_server.script("no", "yes")
    long_first = await backend.complete(request(transcript))
    long_again = await backend.complete(request(transcript))
    assert long_first.cache_write_tokens >= 1024 and long_again.usage.cached_tokens == long_first.cache_write_tokens


async def test_anthropic_prompt_caching_breakpoints(make_backend, llm_server):
    llm_server.script("no", "yes")
    backend = make_backend("anthropic:claude-sonnet-4-6")
    transcript = "Step 1 | Agent: Planner\n" + "The plan is to search the web. " * 40

    def step_request(question: str) -> LLMRequest:
        return LLMRequest(
            system="You attribute failures in multi-agent runs.",
            cache_system=True,
            messages=[
                Message(
                    role="user", content=[TextPart(text=transcript, cache_breakpoint=True), TextPart(text=question)]
                )
            ],
        )

    first = await backend.complete(step_request("Is step 1 the decisive error?"))
    second = await backend.complete(step_request("Is step 2 the decisive error?"))
    body = llm_server.requests[-1].body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["messages"][0]["content"][1]

    assert first.cache_write_tokens > approx_tokens(transcript) - 5 and first.usage.cached_tokens == 0
    assert second.usage.cached_tokens == first.cache_write_tokens and second.cache_write_tokens == 0
    assert second.usage.input_tokens == first.usage.input_tokens  # same length, now mostly cached
    p = DEFAULT_PRICES["claude-sonnet-4-6"]
    u1, u2 = first.usage, second.usage
    assert u1.cost_usd == pytest.approx(
        (
            (u1.input_tokens - first.cache_write_tokens) * p.input
            + first.cache_write_tokens * p.cache_write
            + u1.output_tokens * p.output
        )
        / 1e6
    )
    assert u2.cost_usd < u1.cost_usd
    await backend.aclose()


async def test_anthropic_keeps_at_most_four_breakpoints(make_backend, llm_server):
    llm_server.script("ok")
    backend = make_backend("anthropic:claude-sonnet-4-6")
    parts = [TextPart(text=f"step {i}", cache_breakpoint=True) for i in range(6)]
    await backend.complete(LLMRequest(system="s", cache_system=True, messages=[Message(role="user", content=parts)]))
    body = llm_server.requests[-1].body
    marked = [b for b in body["messages"][0]["content"] if "cache_control" in b]
    assert [b["text"] for b in marked] == ["step 2", "step 3", "step 4", "step 5"]
    assert "cache_control" not in body["system"][0]
    await backend.aclose()


async def test_openai_compatible_server(make_backend, llm_server):
    llm_server.api_key = "EMPTY"  # the placeholder; the real OpenAI key must not be sent here
    llm_server.script("local answer")
    backend = make_backend("openai-compatible:qwen3", openai_api_key="sk-real-openai-0123456789", max_tokens=64)
    reply = await backend.complete(LLMRequest.simple("hi"))
    assert reply.text == "local answer" and reply.usage.cost_usd == 0.0  # no price for qwen3
    body = llm_server.requests[-1].body
    assert body["max_tokens"] == 64 and "max_completion_tokens" not in body
    await backend.aclose()


async def test_parameters_reach_the_wire(make_backend, llm_server):
    llm_server.respond_with(lambda body: "ok")
    chat = make_backend("openai:gpt-4.1", temperature=0.0, max_tokens=77, reasoning_effort="low")
    await chat.complete(LLMRequest.simple("x"))
    body = llm_server.requests[-1].body
    assert (body["temperature"], body["max_completion_tokens"], body["reasoning_effort"]) == (0.0, 77, "low")
    # request values beat settings
    await chat.complete(LLMRequest.simple("x", temperature=0.7, max_tokens=5))
    body = llm_server.requests[-1].body
    assert (body["temperature"], body["max_completion_tokens"]) == (0.7, 5)
    # ...but never past the configured max_tokens, a cap (a preset asks 1,024; a small local model is told 77)
    await chat.complete(LLMRequest.simple("x", max_tokens=1024))
    assert llm_server.requests[-1].body["max_completion_tokens"] == 77
    resp = make_backend("openai-responses:gpt-4.1", max_tokens=55, reasoning_effort="high")
    await resp.complete(LLMRequest.simple("x", system="sys"))
    body = llm_server.requests[-1].body
    assert body["max_output_tokens"] == 55 and body["reasoning"] == {"effort": "high"}
    assert body["instructions"] == "sys" and body["store"] is False
    claude = make_backend("anthropic:claude-sonnet-4-6", max_tokens=99, reasoning_effort="minimal")
    await claude.complete(LLMRequest.simple("x"))
    body = llm_server.requests[-1].body
    assert body["max_tokens"] == 99 and body["output_config"] == {"effort": "low"}
    for b in (chat, resp, claude):
        await b.aclose()


async def test_a_temperature_does_not_break_anthropic_calls(make_backend, llm_server):
    """The anthropic>=2 SDK's messages.create has no ``temperature``: a configured one
    made every call fail with a TypeError. It is left out and said in a warning."""
    llm_server.respond_with(lambda body: "ok")
    claude = make_backend("anthropic:claude-sonnet-4-6", temperature=0.0)
    reply = await claude.complete(LLMRequest.simple("x"))
    assert reply.text == "ok" and "temperature" not in llm_server.requests[-1].body
    assert any("temperature 0 not sent" in w for w in reply.warnings)
    await claude.aclose()


@pytest.mark.parametrize("model", MODELS)
async def test_truncated_answer_is_reported(model, make_backend, llm_server):
    llm_server.script("x" * 400)
    backend = make_backend(model, max_tokens=10)
    reply = await backend.complete(LLMRequest.simple("Explain at length."))
    assert reply.finish_reason == "length"
    assert any("cut off" in w for w in reply.warnings)
    assert len(reply.text) == 40
    await backend.aclose()


async def test_truncated_structured_answer(make_backend, llm_server):
    llm_server.script(VERDICT)
    backend = make_backend("openai:gpt-4.1", max_tokens=3)
    reply = await backend.complete(LLMRequest.simple("Attribute.", output_model=Verdict))
    assert reply.parsed is None and "cut off" in reply.parse_error and reply.usage.calls == 1
    await backend.aclose()


async def test_multi_turn_messages(make_backend, llm_server):
    llm_server.respond_with(lambda body: "ok")
    request = LLMRequest(
        messages=[
            Message(role="user", content="Is step 1 wrong?"),
            Message(role="assistant", content="No."),
            Message(role="user", content="Is step 2 wrong?"),
        ]
    )
    for model in MODELS:
        backend = make_backend(model)
        await backend.complete(request)
        prompt = llm_server.requests[-1].prompt
        assert prompt.index("Is step 1 wrong?") < prompt.index("No.") < prompt.index("Is step 2 wrong?")
        assert "\nassistant: No." in prompt
        await backend.aclose()


async def test_unrelated_400_does_not_switch_structured_output_off(make_backend, llm_server):
    llm_server.fail(*[Fault.http(400, message="prompt too long")] * 3)  # schema, json, text
    llm_server.script(VERDICT)
    backend = make_backend("openai:gpt-4.1")
    with pytest.raises(Exception, match="prompt too long"):
        await backend.complete(LLMRequest.simple("x" * 100, output_model=Verdict))
    reply = await backend.complete(LLMRequest.simple("short", output_model=Verdict))
    assert reply.structured == "schema" and reply.parsed == Verdict(**VERDICT)
    await backend.aclose()
