"""The counterfactual search as the final pass of a live watch (``whenpro watch
--protocol counterfactual``, issue 32): when a followed run ends, its steps are corrected
and the rest replayed as ``whenpro attribute --protocol counterfactual`` does
(:func:`~whenpro_core.attribution.counterfactual.attribute_counterfactual`), with the same
parts (:func:`~whenpro_core.attribution.counterfactual.default_parts`): a built-in system's
run that carries its environment (or sits in a built dataset with ``provenance.json``) is
corrected by its reference policy and replayed offline; with a model, the model fixes the
step and plays the rest. The step flagged live, if any, is tried first.

The search runs in a thread (replays block); its events come after it, in order: one
:class:`~whenpro_core.live.events.ReplayTried` per tested step, the
:class:`~whenpro_core.live.events.FinalVerdict`, and a
:class:`~whenpro_core.live.events.DecisiveError` when a replay confirmed a step and
none was flagged live. A run that cannot be replayed (no environment, no model; no gold
answer to check a replay against) is one :class:`~whenpro_core.live.events.JudgeFailed`
line saying why.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

from whenpro_core.errors import WhenproError
from whenpro_core.live.events import DecisiveError, FinalVerdict, JudgeFailed, ReplayTried
from whenpro_core.trace.model import Outcome, Trace

#: The final pass's protocol name (``LiveJudge(final_protocol=...)``).
COUNTERFACTUAL = "counterfactual"


def _search(trace: Trace, model: str | None, first: int | None, cancel: threading.Event) -> tuple[Any, Any]:
    """The blocking search: ``(verdict, run)``. Raises WhenproError (ReplayError,
    ConfigError) for a run it cannot replay or check."""
    from whenpro_core.attribution.counterfactual import attribute_counterfactual, default_parts, heuristic_ranking

    executor, corrector = default_parts(trace, model)
    ranking = heuristic_ranking(trace)
    if first is not None:
        ranking = [first, *(i for i in ranking if i != first)]
    return attribute_counterfactual(trace, executor, corrector, ranking=ranking, cancel=cancel)


async def counterfactual_pass(
    trace: Trace, model: str | None, *, first: int | None = None, flagged: bool = False
) -> AsyncIterator[Any]:
    """Search the ended run ``trace`` (see the module doc). ``model``: ``provider:model``
    to fix steps with (``None``: offline, a built-in system's run only); ``first``: the
    step index flagged live, tried first; ``flagged``: a DecisiveError was already sent
    (none is sent again). A run whose outcome is ``success`` has nothing to search."""
    if trace.outcome == Outcome.success:
        return
    cancel = threading.Event()
    try:
        verdict, run = await asyncio.to_thread(_search, trace, model, first, cancel)
    except WhenproError as exc:
        yield JudgeFailed(trace.id, f"counterfactual final pass skipped: {exc.one_line()}")
        return
    finally:
        cancel.set()  # a cancelled watch stops the replays between steps
    for t in run.tries:
        yield ReplayTried(trace.id, t.coord, t.agent, t.outcome, t.final_answer, t.detail)
    yield FinalVerdict(trace.id, verdict)
    if run.fixed_index is not None and not flagged and verdict.step is not None:
        step = trace.steps[run.fixed_index]
        yield DecisiveError(
            trace.id, step.index, verdict.step, verdict.agent or step.agent, verdict.mode, verdict.reason,
            COUNTERFACTUAL, verdict,
        )  # fmt: skip


__all__ = ["COUNTERFACTUAL", "counterfactual_pass"]
