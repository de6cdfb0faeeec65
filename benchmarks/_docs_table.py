"""Write a benchmark script's measured table into the docs (issue 34: the tables in the docs are
written by the scripts that measure them).

A page holds each table between two markers, ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``.
A script adds ``--write-docs [PAGE]`` with :func:`add_write_docs_option` and, after printing its
tables, calls :func:`write_docs`: every named block of the page is replaced by the table the
script printed and one line saying which command wrote it and when (UTC), the rest of the page
is left byte for byte, and the page is written atomically (a temp file renamed over it). A page
without exactly one pair of markers for a name, in that order, is refused before anything is
written (:class:`MarkerError`, one line naming the page and the marker).
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
from pathlib import Path

from whenpro_core.storage.fsutil import atomic_write_text

DOCS = Path(__file__).resolve().parents[1] / "docs"


class MarkerError(ValueError):
    """A page lacks the markers of a block, has them twice, or in the wrong order."""


def replace_blocks(text: str, blocks: dict[str, str], page: Path | str = "page") -> str:
    """``text`` with the body of each ``<!-- bench:NAME -->`` block replaced by ``blocks[NAME]``
    (a blank line either side, each line indented as the marker is). Raises MarkerError naming
    ``page`` and the marker at fault."""
    for name, body in blocks.items():
        start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
        for marker in (start, end):
            if text.count(marker) != 1:
                found = f"found {text.count(marker)} times" if marker in text else "not found"
                raise MarkerError(f"{page}: marker '{marker}' {found} (expected exactly one)")
        if text.index(end) < text.index(start):
            raise MarkerError(f"{page}: marker '{end}' comes before '{start}'")
        head, rest = text.split(start)
        tail = rest.split(end)[1]
        indent = head[head.rfind("\n") + 1 :]  # a block inside a list item keeps its indentation
        if indent.strip():
            raise MarkerError(f"{page}: marker '{start}' must start its line")
        lines = [f"{indent}{line}" if line.strip() else "" for line in body.strip("\n").splitlines()]
        text = f"{head}{start}\n\n" + "\n".join(lines) + f"\n\n{indent}{end}{tail}"
    return text


def write_blocks(page: Path, blocks: dict[str, str]) -> None:
    """Replace the named blocks of ``page`` and write it atomically; nothing is written when a
    marker is missing, repeated or out of order (MarkerError)."""
    text = page.read_text(encoding="utf-8")
    atomic_write_text(page, replace_blocks(text, blocks, page))


def add_write_docs_option(parser: argparse.ArgumentParser, page: str) -> None:
    """``--write-docs [PAGE]``: write the tables into ``docs/<page>`` (or into PAGE)."""
    parser.add_argument(
        "--write-docs",
        nargs="?",
        const=DOCS / page,
        type=Path,
        metavar="PAGE",
        help=f"also write the tables into their marked blocks of docs/{page} (or of PAGE)",
    )


def write_docs(page: Path | None, tables: dict[str, str]) -> None:
    """When ``--write-docs`` was given (``page`` not None), write each table with a line naming
    the command that measured it and the date; a marker problem ends the script with one line."""
    if page is None:
        return
    command = "python " + shlex.join(["benchmarks/" + Path(sys.argv[0]).name, *_measuring_arguments(sys.argv[1:])])
    now = dt.datetime.now(dt.UTC)
    when = f"{now.day} {now:%B %Y, %H:%M} UTC"
    stamp = f"Written by `{command}` on {when} (one run)."
    try:
        write_blocks(page, {name: f"{table.strip()}\n\n{stamp}" for name, table in tables.items()})
    except (MarkerError, OSError) as err:
        sys.exit(f"--write-docs: {err}")
    print(f"wrote {', '.join(tables)} into {page}")


def _measuring_arguments(argv: list[str]) -> list[str]:
    """The command line without ``--write-docs`` and its page (they do not change what is measured)."""
    kept: list[str] = []
    skip_page = False
    for arg in argv:
        if skip_page and not arg.startswith("-"):
            skip_page = False
            continue
        skip_page = arg == "--write-docs"
        if not arg.startswith("--write-docs"):
            kept.append(arg)
    return kept
