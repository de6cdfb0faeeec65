"""Step-aligned diff of two trajectories (an original and its counterfactual), as data for
the TUI's diff view and for reports.

Steps are compared on what an agent or judge sees: ``agent``, ``kind``, ``content``,
``tool_calls``, ``observation``, ``error`` and ``media`` — never ``hidden`` labels, ``meta``,
``raw`` or ``index``. The shared prefix is the longest run of equal steps from the start;
after it the remainders are aligned with :class:`difflib.SequenceMatcher` on
``(agent, kind, content)``; inside a block that differs, steps are aligned again on their
signature ``(agent, kind, tool names)`` so two different runs of a task pair the planner's
step with the planner's and the search with the search (``changed``), and what has no
counterpart is ``added``/``removed``. Any two traces can be diffed: a counterfactual and
its seed, two attempts at one task, a run before and after a prompt change.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from whenpro_core.formats.native import model_json
from whenpro_core.safety.textsafe import clean
from whenpro_core.storage import jsonio
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Step, Trace

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
    def first_divergence(self) -> int | None:
        """Position in :attr:`rows` of the first row that is not ``same`` (``None``: the
        two runs have the same steps)."""
        return next((i for i, r in enumerate(self.rows) if r.op != "same"), None)

    @property
    def final_answer_changed(self) -> bool:
        """The two runs ended with different final answers."""
        return (self.final_answer_a or "").strip() != (self.final_answer_b or "").strip()


def _view(step: Step) -> JSONObject:
    view: JSONObject = model_json(step, include=set(COMPARED))  # any depth the readers take
    return view


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

    def key(s: Step) -> bytes:
        return jsonio.dumps([s.agent, s.kind, s.content])

    matcher = difflib.SequenceMatcher(None, [key(s) for s in rest_a], [key(s) for s in rest_b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=False):
                x, y = rest_a[i], rest_b[j]
                fields = differing_fields(x, y)
                rows.append(DiffRow("changed" if fields else "same", x.index, y.index, x.coord, y.coord, fields))
            continue
        _align_block(rest_a[i1:i2], rest_b[j1:j2], rows)
    return TraceDiff(prefix, rows, a.final_answer, b.final_answer, a.outcome.value, b.outcome.value)


def signature(step: Step) -> bytes:
    """What a step is, regardless of its words: agent, kind and the names of its tool calls."""
    return jsonio.dumps([step.agent, step.kind, [c.name for c in step.tool_calls]])


def _align_block(xs: list[Step], ys: list[Step], rows: list[DiffRow]) -> None:
    """Append the rows of a block whose steps differ: pairs by :func:`signature`
    (``changed``, or ``same`` when equal after all), a replaced run paired one to one,
    the excess as ``removed``/``added``."""
    matcher = difflib.SequenceMatcher(None, [signature(x) for x in xs], [signature(y) for y in ys], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        pairs = min(i2 - i1, j2 - j1) if tag in ("equal", "replace") else 0
        for k in range(pairs):
            x, y = xs[i1 + k], ys[j1 + k]
            fields = differing_fields(x, y)
            rows.append(DiffRow("changed" if fields else "same", x.index, y.index, x.coord, y.coord, fields))
        for i in range(i1 + pairs, i2):
            rows.append(DiffRow("removed", xs[i].index, None, xs[i].coord, None))
        for j in range(j1 + pairs, j2):
            rows.append(DiffRow("added", None, ys[j].index, None, ys[j].coord))


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


def diff_lines(a: Trace, b: Trace, diff: TraceDiff, *, width: int = 100) -> list[str]:
    """The diff as plain lines for a terminal or a pipe: outcomes and final answers side
    by side, the first divergence, then one line per aligned row (``=`` same, ``≠``
    changed, ``−`` only in A, ``+`` only in B, ``▶`` the first divergence; the shared
    prefix folded to one line), each side at most ``(width - 5) // 2`` characters. A
    changed row shows each step from a little before where the two first differ."""
    half = max(20, (width - 5) // 2)
    first = diff.first_divergence
    out = [
        f"A {clean(a.id)} · {a.outcome.value} · final {clean(a.final_answer or '—')[:60]!r}",
        f"B {clean(b.id)} · {b.outcome.value} · final {clean(b.final_answer or '—')[:60]!r}",
    ]
    if first is None:
        out.append("The two runs have the same steps.")
    else:
        row = diff.rows[first]
        out.append(
            f"first divergence: A step {row_step(row.a_coord, row.a)} / B step {row_step(row.b_coord, row.b)} "
            f"({row.op}); "
            f"{len(diff.changed)} changed, {len(diff.removed)} only in A, {len(diff.added)} only in B"
        )
    if diff.shared_prefix:
        out.append(f"= steps 0–{diff.shared_prefix - 1} identical ({diff.shared_prefix})")
    marks = {"same": "=", "changed": "≠", "removed": "−", "added": "+"}
    for i, row in enumerate(diff.rows[diff.shared_prefix :], start=diff.shared_prefix):
        sa = a.steps[row.a] if row.a is not None else None
        sb = b.steps[row.b] if row.b is not None else None
        left, right = _side_by_side(sa, sb, half)
        note = _hidden_difference(sa, sb, row) if left == right and sa is not None and sb is not None else ""
        out.append(f"{left.ljust(half)} {'▶' if i == first else marks[row.op]} {right}{note}".rstrip())
    return out


def row_step(coord: str | None, index: int | None) -> str:
    """How a diff names one side's step: its coordinate, ``#index`` for a framing step
    (no coordinate: a system prompt, a task message), ``—`` when the side has none."""
    if coord:
        return clean(coord)
    return f"#{index}" if index is not None else "—"


#: How :func:`_hidden_difference` names the compared fields.
_FIELD_NAMES = {"tool_calls": "tool calls", "content": "content"}


def _hidden_difference(a: Step, b: Step, row: DiffRow) -> str:
    """For a changed row whose two sides print the same text: what differs, e.g.
    ``  [same text; differs in: content whitespace, tool calls]`` (``""`` for a same row)."""
    if row.op != "changed":
        return ""
    named = []
    for name in row.fields:
        whitespace = name == "content" and " ".join(a.content.split()) == " ".join(b.content.split())
        named.append("content whitespace" if whitespace else _FIELD_NAMES.get(name, name))
    return f"  [same text; differs in: {', '.join(named)}]"


def _step_text(step: Step, other: Step | None) -> str:
    """What a diff row shows of ``step``: its content (or error), or its observation when
    the content is the same as ``other``'s (the change is in what the step got back)."""
    text = step.content or step.error or ""
    if other is not None and text == (other.content or other.error or "") and step.observation != other.observation:
        return "observation: " + (step.observation or "")
    return text


def _side_by_side(sa: Step | None, sb: Step | None, half: int) -> tuple[str, str]:
    """The two sides of a diff row (``COORD AGENT: text``), ``half`` characters each at
    most. When the texts first differ past what fits, each shows ``…`` and its text from
    a little before that place, so the change is on screen however long the steps."""
    ta, tb = (_step_text(s, o) if s is not None else "" for s, o in ((sa, sb), (sb, sa)))
    start = 0
    if sa is not None and sb is not None and ta != tb:
        shared = common_prefix_len(ta, tb)
        start = 0 if shared < half - _HEAD_ROOM else shared - half // 3
    return _excerpt(sa, ta, start, half), _excerpt(sb, tb, start, half)


#: Characters of a diff row's side left for the coordinate, the agent and a little of the
#: change: a difference further in than ``half - _HEAD_ROOM`` is shown from just before it.
_HEAD_ROOM = 24


def _excerpt(step: Step | None, text: str, start: int, half: int) -> str:
    """``COORD AGENT: text`` from ``start`` (``…`` when cut), inert, one line, ``half`` long at most."""
    if step is None:
        return ""
    head = f"{clean(step.coord or '#' + str(step.index))} {clean(step.agent)}: "
    body = " ".join(clean(text[start : start + 4 * half]).split())
    return (head + ("…" if start else "") + body)[:half]


def common_prefix_len(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (halving with slice
    comparisons done in C: fast on megabyte steps)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
