"""Issue 28's Done-when, measured: several default builds ("draws") of one built-in
system, each audited by ``whenpro audit --json`` (the learned form attacker, the
structural prior and exact random, with 95% intervals).

Per draw (a fresh ``whenpro run ENV --n N`` and ``whenpro build`` with no ``--seed``, as a
dataset's maker runs them) it prints: traces kept, the modes tried (attempted at least
once), decisive and kept, random / structural prior / learned form step accuracy (the
priors and form with their 95% Wilson intervals), the form-minus-prior gap with its paired
one-sided p-value, the audit's verdict (and what made it leaky), and the form attacker's
top feature weights. Then the count of draws meeting each criterion of the issue:

* ``kept>=10``: the build kept at least 10 traces;
* ``modes``: every mode that was decisive at least once is kept (a mode never decisive
  cannot be);
* ``prior<=random+10``: the structural prior is within 10 points of random;
* ``form<=prior+5``: the learned form attacker is within 5 points of the structural prior;
* ``not leaky``: the audit's verdict (its rule also tests significance, so a draw can be
  over a margin and still not leaky).

Usage (from the repository root; writes into a temporary folder):

    python benchmarks/audit_draws.py --env arith_team --n 60 --draws 5
    python benchmarks/audit_draws.py --env code_pair --n 30 --draws 5

Each draw runs the CLI module of this checkout (``python -m whenpro_core.cli``) as a user
would; a draw takes about one (code_pair) to three (arith_team) minutes on one core.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORM, PRIOR = "learned form", "structural prior"
#: The issue's margins (points, as fractions): prior over random, form over prior.
PRIOR_MARGIN, FORM_MARGIN = 0.10, 0.05
#: Reasons of a dropped item that was never a decisive error.
NOT_DECISIVE = frozenset({"not_decisive", "generate_failed", "replay_failed"})


def whenpro(*args: str) -> str:
    """Run the CLI (this checkout's code) and fail loudly; returns its standard output."""
    done = subprocess.run([sys.executable, "-m", "whenpro_core.cli", *args], capture_output=True, text=True)
    if done.returncode not in (0, 1):  # audit exits 1 for a leaky verdict
        raise SystemExit(f"whenpro {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return done.stdout


@dataclass
class Draw:
    """One draw's numbers (fractions 0..1)."""

    kept: int
    tried: set[str]
    decisive: set[str]
    modes: set[str]
    random: float
    prior: dict[str, Any] | None  # None: too few traces for the learned attacker
    form: dict[str, Any] | None
    leaky: bool
    leaking: list[str]

    def criteria(self) -> dict[str, bool]:
        """Each criterion of the module docstring (a draw too small for the learned
        attacker meets neither learned criterion)."""
        prior, form = self.prior, self.form
        return {
            "kept>=10": self.kept >= 10,
            "modes": self.decisive <= self.modes,
            "prior<=random+10": prior is not None and prior["step"] - self.random <= PRIOR_MARGIN,
            "form<=prior+5": prior is not None and form is not None and form["step"] - prior["step"] <= FORM_MARGIN,
            "not leaky": not self.leaky,
        }


def _modes(manifest: dict[str, Any]) -> tuple[set[str], set[str], set[str]]:
    """(modes tried, decisive at least once, kept) from a build's manifest."""
    kept = {t["mode"] for t in manifest["traces"]}
    dropped = manifest.get("dropped_traces", [])
    tried = kept | {d["mode"] for d in dropped}
    decisive = kept | {d["mode"] for d in dropped if d["reason"] not in NOT_DECISIVE}
    return tried, decisive, kept


def one_draw(env: str, n: int, root: Path) -> Draw:
    whenpro("run", env, "--n", str(n), "--out", str(root / "runs"))
    whenpro("build", str(root / "runs"), "--out", str(root / "ds"))
    audit = json.loads(whenpro("audit", str(root / "ds"), "--json"))
    manifest = json.loads((root / "ds" / "manifest.json").read_text(encoding="utf-8"))
    tried, decisive, kept = _modes(manifest)
    by_name = {b["name"]: b for b in audit["baselines"]}
    return Draw(
        kept=len(manifest["traces"]),
        tried=tried,
        decisive=decisive,
        modes=kept,
        random=audit["random"]["step"],
        prior=by_name.get(PRIOR),
        form=by_name.get(FORM),
        leaky=audit["leaky"],
        leaking=audit["leaking"],
    )


def _pct(b: dict[str, Any] | None) -> str:
    return f"{b['step']:6.1%} [{b['step_low']:5.1%}, {b['step_high']:5.1%}]" if b else "   n/a (too few traces)"


def report(k: int, d: Draw) -> str:
    head = (
        f"draw {k}: kept {d.kept:3d}  modes kept {len(d.modes)}/{len(d.decisive)} decisive "
        f"({len(d.tried)} tried; missing: {','.join(sorted(d.decisive - d.modes)) or '-'})\n"
    )
    gap, weights = "n/a", ""
    if d.form is not None and d.prior is not None:
        gap = f"{d.form['step'] - d.prior['step']:+6.1%} (p {d.form.get('p_prior')})"
        weights = ", ".join(f"{w['name']} {w['weight']:+.2f}" for w in d.form.get("features", [])[:4])
    verdict = "LEAKY by " + ", ".join(d.leaking) if d.leaky else "not leaky"
    return (
        head + f"  random {d.random:6.1%}  prior {_pct(d.prior)}  form {_pct(d.form)}  form-prior {gap}\n"
        f"  verdict {verdict}; form's top weights: {weights or '-'}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="arith_team")
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="keep each draw's runs and dataset under KEEP/draw-K")
    args = ap.parse_args()
    draws = []
    for k in range(1, args.draws + 1):
        if args.keep:
            draws.append(one_draw(args.env, args.n, args.keep / f"draw-{k}"))
        else:
            with tempfile.TemporaryDirectory() as tmp:
                draws.append(one_draw(args.env, args.n, Path(tmp)))
        print(report(k, draws[-1]), flush=True)
    names = list(draws[0].criteria())
    met = {c: sum(d.criteria()[c] for d in draws) for c in names}
    print(f"{args.env} --n {args.n}, {len(draws)} draws; draws meeting each criterion:")
    print("  " + "  ".join(f"{c}: {met[c]}/{len(draws)}" for c in names))


if __name__ == "__main__":
    main()
