"""A small benchmark dataset written for the bench tests: native traces with ground
truths in three frameworks (a multi-agent team, single-agent smolagents in text and
image, round-only debate), one unlabelled trace and one broken file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import Agent, GroundTruth, Modality, Outcome, Step, Task, Trace

#: Labelled traces in :func:`write_dataset` (the broken file and the unlabelled trace
#: are extra).
LABELLED = 6


def team_trace(n: int, *, wrong: str, gt_step: str, gt_agent: str, mode: str) -> Trace:
    """A planner/solver/verifier run whose solver makes a calculation slip."""
    query = f"A room has {n} rows of 12 seats. How many seats are there?"
    rows = [
        ("user", "user", query),
        ("planner", "plan", "Plan: solver multiplies rows by seats; verifier checks; reporter answers."),
        ("solver", "action", f"{n} rows x 12 seats = {wrong} seats."),
        ("verifier", "assistant", f"The total of {wrong} looks plausible; approved."),
        ("reporter", "final_answer", f"There are {wrong} seats."),
    ]
    steps = [
        Step(index=i, coord=None if kind == "user" else str(i), agent=a, kind=kind, content=c)
        for i, (a, kind, c) in enumerate(rows)
    ]
    return Trace(
        id=f"team-{n}",
        framework="whenpro-team",
        benchmark="seats",
        modality=Modality.text,
        agents=[Agent(id=a) for a in ("user", "planner", "solver", "verifier", "reporter")],
        task=Task(query=query, answer=str(n * 12)),
        steps=steps,
        ground_truth=GroundTruth(agent=gt_agent, step=gt_step, mode=mode),
        final_answer=f"There are {wrong} seats.",
        outcome=Outcome.failure,
    )


def smol_trace(n: int, *, modality: Modality, mode: str, gt_step: str) -> Trace:
    """A single-agent smolagents run: actions numbered 1.., the first entry is the task."""
    query = f"What is {n} squared plus one?"
    rows = [
        ("user", query),
        ("action", f"Compute {n} squared: {n * n + 3}."),
        ("action", f"Add one: {n * n + 4}."),
        ("final_answer", f"{n * n + 4}"),
    ]
    steps = [
        Step(index=i, coord=None if kind == "user" else str(i), agent="agent", kind=kind, content=c)
        for i, (kind, c) in enumerate(rows)
    ]
    return Trace(
        id=f"smol-{modality.value}-{n}",
        framework="smolagents",
        benchmark="arith",
        modality=modality,
        task=Task(query=query, answer=str(n * n + 1)),
        steps=steps,
        ground_truth=GroundTruth(agent=None, step=gt_step, mode=mode),
        final_answer=str(n * n + 4),
        outcome=Outcome.failure,
    )


def debate_trace(n: int, *, gt_round: str, agents: list[str], mode: str) -> Trace:
    """Two debaters over two rounds (coordinates R.P); labels name a round only."""
    query = f"Is {n} a prime number?"
    turns = [
        ("1.0", "alice", f"{n} is prime."),
        ("1.1", "bob", f"I agree, {n} is prime."),
        ("2.0", "alice", "Final: prime."),
        ("2.1", "bob", "Final: prime."),
    ]
    steps = [Step(index=0, coord=None, agent="user", kind="user", content=query)]
    steps += [Step(index=i + 1, coord=c, agent=a, kind="assistant", content=t) for i, (c, a, t) in enumerate(turns)]
    return Trace(
        id=f"debate-{n}",
        framework="debate",
        benchmark="primes",
        modality=Modality.text,
        agents=[Agent(id="alice"), Agent(id="bob")],
        task=Task(query=query, answer="no"),
        steps=steps,
        ground_truth=GroundTruth(agents=agents, step=gt_round, mode=mode, round_only=True),
        final_answer="prime",
        outcome=Outcome.failure,
    )


def write_dataset(root: Path) -> Path:
    """Write the dataset under ``root/data`` and return that folder."""
    data = root / "data"
    traces = [
        team_trace(7, wrong="74", gt_step="2", gt_agent="solver", mode="R.3"),
        team_trace(9, wrong="98", gt_step="2", gt_agent="solver", mode="R.3"),
        smol_trace(5, modality=Modality.text, mode="R.3", gt_step="1"),
        smol_trace(6, modality=Modality.image, mode="R.2", gt_step="2"),
        debate_trace(21, gt_round="1", agents=["alice", "bob"], mode="C.3"),
        debate_trace(33, gt_round="2", agents=["alice"], mode="R.2"),
    ]
    for t in traces:
        write_trace(t, data / t.framework / f"{t.id}.json")
    unlabelled = team_trace(4, wrong="44", gt_step="2", gt_agent="solver", mode="R.3")
    unlabelled.id, unlabelled.ground_truth = "team-unlabelled", None
    write_trace(unlabelled, data / "whenpro-team" / "unlabelled.json")
    (data / "broken").mkdir(parents=True)
    (data / "broken" / "broken.json").write_text('{"history": [')
    return data


#: Fields of records and reports that hold timing or provenance, not results.
TIMING = {"seconds", "finished_at", "created", "sources", "latency_s"}


def strip_timing(value: Any) -> Any:
    """``value`` (a JSON dump) without the :data:`TIMING` fields, at any depth."""
    if isinstance(value, dict):
        return {k: strip_timing(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [strip_timing(v) for v in value]
    return value


def differences(a: Any, b: Any, where: str = "$") -> list[str]:
    """JSON paths where ``a`` and ``b`` differ (for a readable failure)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=False)) for d in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]
