"""The one exception family of whenpro (docs/architecture.md, 'Errors').

Every error a user can cause with bad input is a :class:`WhenproError`. Each carries
*what* went wrong, *where* (a file path, plus a JSON path such as ``$.trajectory[3].kind``
or a row number of a JSONL file) and *what was expected*, and renders as one line that
the CLI prints before exiting with status 2 and the TUI shows as a notification.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self

from pydantic import ValidationError

from whenpro_core.safety.redact import redact
from whenpro_core.safety.textsafe import clean


class WhenproError(Exception):
    """Base of every error whenpro raises on purpose.

    Args:
        what: what went wrong, in a few words ("not valid JSON", "missing field").
        path: the file (or folder) concerned, if any.
        json_path: a JSONPath-like location inside the document (``$.history[4].role``).
        row: 1-based line number in a JSONL file.
        expected: what whenpro expected to find there.
    """

    def __init__(
        self,
        what: str,
        *,
        path: str | Path | None = None,
        json_path: str | None = None,
        row: int | None = None,
        expected: str | None = None,
    ) -> None:
        self.what = what
        self.path = str(path) if path is not None else None
        self.json_path = json_path
        self.row = row
        self.expected = expected
        super().__init__(self.one_line())

    def where(self) -> str:
        """The location part of the message: ``file:row at $.json.path`` (may be empty)."""
        parts = []
        if self.path:
            parts.append(self.path + (f":{self.row}" if self.row is not None else ""))
        elif self.row is not None:
            parts.append(f"row {self.row}")
        if self.json_path:
            parts.append(f"at {self.json_path}")
        return " ".join(parts)

    def one_line(self) -> str:
        """The whole error as one line: ``<where>: <what> (expected <expected>)``. Paths and
        messages come from outside (file names, server answers), so the line is shown inert
        (:func:`~whenpro_core.safety.textsafe.clean`) with credentials redacted
        (:func:`~whenpro_core.safety.redact.redact`) wherever it goes."""
        msg = self.what
        if self.expected:
            msg += f" (expected {self.expected})"
        where = self.where()
        line = f"{where}: {msg}" if where else msg
        return " ".join(clean(redact(line)).split())

    def located(self, *, path: str | Path | None = None, row: int | None = None) -> Self:
        """Fill in a missing file path or row number (used as errors travel outwards)."""
        if self.path is None and path is not None:
            self.path = str(path)
        if self.row is None and row is not None:
            self.row = row
        self.args = (self.one_line(),)
        return self


class TraceFormatError(WhenproError):
    """The input is not a trace whenpro can read: bad JSON, wrong types, missing fields,
    truncated file, wrong encoding, unknown framework, a step index out of range."""


class UnknownFormatError(TraceFormatError):
    """No importer recognised the content of a file."""


class ConfigError(WhenproError):
    """A setting, flag, model name or config file is invalid."""


class TemplateRenderError(WhenproError):
    """A ``--template`` failed while rendering for one trace (an exception in the template,
    or a sandbox limit on work, range or size reached). Bench records it per item (kind
    ``trace``); ``attribute`` exits 2. The message names the template and its line."""


class BackendError(WhenproError):
    """An LLM backend failed after its retries (HTTP error, timeout, unusable answer).
    Messages never contain API keys. ``status`` is the last HTTP status (``None`` when the
    call got no answer) and ``attempts`` the calls made, as :mod:`whenpro_core.llm.failures`
    sets them."""

    status: int | None = None
    attempts: int = 1


class MediaError(WhenproError):
    """An image or video could not be read, or a media path points outside its trace's folder."""


class ReplayError(WhenproError):
    """Warm-start replay or an executor failed (crash, timeout, protocol violation)."""


@contextmanager
def errors_located_in(path: str | Path) -> Iterator[None]:
    """Re-raise a WhenproError that carries a JSON path but no file with ``path`` (the
    trace the JSON path points into, e.g. ``$.extras.env.name``) filled in as its file."""
    try:
        yield
    except WhenproError as exc:
        if exc.json_path and exc.path is None:
            exc.located(path=path)
        raise


def json_path(loc: Iterable[str | int]) -> str:
    """A pydantic error location as a JSON path: ``("steps", 3, "kind")`` -> ``$.steps[3].kind``."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


#: What a field holds, by pydantic error type (``string_type`` -> ``expected a string``).
_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "a list",
}


def validation_problem(exc: ValidationError) -> TraceFormatError:
    """The first error of ``exc`` as a TraceFormatError at its JSON path saying what was
    expected there (its :meth:`~WhenproError.one_line` reads ``at $.trace.gt_step:
    expected a string``; a missing field ``at $.key: missing``). The offending value is
    not quoted."""
    err = exc.errors(include_input=False, include_url=False)[0]
    msg = str(err.get("msg", "invalid value"))
    kind = err.get("type")
    if kind == "missing":
        what = "missing"
    elif kind in _EXPECTED:
        what = f"expected {_EXPECTED[kind]}"
    elif msg.startswith("Input should be "):
        what = "expected " + msg.removeprefix("Input should be ")
    else:
        what = msg
    return TraceFormatError(what, json_path=json_path(err.get("loc", ())))
