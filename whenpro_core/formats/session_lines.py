"""The shared reader of coding-agent session files: JSON lines that together make *one*
trace (Claude Code sessions, Codex CLI rollouts, Gemini CLI JSONL recordings).

An importer subclasses :class:`SessionLinesImporter`, says which first lines are its
format (:meth:`~SessionLinesImporter.line_matches`) and gives a builder: an object with
``feed(obj, row)`` (one parsed line; TraceFormatError for a line it cannot use, its state
unchanged) and ``trace()`` (the trace of the lines fed so far). The same builders serve
``whenpro view --follow`` (:mod:`whenpro_core.live.builders`), so a session still being
written shows what a later full read shows.

Bad lines (not JSON, a line cut off by a writer that was killed) are skipped and noted
in ``extras["whenpro_warnings"]``; a file with no good line raises the first line's
error. Each line is at most :data:`MAX_LINE_BYTES`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Protocol

import orjson

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import (
    FileImporter,
    LoadContext,
    first_line,
    parse_json,
    require_regular_file,
    summarize,
    top_level_keys,
)
from whenpro_core.formats.native_lines import skipped_lines_warning
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import Step, Trace, TraceSummary

#: A line longer than this is a bad line (skipped, noted), so a corrupt file cannot
#: exhaust memory.
MAX_LINE_BYTES = 256 * 1024 * 1024


class LineFeeder(Protocol):
    """Anything fed parsed lines one at a time (:func:`feed_file`)."""

    def feed(self, obj: Any, row: int | None = None) -> tuple[str, ...]: ...


class LineBuilder(LineFeeder, Protocol):
    """What :class:`SessionLinesImporter` and the live follower need of a builder."""

    def trace(self) -> Trace: ...


def iter_lines(path: Path) -> Iterator[tuple[int, bytes | None]]:
    """``(1-based row, line bytes)`` of each non-blank line; ``None`` for a line longer
    than :data:`MAX_LINE_BYTES` (the rest of it is skipped). TraceFormatError when the
    file cannot be opened."""
    require_regular_file(path)
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise TraceFormatError(f"cannot read file: {exc.strerror}", path=path) from None
    with fh:
        row = 0
        while True:
            line = fh.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            row += 1
            if len(line) > MAX_LINE_BYTES:
                while line and not line.endswith(b"\n"):
                    line = fh.readline(MAX_LINE_BYTES + 1)
                yield row, None
            elif line.strip():
                yield row, line


def feed_file(builder: LineFeeder, path: Path) -> tuple[int, list[TraceFormatError]]:
    """Feed every line of ``path`` to ``builder``: ``(lines used, bad lines)``."""
    fed = 0
    bad: list[TraceFormatError] = []
    for row, line in iter_lines(path):
        try:
            if line is None:
                raise TraceFormatError(
                    "line too long", path=path, row=row, expected=f"at most {MAX_LINE_BYTES} bytes a line"
                )
            builder.feed(parse_json(line, path, row), row)
            fed += 1
        except TraceFormatError as exc:
            exc.located(path=path, row=row)
            bad.append(exc)
    return fed, bad


def parse_first_line(head: bytes) -> Any:
    """The parsed first line of ``head``; when it is cut by the head, a dict of its
    top-level keys (values ``None``); ``None`` when it is not JSON. Never raises."""
    line, complete = first_line(head)
    if not complete:
        keys = top_level_keys(line)
        return dict.fromkeys(keys) if keys else None
    try:
        return jsonio.loads(line)
    except (orjson.JSONDecodeError, ValueError):
        return None


def renumber(steps: list[Step]) -> list[Step]:
    """``steps`` with ``index`` set to each one's position and a missing coordinate set to
    it (session steps are numbered in file order, 0-based, as chat messages are)."""
    for i, step in enumerate(steps):
        step.index = i
        if step.coord is None and step.kind != "system":
            step.coord = str(i)
    return steps


class SessionLinesImporter(FileImporter):
    """Reads a JSON-lines session file as one trace (see the module doc)."""

    priority: ClassVar[int] = 9
    single_trace: ClassVar[bool] = True

    def line_matches(self, obj: Any) -> bool:
        """True when the parsed first line (or a dict of its keys, when cut by the head)
        starts this format. Cheap, never raises."""
        raise NotImplementedError

    def make_builder(self, ctx: LoadContext) -> LineBuilder:
        """A fresh builder for the file ``ctx.path``."""
        raise NotImplementedError

    def match_head(self, head: bytes, path: Path) -> bool:
        obj = parse_first_line(head)
        try:
            return isinstance(obj, dict) and self.line_matches(obj)
        except (TypeError, ValueError, AttributeError, KeyError):
            return False

    def load_all(self, path: Path, root: Path | None) -> list[Trace]:
        builder = self.make_builder(LoadContext(path=path, root=root))
        fed, bad = feed_file(builder, path)
        if bad and not fed:
            raise bad[0]
        trace = builder.trace()
        if not fed:
            raise TraceFormatError("file holds no lines", path=path, expected=f"a {self.name} session")
        if bad:
            trace.extras.setdefault("whenpro_warnings", []).append(skipped_lines_warning(bad))
        return [trace]

    def load(self, path: Path, key: str | None, root: Path | None) -> Trace:
        return self.load_all(path, root)[0]

    def summaries(self, path: Path, root: Path | None) -> Iterator[TraceSummary]:
        try:
            yield summarize(self.load(path, None, root))
        except TraceFormatError as exc:
            yield TraceSummary(id=path.stem, path=str(path), format=self.name, error=exc.one_line())
