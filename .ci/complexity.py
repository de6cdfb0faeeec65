"""Complexity ceiling (issue 16): no function above radon rank D anywhere, and no new function
at rank D: the D functions that existed when the ceiling was set are listed in
``.ci/complexity_allowed.txt`` (``path:qualified name`` a line) and may only leave that list.

Usage: ``python .ci/complexity.py [--write-allowed]``; exit status 1 on a finding, with one
line per finding (``path:line name rank (complexity)``)."""

from __future__ import annotations

import sys
from pathlib import Path

from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("whenpro_core", "whenpro_tui")
ALLOWED = ROOT / ".ci" / "complexity_allowed.txt"


def blocks() -> list[tuple[str, int, str, str, int]]:
    """Every function and method of the packages as ``(path, line, name, rank, complexity)``."""
    found: set[tuple[str, int, str, str, int]] = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for block in cc_visit(path.read_text(encoding="utf-8")):
                for item in [block, *getattr(block, "methods", [])]:
                    if item.__class__.__name__ == "Class":
                        continue
                    name = f"{item.classname}.{item.name}" if getattr(item, "classname", None) else item.name
                    found.add((rel, item.lineno, name, cc_rank(item.complexity), item.complexity))
    return sorted(found)


def main(argv: list[str]) -> int:
    found = blocks()
    rank_d = sorted({f"{path}:{name}" for path, _, name, rank, _ in found if rank == "D"})
    if "--write-allowed" in argv:
        ALLOWED.write_text("".join(f"{entry}\n" for entry in rank_d), encoding="utf-8")
        return 0
    allowed = set(ALLOWED.read_text(encoding="utf-8").split()) if ALLOWED.exists() else set()
    bad = [
        f"{path}:{line} {name} {rank} ({cc})"
        for path, line, name, rank, cc in found
        if rank in "EF" or (rank == "D" and f"{path}:{name}" not in allowed)
    ]
    for entry in bad:
        print(f"complexity above the ceiling: {entry}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
