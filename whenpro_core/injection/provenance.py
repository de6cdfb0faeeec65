"""Reading a counterfactual back: from its injection provenance (``Trace.injection``,
:mod:`whenpro_core.trace.extras`, written by
:func:`~whenpro_core.injection.inject.inject`), the seed run it came from, the
verification verdict as one headline, and whether an attribution finds the injected step
(docs/architecture.md, 'Injection and warm-start replay' step 3; the
TUI's diff screen and the ``d`` key use these)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from whenpro_core.errors import TraceFormatError, WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.injection.verify import Verdict
from whenpro_core.storage.fsutil import safe_name
from whenpro_core.trace.model import Attribution, GroundTruth, Trace
from whenpro_core.trace.score import score_prediction


def verdict_of(trace: Trace) -> Verdict | None:
    """The verdict recorded in the provenance, or ``None`` (missing or malformed)."""
    inj = trace.injection
    data = inj.verdict if inj is not None else None
    if data is None:
        return None
    try:
        return Verdict(**{k: data[k] for k in Verdict.__dataclass_fields__ if k in data})
    except TypeError:
        return None


@dataclass(frozen=True)
class Headline:
    """The outcome of an injection in one line: ``kind`` is ``decisive`` (kept),
    ``not_kept`` (decisive, dropped by a filter), ``succeeds`` (the run still succeeds),
    ``seed_failed`` (the seed failed too) or ``unknown``; ``text`` is what to show."""

    kind: str
    text: str


def headline(verdict: Verdict) -> Headline:
    """``now fails — decisive``, ``still succeeds``, ``not kept: <filter reason>``, ...
    (the wording of ``whenpro inject``'s summary)."""
    if verdict.counterfactual_success is True:
        return Headline("succeeds", "still succeeds — not decisive")
    if verdict.counterfactual_success is None:
        return Headline("unknown", "outcome unknown — not decisive")
    if not verdict.original_success:
        return Headline("seed_failed", "fails, but the seed run failed too — not decisive")
    if verdict.kept:
        return Headline("decisive", "now fails — decisive")
    reasons = []
    if verdict.revealing:
        reasons.append(
            "the injected text reveals the construction (" + ", ".join(repr(p) for p in verdict.revealing) + ")"
        )
    if verdict.gold_visible_before_t:
        reasons.append("the gold answer was visible before the injected step")
    return Headline("not_kept", "now fails, but not kept: " + ("; ".join(reasons) or "a filter dropped it"))


def seed_candidates(cf: Trace) -> list[Path]:
    """Where the seed of ``cf`` may be, in order: its ``seed_ref`` (as given, then next to
    ``cf``'s file, then under its dataset root), then ``<seed id>.json`` next to ``cf``'s
    file (where ``whenpro inject`` and the TUI write counterfactuals)."""
    inj = cf.injection
    here = Path(cf.source.path).parent if cf.source.path else None
    out: list[Path] = []
    if inj is None:
        return out
    ref = inj.seed_ref
    if ref is not None and ref.strip():
        path = Path(ref.split("#", 1)[0])
        out.append(path)
        if not path.is_absolute():
            if here is not None:
                out.append(here / path)
            if cf.source.root:
                out.append(Path(cf.source.root) / path)
    if here is not None and inj.seed_trace:
        out.append(here / f"{safe_name(inj.seed_trace)}.json")
    return list(dict.fromkeys(out))


def load_seed(cf: Trace) -> Trace:
    """The seed run of the counterfactual ``cf`` (the first of :func:`seed_candidates`
    that exists and holds a trace with the seed's id; a ``seed_ref`` with ``#key`` picks
    that trace of its file).

    Raises WhenproError when ``cf`` has no injection provenance, or naming the places
    tried when none holds the seed."""
    inj = cf.injection
    if inj is None:
        raise WhenproError(
            "this trace has no injection provenance",
            json_path="$.extras.injection",
            expected="a counterfactual written by whenpro inject",
        )
    ref = inj.seed_ref or ""
    key = ref.split("#", 1)[1] if "#" in ref else None
    tried = seed_candidates(cf)
    for path in tried:
        if not path.is_file():
            continue
        try:
            seed = load_trace(f"{path}#{key}" if key else str(path))
        except WhenproError:
            continue
        if seed.id == inj.seed_trace:
            return seed
    where = ", ".join(str(p) for p in tried) or "nowhere (the counterfactual has no file and no seed_ref)"
    raise TraceFormatError(
        f"seed run {inj.seed_trace!r} not found", path=cf.source.path, expected=f"the seed at one of: {where}"
    )


def injected_truth(cf: Trace) -> GroundTruth | None:
    """What an attribution of ``cf`` should name: its ground truth when the injection was
    decisive, else the injected step from the provenance (agent, coordinate, mode)."""
    if cf.ground_truth is not None:
        return cf.ground_truth
    inj = cf.injection
    if inj is None or inj.step is None:
        return None
    return GroundTruth(agent=inj.agent, step=inj.step, step_index=inj.step_index, mode=inj.mode)


@dataclass(frozen=True)
class AttributionCheck:
    """Whether an attribution of a counterfactual names the injected step: ``found``
    (the step coordinate matches), ``agent_ok``/``mode_ok`` and the ``text`` to show,
    e.g. ``heuristic found step 4 ✓`` or ``heuristic named step 2 ✗ (injected: 4)``."""

    found: bool
    agent_ok: bool
    mode_ok: bool | None
    text: str


def check_attribution(cf: Trace, attribution: Attribution) -> AttributionCheck | None:
    """Score ``attribution`` against the injected step of ``cf``
    (:func:`whenpro_core.trace.score.score_prediction`); ``None`` when ``cf`` has no
    injection to compare with."""
    truth = injected_truth(cf)
    if truth is None:
        return None
    score = score_prediction(cf, attribution, gt=truth)
    who = attribution.protocol or "attribution"
    said = f"{attribution.agent or '?'}, {attribution.mode or '?'}"
    if attribution.step in (None, ""):
        text = f"{who} named no step ✗ (injected: step {truth.step})"
    elif score.step:
        text = f"{who} found step {attribution.step} ✓ ({said})"
    else:
        text = f"{who} named step {attribution.step} ✗ ({said}; injected: step {truth.step})"
    return AttributionCheck(score.step, score.agent, score.mode, text)


__all__ = [
    "AttributionCheck",
    "Headline",
    "check_attribution",
    "headline",
    "injected_truth",
    "load_seed",
    "seed_candidates",
    "verdict_of",
]
