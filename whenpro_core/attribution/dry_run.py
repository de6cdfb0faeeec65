"""See a protocol's requests before paying for them: ``whenpro attribute --dry-run``.

The protocol runs for real up to its first call, with a *recording judge* in place of a
backend: the judge captures the messages and stops the protocol, so what is shown is
exactly what the protocol would send (same rendering, same images, same cache
breakpoints), converted the way :class:`~whenpro_core.attribution.llm_judge.LLMJudge`
converts it. No call is made and no API key is needed.

JSON shape (``--json``)::

    {"requests": [{"provider": str, "model": str, "api": str,
                   "messages": [{"role": "system"|"user"|"assistant",
                                 "content": [{"type": "text", "text": str}
                                             | {"type": "image", "mime": str, "width": int,
                                                "height": int, "bytes": int, "sha256": str}]}],
                   "settings": {"temperature": float|null, "max_tokens": int,
                                "reasoning_effort": str|null, "structured_output": str|null,
                                "images": bool},
                   "later": str|null, "wording": str|null}]}

A part that ends a reusable prefix (a prompt-cache breakpoint) also has
``"cache_breakpoint": true``. ``later`` says how the protocol's later calls differ from this first one (``null`` for
one-call protocols); ``wording`` says, for a preset, whose words its request carries
(``null`` for whenpro's protocols). Image sizes come from the image bytes (Pillow reads the header only).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from whenpro_core.attribution.judge import CallSettings, JudgeReply
from whenpro_core.attribution.llm_judge import judge_budget, to_request
from whenpro_core.attribution.prompts import Message
from whenpro_core.attribution.protocols import PRESET_NAMES, PRESET_PROTOCOLS, protocol_name
from whenpro_core.attribution.run import attribute
from whenpro_core.attribution.template import PromptTemplate
from whenpro_core.config import Settings, load_settings
from whenpro_core.errors import ConfigError
from whenpro_core.llm.models import parse_model, reads_images
from whenpro_core.llm.types import ImagePart, LLMRequest, TextPart
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Trace

#: How later calls of each protocol differ from the first (shown as ``later``).
LATER = {
    "all-at-once": None,
    "step-by-step": (
        "each later call repeats this conversation, adds the judge's previous answer as an "
        "assistant turn and one user turn with the next step(s) and the same question; it "
        "stops at the first yes"
    ),
    "binary-search": (
        "each later call is this request with the range narrowed to the half the judge "
        "chose; a last call asks for the failure mode of the step left"
    ),
    "hybrid": (
        "then one call per step of the named agent, in order, until one is judged decisive: the same "
        "system message and transcript, with the question replaced by 'Does Step X hold the "
        "decisive error?'"
    ),
    "whowhen:all-at-once": None,
    "whowhen:step-by-step": (
        "each later call is a fresh request of the same shape about the next step: the "
        "numbered history one step longer; every step is asked about, whoever spoke, until "
        "an answer starts with '1. Yes'"
    ),
    "whowhen:binary-search": (
        "each later call is this request for the half the judge chose ('upper half' wins "
        "when both are named, a seeded coin when neither), until one step is left; no "
        "error-mode call"
    ),
}


class _Captured(Exception):
    """Raised by the recording judge to stop the protocol after its first request."""

    def __init__(self, messages: list[Message], schema: type[BaseModel] | None, call: CallSettings | None) -> None:
        super().__init__("captured")
        self.messages = messages
        self.schema = schema
        self.call = call or CallSettings()


@dataclass
class RecordingJudge:
    """A judge that records the first request and stops the protocol (no backend)."""

    model: str
    multimodal: bool
    budget_tokens: int

    async def ask(
        self,
        messages: list[Message],
        schema: type[BaseModel] | None = None,
        readable: Any = None,
        call: CallSettings | None = None,
    ) -> JudgeReply:
        """Never answers: raises :class:`_Captured` with the messages."""
        raise _Captured(list(messages), schema, call)


def image_summary(part: ImagePart) -> dict[str, Any]:
    """An image part as ``{type, mime, width, height, bytes, sha256}`` (width and height
    0 when Pillow cannot read the header; ``bytes`` and ``sha256`` of the image sent)."""
    from PIL import Image, UnidentifiedImageError  # lazy: Pillow is only needed for images

    raw = base64.b64decode(part.data)
    try:
        with Image.open(io.BytesIO(raw)) as img:
            width, height = img.size
    except (UnidentifiedImageError, OSError):
        width = height = 0
    return {
        "type": "image",
        "mime": part.mime,
        "width": width,
        "height": height,
        "bytes": len(raw),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }


def _part(part: TextPart | ImagePart) -> dict[str, Any]:
    out = {"type": "text", "text": part.text} if isinstance(part, TextPart) else image_summary(part)
    return {**out, "cache_breakpoint": True} if part.cache_breakpoint else out


def _content(parts: list[TextPart | ImagePart]) -> list[dict[str, Any]]:
    return [_part(p) for p in parts]


def request_messages(request: LLMRequest) -> list[dict[str, Any]]:
    """The request's messages as plain data, the system prompt first."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append(
            {"role": "system", "content": [_part(TextPart(text=request.system, cache_breakpoint=request.cache_system))]}
        )
    out += [{"role": m.role, "content": _content(list(m.content))} for m in request.messages]
    return out


def preview(
    trace: Trace,
    protocol: str,
    model: str,
    settings: Settings,
    *,
    with_gold: bool = True,
    template: PromptTemplate | None = None,
) -> JSONObject:
    """The first request(s) ``protocol`` would send for ``trace`` to ``model``, as the
    JSON document described in the module doc. ``{"requests": []}`` for the heuristic
    and for a run that succeeded. ConfigError for an unknown protocol or model name."""
    name = protocol_name(protocol)
    spec = parse_model(model, api=settings.api)
    if name == "heuristic" or spec is None:
        return {"requests": []}
    images = reads_images(spec, settings.images, settings.vision_models)
    judge = RecordingJudge(spec.name, images, judge_budget(spec.name, settings))
    captured: _Captured | None = None
    try:
        asyncio.run(attribute(trace, name, judge=judge, with_gold=with_gold, template=template))
    except _Captured as got:
        captured = got
    if captured is None:
        return {"requests": []}  # nothing to attribute (a successful run)
    schema, call = captured.schema, captured.call
    request = to_request(captured.messages, schema, call)
    return {
        "requests": [
            {
                "provider": spec.provider,
                "model": spec.model,
                "api": spec.api,
                "messages": request_messages(request),
                "settings": {
                    "temperature": settings.temperature if call.temperature is None else call.temperature,
                    "max_tokens": call.max_tokens or settings.max_tokens,
                    "reasoning_effort": settings.reasoning_effort,
                    "structured_output": schema.__name__ if schema else None,
                    "images": images,
                },
                "later": LATER.get(name),
                "wording": wording_of(name),
            }
        ]
    }


def wording_of(protocol: str) -> str | None:
    """Whose wording a preset's requests carry (one line), ``None`` for whenpro's own
    protocols: whowhen-pro says whether the official harness worded it
    (:mod:`whenpro_core.attribution.official_harness`)."""
    if protocol == PRESET_PROTOCOLS["whowhen-pro"]:
        from whenpro_core.attribution.official_harness import WHENPRO_WORDING, load_harness

        harness = load_harness()
        return harness.wording if harness else WHENPRO_WORDING
    if protocol in PRESET_NAMES:
        return "wording: whenpro's own words for the original Who&When requests (same rules and formats)"
    return None


def preview_text(doc: JSONObject) -> str:
    """The preview for a terminal: each message's text, images as one line each."""
    lines: list[str] = []
    for req in doc["requests"]:
        lines.append(f"=== request to {req['provider']}:{req['model']} ({req['api']} API); settings {req['settings']}")
        for msg in req["messages"]:
            lines.append(f"--- {msg['role']}")
            for part in msg["content"]:
                if part["type"] == "text":
                    lines.append(part["text"].rstrip("\n"))
                else:
                    lines.append(
                        f"[image {part['mime']} {part['width']}x{part['height']}, {part['bytes']:,} bytes, "
                        f"sha256 {part['sha256'][:16]}]"
                    )
                if part.get("cache_breakpoint"):
                    lines.append("[cache breakpoint]")
        if req["later"]:
            lines.append(f"=== later calls: {req['later']}")
        if req.get("wording"):
            lines.append(f"=== {req['wording']}")
    return "\n".join(lines) if lines else "no model call: this protocol and trace need none"


def preview_choice(trace: Trace, protocol: str, model: str | None, with_gold: bool, settings: Settings | None) -> str:
    """The terminal preview (:func:`preview_text`) of a choice made in the TUI's
    attribute dialog: ``model`` typed or picked, else the configured one. ConfigError
    when settings could not be loaded (``None``) for an LLM protocol, or when no model
    is named."""
    name = protocol_name(protocol)
    if name == "heuristic":
        return preview_text({"requests": []})
    if settings is None:
        settings = load_settings()  # raises the ConfigError that made it None
    return preview_text(preview(trace, name, need_model(model, settings, name), settings, with_gold=with_gold))


def need_model(model: str | None, settings: Settings, protocol: str) -> str:
    """The model a dry run shows requests for: ``model`` or the configured one;
    ConfigError when neither names an LLM."""
    name = (model or settings.model or "heuristic").strip()
    if name.lower() == "heuristic":
        raise ConfigError(
            f"protocol {protocol} needs a model to show its requests",
            expected="--model provider:model (no key is needed for --dry-run)",
        )
    return name
