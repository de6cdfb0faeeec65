"""A real small model as the judge: SmolLM2-135M-Instruct on llama-cpp-python's server
(``--model local:smollm2``, the ``whenpro[local]`` extra), per protocol, on the shared
Who&When subsets (``../shared/real_traces/who-and-when``) and the bundled samples.

Per subset × protocol: traces, errors, parse rate (verdicts naming an agent or a step),
agent and step accuracy in percent with 95% Wilson intervals, against the exact
expectation of a uniformly random pick among the steps a verdict may name (95% interval,
:mod:`whenpro_core.bench.baselines`), model calls, prompt + answer tokens and seconds per
trace. whenpro's response cache is off; the server is started once for the run (or
``--base-url`` names a running one). A trace longer than the window is fitted as the
protocols do (docs/architecture.md, 'The context window'); all-at-once counts a trace it cannot
fit as an error.

Usage: ``python benchmarks/real_model.py [--limit N] [--protocols a,b] [--subsets ag,hc,samples] [--window TOKENS]
[--max-tokens N] [--base-url URL] [REAL_TRACES_DIR]``. Slow on a shared CPU: the default
``--limit 2`` (traces per Who&When subset) keeps a run to minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from whenpro_core.attribution.llm_judge import make_judge  # noqa: E402
from whenpro_core.attribution.run import attribute  # noqa: E402
from whenpro_core.bench.baselines import chance_interval, random_chance, wilson  # noqa: E402
from whenpro_core.config import load_settings  # noqa: E402
from whenpro_core.errors import WhenproError  # noqa: E402
from whenpro_core.formats import load_trace, walk  # noqa: E402
from whenpro_core.trace.evidence import candidate_steps  # noqa: E402
from whenpro_core.trace.model import Outcome, Trace  # noqa: E402
from whenpro_core.trace.score import score_prediction  # noqa: E402

SUBSETS = {
    "Who&When Algorithm-Generated": "who-and-when/Who&When/Algorithm-Generated",
    "Who&When Hand-Crafted": "who-and-when/Who&When/Hand-Crafted",
}
PROTOCOLS = ("all-at-once", "step-by-step", "binary-search", "hybrid")
EXPECT = (
    "What to expect of a 135M model: here {read} of {judged} verdicts named an agent or a step; "
    "most answers name neither, and a pick is no better than the random column. Use it to check "
    "a set-up end to end offline (every path runs and ends cleanly), not to judge runs."
)


@dataclass
class Cell:
    """One subset × protocol."""

    n: int = 0
    errors: list[str] = field(default_factory=list)
    parsed: int = 0
    agent: int = 0
    step: int = 0
    chance_agent: list[float] = field(default_factory=list)
    chance_step: list[float] = field(default_factory=list)
    calls: int = 0
    tokens: int = 0
    seconds: float = 0.0


def traces_of(real: Path, limit: int, only: set[str]) -> dict[str, list[Trace]]:
    """The labelled failed traces of each subset named in ``only`` (``ag``, ``hc``,
    ``samples``; shortest first, ``limit`` each)."""
    out: dict[str, list[Trace]] = {}
    for key, (name, rel) in zip(("ag", "hc"), SUBSETS.items(), strict=True):
        if key not in only:
            continue
        folder = real / rel
        if not folder.is_dir():
            print(f"skipped {name}: no folder {folder}", file=sys.stderr)
            continue
        files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_size)[:limit]
        out[name] = [load_trace(str(f)) for f in files]
    if "samples" not in only:
        return out
    rows = [r for r in walk(ROOT / "sample_traces") if r.error is None and r.gt_step is not None]
    samples = [t for t in (load_trace(r.ref()) for r in rows) if _labelled(t)]
    out["bundled samples"] = samples[:limit]
    return out


def _labelled(trace: Trace) -> bool:
    return trace.ground_truth is not None and trace.outcome != Outcome.success and trace.ground_truth.step is not None


async def run_cell(traces: list[Trace], protocol: str, model: str, settings: object) -> Cell:
    """Each trace once with a fresh judge (no response cache)."""
    cell = Cell()
    for trace in traces:
        cell.n += 1
        candidates = candidate_steps(trace)
        chance = random_chance(trace, candidates)
        cell.chance_agent.append(chance.agent)
        cell.chance_step.append(chance.step[0])
        judge = make_judge(model, settings=settings, use_cache=False)
        started = time.perf_counter()
        try:
            verdict = await attribute(trace, protocol, judge=judge)
        except WhenproError as exc:
            cell.errors.append(exc.one_line())
            continue
        finally:
            cell.seconds += time.perf_counter() - started
            await judge.aclose()
        score = score_prediction(trace, verdict)
        cell.parsed += bool(verdict.agent or verdict.step)
        cell.agent += score.agent
        cell.step += score.step
        cell.calls += verdict.usage.calls
        cell.tokens += verdict.usage.input_tokens + verdict.usage.output_tokens
    return cell


def pct(hits: float, n: int) -> str:
    low, high = wilson(hits, n)
    return f"{100 * hits / n:.0f} ({100 * low:.0f}–{100 * high:.0f})" if n else "-"


def chance(chances: list[float]) -> str:
    if not chances:
        return "-"
    low, high = chance_interval(chances)
    return f"{100 * sum(chances) / len(chances):.0f} ({100 * low:.0f}–{100 * high:.0f})"


def row(subset: str, protocol: str, c: Cell) -> str:
    done = c.n - len(c.errors)
    per = max(c.n, 1)
    return (
        f"| {subset} | {protocol} | {c.n} | {len(c.errors)} | {c.parsed}/{done} | {pct(c.agent, done)} | "
        f"{chance(c.chance_agent)} | {pct(c.step, done)} | {chance(c.chance_step)} | {c.calls / per:.1f} | "
        f"{c.tokens / per:,.0f} | {c.seconds / per:.0f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = os.environ.get("WHENPRO_REAL_TRACES") or ROOT.parent / "shared" / "real_traces"
    ap.add_argument("real", nargs="?", type=Path, default=Path(default))
    ap.add_argument("--limit", type=int, default=2, help="traces per subset (shortest first)")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--subsets", default="ag,hc,samples", help="ag (Algorithm-Generated), hc (Hand-Crafted), samples")
    ap.add_argument("--window", type=int, default=4096, help="context window of the server started here")
    ap.add_argument("--max-tokens", type=int, default=64, help="answer tokens per call")
    ap.add_argument("--base-url", default=None, help="a running llama.cpp server (default: start one)")
    args = ap.parse_args()
    settings = load_settings(
        base_url=args.base_url,
        context_window=args.window,
        max_tokens=args.max_tokens,
        temperature=0,
        timeout_s=900,
        max_retries=1,
        cache=False,
    )
    subsets = traces_of(args.real, args.limit, {s.strip() for s in args.subsets.split(",")})
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
    sizes = ", ".join(f"{name}: {len(traces)}" for name, traces in subsets.items())
    print(
        f"SmolLM2-135M-Instruct (Q4_1) on llama-cpp-python's server, window {args.window} tokens, "
        f"{args.max_tokens} answer tokens, temperature 0; traces per subset (shortest first) {sizes}\n"
    )
    print(
        "| subset | protocol | traces | errors | parsed | agent % (95% CI) | random agent % | step % | random step % "
        "| calls/trace | tokens/trace | s/trace |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    started = time.perf_counter()
    cells: dict[tuple[str, str], Cell] = {}
    for name, traces in subsets.items():
        for protocol in protocols:  # each row as soon as it is measured: a long run stopped early keeps its rows
            cells[name, protocol] = cell = asyncio.run(run_cell(traces, protocol, "local:smollm2", settings))
            print(row(name, protocol, cell), flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    for (name, protocol), cell in cells.items():
        if cell.errors:
            print(f"\n{name}, {protocol}: {len(cell.errors)} error(s), e.g. {cell.errors[0]}")
    read = sum(c.parsed for c in cells.values())
    judged = sum(c.n - len(c.errors) for c in cells.values())
    print("\n" + EXPECT.format(read=read, judged=judged))


if __name__ == "__main__":
    main()
