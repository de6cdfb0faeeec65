"""A :class:`~whenpro_core.attribution.judge.Judge` over the LLM backends of
:mod:`whenpro_core.llm` (OpenAI chat completions / Responses, Anthropic messages, any
OpenAI-compatible server).

Protocol messages map onto a provider-neutral :class:`~whenpro_core.llm.types.LLMRequest`:
the system message becomes the system prompt (an Anthropic cache breakpoint), and a
message marked ``cache_breakpoint`` ends a reusable prefix, so step-by-step and binary
search reuse the provider's prompt cache. Structured output is asked for with the
protocol's pydantic schema; when the backend cannot do it the reply's text goes to the
lenient parser instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel

from whenpro_core.attribution.judge import CallSettings, JudgeReply
from whenpro_core.attribution.prompts import HalfChoice, Message, ModeJudgement, StepJudgement, Verdict
from whenpro_core.config import Settings, load_settings
from whenpro_core.llm import ImagePart as LLMImage
from whenpro_core.llm import Message as LLMMessage
from whenpro_core.llm import TextPart as LLMText
from whenpro_core.llm import open_backend
from whenpro_core.llm.models import context_window, reads_images
from whenpro_core.llm.types import LLMRequest
from whenpro_core.views.transcript import ImagePart, TextPart

if TYPE_CHECKING:
    from whenpro_core.llm.backend import Backend


class LLMJudge:
    """A judge backed by one :class:`~whenpro_core.llm.backend.Backend`.

    Attributes:
        model: ``provider:model``.
        multimodal: send images (OpenAI and Anthropic models: yes; OpenAI-compatible
            servers: when the model is listed in ``vision_models`` or ``images = "on"``,
            see :func:`whenpro_core.llm.models.reads_images`).
        budget_tokens: prompt budget for rendered transcripts.
    """

    def __init__(self, backend: Backend, *, multimodal: bool, budget_tokens: int, use_cache: bool = True) -> None:
        self.backend = backend
        self.model = backend.name
        self.multimodal = multimodal
        self.budget_tokens = budget_tokens
        self.use_cache = use_cache

    @property
    def context_window(self) -> int | None:
        """The context window the server reported or named in an error (protocols fit their
        requests to it, :mod:`whenpro_core.attribution.window`); ``None`` while unknown."""
        return self.backend.context_window if self.backend.window_reported else None

    @property
    def answer_tokens(self) -> int:
        """Most tokens an answer may take."""
        return self.backend.answer_tokens()

    @property
    def schema_tokens(self) -> int:
        """Prompt tokens the backend may add for a protocol answer's schema (the largest of
        them); a protocol fitting its request to the window leaves them free."""
        return max(self.backend.schema_tokens(m) for m in (Verdict, StepJudgement, HalfChoice, ModeJudgement))

    async def ask(
        self,
        messages: list[Message],
        schema: type[BaseModel] | None = None,
        readable: Callable[[str, BaseModel | None], bool] | None = None,
        call: CallSettings | None = None,
    ) -> JudgeReply:
        """One call; raises :class:`~whenpro_core.errors.BackendError` when the backend
        fails after its retries. ``readable(text, parsed)`` says whether a verdict could be
        read from an answer: one that is not is never kept in the response cache."""
        request = to_request(messages, schema, call)
        accept = None if readable is None else (lambda r: readable(r.text, r.parsed))
        response = await self.backend.complete(request, cache=None if self.use_cache else False, accept=accept)
        warnings = list(response.warnings)
        if schema is not None and response.parse_error:
            warnings.append(f"structured answer did not validate ({response.parse_error}); parsed the text")
        if response.finish_reason == "length":
            warnings.append("the answer was cut at the max-tokens limit")
        return JudgeReply(
            text=response.text,
            parsed=response.parsed,
            usage=response.original_usage or response.usage,
            spent=response.usage,
            warnings=warnings,
        )

    async def aclose(self) -> None:
        """Close the backend's HTTP clients."""
        await self.backend.aclose()


def to_request(
    messages: list[Message], schema: type[BaseModel] | None = None, call: CallSettings | None = None
) -> LLMRequest:
    """The provider-neutral request a judge sends for protocol ``messages``: system
    messages joined into the system prompt (a cache breakpoint when marked), the others as
    turns with their cache breakpoints, ``schema`` as the structured-output model,
    ``call``'s temperature and max tokens when set."""
    call = call or CallSettings()
    return LLMRequest(
        messages=[_convert(m) for m in messages if m.role != "system"],
        system="\n\n".join(m.plain() for m in messages if m.role == "system") or None,
        cache_system=any(m.cache_breakpoint for m in messages if m.role == "system"),
        output_model=schema,
        temperature=call.temperature,
        max_tokens=call.max_tokens,
    )


def judge_budget(model_name: str, settings: Settings, backend: Backend | None = None) -> int:
    """The prompt budget in tokens of a judge on ``model_name``: 80% of its context
    window minus the answer's max tokens, at least 4,000; with a ``backend`` whose server
    reported its window, that window's share (no floor: the request must fit it)."""
    if backend is not None and backend.window_reported:
        return max(256, int(backend.context_window * 0.8) - backend.answer_tokens())
    return max(4_000, int(context_window(model_name) * 0.8) - (settings.max_tokens or 4096))


def _convert(message: Message) -> LLMMessage:
    parts: list[LLMText | LLMImage] = []
    last = len(message.parts) - 1
    for i, part in enumerate(message.parts):
        mark = (message.cache_breakpoint and i == last) or i == message.prefix_parts - 1
        if isinstance(part, TextPart):
            parts.append(LLMText(text=part.text or " ", cache_breakpoint=mark))
        elif isinstance(part, ImagePart):
            parts.append(LLMImage(data=part.data, mime=part.mime, cache_breakpoint=mark))
    return LLMMessage(role=message.role, content=parts or [LLMText(text=" ")])


def make_judge(
    model: str | None = None,
    *,
    settings: Settings | None = None,
    use_cache: bool = True,
    multimodal: bool | None = None,
    threaded: bool = False,
) -> LLMJudge:
    """Open a judge for ``model`` (default: the configured model).

    ``threaded``: chat-completions calls on the blocking SDK client in worker threads
    (see :func:`whenpro_core.llm.open_backend`). Raises ConfigError for a bad model name,
    ``heuristic``, or a missing key or base URL (the message names the setting to fix,
    never a key).
    """
    settings = settings or load_settings()
    backend = open_backend(model, settings, threaded=threaded)
    if multimodal is None:
        multimodal = reads_images(backend.spec, settings.images, settings.vision_models)
    return LLMJudge(
        backend, multimodal=multimodal, budget_tokens=judge_budget(backend.name, settings, backend), use_cache=use_cache
    )
