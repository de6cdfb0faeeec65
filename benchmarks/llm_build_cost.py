"""Model calls per kept trace of a build with the LLM generator (issue 14, docs item),
read from the build's ``manifest.json`` (``model_calls``), measured against the local
LLM test server (tests/support/llm_server.py) through the real openai SDK — not a
real model.

The scripted model plays arith_team: stage 1 proposes a flaw, stage 2 rewrites the
step (the same wrong total every time), and as the simulate executor it replays each
agent's recorded turn; the reporter gives the gold answer only when every recorded step
is in its prompt unchanged, so the control run (the unmodified step) succeeds and the
injected one fails. The numbers are therefore the *protocol's* calls (2 generator
calls per attempt plus the simulated turns and tool results) on runs a real model
would make decisive at another rate; the control runs' own calls are not in the count.

Usage (from the repository root):

    python benchmarks/llm_build_cost.py [--n 8] [--per-seed 2]

Prints the manifest's counts and ``model_calls`` next to the attempts and the calls the
server answered (the baseline: everything the build sent, control runs included).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.fixtures import TEST_KEY
from tests.support.inject_model import InjectModel, step_answer
from tests.support.llm_server import LLMServer
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Trace

REWRITE = {"content": "Computing total = sessions + breaks + 65 = 80 + 5 + 65.", "tool_calls": None}


def whenpro(*args: str, env: dict[str, str] | None = None) -> str:
    """Run the CLI (this checkout's code); the stdout, or exit with its stderr."""
    out = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode not in (0, 1):
        sys.exit(out.stderr)
    return out.stdout


def replaying_model(seeds: list[Trace]) -> InjectModel:
    """The scripted model of the module docstring, for several seed runs (matched by task text)."""

    def seed_of(prompt: str) -> Trace:
        return next(s for s in seeds if s.task.query.strip() in prompt)

    def turn(agent: str, coord: str, prompt: str) -> dict:
        seed = seed_of(prompt)
        rec = next(s for s in seed.steps if s.coord == coord)
        if rec.kind == "final_answer":
            good = all(s.content in prompt for s in seed.steps[1:-1] if s.content)
            final = seed.final_answer if good else "00:00"
            return step_answer(f"Final answer: {final}", final_answer=final, ends_run=True)
        return step_answer(rec.content or "", [{"name": c.name, "arguments": c.arguments} for c in rec.tool_calls])

    return InjectModel(
        plan={"flaw": "Adds 65 minutes of lunch.", "wrong_result": "the end time is late"},
        rewrites=[REWRITE],
        turns=turn,
        tool=lambda calls, prompt: "150",
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--per-seed", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LLMServer() as server:
        runs, ds = Path(tmp) / "runs", Path(tmp) / "ds"
        whenpro("run", "arith_team", "--n", str(args.n), "--out", str(runs))
        seeds = [load_trace(str(p)) for p in sorted(runs.glob("*.json"))]
        server.respond_with(replaying_model([s for s in seeds if s.outcome.value == "success"]))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "WHENPRO_"))}
        env.update(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.openai_base_url)
        whenpro(
            "build",
            str(runs),
            "--out",
            str(ds),
            "--generator",
            "llm",
            "--executor",
            "simulate",
            "--model",
            "openai:gpt-4.1",
            "--per-seed",
            str(args.per_seed),
            "-j",
            "2",
            env=env,
        )
        manifest = json.loads((ds / "manifest.json").read_text())
        print("counts", json.dumps(manifest["counts"]))
        print("dropped", json.dumps({k: v for k, v in manifest["dropped"].items() if v}))
        print("model_calls", json.dumps(manifest["model_calls"]))
        print("server answered", len(server.answered), "requests (control runs included)")


if __name__ == "__main__":
    main()
