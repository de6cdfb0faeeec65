"""Small made-up datasets whose label leak is known, for the audit tests.

Every trace is a two-agent run (``solver`` and ``checker`` taking turns, writing
alike) of a made-up shop task; the labelled step is any of its steps. A ``leak`` makes the labelled step
differ in one known way; ``"none"`` writes it like every other step.
"""

from __future__ import annotations

import random
from pathlib import Path

from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import Agent, GroundTruth, Outcome, Step, Task, Trace

ITEMS = ("apples", "pears", "plums", "figs", "limes", "kiwis", "dates", "grapes")
VERBS = ("add", "take", "count", "check", "sum", "note", "weigh", "list")
LEAKS = ("none", "format", "length", "digits", "template", "kind", "first", "hidden")


def solver_text(rng: random.Random, leak: str = "none") -> str:
    """One solver step: a thought and a fenced code block, in words drawn at random."""
    words = " ".join(rng.choice(VERBS + ITEMS) for _ in range(rng.randint(6, 14)))
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    thought = f"Thought: I {rng.choice(VERBS)} the {rng.choice(ITEMS)} {words}."
    code = f"Code:\n```py\nx = {a} + {b}\nprint(x)\n```"
    if leak == "format":
        return f"{thought}\n<code>\nx = {a} + {b}\nprint(x)\n</code>"
    if leak == "length":
        return thought + " " + " ".join(rng.choice(ITEMS) for _ in range(160)) + "\n" + code
    if leak == "digits":
        return thought + " " + " ".join(str(rng.randint(1000, 99999)) for _ in range(40)) + "\n" + code
    if leak == "template":
        return f"{thought}\n{code}\nThe result is {a + b + 1}."
    return f"{thought}\n{code}"


def make_trace(
    i: int,
    leak: str,
    rng: random.Random,
    *,
    n_steps: int = 10,
    mode: str | None = None,
    query: str | None = None,
    at: int | None = None,
) -> Trace:
    """Trace ``t{i}``: ``n_steps`` steps, the solver and the checker taking turns, all
    written alike; the label on step ``at`` (uniform over the steps unless given; the
    first for ``leak="first"``), which carries the leak."""
    at = (0 if leak == "first" else rng.randrange(n_steps)) if at is None else at
    steps = [Step(index=0, coord=None, agent="user", kind="user", content="How many fruits?")]
    label = ("", "")
    for k in range(n_steps):
        bad = k == at
        kind = "answer" if (bad and leak == "kind") else "assistant"
        text = solver_text(rng, leak if bad else "none")
        coord, agent = str(len(steps)), ("solver", "checker")[k % 2]
        steps.append(
            Step(
                index=len(steps),
                coord=coord,
                agent=agent,
                kind=kind,
                content=text,
                hidden={"is_injected": True} if bad else {},
                raw={"is_injected": bad, "content": text},
                meta={"injected": bad},
            )
        )
        if bad:
            label = (agent, coord)
    extras = {"injection": {"step": label[1]}} if leak == "hidden" else {}
    return Trace(
        id=f"t{i:03d}",
        framework="toyshop",
        benchmark="shop",
        agents=[Agent(id="solver"), Agent(id="checker")],
        task=Task(query=query or f"Task {i}: how many fruits in basket {i}?", answer="7"),
        steps=steps,
        ground_truth=GroundTruth(agent=label[0], step=label[1], mode=mode or rng.choice(["R.2", "R.3"])),
        outcome=Outcome.failure,
        extras=extras,
    )


def make_seed(i: int, rng: random.Random, *, n_steps: int = 10, query: str | None = None) -> Trace:
    """A successful run with no label (a corpus run for ``--against``)."""
    t = make_trace(i, "none", rng, n_steps=n_steps, query=query)
    steps = [s.model_copy(update={"hidden": {}, "raw": None, "meta": {}}) for s in t.steps]
    return t.model_copy(update={"id": f"seed{i:03d}", "ground_truth": None, "outcome": Outcome.success, "steps": steps})


def dataset(leak: str, n: int = 40, seed: int = 7, **kw) -> list[Trace]:
    """``n`` labelled traces with the given leak."""
    rng = random.Random(seed)
    return [make_trace(i, leak, rng, **kw) for i in range(n)]


def write(traces: list[Trace], folder: Path) -> Path:
    """Write the traces as native files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for t in traces:
        write_trace(t, folder / f"{t.id}.json")
    return folder
