"""What ``whenpro run ENV`` does: run a built-in environment on ``n`` seeds and write one
native trace per run (successful and failed runs alike)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from whenpro_core.envs import get_env
from whenpro_core.envs.base import Env, Policy, build_trace, framing_step, run_loop
from whenpro_core.envs.llm_policy import LLMPolicy
from whenpro_core.errors import WhenproError
from whenpro_core.formats.native import write_trace
from whenpro_core.safety.textsafe import plural
from whenpro_core.trace.model import Step, Trace

#: Bits of a first seed drawn at random (``whenpro run`` without ``--seed``).
SEED_BITS = 40


def env_policy(env: Env, model: str | None) -> Policy:
    """The policy for ``--model``: ``reference`` (default; ``heuristic`` is a synonym)
    is the env's offline reference policy; anything else is a model playing every agent
    (:class:`~whenpro_core.envs.llm_policy.LLMPolicy`).

    Raises ConfigError for a model that is not usable (no key, bad name)."""
    if model in (None, "", "reference", "heuristic", "none"):
        return env.reference_policy()
    return LLMPolicy(env, model)


def run_env(
    env: Env, seed: int, *, model: str | None = None, on_step: Callable[[Step], None] | None = None, plain: bool = False
) -> Trace:
    """Run ``env`` on its task for ``seed`` with the policy for ``model`` (offline
    reference by default) and return the native trace, outcome checked against the
    task's gold answer or hidden tests. ``plain`` runs without a wording style (the
    original wording, no optional steps or slips: fixed examples and samples)."""
    task = env.make_task(seed)
    if plain:
        task.params["style"] = None
    policy = env_policy(env, model)
    steps = [framing_step(task.query)]
    if on_step is not None:
        on_step(steps[0])
    steps, reason = run_loop(env, task, policy, steps, env.live_tools(task), on_step=on_step)
    return build_trace(env, task, steps, reason, policy_name=policy.name)


#: Most runs one ``whenpro run`` makes (a bound on ``--n``: a mistyped count would
#: otherwise plan a file name for every run before the first one).
MAX_RUNS = 100_000


def run_many(
    env_name: str,
    n: int,
    out: Path,
    *,
    seed: int | None = 0,
    model: str | None = "reference",
    force: bool = False,
    echo: Callable[[str], None] = print,
) -> int:
    """Run ``env_name`` for seeds ``seed .. seed+n-1`` and write ``out/<trace id>.json``
    for each run (atomically), one at a time (nothing but the counts is held); returns the
    number of runs that succeeded. ``seed=None`` draws the first seed at random (from the
    system's entropy), so the same command run twice gives different runs; the seed
    decides the task and the agents' wording, and is printed so the maker can reproduce
    the runs with ``--seed``.

    Raises ConfigError for an unknown env, a bad ``n`` (1 .. :data:`MAX_RUNS`) or an unusable ``model`` (no key
    or base URL), BackendError when the model fails during a run, and WhenproError before running
    anything when an output file exists and ``force`` is not set."""
    env = get_env(env_name)
    env_policy(env, model)  # fail fast on an unavailable model
    if not 1 <= n <= MAX_RUNS:  # before the seed line: nothing is said about runs that never start
        raise WhenproError(f"--n must be 1 to {MAX_RUNS}, got {n}", expected="a number of runs in that range")
    if seed is None:
        seed = random.SystemRandom().getrandbits(SEED_BITS)
        echo(f"first seed {seed} (drawn at random; pass --seed {seed} to reproduce these runs)")
    if out.exists() and not out.is_dir():
        raise WhenproError("output exists and is a file", path=out, expected="a folder")
    targets = [out / f"{env.name}-s{s}.json" for s in range(seed, seed + n)]
    existing = next((t for t in targets if t.exists()), None)
    if existing is not None and not force:
        raise WhenproError("output file exists", path=existing, expected="a new folder, or --force to overwrite")
    ok = 0
    for s, target in zip(range(seed, seed + n), targets, strict=False):
        trace = run_env(env, s, model=model)
        write_trace(trace, target)
        ok += trace.outcome.value == "success"
        steps = plural(len(trace.steps), "step")
        echo(f"{trace.id}: {trace.outcome.value} ({steps}, answer {_short(trace.final_answer)})")
    echo(f"{n} runs: {ok} succeeded, {n - ok} failed; wrote {out}")
    return ok


def _short(text: str | None, n: int = 40) -> str:
    if text is None:
        return "none"
    text = " ".join(text.split())
    return repr(text if len(text) <= n else text[: n - 1] + "…")
