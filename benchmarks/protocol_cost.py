"""What each attribution protocol costs per trace, on the real Who&When traces (both
subsets), against the local LLM test server answering as a judge that knows the decisive
error (``tests.support.judge_oracle.oracle_for``: a perfect judge, so step-by-step stops
at the labelled step and binary search takes its ⌈log2 n⌉ + 1 calls).

Printed in one run, per subset × protocol (all-at-once, step-by-step, binary search,
hybrid): LLM calls per trace (mean, max), prompt tokens per trace (mean; the server's
estimate, characters / 4), the share of prompt tokens a provider's prefix cache would
serve (the server's emulated ``cached_tokens``: the longest prefix shared with an earlier
prompt of the same protocol run, counted from ``--cache-min-tokens``, 1024 as OpenAI
does; Anthropic caches only prefixes ending at a ``cache_control`` breakpoint and at least
as long; at both the answer schema leads the prefix; the emulated cache is emptied between
protocol runs), the cold ceiling (the most a prefix cache could serve of these prompts: a
trace's first call shares with earlier traces only the instructions, cached when at least
``--cache-min-tokens`` long, and nothing of its transcript), and the cost per trace at
whenpro's built-in prices (cached tokens and Anthropic cache writes at their own rates).
Ratios are against the baseline all-at-once (one call per trace).

whenpro's own response cache is off (``use_cache=False``, the ``--no-cache`` semantics),
so every call reaches the server. Usage:

    python benchmarks/protocol_cost.py [WHO_AND_WHEN_DIR] [--limit N]
        [--api both|chat|anthropic] [--cache-min-tokens 1024] [--concurrency 8]

``--api both`` (the default) runs every protocol through the Anthropic messages API and
the OpenAI chat API and prints their cached shares side by side (the acceptance figure of
issue 15: at least 80% for binary search and hybrid on both; the instructions with the
whole failure-mode taxonomy, ~2,900 tokens, are cached across traces, so only the task
and transcript of a trace's first call are cold).

``WHO_AND_WHEN_DIR`` defaults to ``$WHENPRO_REAL_TRACES/who-and-when/Who&When`` or
``<repo>/../shared/real_traces/who-and-when/Who&When``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_tmp = tempfile.mkdtemp(prefix="whenpro-bench-")
os.environ["WHENPRO_CONFIG_DIR"] = os.path.join(_tmp, "config")  # never the user's config or cache
os.environ["WHENPRO_CACHE_DIR"] = os.path.join(_tmp, "cache")

from _docs_table import add_write_docs_option, write_docs  # noqa: E402

from tests.support.judge_oracle import oracle_for  # noqa: E402
from tests.support.llm_server import LLMServer  # noqa: E402
from whenpro_core.attribution.llm_judge import make_judge  # noqa: E402
from whenpro_core.attribution.run import attribute  # noqa: E402
from whenpro_core.config import load_settings  # noqa: E402
from whenpro_core.formats import load_trace  # noqa: E402
from whenpro_core.formats.registry import iter_files, natural_key  # noqa: E402
from whenpro_core.trace.model import Trace  # noqa: E402

PROTOCOLS = ("all-at-once", "step-by-step", "binary-search", "hybrid")
SUBSETS = ("Algorithm-Generated", "Hand-Crafted")


def default_dir() -> Path:
    real = os.environ.get("WHENPRO_REAL_TRACES")
    base = Path(real) if real else ROOT.parent / "shared" / "real_traces"
    return base / "who-and-when" / "Who&When"


class Router:
    """Answers each request with the oracle of the trace whose question it carries (the
    server is shared by concurrent traces)."""

    def __init__(self) -> None:
        self.oracles: dict[str, object] = {}

    def add(self, marker: str, trace: Trace) -> None:
        self.oracles[marker] = oracle_for(trace)

    def marker_of(self, prompt: str) -> str:
        """The marker of the trace whose question ``prompt`` carries."""
        for marker in self.oracles:
            if marker in prompt:
                return marker
        raise RuntimeError("request for an unknown trace")

    def __call__(self, body: dict) -> object:
        from tests.support.llm_wire import prompt_text

        return self.oracles[self.marker_of(prompt_text(body))](body)


def cold_tokens(server: LLMServer, router: Router, min_tokens: int) -> int:
    """Prompt tokens of each trace's first request (the server's estimate) that no prefix
    cache can serve, summed: all of it but the prefix it shares with an earlier trace's
    first request (the instructions, when at least ``min_tokens`` long), as nothing sent
    before shares the trace's own transcript. So ``1 - cold / all prompt tokens`` is the
    highest cached share a prefix cache can reach on these prompts (the cold ceiling)."""
    from tests.support.llm_wire import IMAGE_TOKENS, approx_tokens, segments
    from whenpro_core.injection.diff import common_prefix_len

    firsts: dict[str, str] = {}
    total = 0
    for request in server.answered:  # in arrival order; a trace's calls are sequential
        marker = router.marker_of(request.prompt)
        if marker in firsts:
            continue
        segs = segments(request.body)
        text = "".join(s for s, _, _ in segs)
        shared = approx_tokens(text[: max((common_prefix_len(text, old) for old in firsts.values()), default=0)])
        firsts[marker] = text
        tokens = approx_tokens(text) + IMAGE_TOKENS * sum(i for _, _, i in segs)
        total += tokens - (shared if shared >= min_tokens else 0)
    return total


def tag(trace: Trace, marker: str) -> Trace:
    """The trace with a unique marker in its task text (routes answers to its oracle;
    the same few characters in every prompt of the trace, so prefix sharing is unchanged)."""
    trace = trace.model_copy(deep=True)
    trace.task.query = f"{marker} {trace.task.query}"
    return trace


async def cost(traces: list[Trace], protocol: str, settings, concurrency: int) -> list:
    judge = make_judge(settings.model, settings=settings, use_cache=False)
    gate = asyncio.Semaphore(concurrency)

    async def one(t: Trace):
        async with gate:
            return await attribute(t, protocol, judge=judge, with_gold=True)

    try:
        return await asyncio.gather(*(one(t) for t in traces))
    finally:
        await judge.aclose()


MODELS = {"anthropic": "anthropic:claude-sonnet-4-6", "chat": "openai:gpt-4.1"}


def measure(subsets: dict[str, list[Trace]], router: Router, api: str, args: argparse.Namespace) -> dict:
    """``{(subset, protocol): (traces, calls, tokens, cached, right, http, cold, usd)}`` for one API
    (``usd``: the calls' cost at whenpro's built-in price of the model, cached and cache-write
    tokens at their own rates)."""
    model = MODELS[api]
    out = {}
    with LLMServer(cache_min_tokens=args.cache_min_tokens) as server:
        settings = load_settings(
            model=model,
            openai_api_key="sk-bench",
            anthropic_api_key="sk-bench",
            openai_base_url=server.openai_base_url,
            anthropic_base_url=server.anthropic_base_url,
            concurrency=args.concurrency,
            cache=False,
            timeout_s=120.0,
            max_retries=2,
            backoff_base_s=0.01,
        )
        for name, traces in subsets.items():
            for protocol in PROTOCOLS:
                server.reset()  # each protocol starts with a cold prefix cache (no sharing across runs)
                server.respond_with(router)
                verdicts = asyncio.run(cost(traces, protocol, settings, args.concurrency))
                out[(name, protocol)] = (
                    len(traces),
                    [v.usage.calls for v in verdicts],
                    [v.usage.input_tokens for v in verdicts],
                    sum(v.usage.cached_tokens for v in verdicts),
                    sum(v.step == t.ground_truth.step for v, t in zip(verdicts, traces, strict=True)),
                    len(server.answered),
                    cold_tokens(server, router, args.cache_min_tokens),
                    sum(v.usage.cost_usd for v in verdicts),
                )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=default_dir())
    ap.add_argument("--limit", type=int, default=None, help="traces per subset (default: all)")
    ap.add_argument("--api", choices=("both", "chat", "anthropic"), default="both")
    ap.add_argument("--cache-min-tokens", type=int, default=1024)
    ap.add_argument("--concurrency", type=int, default=8)
    add_write_docs_option(ap, "benchmarks.md")
    args = ap.parse_args()
    if not args.folder.is_dir():
        sys.exit(f"no Who&When folder at {args.folder} (give its path; see the docstring)")
    router = Router()
    subsets: dict[str, list[Trace]] = {}
    for name in SUBSETS:
        files = sorted(iter_files(args.folder / name), key=natural_key)[: args.limit]
        subsets[name] = []
        for f in files:
            marker = f"<<trace {name}/{f.stem}>>"
            trace = tag(load_trace(f), marker)
            router.add(marker, trace)
            subsets[name].append(trace)
    apis = ("anthropic", "chat") if args.api == "both" else (args.api,)
    started = time.perf_counter()
    results = {api: measure(subsets, router, api, args) for api in apis}
    seconds = time.perf_counter() - started
    print(
        f"Who&When at {args.folder}; judge: oracle through {', '.join(MODELS[a] for a in apis)} on the "
        f"local server; whenpro cache off; prefix cache counted from {args.cache_min_tokens} tokens; {seconds:.0f}s"
    )
    print_table(results, apis)
    shares = cached_share_table(results, apis)
    print(f"\nCached share of prompt tokens, {' / '.join(LABELS[a] for a in apis)}:\n\n{shares}")
    write_docs(args.write_docs, {"protocol-cost-cached-share": shares})


def cached_share_table(results: dict, apis: tuple[str, ...]) -> str:
    """docs/benchmarks.md's table: per protocol, the share of prompt tokens each API's prefix cache
    served (``A / B`` in ``apis`` order) per subset (its trace count in the header) and over all traces."""
    first = results[apis[0]]
    counts = {name: first[(name, PROTOCOLS[0])][0] for name, _ in first}
    head = " | ".join(f"{name} ({n})" for name, n in counts.items())
    lines = [f"| protocol | {head} | all {sum(counts.values())} |", "|---|" + "---|" * (len(counts) + 1)]
    groups = [*([name] for name in counts), list(counts)]  # each subset, then all of them
    for protocol in PROTOCOLS:
        cells = [" / ".join(_cached_share(results[a], protocol, names) for a in apis) for names in groups]
        lines.append(f"| {protocol.replace('binary-search', 'binary search')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cached_share(api_results: dict, protocol: str, names: list[str]) -> str:
    """The cached share of prompt tokens of ``protocol`` over the subsets ``names``, as ``45.9%``."""
    cached = sum(api_results[(name, protocol)][3] for name in names)
    prompt = sum(sum(api_results[(name, protocol)][2]) for name in names)
    return f"{cached / prompt if prompt else 0.0:.1%}"


LABELS = {"anthropic": "Anthropic", "chat": "OpenAI"}


def print_table(results: dict, apis: tuple[str, ...]) -> None:
    """One row per subset × protocol, then the all-trace shares, from :func:`measure`'s results."""
    heads = "".join(f" {'cached ' + LABELS[a]:>16}" for a in apis) + f" {'cold ceiling':>12}"
    heads += "".join(f" {'$/trace ' + LABELS[a]:>17}" for a in apis)
    head = (
        f"{'subset':<20} {'protocol':<14} {'traces':>6} {'calls/trace':>11} {'max':>4} "
        f"{'prompt tok/trace':>16} {'x all-at-once':>13}{heads} {'step ok':>7} {'HTTP':>6}"
    )
    print(head)
    print("-" * len(head))
    base: dict[str, float] = {}
    # per protocol: [cached tokens, prompt tokens, USD, traces] of each API, and [cold, prompt] tokens
    totals = {a: {p: [0, 0, 0.0, 0] for p in PROTOCOLS} for a in apis}
    cold_totals = {p: [0, 0] for p in PROTOCOLS}
    for (name, protocol), (n, calls, tokens, _, right, http, cold, _) in results[apis[0]].items():
        mean_tokens = statistics.fmean(tokens) if tokens else 0.0
        if protocol == "all-at-once":
            base[name] = mean_tokens or 1.0
        shares, dollars = "", ""
        for a in apis:
            _, _, tok, cached, _, _, _, usd = results[a][(name, protocol)]
            t = totals[a][protocol]
            t[0], t[1], t[2], t[3] = t[0] + cached, t[1] + sum(tok), t[2] + usd, t[3] + n
            shares += f" {cached / sum(tok) if sum(tok) else 0.0:>16.1%}"
            dollars += f" {usd / max(1, n):>17.4f}"
        cold_totals[protocol][0] += cold
        cold_totals[protocol][1] += sum(tokens)
        shares += f" {1 - cold / sum(tokens) if sum(tokens) else 0.0:>12.1%}"
        print(
            f"{name:<20} {protocol:<14} {n:>6} {statistics.fmean(calls):>11.2f} {max(calls):>4} "
            f"{mean_tokens:>16,.0f} {mean_tokens / base[name]:>12.1f}x{shares}{dollars} {right:>4}/{n:<2} {http:>6}"
        )
    for protocol in PROTOCOLS:
        shares = "".join(f" {t[protocol][0] / max(1, t[protocol][1]):>16.1%}" for t in totals.values())
        shares += f" {1 - cold_totals[protocol][0] / max(1, cold_totals[protocol][1]):>12.1%}"
        shares += "".join(f" {t[protocol][2] / max(1, t[protocol][3]):>17.4f}" for t in totals.values())
        print(f"{'all traces':<20} {protocol:<14} {'':>6} {'':>11} {'':>4} {'':>16} {'':>13}{shares}")
    print(
        "calls and tokens count every request the protocol made (all reached the server: HTTP column);"
        " 'cached' = share of prompt tokens the provider's prompt cache served (OpenAI: automatic prefix"
        " cache; Anthropic: only up to the request's cache breakpoints; both: prefixes from --cache-min-tokens, the"
        " answer schema leading the prefix); 'cold ceiling' = 1 - (each trace's first prompt, less what it shares"
        " with an earlier trace's, / all prompt tokens), the most a prefix cache can serve of these prompts;"
        " '$/trace' = mean cost per trace at whenpro's built-in prices (cached and cache-write tokens at their rates;"
        " the server's tokens are characters / 4 and its answers short, so compare rows, not bills);"
    )
    print(
        "'step ok' = verdicts at the labelled step (a perfect judge misses only labels on steps a protocol"
        " never asks about)."
    )


if __name__ == "__main__":
    main()
