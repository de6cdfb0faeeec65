"""docs/architecture.md stays a true map: it names every package of whenpro_core and
whenpro_tui, and every section the code cites (``docs/architecture.md, 'Scoring'``)
is a heading of it."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import whenpro_core
import whenpro_tui

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
CITATION = re.compile(r"docs/architecture\.md, ((?:'[^']+'(?:,? (?:and )?)?)+)")


def packages() -> list[str]:
    """Every package (not plain module) of the two distributions, as ``a/b/`` paths."""
    found = []
    for root in (whenpro_core, whenpro_tui):
        found.append(root.__name__ + "/")
        for info in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
            if info.ispkg:
                found.append(info.name.replace(".", "/") + "/")
    return found


def test_the_module_map_names_every_package():
    missing = [p for p in packages() if f"`{p}`" not in DOC]
    assert packages() and missing == []


def test_every_cited_section_is_a_heading():
    headings = set(re.findall(r"^#{2,3} (.+)$", DOC, re.MULTILINE))
    cited: dict[str, str] = {}
    for path in [*ROOT.glob("whenpro_core/**/*.py"), *ROOT.glob("whenpro_tui/**/*.py"), *ROOT.glob("tests/*.py")]:
        text = path.read_text(encoding="utf-8")
        for group in CITATION.findall(" ".join(text.split())):
            for title in re.findall(r"'([^']+)'", group):
                cited.setdefault(title, str(path.relative_to(ROOT)))
    assert cited, "no citation of docs/architecture.md found"
    assert {t: p for t, p in cited.items() if t not in headings} == {}
