"""Planning ``whenpro build``: which seed trajectories to use, and which (step, failure
mode) injections to attempt on each (docs/architecture.md, 'Injection and warm-start replay').

* **Seeds** (:func:`scan_seeds`): every trace under the seeds path (a folder of
  ``whenpro run`` outputs, imported traces, a JSONL file, a glob). Only successful runs
  are used (:func:`~whenpro_core.injection.verify.original_success`: the recorded
  outcome, else a check of the final answer against the gold answer); the others are
  skipped with a reason (``not_success``, ``outcome_unknown``, ``unreadable``,
  ``duplicate_id``, ``trivial`` (fewer than :data:`MIN_AGENT_STEPS` agent steps: too
  short for step attribution to mean anything), ``no_candidates``).
* **Candidate steps** (:func:`fitting_modes`): agent steps (not the user's task or a
  system prompt) with a coordinate, after the first step (warm start needs a recorded
  prefix), whose recorded ``error`` is empty (a step that errored is
  not a clean place to plant a new error), and that are not the final answer (an error
  there has nothing left to propagate through: it is decisive by construction, and
  every such label would sit on the last step). With the offline generator, a mode is tried
  only at steps where its mutator fits
  (:func:`~whenpro_core.injection.mutators.build_modes`: where its mutator fits and its error
  can be decisive); other generators may try
  every requested mode at every candidate step.
* **Attempts**: a seed gives up to ``per_seed * TRIES_PER_KEPT`` attempts, tried in
  order until ``per_seed`` are kept (so at most ``per_seed`` traces per seed run:
  twins, which share the prefix before the injected step, only when asked for).
* **Order** (:func:`attempt_order`): a seeded, reproducible order over the fitting
  (step, mode) pairs that spreads over steps first, then over modes: the candidate steps
  in a shuffled order, each with the fitting mode least tried so far. Choosing the step
  first keeps the labelled steps spread like the candidate steps (a mode that fits only
  one kind of step, such as PL.1 at plans, does not crowd the labels onto that kind of
  step, where a form-only baseline would find them). The order does not depend on ``--per-seed``, so
  ``--per-seed N`` takes its first N pairs and a later run with a larger N only adds
  attempts (the finished ones are in the journal).
"""

from __future__ import annotations

import contextlib
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from whenpro_core.audit.baselines import baseline
from whenpro_core.audit.checks import is_verdict
from whenpro_core.audit.corpus import Corpus, position_bin
from whenpro_core.audit.run import top_steps
from whenpro_core.audit.view import AuditTrace, Label, audit_view
from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.formats import load_trace, walk
from whenpro_core.injection.inject import check_mode
from whenpro_core.injection.mutators import MUTATORS, build_modes, ends_run, mutate
from whenpro_core.injection.textedit import is_agent_step
from whenpro_core.injection.verify import original_success
from whenpro_core.library.listing import split_list
from whenpro_core.storage.fsutil import safe_name
from whenpro_core.trace.model import Step, Trace

#: Reasons a seed trace is not used.
SEED_SKIP_REASONS = ("unreadable", "not_success", "outcome_unknown", "duplicate_id", "trivial", "no_candidates")
#: A seed run needs at least this many agent steps to be used.
MIN_AGENT_STEPS = 3
#: Attempts planned per wanted kept trace of a seed (an attempt that is not decisive
#: makes way for the next one of the same seed run).
TRIES_PER_KEPT = 8


@dataclass
class Seed:
    """One trace under the seeds path: its reference (``path`` or ``path#key``), id,
    the loaded trace (``None`` when unreadable), and ``skip`` (a reason from
    :data:`SEED_SKIP_REASONS`) with ``detail`` when it is not used. ``rel`` is the
    reference relative to the seeds folder (what dataset files record)."""

    ref: str
    id: str
    trace: Trace | None = None
    skip: str | None = None
    detail: str = ""
    rel: str = ""


@dataclass(frozen=True)
class Attempt:
    """One injection to try: seed ``seed_id`` (at ``seed_ref``; ``seed_rel`` relative to
    the seeds folder), step ``index`` (coordinate ``coord``), failure mode ``mode``."""

    seed_ref: str
    seed_id: str
    index: int
    coord: str
    mode: str
    seed_rel: str = ""

    @property
    def key(self) -> str:
        """Journal key ``<seed id>|<step index>|<mode>``."""
        return f"{self.seed_id}|{self.index}|{self.mode}"


@dataclass
class Plan:
    """Seeds found and the attempts chosen (in order)."""

    seeds: list[Seed] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def used(self) -> list[Seed]:
        """Seeds that give at least one attempt."""
        return [s for s in self.seeds if s.skip is None]


def parse_modes(text: str | list[str] | None, generator: str) -> tuple[str, ...]:
    """``"R.3,A.3"`` -> ``("R.3", "A.3")`` (canonical codes, order kept). Default: every
    mode with an offline mutator. ConfigError for a code outside the taxonomy, or (with
    the offline generator) a mode without a mutator."""
    codes = [check_mode(c) for c in split_list(text)] or list(MUTATORS)
    if generator == "offline":
        missing = [c for c in codes if c not in MUTATORS]
        if missing:
            raise ConfigError(
                f"no offline mutator for mode {', '.join(missing)}",
                expected=f"modes among {', '.join(MUTATORS)}, or --generator llm",
            )
    return tuple(dict.fromkeys(codes))


def scan_seeds(target: str | Path) -> list[Seed]:
    """Load every trace under ``target`` and mark the ones that cannot seed an injection.
    Raises TraceFormatError when ``target`` does not exist."""
    seeds: list[Seed] = []
    seen: set[str] = set()
    for row in walk(target):
        ref = str(Path(row.path).resolve()) + (f"#{row.key}" if row.key is not None else "")
        rel = _relative(ref, target)
        if row.error:
            seeds.append(Seed(ref, row.id, skip="unreadable", detail=row.error, rel=rel))
            continue
        try:
            trace = load_trace(ref)
        except WhenproError as exc:
            seeds.append(Seed(ref, row.id, skip="unreadable", detail=exc.one_line(), rel=rel))
            continue
        seed = Seed(ref, trace.id, trace, rel=rel)
        if safe_name(trace.id) in seen:  # ids name the dataset files: equal once made file-safe
            seed.skip, seed.detail = "duplicate_id", f"another seed has the id {trace.id!r}"
        elif (n := sum(1 for st in trace.steps if is_agent_step(st))) < MIN_AGENT_STEPS:
            seed.skip, seed.detail = "trivial", f"{n} agent steps (at least {MIN_AGENT_STEPS} needed)"
        else:
            ok = original_success(trace)
            if ok is None:
                seed.skip, seed.detail = "outcome_unknown", "no recorded outcome and no gold answer to check"
            elif not ok:
                seed.skip, seed.detail = "not_success", "the run did not reach the gold answer"
        seen.add(safe_name(trace.id))
        seeds.append(seed)
    return seeds


def _relative(ref: str, target: str | Path) -> str:
    """``ref`` relative to the seeds folder (or just the file name), for provenance
    that does not reveal the builder's own paths."""
    path, _, key = ref.partition("#")
    base = Path(target).resolve()
    base = base if base.is_dir() else base.parent
    try:
        rel = Path(path).relative_to(base).as_posix()
    except ValueError:
        rel = Path(path).name
    return rel + (f"#{key}" if key else "")


def candidate_steps(trace: Trace) -> list[int]:
    """Indices of the steps an injection may replace (module docstring)."""
    return [
        s.index
        for s in trace.steps
        if s.index >= 1 and s.coord is not None and is_agent_step(s) and not s.error and s.kind != "final_answer"
    ]


#: A list line: a numbered or bulleted item (as the audit's shape features read it).
_LIST_LINE = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+\S", re.MULTILINE)


def step_class(step: Step) -> str:
    """``agent/kind`` of a step, with ``/list`` for a step written as a list (two or more
    numbered or bulleted lines) and ``/verdict`` for a tool-less verdict (an approval, as
    the audit's :func:`~whenpro_core.audit.checks.is_verdict` reads it): the classes the
    released labels are balanced over. The
    form matters, not only the kind: issue 14 measured a third of arith_team's labels on
    the planner's full plan (its only list-shaped step) while its short intro and
    reviews, of the same kind, held none, and the audit's form classifier found the
    labelled step from the list shape alone; issue 28 a third of code_pair's labels on the
    tester's approvals (R.1, V.2), found by the learned form attacker from their wording."""
    listed = len(_LIST_LINE.findall(step.content or "")) >= 2
    verdict = not step.tool_calls and is_verdict(step.content or "")
    return f"{step.agent}/{step.kind}" + ("/list" if listed else "") + ("/verdict" if verdict else "")


def released_class(trace: Trace, index: int, mode: str, seed: int, *, offline: bool = True) -> str:
    """The :func:`step_class` step ``index`` of ``trace`` shows once ``mode`` is injected
    there, as the release balances it: with the offline generator the class of the
    mutated step (the mutation is a function of ``seed``, the build's ``--seed``; V.2 and
    R.1 at a tester's report of failures give an approval, ``.../verdict``), else, or when
    the mutator does not fit, the class of the seed step."""
    step = trace.steps[index]
    if offline and mode in MUTATORS:
        with contextlib.suppress(WhenproError):  # the mutator does not fit: the seed step's class
            step = mutate(trace, index, mode, seed).step
    return step_class(step)


def fitting_modes(trace: Trace, modes: tuple[str, ...], *, offline: bool = True) -> dict[int, list[str]]:
    """Candidate step index -> the requested modes that may be injected there. With the
    offline generator, not a mode whose mutation ends the run at a step before the
    :data:`MIN_AGENT_STEPS`-th agent step (:func:`~whenpro_core.injection.mutators.ends_run`):
    its item is ``trivial`` every time (code_pair's A.3 at the coder's first draft or the
    tester's first report: 71 attempts over five builds, none kept)."""
    out: dict[int, list[str]] = {}
    for i in candidate_steps(trace):
        fits = set(build_modes(trace, i)) if offline else set(modes)
        if offline and sum(1 for st in trace.steps[: i + 1] if is_agent_step(st)) < MIN_AGENT_STEPS:
            fits = {m for m in fits if not ends_run(trace, i, m)}
        chosen = [m for m in modes if m in fits]
        if chosen:
            out[i] = chosen
    return out


def attempt_order(trace: Trace, fits: dict[int, list[str]], seed: int) -> list[tuple[int, str]]:
    """Every fitting (step index, mode) pair in the seeded order of the module docstring:
    steps first (a seeded shuffle of the candidate steps, so the labelled step is spread
    like the candidate steps are and no kind of step is over-represented), each with the
    fitting mode this seed has tried least (ties: a seeded choice); then the remaining
    pairs in the same manner."""
    rng = random.Random(f"{trace.id}:{seed}")
    left = {i: list(modes) for i, modes in sorted(fits.items())}
    tried: dict[str, int] = {}
    out: list[tuple[int, str]] = []
    while any(left.values()):
        steps = [i for i in sorted(left) if left[i]]
        rng.shuffle(steps)
        for i in steps:
            least = min(tried.get(m, 0) for m in left[i])
            mode = rng.choice([m for m in left[i] if tried.get(m, 0) == least])
            left[i].remove(mode)
            tried[mode] = tried.get(mode, 0) + 1
            out.append((i, mode))
    return out


def plan_build(
    seeds: list[Seed],
    modes: tuple[str, ...],
    per_seed: int,
    *,
    seed: int = 0,
    offline: bool = True,
    tries: int = TRIES_PER_KEPT,
) -> Plan:
    """The attempts a build may run: for each usable seed, the first ``per_seed *
    tries`` pairs of :func:`attempt_order`, in order (the build runs a seed's attempts
    until ``per_seed`` of them are kept). Seeds with no fitting pair are marked
    ``no_candidates``."""
    if per_seed < 1:
        raise ConfigError(f"--per-seed {per_seed} is not a positive number", expected="1 or more")
    plan = Plan(seeds=seeds)
    for s in seeds:
        if s.skip is not None or s.trace is None:
            continue
        fits = fitting_modes(s.trace, modes, offline=offline)
        if not fits:
            s.skip, s.detail = "no_candidates", f"no error-free agent step fits {', '.join(modes)}"
            continue
        chosen: set[tuple[str, str]] = set()
        for index, mode in attempt_order(s.trace, fits, seed):
            coord = s.trace.steps[index].coord or str(index)
            if (coord, mode) in chosen:  # a coordinate shared by two steps names one trace
                continue
            chosen.add((coord, mode))
            plan.attempts.append(Attempt(s.ref, s.id, index, coord, mode, s.rel))
            if len(chosen) == per_seed * tries:
                break
    return plan


def judge_position(trace: Trace, coord: str, view: AuditTrace | None = None) -> int | None:
    """The position bin (0..9) of the step at ``coord`` among the candidate steps a judge
    sees in ``trace`` (the built trace, after its replay), as the audit's "common
    position" prior reads it (:func:`~whenpro_core.audit.corpus.position_bin`); ``None``
    when no candidate step has that coordinate. ``view``: ``trace``'s judge view, when the
    caller has it already."""
    view = view or audit_view(trace)
    rank = _rank(view, coord)
    return None if rank is None else position_bin(rank, len(view.steps))


#: The audit's form baselines that read one trace alone (no corpus, no labels), whose
#: picks a release holds no more of than chance would (the ``form_pick`` cap of
#: :func:`~whenpro_core.dataset.build_store.balance`).
LOCAL_FORM_BASELINES = ("format outlier", "length outlier", "digit outlier", "kind change")


def form_picks(trace: Trace, coord: str, view: AuditTrace | None = None) -> tuple[list[str], float | None]:
    """Which of :data:`LOCAL_FORM_BASELINES` pick the step at ``coord`` of ``trace`` (the
    built trace) as the audit does (its only top step, or one of two tied), and the
    random chance of picking it (1 / the judge's candidate steps; ``None`` when no
    candidate step has that coordinate). A tester's one-line approval is the shortest
    step of a code_pair run: R.1 and V.2 land there, and releases where they held a third
    of the labels were leaky by the length outlier (45% against 22% random). ``view``:
    ``trace``'s judge view, when the caller has it already."""
    view = view or audit_view(trace)
    rank = _rank(view, coord)
    if rank is None or not view.steps:
        return [], None
    return _picking(LOCAL_FORM_BASELINES, view, Corpus([], {}), rank), 1.0 / len(view.steps)


#: The audit's form baselines that read the other traces of the dataset (their line
#: templates, their labels): their picks are taken against the kept pool when the release
#: is selected (:func:`pool_form_picks`), since a built trace alone cannot tell them.
POOL_FORM_BASELINES = ("rarest template", "form classifier")


def pool_form_picks(pool: list[tuple[AuditTrace, str, Label | None]]) -> list[list[str]]:
    """For each ``(audit view of a built trace, coordinate of its labelled step, its
    label)`` of ``pool``, which of :data:`POOL_FORM_BASELINES` pick that step when the
    corpus is the pool itself (each trace read without itself), as ``whenpro audit``
    reads a dataset without ``--against``. Two code_pair releases were 13 and 11 points
    above random by the rarest template, and one 10.5 points by the form classifier,
    which the one-trace caps do not see."""
    corpus = Corpus([view for view, _, _ in pool], {view.id: label for view, _, label in pool if label is not None})
    out = []
    for view, coord, _ in pool:
        rank = _rank(view, coord)
        out.append([] if rank is None else _picking(POOL_FORM_BASELINES, view, corpus, rank))
    return out


def _rank(view: AuditTrace, coord: str) -> int | None:
    """The rank of the candidate step at ``coord`` in ``view`` (``None``: not a candidate)."""
    return next((s.rank for s in view.steps if s.coord == coord), None)


def _picking(names: tuple[str, ...], view: AuditTrace, corpus: Corpus, rank: int) -> list[str]:
    """The baselines of ``names`` whose top steps in ``view`` hold ``rank`` (one of at most two)."""
    picked = []
    for name in names:
        top = top_steps(baseline(name).score(view, corpus))
        if rank in top and len(top) <= 2:
            picked.append(name)
    return picked


__all__ = [
    "LOCAL_FORM_BASELINES",
    "POOL_FORM_BASELINES",
    "form_picks",
    "pool_form_picks",
    "judge_position",
    "Attempt",
    "MIN_AGENT_STEPS",
    "Plan",
    "SEED_SKIP_REASONS",
    "TRIES_PER_KEPT",
    "Seed",
    "attempt_order",
    "candidate_steps",
    "fitting_modes",
    "parse_modes",
    "plan_build",
    "scan_seeds",
    "step_class",
]
