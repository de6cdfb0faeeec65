"""What goes into and comes out of an LLM backend: :class:`LLMRequest`, :class:`LLMResponse`.

A request is provider-neutral: a system prompt, and user/assistant messages made of
content parts (text, or an image given as base64 JPEG/PNG/GIF/WebP data). Each backend
translates it to its wire format (OpenAI chat completions, OpenAI Responses, Anthropic
messages).

Prompt caching (for step-by-step protocols, docs/architecture.md, 'Attribution protocols'): mark the last part of a
reusable
prefix with ``cache_breakpoint=True`` (and/or set ``cache_system=True``). Anthropic gets a
``cache_control: {"type": "ephemeral"}`` breakpoint there (at most 4 per request: the last
4 marks are kept); OpenAI caches prompt prefixes automatically, so the marks are ignored
there. Put the parts that change between calls *after* the breakpoint.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from whenpro_core.trace.model import Usage

ImageMime = Literal["image/jpeg", "image/png", "image/gif", "image/webp"]

_MAGIC: list[tuple[bytes, str]] = [
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
]


def sniff_image_mime(data: bytes) -> str | None:
    """The MIME type of image bytes from their magic number, or ``None`` if not JPEG/PNG/GIF/WebP."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


class TextPart(BaseModel):
    """A piece of text. ``cache_breakpoint``: the prompt up to here is a reusable prefix."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["text"] = "text"
    text: str
    cache_breakpoint: bool = False


class ImagePart(BaseModel):
    """An image as base64 ``data`` (no ``data:`` prefix) with its ``mime`` type.

    Build one from bytes with :meth:`from_bytes`, which checks the format."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["image"] = "image"
    data: str
    mime: ImageMime = "image/png"
    cache_breakpoint: bool = False

    @classmethod
    def from_bytes(cls, raw: bytes, mime: str | None = None, *, cache_breakpoint: bool = False) -> ImagePart:
        """Encode image bytes. ``mime`` defaults to the sniffed type.

        Raises:
            ValueError: the bytes are not a JPEG, PNG, GIF or WebP image.
        """
        sniffed = sniff_image_mime(raw)
        if sniffed is None:
            raise ValueError("not a JPEG, PNG, GIF or WebP image")
        return cls(data=base64.b64encode(raw).decode("ascii"), mime=mime or sniffed, cache_breakpoint=cache_breakpoint)

    @field_validator("data")
    @classmethod
    def _base64(cls, v: str) -> str:
        if v.startswith("data:"):
            raise ValueError("give the base64 payload without the 'data:' URL prefix")
        try:
            base64.b64decode(v[:64] + "=" * (-len(v[:64]) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("not base64 data") from None
        return v

    def data_url(self) -> str:
        """``data:<mime>;base64,<data>`` (the OpenAI form)."""
        return f"data:{self.mime};base64,{self.data}"


Part = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class Message(BaseModel):
    """One chat turn. ``content`` may be given as a plain string (one text part)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    content: list[Part]

    @field_validator("content", mode="before")
    @classmethod
    def _str_content(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [{"type": "text", "text": v}]
        return v

    def text(self) -> str:
        """The concatenated text parts."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


class LLMRequest(BaseModel):
    """A provider-neutral call.

    Attributes:
        messages: user/assistant turns, oldest first (the last is normally ``user``).
        system: the system prompt (OpenAI ``system`` message / Responses ``instructions``
            / Anthropic ``system``).
        cache_system: make the system prompt an Anthropic cache breakpoint.
        output_model: a pydantic model for structured output; the response's ``parsed`` is
            an instance of it when the answer validates.
        temperature, max_tokens, reasoning_effort: ``None`` = the settings' value.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: list[Message]
    system: str | None = None
    cache_system: bool = False
    output_model: type[BaseModel] | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, gt=0)
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = None

    @classmethod
    def simple(cls, prompt: str, *, system: str | None = None, **kwargs: Any) -> LLMRequest:
        """One user message of plain text."""
        return cls(messages=[Message(role="user", content=prompt)], system=system, **kwargs)


StructuredMode = Literal["none", "schema", "json", "tool", "text"]


class LLMResponse(BaseModel):
    """The outcome of one :meth:`Backend.complete` call.

    Attributes:
        text: the answer text (for a forced tool call: the tool input as JSON).
        parsed: an ``output_model`` instance, or ``None`` (no model asked, or the answer did
            not validate: see ``parse_error``).
        structured: how structured output was obtained: ``"schema"`` (native JSON-schema
            output), ``"json"`` (a JSON object with the schema in the prompt: servers without
            JSON-schema output), ``"tool"`` (forced tool call, Anthropic fallback), ``"text"`` (the server
            refused both; the plain answer was parsed as JSON if possible) or ``"none"``.
        parse_error: why ``parsed`` is ``None`` although a model was asked (one line).
        usage: this call's cost: ``calls`` (real HTTP calls that succeeded: 1, or 0 on a cache
            hit), tokens (``input_tokens`` includes cached tokens), ``cost_usd``, ``seconds``.
        original_usage: the usage of the call that produced this answer: equal to ``usage``
            for a fresh call; on a cache hit, what the stored call cost when it was made
            (``seconds`` 0). ``None`` for an old cache entry that did not keep it.
        cache_write_tokens: prompt tokens written to Anthropic's prompt cache.
        model: ``provider:model`` as requested; ``served_model``: what the server reported.
        finish_reason: ``stop``, ``length``, ``tool_use``, ``content_filter``... as reported.
        from_cache / cache_hits: served from the persistent response cache (``cache_hits`` is
            1 then, else 0, so it can be summed).
        retries: retried attempts before this answer (429/5xx/timeouts).
        warnings: notices (fallbacks, truncation), one line each.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str
    parsed: Any = None
    structured: StructuredMode = "none"
    parse_error: str | None = None
    usage: Usage = Field(default_factory=Usage)
    original_usage: Usage | None = None
    cache_write_tokens: int = 0
    model: str
    served_model: str | None = None
    finish_reason: str | None = None
    from_cache: bool = False
    cache_hits: int = 0
    retries: int = 0
    warnings: list[str] = Field(default_factory=list)
