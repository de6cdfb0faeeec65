"""Attribution run interactively (the TUI's ``a`` key; issue "Attribution ... in CLI
and TUI", item 6): what a user can ask for, which models to offer, a judge that meters
its calls as they happen, and where a protocol's progress sits among the steps.

UI-free: the TUI turns these plain values into widgets, and the same calls work from a
script. Protocols and their progress events are those of docs/architecture.md, 'Attribution protocols'
(:mod:`whenpro_core.attribution.run`, :class:`~whenpro_core.attribution.judge.Progress`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from whenpro_core.attribution.binary_search import max_calls
from whenpro_core.attribution.counterfactual import replayable_offline
from whenpro_core.attribution.judge import CallSettings, JudgeReply, Progress, ProgressCallback
from whenpro_core.attribution.llm_judge import make_judge
from whenpro_core.attribution.protocols import PROTOCOLS, protocol_name
from whenpro_core.attribution.run import attribute, trace_has_gold
from whenpro_core.config import load_settings
from whenpro_core.errors import ConfigError
from whenpro_core.llm.endpoints import require_endpoint
from whenpro_core.llm.models import parse_model
from whenpro_core.safety.textsafe import plural
from whenpro_core.trace.coords import normalize_coord
from whenpro_core.trace.evidence import is_candidate
from whenpro_core.trace.model import Attribution, Trace, Usage
from whenpro_core.trace.score import score_prediction
from whenpro_core.views.search import find_coord

if TYPE_CHECKING:
    from pydantic import BaseModel

    from whenpro_core.attribution.judge import Judge
    from whenpro_core.attribution.prompts import Message
    from whenpro_core.config import Settings
    from whenpro_core.trace.score import AxisScore

#: A well-known model per provider, offered when that provider's key is configured.
SUGGESTED = {"openai": "openai:gpt-4.1", "anthropic": "anthropic:claude-sonnet-4-6"}


@dataclass(frozen=True)
class AttributionRequest:
    """What to run: a canonical ``protocol`` name, the ``model`` (``provider:model``;
    ``None`` for ``heuristic``) and whether the judge sees the gold answer."""

    protocol: str
    model: str | None = None
    with_gold: bool = True

    @property
    def label(self) -> str:
        """``"heuristic"`` or ``"step-by-step · openai:gpt-4.1"``."""
        return self.protocol if self.model is None else f"{self.protocol} · {self.model}"


@dataclass(frozen=True)
class ModelChoice:
    """A model to offer: ``name`` (``provider:model``) and why it is offered."""

    name: str
    note: str


def model_choices(settings: Settings | None, previous: Iterable[Attribution] = ()) -> list[ModelChoice]:
    """Models to offer for an LLM protocol, without duplicates, in this order: the
    configured default model (``model`` setting), provider-qualified models named in the
    user's ``prices`` table, models of earlier verdicts on this trace, and a well-known
    model of each provider whose API key is set. ``heuristic`` is never offered (it is a
    protocol here, not a model)."""
    out: dict[str, str] = {}

    def add(name: str, note: str) -> None:
        try:
            spec = parse_model(name)
        except ConfigError:
            return
        if spec is not None and spec.name not in out:
            out[spec.name] = note

    if settings is not None:
        add(settings.model, "configured default")
        for key in settings.prices:
            if ":" in key:
                add(key, "from config prices")
    for verdict in previous:
        if verdict.model and verdict.model != "heuristic":
            add(verdict.model, "used on this trace")
    if settings is not None:
        if settings.openai_api_key is not None:
            add(SUGGESTED["openai"], "OPENAI_API_KEY is set")
        if settings.anthropic_api_key is not None:
            add(SUGGESTED["anthropic"], "ANTHROPIC_API_KEY is set")
    return [ModelChoice(name, note) for name, note in out.items()]


def offline_protocols(trace: Trace) -> frozenset[str]:
    """The protocols that run on ``trace`` without a model: the heuristic, and the
    counterfactual on a run it can replay offline
    (:func:`~whenpro_core.attribution.counterfactual.replayable_offline`)."""
    return frozenset({"heuristic", *(("counterfactual",) if replayable_offline(trace) else ())})


def protocol_notes(trace: Trace) -> dict[str, str]:
    """A short cost note per protocol for ``trace`` (calls counted over the agent steps
    a judge is asked about; docs/architecture.md, 'Attribution protocols')."""
    n = sum(1 for s in trace.steps if is_candidate(s))
    return {
        "heuristic": "offline, no model",
        "all-at-once": "1 call, the whole transcript",
        "step-by-step": f"up to {plural(n, 'call')}, one step at a time",
        "binary-search": f"at most {plural(max_calls(max(n, 1)), 'call')}, halving the range",
        "hybrid": "all-at-once for the agent, then its steps",
        "counterfactual": (
            "offline: replays a fix of each candidate step (a built-in system's run)"
            if "counterfactual" in offline_protocols(trace)
            else "a model fixes each candidate step and plays the rest"
        ),
    }


def make_request(
    trace: Trace, protocol: str, model: str | None, with_gold: bool, settings: Settings | None
) -> AttributionRequest:
    """Check a user's choice and return the request to run.

    ``model`` is what the user picked or typed; empty means the configured default.
    ``with_gold`` is dropped when the trace has no gold answer. Nothing is opened here.

    Raises:
        ConfigError: unknown protocol; an LLM protocol with no model (the default model
            is ``heuristic``), a malformed model name, no API key or base URL for it, or
            settings that could not be loaded (``settings`` is ``None``).
    """
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
    sdk = "anthropic" if model.lower().startswith("anthropic:") else "openai"
    with contextlib.suppress(ImportError):  # the backend reports a missing SDK when it is used
        importlib.import_module(sdk)
    return MeteredJudge(make_judge(model, settings=settings, use_cache=use_cache))


async def run_request(
    trace: Trace,
    request: AttributionRequest,
    *,
    settings: Settings | None = None,
    progress: ProgressCallback | None = None,
    on_judge: Callable[[MeteredJudge], None] | None = None,
    use_cache: bool = True,
) -> Attribution:
    """Run ``request`` on ``trace``: open the judge (in a thread), run the protocol,
    close the judge whatever happens (also when the awaiting task is cancelled).
    ``on_judge`` receives the metered judge as soon as it is open. Nothing is saved.

    Raises:
        ConfigError: the judge cannot be opened.
        BackendError: the backend failed after its retries.
    """
    judge: MeteredJudge | None = None
    try:
        if request.model is not None:
            judge = await asyncio.to_thread(open_judge, request.model, settings, use_cache=use_cache)
            if on_judge is not None:
                on_judge(judge)
        return await attribute(trace, request.protocol, judge=judge, with_gold=request.with_gold, progress=progress)
    finally:
        if judge is not None:
            await judge.aclose()


# --------------------------------------------------------------------------- progress


@dataclass(frozen=True)
class ProgressView:
    """Where a protocol is in the trace: ``focus`` is the step (index) being asked
    about (step-by-step, the last call of binary search), ``shaded`` the indexes of the
    range still searched (binary search; the focus step for the others), ``text`` what
    is being asked and ``call`` the 1-based call number. All-at-once reads everything,
    so it has no focus and nothing shaded."""

    focus: int | None
    shaded: frozenset[int]
    text: str
    call: int


def coord_indexes(trace: Trace) -> dict[str, list[int]]:
    """Normalised step coordinate -> the indexes of the steps that carry it."""
    out: dict[str, list[int]] = {}
    for step in trace.steps:
        if step.coord is not None:
            out.setdefault(normalize_coord(step.coord), []).append(step.index)
    return out


def progress_view(trace: Trace, progress: Progress, index: dict[str, list[int]] | None = None) -> ProgressView:
    """Map a :class:`Progress` event onto the steps of ``trace`` (``index``: a cached
    :func:`coord_indexes`)."""
    index = coord_indexes(trace) if index is None else index
    text = progress.message or f"call {progress.call}"
    if progress.protocol == "all-at-once" or not progress.asking:
        return ProgressView(None, frozenset(), text, progress.call)
    found = sorted(i for c in progress.asking for i in index.get(normalize_coord(c), ()))
    if not found:
        return ProgressView(None, frozenset(), text, progress.call)
    if len(progress.asking) == 1:
        return ProgressView(found[0], frozenset(found), text, progress.call)
    return ProgressView(None, frozenset(range(found[0], found[-1] + 1)), text, progress.call)


# --------------------------------------------------------------------------- verdicts


def verdict_step_index(trace: Trace, verdict: Attribution) -> int | None:
    """The index of the step a verdict names (``None`` when it names none, or a
    coordinate that is not in the trace)."""
    if not verdict.step:
        return None
    return find_coord(trace, verdict.step)


def verdict_score(trace: Trace, verdict: Attribution) -> AxisScore | None:
    """Per-axis comparison with the trace's ground truth (docs/architecture.md, 'Scoring'), ``None`` when the
    trace has none."""
    if trace.ground_truth is None:
        return None

    return score_prediction(trace, verdict)


__all__ = [
    "PROTOCOLS",
    "AttributionRequest",
    "MeteredJudge",
    "ModelChoice",
    "ProgressView",
    "coord_indexes",
    "make_request",
    "model_choices",
    "open_judge",
    "progress_view",
    "protocol_notes",
    "run_request",
    "verdict_score",
    "verdict_step_index",
]
