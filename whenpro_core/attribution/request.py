"""One attribution request and the one function that runs it, for the CLI (``whenpro
attribute``) and the TUI (``a`` on the trace screen) alike.

:class:`AttributionRequest` says what to run: the protocol, the model, whether the judge
sees the gold answer, the ``--template`` wording and whether the response cache answers.
It is built from the CLI's options (:func:`request_from_options`, then
:func:`with_configured_model` once the settings are loaded) or from the TUI dialog's
choice (:func:`make_request`). :func:`run_request` runs any request: it opens a metered
judge (:class:`MeteredJudge`, which the TUI reads while the protocol runs), runs the
protocol through :func:`whenpro_core.attribution.run.attribute` and closes the judge.
:func:`offline_verdict` is the heuristic's verdict in the caller's thread, which the CLI
uses so that Ctrl-C stops it at once (an event loop would wait for its worker thread).

Protocols and their progress events are those of docs/architecture.md, 'Attribution
protocols'.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from whenpro_core.attribution.heuristic import attribute_heuristic
from whenpro_core.attribution.protocols import preset_protocol, protocol_name
from whenpro_core.attribution.run import attribute, nothing_to_attribute, trace_has_gold
from whenpro_core.errors import ConfigError
from whenpro_core.trace.model import Attribution, Outcome, Trace, Usage

# start-up: ``whenpro attribute`` with the offline heuristic imports this module; the
# counterfactual (~0.6 s), the LLM judge (~0.4 s) and model endpoints (~0.15 s) are
# imported by the functions that need them.

if TYPE_CHECKING:
    from pydantic import BaseModel

    from whenpro_core.attribution.judge import CallSettings, Judge, JudgeReply, ProgressCallback
    from whenpro_core.attribution.prompts import Message
    from whenpro_core.attribution.template import PromptTemplate
    from whenpro_core.config import Settings


@dataclass(frozen=True)
class AttributionRequest:
    """What to run: a canonical ``protocol`` name, the ``model`` (``provider:model``;
    ``None`` for ``heuristic`` and the offline counterfactual), whether the judge sees
    the gold answer, the ``template`` that words the all-at-once request (``--template``;
    ``None``: whenpro's own prompt) and ``use_cache`` (``False``: ``--no-cache``, every
    call goes to the model)."""

    protocol: str
    model: str | None = None
    with_gold: bool = True
    template: PromptTemplate | None = None
    use_cache: bool = True

    @property
    def label(self) -> str:
        """``"heuristic"`` or ``"step-by-step · openai:gpt-4.1"``."""
        return self.protocol if self.model is None else f"{self.protocol} · {self.model}"


# --------------------------------------------------------------------------- building a request


def request_from_options(
    *,
    protocol: str | None,
    model: str | None,
    preset: str | None,
    with_gold: bool,
    template: PromptTemplate | None = None,
    use_cache: bool = True,
) -> AttributionRequest:
    """The request of ``whenpro attribute``'s options: ``--protocol`` (default:
    all-at-once with a model, else heuristic), ``--preset`` (its protocol), ``--model``
    (``heuristic`` is no model), ``--no-gold``, ``--template`` and ``--no-cache``.
    Nothing is opened here; an LLM protocol's model may still be ``None`` (the configured
    default: :func:`with_configured_model`).

    Raises:
        ConfigError: an unknown protocol or preset, or the heuristic with a model.
    """
    if model and model.strip().lower() == "heuristic":
        model = None
    if preset:
        name = preset_protocol(preset, protocol)
    else:
        name = protocol_name(protocol or ("all-at-once" if model else "heuristic"))
    if name == "heuristic" and model:
        raise ConfigError(
            "--protocol heuristic and --model do not go together", expected="no --model: heuristic uses no model"
        )
    return AttributionRequest(name, model, with_gold, template, use_cache)


def with_configured_model(request: AttributionRequest, settings: Settings) -> AttributionRequest:
    """``request`` with its model, or else the configured one (``model`` in config.toml,
    ``WHENPRO_MODEL``), for an LLM protocol.

    Raises:
        ConfigError: neither names a model (the configured default is ``heuristic``).
    """
    name = (request.model or settings.model or "heuristic").strip()
    if name.lower() == "heuristic":
        raise ConfigError(
            f"protocol {request.protocol} needs a model",
            expected="--model provider:model, or model in config.toml / "
            "WHENPRO_MODEL (or --protocol heuristic offline)",
        )
    return AttributionRequest(request.protocol, name, request.with_gold, request.template, request.use_cache)


def offline_protocols(trace: Trace) -> frozenset[str]:
    """The protocols that run on ``trace`` without a model: the heuristic, and the
    counterfactual on a run it can replay offline
    (:func:`~whenpro_core.attribution.counterfactual.replayable_offline`)."""
    from whenpro_core.attribution.counterfactual import replayable_offline  # start-up: see the imports

    return frozenset({"heuristic", *(("counterfactual",) if replayable_offline(trace) else ())})


def make_request(
    trace: Trace, protocol: str, model: str | None, with_gold: bool, settings: Settings | None
) -> AttributionRequest:
    """Check the TUI dialog's choice and return the request to run.

    ``model`` is what the user picked or typed; empty means the configured default.
    ``with_gold`` is dropped when the trace has no gold answer. Nothing is opened here.

    Raises:
        ConfigError: unknown protocol; an LLM protocol with no model (the default model
            is ``heuristic``), a malformed model name, no API key or base URL for it, or
            settings that could not be loaded (``settings`` is ``None``).
    """
    from whenpro_core.config import load_settings  # start-up: see the imports
    from whenpro_core.llm.endpoints import require_endpoint
    from whenpro_core.llm.models import parse_model

    protocol = protocol_name(protocol)
    with_gold = with_gold and trace_has_gold(trace)
    if protocol == "heuristic" or (
        protocol == "counterfactual" and not (model or "").strip() and protocol in offline_protocols(trace)
    ):
        return AttributionRequest(protocol, None, with_gold)
    if settings is None:
        settings = load_settings()  # raises the ConfigError that made it None
    name = (model or "").strip() or settings.model
    spec = parse_model(name, api=settings.api)
    if spec is None:
        raise ConfigError(
            f"protocol {protocol} needs a model",
            expected="a provider:model such as openai:gpt-4.1 (or the heuristic protocol, offline)",
        )
    require_endpoint(spec, settings)
    return AttributionRequest(protocol, spec.name, with_gold)


# --------------------------------------------------------------------------- running a request


class MeteredJudge:
    """A judge that adds up its calls as they are answered, so a UI can show calls,
    tokens and cost while a protocol runs. ``asked``: calls started; ``usage``: summed
    usage of the answered ones (answers from the response cache with their original usage;
    ``seconds`` left at 0); ``spent``: what the answered ones cost now (cache hits: 0);
    ``closed``: :meth:`aclose` ran."""

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.model = judge.model
        self.multimodal = judge.multimodal
        self.budget_tokens = judge.budget_tokens
        self.asked = 0
        self.usage = Usage()
        self.spent = Usage()
        self.closed = False

    @property
    def context_window(self) -> int | None:
        """The wrapped judge's context window (protocols fit requests to it), if known."""
        window = getattr(self.judge, "context_window", None)
        return window if isinstance(window, int) else None

    @property
    def answer_tokens(self) -> int:
        """The wrapped judge's most answer tokens (0 when it does not say)."""
        tokens = getattr(self.judge, "answer_tokens", 0)
        return tokens if isinstance(tokens, int) else 0

    @property
    def retry_note(self) -> str | None:
        """What the backend is waiting to retry (see ``Backend.retry_note``), if anything."""
        backend = getattr(self.judge, "backend", None)
        return getattr(backend, "retry_note", None)

    async def ask(
        self,
        messages: list[Message],
        schema: type[BaseModel] | None = None,
        readable: Callable[[str, BaseModel | None], bool] | None = None,
        call: CallSettings | None = None,
    ) -> JudgeReply:
        """Ask the wrapped judge; raises what it raises."""
        self.asked += 1
        reply = await self.judge.ask(messages, schema, readable, call)
        self.usage = self.usage.add(reply.usage.model_copy(update={"seconds": 0.0}))
        self.spent = self.spent.add(reply.spent_now.model_copy(update={"seconds": 0.0}))
        return reply

    async def aclose(self) -> None:
        """Close the wrapped judge once."""
        if not self.closed:
            self.closed = True
            close = getattr(self.judge, "aclose", None)
            if close is not None:
                await close()


def open_judge(model: str, settings: Settings | None = None, *, use_cache: bool = True) -> MeteredJudge:
    """Open a metered judge for ``model``, importing the provider's SDK first (call it in
    a thread: the import takes about a second). Raises ConfigError like
    :func:`~whenpro_core.attribution.llm_judge.make_judge`."""
    from whenpro_core.attribution.llm_judge import make_judge  # start-up: see the imports
    from whenpro_core.llm.generation import preload_sdk

    with contextlib.suppress(ImportError):  # the backend reports a missing SDK when it is used
        preload_sdk(model, settings)
    return MeteredJudge(make_judge(model, settings=settings, use_cache=use_cache))


async def run_request(
    trace: Trace,
    request: AttributionRequest,
    *,
    settings: Settings | None = None,
    progress: ProgressCallback | None = None,
    on_judge: Callable[[MeteredJudge], None] | None = None,
) -> Attribution:
    """Run ``request`` on ``trace``: open the judge (in a thread) when the request names a
    model, run the protocol, close the judge whatever happens (also when the awaiting
    task is cancelled). ``settings`` default to :func:`~whenpro_core.config.load_settings`;
    ``on_judge`` receives the metered judge as soon as it is open. Nothing is saved.

    Raises:
        ConfigError: the judge cannot be opened (bad model name, no API key or base URL),
            an LLM protocol without a model, a ``template`` with another protocol than
            all-at-once.
        BackendError: the backend failed after its retries.
    """
    import asyncio  # start-up: the CLI's offline heuristic (offline_verdict) needs no event loop

    judge: MeteredJudge | None = None
    try:
        if request.model is not None:
            judge = await asyncio.to_thread(open_judge, request.model, settings, use_cache=request.use_cache)
            if on_judge is not None:
                on_judge(judge)
        return await attribute(
            trace,
            request.protocol,
            judge=judge,
            with_gold=request.with_gold,
            progress=progress,
            template=request.template,
        )
    finally:
        if judge is not None:
            await judge.aclose()


def offline_verdict(trace: Trace, request: AttributionRequest) -> Attribution:
    """The heuristic's verdict for ``request`` (protocol ``heuristic``) in this thread:
    the empty verdict for a successful run (:func:`~whenpro_core.attribution.run.nothing_to_attribute`),
    else :func:`~whenpro_core.attribution.heuristic.attribute_heuristic`."""
    if trace.outcome == Outcome.success:
        return nothing_to_attribute(trace, request.protocol, None, request.with_gold)
    return attribute_heuristic(trace, with_gold=request.with_gold)


__all__ = [
    "AttributionRequest",
    "MeteredJudge",
    "make_request",
    "offline_protocols",
    "offline_verdict",
    "open_judge",
    "request_from_options",
    "run_request",
    "with_configured_model",
]
