"""Per-step features of the learned attacker (issue 28): what a judge can see of each
candidate step, as numbers a learner can weigh.

Two feature sets:

* ``structural`` (the structural prior): where the step is and who acts — its rank, its
  relative position, its distance from the end, the run's length, the agent, the step
  kind, and the step's turn among its agent's steps;
* ``form``: the structural features plus how the step is written — length and share of
  digits (raw and against the agent's other steps), line count, departures from the
  agent's formatting habits, tool names and argument sizes, the consistency checks of
  :mod:`.checks` (text vs tool call, symbolic vs filled-in expression, a verdict with no
  check before it), repeats of the agent's own earlier steps, the previous and next
  agents, and novelty against the *other* traces of the dataset (share of line templates
  and word 3-grams no other group writes, distance to the nearest step of the same agent
  and kind in another group, how rare its transition from the previous step is) and,
  when honest runs are given (``--against``), the same novelty against them.

Novelty is counted leave-one-group-out: a trace's own group (itself, or every trace of
its seed run) is never its own reference. Features read only the judge view
(:class:`~whenpro_core.audit.view.AuditTrace`), never a label, an injection marker,
``extras`` or a raw entry. Categorical features (agent, kind, tool, neighbours) are
integer codes of a vocabulary built over the traces given (unsupervised).
"""

from __future__ import annotations

import difflib
import functools
import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from whenpro_core.audit.checks import call_mismatch, filled_mismatch, states_verdict, unchecked_verdict
from whenpro_core.audit.form import (
    CACHE_SIZE,
    departures,
    digit_share,
    line_templates,
    log_length,
    template,
    trace_shapes,
)
from whenpro_core.audit.view import AuditStep, AuditTrace

#: Features of the structural prior (position, agent, kind only).
STRUCTURAL: tuple[str, ...] = ("rank", "rel_pos", "from_end", "n_steps", "agent", "kind", "turn", "turn_from_end")
#: Categorical features (integer codes; the learner treats them as categories).
CATEGORICAL: frozenset[str] = frozenset({"agent", "kind", "tool", "prev_agent", "next_agent"})
#: Features of the form attacker past the structural ones.
FORM_ONLY: tuple[str, ...] = (
    "log_len",
    "log_len_rel",
    "digits",
    "digits_rel",
    "lines",
    "format_departs",
    "tool",
    "n_calls",
    "call_len",
    "obs_len",
    "call_mismatch",
    "filled_mismatch",
    "verdict",
    "unchecked_verdict",
    "repeat_own",
    "prev_agent",
    "next_agent",
    "novel_lines",
    "novel_ngrams",
    "nearest",
    "rare_transition",
    "novel_lines_honest",
    "novel_ngrams_honest",
    "nearest_honest",
    "rare_transition_honest",
)
FEATURE_SETS: dict[str, tuple[str, ...]] = {"structural": STRUCTURAL, "form": STRUCTURAL + FORM_ONLY}
#: How many steps of other groups (same agent and kind) the edit-distance novelty compares with.
NEAREST_CANDIDATES = 24
#: Similarities (edit-distance novelty, repeats) compare the first this many words of a step.
SIMILARITY_WORDS = 80
#: Repeats are looked for among the agent's last this many earlier steps.
REPEAT_WINDOW = 8

#: :func:`~.form.template`, remembered (a step's text is masked several times).
cached_template = functools.lru_cache(maxsize=1 << 16)(template)


def _words(text: str) -> list[str]:
    return cached_template(text).split()[:SIMILARITY_WORDS]


def _similarity(a: list[str], b: list[str], floor: float = 0.0) -> float:
    """difflib's ratio of two word lists, or ``floor`` when its quick bounds say it is lower."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() <= floor or matcher.quick_ratio() <= floor:
        return floor
    return max(floor, matcher.ratio())


@functools.lru_cache(maxsize=CACHE_SIZE)
def _ngrams(text: str, n: int = 3) -> frozenset[str]:
    """The word ``n``-grams of ``text``'s template, memoised by text (read once per split otherwise)."""
    words = cached_template(text).split()
    return frozenset(" ".join(words[i : i + n]) for i in range(max(0, len(words) - n + 1)))


def _transition(t: AuditTrace, step: AuditStep) -> str:
    """The step's move from the one before it: agents, kinds, tool use, verdict."""
    prev = t.steps[step.rank - 1] if step.rank else None
    before = f"{prev.agent}/{prev.kind}/{bool(prev.calls)}" if prev else "^"
    return f"{before}>{step.agent}/{step.kind}/{bool(step.calls)}/{states_verdict(step)}"


@dataclass
class Reference:
    """What the novelty features compare a step with: per group, the line templates, word
    3-grams and transitions its traces write, and steps by (agent, kind)."""

    lines: Counter[str] = field(default_factory=Counter)
    ngrams: Counter[str] = field(default_factory=Counter)
    transitions: Counter[str] = field(default_factory=Counter)
    by_group: dict[str, tuple[set[str], set[str], set[str]]] = field(default_factory=dict)
    steps: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)
    groups: int = 0

    @classmethod
    def of(cls, views: Sequence[AuditTrace]) -> Reference:
        ref = cls()
        for t in views:
            lines = {x for s in t.steps for x in line_templates(s.text)}
            grams = {g for s in t.steps for g in _ngrams(s.text)}
            moves = {_transition(t, s) for s in t.steps}
            old = ref.by_group.get(t.group)
            if old is None:
                ref.groups += 1
                old = (set(), set(), set())
                ref.by_group[t.group] = old
            tables = (ref.lines, ref.ngrams, ref.transitions)
            for mine, total, new in zip(old, tables, (lines, grams, moves), strict=True):
                total.update(new - mine)
                mine |= new
            for s in t.steps:
                ref.steps.setdefault((s.agent, s.kind), []).append((t.group, cached_template(s.text)))
        return ref

    def _others(self, key: str, table: int, group: str) -> int:
        total = (self.lines, self.ngrams, self.transitions)[table][key]
        own = self.by_group.get(group)
        return total - (1 if own is not None and key in own[table] else 0)

    def novelty(self, t: AuditTrace, step: AuditStep) -> tuple[float, float, float, float]:
        """(share of line templates no other group writes, share of word 3-grams no other
        group writes, 1 - best similarity to a step of the same agent and kind in another
        group, 1 / (1 + other groups making the same transition))."""
        if self.groups == 0:
            return 0.0, 0.0, 0.0, 0.0
        lines, grams = line_templates(step.text), _ngrams(step.text)
        novel_lines = sum(self._others(x, 0, t.group) == 0 for x in lines) / len(lines) if lines else 0.0
        novel_grams = sum(self._others(x, 1, t.group) == 0 for x in grams) / len(grams) if grams else 0.0
        rare = 1.0 / (1.0 + self._others(_transition(t, step), 2, t.group))
        return novel_lines, novel_grams, self._nearest(t.group, step), rare

    def _nearest(self, group: str, step: AuditStep) -> float:
        mine = cached_template(step.text)
        others = [x for g, x in self.steps.get((step.agent, step.kind), []) if g != group]
        if not others:
            return 1.0
        if mine in others:
            return 0.0
        others = sorted(set(others), key=lambda x: (abs(len(x) - len(mine)), x))[:NEAREST_CANDIDATES]
        words = mine.split()[:SIMILARITY_WORDS]
        best = 0.0
        for other in others:
            best = _similarity(words, other.split()[:SIMILARITY_WORDS], best)
        return 1.0 - best


def _relative(values: list[float], t: AuditTrace) -> list[float]:
    """Each value minus the median of its step's peers (the agent's other steps)."""
    out = []
    for s in t.steps:
        peers = [values[p.rank] for p in t.peers(s)]
        out.append(values[s.rank] - (statistics.median(peers) if peers else values[s.rank]))
    return out


def _repeat_own(t: AuditTrace, step: AuditStep) -> float:
    """Highest similarity (0..1) of the step's template to its agent's last
    :data:`REPEAT_WINDOW` earlier steps."""
    mine = _words(step.text)
    best = 0.0
    for prev in [p for p in t.steps[: step.rank] if p.agent == step.agent][-REPEAT_WINDOW:]:
        best = _similarity(mine, _words(prev.text), best)
    return best


@dataclass
class Vocab:
    """Integer codes of categorical values, 0 for none; codes are given in order of first sight."""

    codes: dict[str, int] = field(default_factory=dict)

    def code(self, value: str | None) -> float:
        if not value:
            return 0.0
        return float(self.codes.setdefault(value, len(self.codes) + 1))


def _structural(t: AuditTrace, step: AuditStep, vocab: Vocab) -> dict[str, float]:
    n = len(t.steps)
    mine = t.agent_steps(step.agent)
    turn = next(i for i, s in enumerate(mine) if s.rank == step.rank)
    return {
        "rank": float(step.rank),
        "rel_pos": step.rank / (n - 1) if n > 1 else 0.0,
        "from_end": float(n - 1 - step.rank),
        "n_steps": float(n),
        "agent": vocab.code(f"agent:{step.agent}"),
        "kind": vocab.code(f"kind:{step.kind}"),
        "turn": float(turn),
        "turn_from_end": float(len(mine) - 1 - turn),
    }


def _tool(step: AuditStep) -> str | None:
    first = step.calls.split("(", 1)[0].strip() if step.calls else ""
    return f"tool:{first}" if first else None


def trace_features(
    t: AuditTrace, vocab: Vocab, dataset: Reference, honest: Reference | None = None
) -> list[dict[str, float]]:
    """Every feature of :data:`FEATURE_SETS` ``["form"]`` for each candidate step of ``t``
    (a list as long as ``t.steps``); ``dataset`` is the reference of the audited traces,
    ``honest`` that of honest runs (its novelty features are 0 without one)."""
    lengths = [log_length(s.text) for s in t.steps]
    digits = [digit_share(s.text) for s in t.steps]
    shapes = trace_shapes(t)
    checks = call_mismatch(t), filled_mismatch(t), unchecked_verdict(t)
    out = []
    for s in t.steps:
        row = _structural(t, s, vocab)
        novel = dataset.novelty(t, s)
        known = honest.novelty(t, s) if honest is not None else (0.0, 0.0, 0.0, 0.0)
        row.update(
            log_len=lengths[s.rank],
            digits=digits[s.rank],
            lines=math.log1p(s.text.count("\n") + 1),
            format_departs=sum(departures(shapes[s.rank], [shapes[p.rank] for p in t.peers(s)]).values()),
            tool=vocab.code(_tool(s)),
            n_calls=float(len(s.calls.splitlines())),
            call_len=log_length(s.calls),
            obs_len=log_length(s.observation),
            call_mismatch=checks[0][s.rank],
            filled_mismatch=checks[1][s.rank],
            verdict=float(states_verdict(s)),
            unchecked_verdict=checks[2][s.rank],
            repeat_own=_repeat_own(t, s),
            prev_agent=vocab.code(f"agent:{t.steps[s.rank - 1].agent}" if s.rank else None),
            next_agent=vocab.code(f"agent:{t.steps[s.rank + 1].agent}" if s.rank + 1 < len(t.steps) else None),
            novel_lines=novel[0],
            novel_ngrams=novel[1],
            nearest=novel[2],
            rare_transition=novel[3],
            novel_lines_honest=known[0],
            novel_ngrams_honest=known[1],
            nearest_honest=known[2],
            rare_transition_honest=known[3],
        )
        out.append(row)
    for name, rel in (("log_len_rel", _relative(lengths, t)), ("digits_rel", _relative(digits, t))):
        for row, value in zip(out, rel, strict=True):
            row[name] = value
    return out


__all__ = [
    "CATEGORICAL",
    "FEATURE_SETS",
    "FORM_ONLY",
    "NEAREST_CANDIDATES",
    "REPEAT_WINDOW",
    "Reference",
    "SIMILARITY_WORDS",
    "STRUCTURAL",
    "Vocab",
    "cached_template",
    "trace_features",
]
