"""A run as a tree with time (issue 32, item 7): steps nested by parent, each with its start,
duration, tokens and cost, rolled up per agent and per tool; what the trace screen's
waterfall (``w``) draws.

* **Nesting** (:func:`parents`): an OpenTelemetry span under its parent span
  (``meta["parent_span_id"]``), at least as deep as the importer's span depth
  (``meta["depth"]``: under an agent span that frames steps without being one); a Claude
  Code sub-agent's steps under the step whose ``Task`` call started them
  (``meta["parent_tool_use_id"]``); a tool result under the step whose call it answers
  (``meta["tool_use_id"]`` / ``meta["call_id"]`` / ``meta["tool_call_id"]`` against the
  calls' ids). Anything else is at the top level, in step order.
* **Time**: a step starts at ``meta["start_ns"]`` (spans) or ``meta["timestamp"]`` (ISO 8601,
  sessions), in seconds from the run's first start. It lasts its recorded ``duration_ms`` /
  ``latency_ms`` (:func:`whenpro_core.trace.usage.step_usage`), else until the next timed step
  starts (a session records when a message was written, not how long it took); the last such
  step has no duration. A trace with no times (Who&When) has rows without bars.
* **Usage**: tokens (in + out) and cost of each step as it records them; ``None`` when it
  records none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from whenpro_core.trace.model import Step, Trace
from whenpro_core.trace.usage import step_usage

#: Meta keys that name the tool call a step answers.
_ANSWER_KEYS = ("tool_use_id", "call_id", "tool_call_id")


def seconds_text(value: float | None) -> str:
    """``412 ms``, ``3.4 s``, ``12m05s``, ``2h03m``; ``—`` for ``None``."""
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.1f} s"
    if value < 3600:
        return f"{int(value // 60)}m{int(value % 60):02d}s"
    return f"{int(value // 3600)}h{int(value % 3600 // 60):02d}m"


@dataclass(frozen=True)
class WaterfallRow:
    """One step in the tree: its ``index`` in ``Trace.steps``, ``depth`` (0 = top level),
    ``start_s`` and ``duration_s`` (seconds from the run's start; ``None``: not recorded),
    ``tokens`` (in + out) and ``cost_usd`` (``None``: not recorded), and whether it holds an
    ``error``."""

    index: int
    depth: int
    start_s: float | None
    duration_s: float | None
    tokens: int | None
    cost_usd: float | None
    error: bool


@dataclass
class Rollup:
    """What the steps of one agent or one tool add up to: ``steps``, ``seconds`` (summed
    durations), ``tokens`` and ``cost_usd`` (each ``None`` while no step records any), ``errors``."""

    name: str
    steps: int = 0
    seconds: float | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    errors: int = 0

    def add(self, row: WaterfallRow) -> None:
        """Count one step's row in."""
        self.steps += 1
        if row.duration_s is not None:
            self.seconds = (self.seconds or 0.0) + row.duration_s
        if row.tokens is not None:
            self.tokens = (self.tokens or 0) + row.tokens
        if row.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + row.cost_usd
        self.errors += row.error


@dataclass(frozen=True)
class Waterfall:
    """The tree of a trace: ``rows`` in tree order (a parent before its children, siblings in
    step order), ``span_s`` (from the first start to the last end; ``None`` without times),
    and the roll-ups ``agents`` and ``tools`` (most steps first)."""

    rows: list[WaterfallRow]
    span_s: float | None
    agents: list[Rollup]
    tools: list[Rollup]

    def filtered(self, trace: Trace, *, errors_only: bool = False, tool: str | None = None) -> list[WaterfallRow]:
        """The rows to show: with ``errors_only`` the steps holding an error; with ``tool``
        the steps that call that tool or answer such a call."""
        out = self.rows
        if errors_only:
            out = [r for r in out if r.error]
        if tool is not None:
            out = [r for r in out if tool in step_tools(trace, trace.steps[r.index])]
        return out


def parents(trace: Trace) -> dict[int, int | None]:
    """Each step's parent step index (``None`` at the top level); see the module doc."""
    steps = trace.steps
    by_span = {str(s.meta["span_id"]): s.index for s in steps if s.meta.get("span_id")}
    by_call = {c.id: s.index for s in steps for c in s.tool_calls if c.id}
    out: dict[int, int | None] = {}
    for s in steps:
        parent = None
        span_parent = s.meta.get("parent_span_id")
        task = s.meta.get("parent_tool_use_id")
        answers = next((s.meta[k] for k in _ANSWER_KEYS if s.meta.get(k)), None)
        if span_parent and str(span_parent) in by_span:
            parent = by_span[str(span_parent)]
        elif task and task in by_call:
            parent = by_call[task]
        elif answers and answers in by_call and s.kind in ("tool", "observation", "user"):
            parent = by_call[answers]
        out[s.index] = parent if parent != s.index else None
    return out


def _tree_order(trace: Trace, parent: dict[int, int | None]) -> list[tuple[int, int]]:
    """``(index, depth)`` in tree order (a cycle, from broken links, is cut at its first step)."""
    children: dict[int | None, list[int]] = {}
    for s in trace.steps:
        children.setdefault(parent.get(s.index), []).append(s.index)
    out: list[tuple[int, int]] = []
    seen: set[int] = set()
    stack = [(i, 0) for i in reversed(children.get(None, []))]
    while stack:
        index, depth = stack.pop()
        if index in seen:
            continue
        seen.add(index)
        span_depth = trace.steps[index].meta.get("depth")
        if isinstance(span_depth, int) and not isinstance(span_depth, bool):
            depth = max(depth, span_depth)
        out.append((index, depth))
        stack += [(c, depth + 1) for c in reversed(children.get(index, []))]
    out += [(s.index, 0) for s in trace.steps if s.index not in seen]  # steps only a cycle reaches
    return out


def _start_s(step: Step) -> float | None:
    """The step's start in seconds since the epoch, or ``None``."""
    ns = step.meta.get("start_ns")
    if isinstance(ns, (int, float)) and not isinstance(ns, bool) and ns > 0:
        return float(ns) / 1e9
    stamp = step.meta.get("timestamp")
    if isinstance(stamp, str) and stamp:
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _durations(trace: Trace, starts: list[float | None]) -> list[float | None]:
    """Each step's duration: recorded, else until the next timed step (module doc)."""
    out: list[float | None] = []
    for i, step in enumerate(trace.steps):
        ms = step_usage(step).latency_ms
        if ms is not None:
            out.append(ms / 1000)
            continue
        nxt = next((t for t in starts[i + 1 :] if t is not None), None)
        here = starts[i]
        out.append(max(0.0, nxt - here) if here is not None and nxt is not None else None)
    return out


def step_tools(trace: Trace, step: Step) -> set[str]:
    """The tools ``step`` calls, or the tool whose call it answers."""
    names = {c.name for c in step.tool_calls}
    answers = next((step.meta[k] for k in _ANSWER_KEYS if step.meta.get(k)), None)
    if answers:
        names |= {c.name for s in trace.steps for c in s.tool_calls if c.id == answers}
    return names


def waterfall(trace: Trace) -> Waterfall:
    """The tree with time of ``trace`` (see the module doc). Never raises on odd metadata."""
    starts = [_start_s(s) for s in trace.steps]
    known = [t for t in starts if t is not None]
    origin = min(known) if known else None
    durations = _durations(trace, starts)
    rows: list[WaterfallRow] = []
    for index, depth in _tree_order(trace, parents(trace)):
        step = trace.steps[index]
        usage = step_usage(step)
        tokens = None
        if usage.input_tokens is not None or usage.output_tokens is not None:
            tokens = (usage.input_tokens or 0) + (usage.output_tokens or 0)
        at = starts[index]
        start = at - origin if at is not None and origin is not None else None
        rows.append(WaterfallRow(index, depth, start, durations[index], tokens, usage.cost_usd, bool(step.error)))
    ends = [r.start_s + (r.duration_s or 0.0) for r in rows if r.start_s is not None]
    agents: dict[str, Rollup] = {}
    tools: dict[str, Rollup] = {}
    for row in rows:
        step = trace.steps[row.index]
        agents.setdefault(step.agent, Rollup(step.agent)).add(row)
        for name in sorted(step_tools(trace, step)):
            tools.setdefault(name, Rollup(name)).add(row)
    return Waterfall(
        rows,
        max(ends) if ends else None,
        sorted(agents.values(), key=lambda r: (-r.steps, r.name)),
        sorted(tools.values(), key=lambda r: (-r.steps, r.name)),
    )
