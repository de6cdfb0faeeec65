"""Step-aligned diff of two trajectories (an original and its counterfactual), as data for
the TUI's diff view and for reports.

Steps are compared on what an agent or judge sees: ``agent``, ``kind``, ``content``,
``tool_calls``, ``observation``, ``error`` and ``media`` — never ``hidden`` labels, ``meta``,
``raw`` or ``index``. The shared prefix is the longest run of equal steps from the start;
after it the remainders are aligned with :class:`difflib.SequenceMatcher` on
``(agent, kind, content)``, and a replaced block pairs its steps one to one (``changed``)
with any excess reported as ``added``/``removed``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field


from whenpro_core import jsonio
from whenpro_core.model import Step, Trace

COMPARED = ("agent", "kind", "content", "tool_calls", "observation", "error", "media")


@dataclass
class DiffRow:
    """One aligned row: ``op`` is ``same``, ``changed``, ``added`` (only in the
    counterfactual) or ``removed`` (only in the original); ``a``/``b`` are indexes into the
    original's and the counterfactual's steps (``None`` on the missing side), ``a_coord``/
    ``b_coord`` their coordinates, ``fields`` the compared fields that differ."""

    op: str
    a: int | None
    b: int | None
    a_coord: str | None = None
    b_coord: str | None = None
    fields: list[str] = field(default_factory=list)


@dataclass
class TraceDiff:
    """The diff of two traces: ``shared_prefix`` (equal leading steps), ``rows`` (every
    step of both, aligned), and the final answers and outcomes of each side."""

    shared_prefix: int
    rows: list[DiffRow]
    final_answer_a: str | None
    final_answer_b: str | None
    outcome_a: str
    outcome_b: str

    @property
    def changed(self) -> list[DiffRow]:
        """Rows whose step differs on both sides."""
        return [r for r in self.rows if r.op == "changed"]

    @property
    def added(self) -> list[DiffRow]:
        """Steps only in the counterfactual."""
        return [r for r in self.rows if r.op == "added"]

    @property
    def removed(self) -> list[DiffRow]:
        """Steps only in the original."""
        return [r for r in self.rows if r.op == "removed"]

    @property
    def final_answer_changed(self) -> bool:
        """The two runs ended with different final answers."""
        return (self.final_answer_a or "").strip() != (self.final_answer_b or "").strip()


def _view(step: Step) -> dict:
    return step.model_dump(mode="json", include=set(COMPARED))


def differing_fields(a: Step, b: Step) -> list[str]:
    """The compared fields (module docstring) on which two steps differ."""
    va, vb = _view(a), _view(b)
    return [f for f in COMPARED if jsonio.dumps(va[f]) != jsonio.dumps(vb[f])]


def diff_traces(a: Trace, b: Trace) -> TraceDiff:
    """Align the steps of ``a`` (original) and ``b`` (counterfactual)."""
    sa, sb = a.steps, b.steps
    prefix = 0
    while prefix < min(len(sa), len(sb)) and not differing_fields(sa[prefix], sb[prefix]):
        prefix += 1
    rows = [DiffRow("same", i, i, sa[i].coord, sb[i].coord) for i in range(prefix)]
    rest_a, rest_b = sa[prefix:], sb[prefix:]
    key = lambda s: jsonio.dumps([s.agent, s.kind, s.content])  # noqa: E731
    matcher = difflib.SequenceMatcher(None, [key(s) for s in rest_a], [key(s) for s in rest_b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                x, y = rest_a[i], rest_b[j]
                fields = differing_fields(x, y)
                rows.append(DiffRow("changed" if fields else "same", x.index, y.index, x.coord, y.coord, fields))
            continue
        pairs = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(pairs):
            x, y = rest_a[i1 + k], rest_b[j1 + k]
            rows.append(DiffRow("changed", x.index, y.index, x.coord, y.coord, differing_fields(x, y)))
        for i in range(i1 + pairs, i2):
            rows.append(DiffRow("removed", rest_a[i].index, None, rest_a[i].coord, None))
        for j in range(j1 + pairs, j2):
            rows.append(DiffRow("added", None, rest_b[j].index, None, rest_b[j].coord))
    return TraceDiff(prefix, rows, a.final_answer, b.final_answer, a.outcome.value, b.outcome.value)


def changed_lines(a: str, b: str) -> tuple[set[int], set[int]]:
    """Line numbers (0-based) of ``a`` that are not in ``b`` and of ``b`` that are not in
    ``a``, aligned with :class:`difflib.SequenceMatcher` (to highlight what changed in
    two versions of a step's text)."""
    la, lb = a.split("\n"), b.split("\n")
    only_a: set[int] = set()
    only_b: set[int] = set()
    matcher = difflib.SequenceMatcher(None, la, lb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            only_a.update(range(i1, i2))
            only_b.update(range(j1, j2))
    return only_a, only_b
