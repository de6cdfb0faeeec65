"""The limits a ``--template`` renders within (Jinja2's sandbox plus work and size caps).

Jinja2's :class:`~jinja2.sandbox.SandboxedEnvironment` already refuses unsafe attributes
and caps ``range()`` at :data:`jinja2.sandbox.MAX_RANGE` (100,000 items). On top of it,
one render (one trace) is limited to:

- :data:`MAX_RENDERED_CHARS` characters of output, counted while rendering (the render
  runs through Jinja2's generator and stops as soon as the total passes the cap);
- the same number of items for any string, list or tuple built by ``*`` (checked before
  it is built, through the sandbox's ``intercepted_binops`` / ``call_binop`` hooks), and
  exponents of ``**`` up to :data:`MAX_EXPONENT`;
- :data:`MAX_TEMPLATE_STEPS` lines of template code run (nested loops end here instead
  of running for hours), counted with a trace function on the template's own frames only.

Every failure, whether a limit or an exception inside the template (``1/0``, a
self-calling macro), is :class:`RenderFailure` carrying the template's line.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from types import FrameType
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment, SecurityError

#: Most characters one render may produce (and most items ``*`` may build).
MAX_RENDERED_CHARS = 20_000_000
#: Most lines of template code one render may run.
MAX_TEMPLATE_STEPS = 2_000_000
#: Largest exponent ``a ** b`` may use with integers (bigger ones take minutes).
MAX_EXPONENT = 10_000
#: The file name Jinja2 gives the code of a template compiled from a string.
TEMPLATE_CODE = "<template>"

_Tracer = Callable[[FrameType, str, Any], Any]


class RenderFailure(Exception):
    """A render stopped: ``what`` (one line) and ``line`` (1-based template line, or None)."""

    def __init__(self, what: str, line: int | None) -> None:
        super().__init__(what)
        self.what, self.line = what, line


def _refuse_repeat(sequence: object, times: object) -> None:
    if isinstance(sequence, str | list | tuple | bytes) and isinstance(times, int):
        size = len(sequence) * times
        if size > MAX_RENDERED_CHARS:
            raise SecurityError(f"'*' would build {size:,} characters or items (limit {MAX_RENDERED_CHARS:,})")


class LimitedSandbox(SandboxedEnvironment):
    """The sandbox with ``*`` and ``**`` checked before they run."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            _refuse_repeat(left, right)
            _refuse_repeat(right, left)
        elif isinstance(left, int) and isinstance(right, int) and abs(right) > MAX_EXPONENT and abs(left) > 1:
            raise SecurityError(f"'**' with exponent {right:,} (limit {MAX_EXPONENT:,})")
        return super().call_binop(context, operator, left, right)


class _WorkMeter:
    """A ``sys.settrace`` function counting the lines run in template code (other frames
    are not traced) and remembering the last one; raises past ``MAX_TEMPLATE_STEPS``."""

    def __init__(self) -> None:
        self.left = MAX_TEMPLATE_STEPS
        self.code_line: int | None = None

    def __call__(self, frame: FrameType, event: str, arg: Any) -> _Tracer | None:
        return self._line if frame.f_code.co_filename == TEMPLATE_CODE else None

    def _line(self, frame: FrameType, event: str, arg: Any) -> _Tracer:
        if event == "line":
            self.code_line = frame.f_lineno
            self.left -= 1
            if self.left < 0:
                raise SecurityError(f"the template ran more than {MAX_TEMPLATE_STEPS:,} steps")
        return self._line


def _chunks_within_cap(template: jinja2.Template, values: dict[str, Any]) -> list[str]:
    chunks, size = list[str](), 0
    for chunk in template.generate(**values):
        size += len(chunk)
        if size > MAX_RENDERED_CHARS:
            raise SecurityError(f"the rendered text passed {MAX_RENDERED_CHARS:,} characters")
        chunks.append(chunk)
    return chunks


def _template_line(failure: BaseException) -> int | None:
    """The template line in ``failure``'s traceback (Jinja2 rewrites the frames of template
    code to name the template's own lines), or None when it was raised outside the template."""
    frames = [frame for frame in traceback.extract_tb(failure.__traceback__) if frame.filename == TEMPLATE_CODE]
    return frames[-1].lineno if frames else None


def render_limited(template: jinja2.Template, values: dict[str, Any]) -> str:
    """``template`` rendered with ``values`` within the limits above. Raises
    :class:`jinja2.TemplateError` as Jinja2 does (an undefined name, a syntax error in an
    included string) and :class:`RenderFailure` for anything else that stops the render."""
    meter, previous = _WorkMeter(), sys.gettrace()
    sys.settrace(meter)
    try:
        return "".join(_chunks_within_cap(template, values))
    except SecurityError as exc:
        failure: Exception = exc
    except jinja2.TemplateError:
        raise
    except Exception as exc:  # noqa: BLE001 - anything the user's template raised, shown in one line
        failure = exc
    finally:
        sys.settrace(previous)
    line = _template_line(failure) or (template.get_corresponding_lineno(meter.code_line) if meter.code_line else None)
    what = str(failure) if isinstance(failure, SecurityError) else f"{type(failure).__name__}: {failure}"
    raise RenderFailure(what, line) from None
