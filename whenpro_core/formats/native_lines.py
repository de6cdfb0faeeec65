"""Native step lines: the format an agent writes while it runs, one JSON object a line,
for ``whenpro watch`` to follow (docs/architecture.md, 'Data flow', ``live/``) and for every other command to
read afterwards.

* A **header line** holds trace fields (``id``, ``framework``, ``task``, ``agents``,
  ``outcome``, ``final_answer``, ``ground_truth``...): an object whose ``format`` is
  ``"whenpro.trace/1"``, or one with an ``id`` and none of the step fields ``kind``,
  ``content``, ``index``, ``coord``. It may come first, and again later to update fields
  (an agent writes its ``outcome`` at the end); ``steps`` in a header are appended.
* A **step line** is a :class:`~whenpro_core.trace.model.Step` object. ``index`` may be left
  out (it is the line's position among steps; a wrong one is an error: lines went
  missing); a missing ``coord`` becomes ``str(index)`` (an explicit ``null`` keeps the
  step as framing, without a coordinate).

The trace id is the header's ``id``, else the file's stem.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from whenpro_core.errors import TraceFormatError, json_path
from whenpro_core.formats.base import (
    FileImporter,
    LoadContext,
    final_answer_from_steps,
    first_line,
    outcome_from_gold,
    parse_json,
    summarize,
)
from whenpro_core.storage import jsonio
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import NATIVE_FORMAT, Outcome, Source, Step, Trace, TraceSummary

_STEP_KEYS = frozenset(Step.model_fields)
_TRACE_KEYS = frozenset(Trace.model_fields)
_STEP_MARKERS = {"kind", "content", "index", "coord"}


def is_header(obj: Any) -> bool:
    """True for a header line (see the module doc)."""
    if not isinstance(obj, dict):
        return False
    if obj.get("format") == NATIVE_FORMAT:
        return True
    return "id" in obj and not (_STEP_MARKERS & obj.keys())


def is_step_line(obj: Any) -> bool:
    """True for an object that can be a step line: only Step fields, with ``kind`` or
    ``content``."""
    return isinstance(obj, dict) and bool(obj) and obj.keys() <= _STEP_KEYS and bool({"kind", "content"} & obj.keys())


class NativeLinesBuilder:
    """Builds a trace from native step lines fed one parsed object at a time.

    :meth:`feed` raises TraceFormatError for a bad line and leaves the trace as it was;
    :meth:`trace` returns a snapshot (a new Trace sharing the Step objects).
    """

    format = "native-lines"

    def __init__(self, ctx: LoadContext, default_id: str, *, growing: bool = False) -> None:
        self.ctx = ctx
        #: A file still being written (``whenpro watch``/``--follow``): its ground truth
        #: does not make the run a failure, which would end the run at its header.
        self.growing = growing
        self.fields: dict[str, Any] = {"id": default_id}
        self.steps: list[Step] = []
        #: How many steps had come when a header last stated a known ``outcome``
        #: (``None``: none has): 0 is an outcome stated up front, before the run's steps,
        #: which does not by itself end a run being followed (issue 32).
        self.outcome_steps: int | None = None
        self._base = self._validate_header(self.fields)

    def _validate_header(self, fields: dict[str, Any]) -> Trace:
        try:
            return Trace.model_validate({**fields, "steps": []})
        except ValidationError as exc:
            err = exc.errors()[0]
            raise self.ctx.error(err["msg"], json_path(err["loc"]), expected="whenpro.trace/1 trace fields") from None

    def feed(self, obj: Any) -> tuple[str, ...]:
        """Add one line. Returns the trace fields a header line changed (``()`` for a
        step line)."""
        if is_header(obj):
            return self._header(obj)
        self._add_step(obj)
        return ()

    def _header(self, obj: JSONObject) -> tuple[str, ...]:
        unknown = obj.keys() - _TRACE_KEYS
        if unknown:
            raise self.ctx.error(
                f"unknown trace field {sorted(unknown)[0]!r}", "$", expected="whenpro.trace/1 trace fields"
            )
        new = {k: v for k, v in obj.items() if k not in ("steps", "format", "source")}
        fields = {**self.fields, **new}
        base = self._validate_header(fields)
        steps = obj.get("steps") or []
        if not isinstance(steps, list):
            raise self.ctx.error("wrong type", "$.steps", expected="a list of steps")
        added = [self._make_step(s, len(self.steps) + i, f"$.steps[{i}]") for i, s in enumerate(steps)]
        changed = tuple(k for k in new if self.fields.get(k) != new[k])
        self.fields, self._base = fields, base
        self.steps.extend(added)
        if "outcome" in new and base.outcome != Outcome.unknown:
            self.outcome_steps = len(self.steps)
        return changed

    def _add_step(self, obj: Any) -> None:
        self.steps.append(self._make_step(obj, len(self.steps), "$"))

    def _make_step(self, obj: Any, position: int, where: str) -> Step:
        if not isinstance(obj, dict):
            raise self.ctx.error(
                f"wrong type (got {type(obj).__name__})", where, expected="a step object or a header object"
            )
        data = dict(obj)
        given = data.setdefault("index", position)
        if isinstance(given, int) and not isinstance(given, bool) and given > position:
            # lines before it were skipped (cut or not JSON): keep the step, renumbered,
            # under the coordinate its writer gave it
            data["index"] = position
            data.setdefault("coord", str(given))
        elif given != position:
            raise self.ctx.error(
                f"step index {given} out of order", f"{where}.index", expected=f"{position} (a line went missing?)"
            )
        data.setdefault("coord", str(position))
        try:
            return Step.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = json_path(err["loc"])
            raise self.ctx.error(err["msg"], where + loc[1:], expected="a whenpro step object") from None

    def trace(self) -> Trace:
        """The trace so far (a snapshot). Without a header ``final_answer`` the last
        final_answer step gives it; with an unknown ``outcome`` it is judged against
        the header's gold answer (:func:`~whenpro_core.formats.base.outcome_from_gold`)
        only in a finished file (not ``growing``): a file still being written has the
        outcome it states (a gold answer and a final answer in its first header do not
        end the run, issue 32)."""
        base = self._base
        final = base.final_answer if base.final_answer is not None else final_answer_from_steps(self.steps)
        outcome = base.outcome
        if outcome == Outcome.unknown and not self.growing:
            outcome = outcome_from_gold(final, base.task.answer, base.ground_truth is not None)
        return base.model_copy(
            update={
                "steps": list(self.steps),
                "final_answer": final,
                "outcome": outcome,
                "source": Source(
                    format=self.format, path=str(self.ctx.path), root=str(self.ctx.root) if self.ctx.root else None
                ),
            }
        )


def skipped_lines_warning(bad: list[TraceFormatError], shown: int = 5) -> str:
    """The note for lines a step-lines reader skipped, for ``Trace.extras["whenpro_warnings"]``:
    ``skipped 2 bad lines (lines 3, 6; line 3: not valid JSON at column 1: ...)`` (at most
    ``shown`` line numbers, and the first line's problem); one line is named once."""
    rows = [str(e.row) for e in bad]
    first = bad[0]
    # a JSON line is one line: its parse error's "line 1 column N" is "column N"
    what = first.what.replace(" at line 1 column ", " at column ")
    what += f" at {first.json_path}" if first.json_path not in (None, "$") else ""
    if len(rows) == 1:
        return f"skipped 1 bad line (line {first.row}: {what})"
    listed = ", ".join(rows[:shown]) + (", …" if len(rows) > shown else "")
    return f"skipped {len(rows)} bad lines (lines {listed}; line {first.row}: {what})"


class NativeLinesImporter(FileImporter):
    """Reads a finished (or still growing) native step-lines file as one trace. Bad lines
    (not JSON, not a valid step, cut off by a killed writer) are skipped as
    :class:`~whenpro_core.live.follow.FileFollower` skips them, and noted in
    ``extras["whenpro_warnings"]``; a file with no good line raises the first line's
    TraceFormatError."""

    name = "native-lines"
    priority = 2

    def match_head(self, head: bytes, path: Path) -> bool:
        line, complete = first_line(head)
        if not complete:
            return False
        try:
            obj = jsonio.loads(line)
        except orjson.JSONDecodeError:
            return False
        if is_header(obj):
            return obj.get("format") == NATIVE_FORMAT and not obj.get("steps") and b"\n" in head.strip()
        return is_step_line(obj)

    def load_all(self, path: Path, root: Path | None) -> list[Trace]:
        builder = NativeLinesBuilder(LoadContext(path=path, root=root), path.stem)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise TraceFormatError(f"cannot read file: {exc.strerror}", path=path) from None
        bad: list[TraceFormatError] = []
        fed = 0
        for row, line in enumerate(data.split(b"\n"), 1):
            if not line.strip():
                continue
            try:
                builder.feed(parse_json(line, path, row))
                fed += 1
            except TraceFormatError as exc:
                bad.append(exc.located(path=path, row=row))
        if bad and not fed:
            raise bad[0]
        trace = builder.trace()
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


__all__ = ["NativeLinesBuilder", "NativeLinesImporter", "is_header", "is_step_line", "skipped_lines_warning"]
