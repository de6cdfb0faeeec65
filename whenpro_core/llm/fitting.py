"""Requests that fit a context window: the last guard before a request reaches a server
whose window is known (docs/architecture.md, 'The context window').

The protocols fit their own requests first (:mod:`whenpro_core.attribution.window`, which
cuts what matters least for each); :meth:`~whenpro_core.llm.backend.Backend.complete` then
checks every request with :func:`fit_request`, so no caller (a preset that reproduces a
published request, the LLM generator, ``simulate``, a live judge) can send more than the
window holds. Tokens are estimated from characters: :data:`CHARS_PER_TOKEN_FIT` is cautious
because small models' tokenizers split code, JSON and numbers finely.
"""

from __future__ import annotations

from whenpro_core.llm.types import ImagePart, LLMRequest, Message, TextPart
from whenpro_core.views.transcript import cut_middle, water_level

#: Characters per token assumed when fitting (the budgets' 4 is for long, prose-like text).
CHARS_PER_TOKEN_FIT = 3.0
#: Tokens assumed per image.
IMAGE_TOKENS = 800
#: Share of the window kept free for the estimate's error and the chat template.
MARGIN = 0.1
#: Fewest characters a text part keeps when a request is cut.
MIN_PART_CHARS = 40


def _cut(part: TextPart | ImagePart, cap: int) -> TextPart | ImagePart:
    return part.model_copy(update={"text": cut_middle(part.text, cap)}) if isinstance(part, TextPart) else part


def prompt_limit(window: int, answer_tokens: int) -> int:
    """Tokens a prompt may hold in a ``window``-token context when ``answer_tokens`` are
    kept for the answer, less :data:`MARGIN`."""
    return max(1, int((window - answer_tokens) * (1 - MARGIN)))


def estimate_tokens(chars: int, images: int = 0, messages: int = 0) -> int:
    """Estimated tokens of ``chars`` characters of text, ``images`` images and the chat
    template's few tokens per message."""
    return int(chars / CHARS_PER_TOKEN_FIT) + images * IMAGE_TOKENS + 8 * messages


def request_tokens(request: LLMRequest) -> int:
    """Estimated prompt tokens of ``request`` (system prompt and every message)."""
    parts = [p for m in request.messages for p in m.content]
    chars = len(request.system or "") + sum(len(p.text) for p in parts if isinstance(p, TextPart))
    images = sum(1 for p in parts if isinstance(p, ImagePart))
    return estimate_tokens(chars, images, len(request.messages) + 1)


def fit_request(request: LLMRequest, limit: int) -> tuple[LLMRequest, str | None]:
    """``request`` cut to about ``limit`` prompt tokens: the longest text parts (system
    prompt included) keep their first and last characters, the shorter ones stay whole.
    Returns the request and a one-line note when it was cut (``None`` when it fitted)."""
    need = request_tokens(request)
    if need <= limit:
        return request, None
    texts = [request.system or ""] + [p.text for m in request.messages for p in m.content if isinstance(p, TextPart)]
    other = need - estimate_tokens(sum(len(t) for t in texts))
    room = max(int((limit - other) * CHARS_PER_TOKEN_FIT) - 40 * len(texts), 0)  # 40: cut_middle's marker
    cap = max(water_level([len(t) for t in texts], room), MIN_PART_CHARS)
    messages = [
        Message(
            role=m.role,
            content=[
                p.model_copy(update={"text": cut_middle(p.text, cap)}) if isinstance(p, TextPart) else p
                for p in m.content
            ],
        )
        for m in request.messages
    ]
    system = cut_middle(request.system, cap) if request.system else request.system
    fitted = request.model_copy(update={"messages": messages, "system": system})
    note = (
        f"request cut to fit the model's context window (about {need:,} tokens > {limit:,}): "
        f"long parts keep {cap:,} characters"
    )
    if request_tokens(fitted) > limit:
        note += "; it still does not fit"
    return fitted, note
