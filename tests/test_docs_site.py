"""The docs site and the README stay in step (issue 34, item 7): the site's home page is the README
with links inside the site, CI runs the README's test command, and the gate fails on a broken link."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

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


def mkdocs_gate() -> str:
    """The mkdocs command line of .ci/gates."""
    gates = (REPO / ".ci" / "gates").read_text(encoding="utf-8")
    found = re.search(r"&& (NO_MKDOCS_2_WARNING=1 mkdocs build --strict[^#\n]*)", gates)
    assert found, "the gates do not run mkdocs build --strict"
    return found.group(1).strip()


def test_the_gate_fails_on_a_broken_link(tmp_path):
    """The gate's own command builds the site and fails on a link to a page that does not exist
    (mkdocs 1.6's --quiet would hide the warning and pass)."""
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}

    def build() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", mkdocs_gate()], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )

    intact = build()
    assert intact.returncode == 0, intact.stderr
    with (tmp_path / "docs" / "live.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [the missing page](missing.md).\n")
    broken = build()
    assert broken.returncode != 0 and "missing.md" in broken.stderr
