"""Model names: ``provider:model`` (docs/architecture.md, 'Configuration') and the pseudo-model ``heuristic``.

Accepted forms:

==========================  =====================================================
``openai:<model>``          OpenAI chat completions (Responses API with ``api="responses"``)
``openai-responses:<model>``  OpenAI Responses API
``anthropic:<model>``       Anthropic messages API
``openai-compatible:<model>``  any server speaking OpenAI chat completions (vLLM, Ollama,
                            LM Studio, llama.cpp); needs a base URL
``local:<PATH.gguf>``       a llama.cpp server whenpro starts on 127.0.0.1 for the run
``local:smollm2``           the same with SmolLM2-135M-Instruct (the ``whenpro[local]`` extra)
``heuristic``               no LLM: the offline heuristic protocol
==========================  =====================================================
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

from whenpro_core.errors import ConfigError

Provider = Literal["openai", "openai-responses", "anthropic", "openai-compatible", "local"]
Api = Literal["chat", "responses", "messages"]

PROVIDERS: tuple[str, ...] = ("openai", "openai-responses", "anthropic", "openai-compatible", "local")
HEURISTIC = "heuristic"
ACCEPTED_FORMS = (
    "openai:<model>, openai-responses:<model>, anthropic:<model>, "
    "openai-compatible:<model> (with a base URL), local:PATH.gguf, local:smollm2, or heuristic"
)
_MODEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+\-]*$")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model name.

    Attributes:
        provider: one of :data:`PROVIDERS`.
        model: the provider's model id (``gpt-4.1``, ``claude-sonnet-4-6``, ``qwen3:8b``).
        api: the wire API used: ``chat`` (chat completions), ``responses`` or ``messages``.
    """

    provider: Provider
    model: str
    api: Api

    @property
    def name(self) -> str:
        """``provider:model`` as the user wrote it (Attribution.model uses this)."""
        return f"{self.provider}:{self.model}"

    def __str__(self) -> str:
        return self.name


def is_llm(name: str) -> bool:
    """Whether ``name`` names an LLM backend (False for ``heuristic``).

    Raises:
        ConfigError: the name is neither ``heuristic`` nor a valid ``provider:model``.
    """
    return parse_model(name) is not None


def parse_model(name: str, *, api: Literal["chat", "responses"] = "chat") -> ModelSpec | None:
    """Parse ``provider:model``; ``None`` for ``heuristic`` (not an LLM backend).

    Args:
        name: the model name (surrounding spaces ignored; provider is case-insensitive).
        api: the OpenAI API for ``openai:`` and ``openai-compatible:`` models (settings
            ``api``); ``openai-responses:`` always uses the Responses API.

    Raises:
        ConfigError: empty name, unknown provider, missing or malformed model part. The
            message lists the accepted forms.
    """
    raw = (name or "").strip()
    if raw.lower() == HEURISTIC:
        return None
    provider, sep, model = raw.partition(":")
    provider = provider.lower()
    if not sep:
        raise ConfigError(
            f"model name '{_show(raw)}' has no provider",
            expected=ACCEPTED_FORMS,
        )
    if provider not in PROVIDERS:
        raise ConfigError(f"unknown model provider '{_show(provider)}' in '{_show(raw)}'", expected=ACCEPTED_FORMS)
    if provider == "local" and model and model.isprintable():
        return ModelSpec(provider="local", model=model, api="chat")  # a GGUF path (any file name) or an alias
    if not model or not _MODEL_RE.match(model):
        raise ConfigError(f"missing or malformed model id in '{_show(raw)}'", expected=ACCEPTED_FORMS)
    if provider == "anthropic":
        wire: Api = "messages"
    elif provider == "openai-responses":
        wire = "responses"
    else:
        wire = api
    return ModelSpec(provider=cast(Provider, provider), model=model, api=wire)  # checked against PROVIDERS above


def _show(text: str, limit: int = 60) -> str:
    """A printable, bounded rendering of user input for an error message."""
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def reads_images(spec: ModelSpec, images: str = "auto", vision_models: Sequence[str] = ()) -> bool:
    """Whether a judge on ``spec`` is sent images: ``images`` ``"on"``/``"off"`` decide;
    ``"auto"`` means yes for OpenAI and Anthropic models and, for ``openai-compatible:``
    servers (many local models read text only), yes when the model is listed in
    ``vision_models`` (by its id or its ``provider:model`` name, case-insensitive)."""
    if images in ("on", "off"):
        return images == "on"
    if spec.provider not in ("openai-compatible", "local"):
        return True
    listed = {v.strip().lower() for v in vision_models}
    return spec.model.lower() in listed or spec.name.lower() in listed


#: Context windows in tokens by model-name prefix (most specific first); the judge's
#: prompt budget is 80% of it minus the answer's max tokens. Unknown models: 32K.
CONTEXT_WINDOWS = (
    ("gpt-4.1", 1_000_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("gpt-4o", 128_000),
    ("claude", 200_000),
    ("gemini", 1_000_000),
    ("qwen", 32_000),
    ("llama", 128_000),
)
DEFAULT_CONTEXT = 32_000


def context_window(model: str) -> int:
    """The context window assumed for ``provider:model`` (see :data:`CONTEXT_WINDOWS`)."""
    name = model.split(":", 1)[-1].lower()
    return next((size for prefix, size in CONTEXT_WINDOWS if name.startswith(prefix)), DEFAULT_CONTEXT)
