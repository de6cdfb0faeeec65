"""The docs site and the README stay in step (issue 34, item 7): the site's home page is the README
with links inside the site, and CI runs the README's test command."""

from __future__ import annotations

import re

from tests.support.cli import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def site_home_from_readme(readme: str) -> str:
    """docs/index.md as README.md gives it: links into ``docs/`` made site-relative, and the
    paragraph pointing at the site left out."""
    text = readme.replace("](docs/", "](")
    start = text.index("Full documentation:")
    return text[:start] + text[text.index("## What it does") :]


def test_the_site_home_is_the_readme():
    home = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    assert home == site_home_from_readme(README)


def test_ci_runs_the_readme_test_command():
    setup = README.split("```bash\n", 1)[1].split("```", 1)[0]
    second = [line for line in setup.splitlines() if line and not line.startswith("#")][1]
    test_command = second.rsplit(" && ", 1)[1]
    assert test_command == "pytest -q -n auto"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(rf"^{re.escape(test_command)}$", ci, re.MULTILINE), "keep .ci/run's test line as the README's"
    assert "bash .ci/gates" in ci


def test_the_gates_build_the_site_strictly():
    gates = (REPO / ".ci" / "gates").read_text(encoding="utf-8")
    assert "mkdocs build --strict" in gates
