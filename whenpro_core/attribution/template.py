"""``--template FILE``: the all-at-once request in your own words (a Jinja2 template).

The template is rendered into the single user message of an all-at-once call (no system
message; the answer is read as the four labelled lines, or JSON). Variables:

=================  ===========================================================================
``question``       the task given to the system (its query)
``options``        the task's answer options as text, ``""`` when there are none
``gold_answer``    the correct answer when the judge may see it (not with ``--no-gold``), else ``""``
``taxonomy``       the failure-mode list, one ``- CODE: Name — description`` line per mode (whole)
``coordinate_hint`` how steps are headed and how to write a coordinate
``transcript``     the task's images, then the rendered transcript (``Step <coord> | Agent:
                   <name>`` blocks); each image stays where the transcript places it
``framework``      the agent framework's name
``answer_format``  whenpro's four-line answer format, to include or replace
=================  ===========================================================================

Undefined names are errors (a typo does not silently render as nothing). The template runs
in Jinja2's sandbox; trace content reaches it only as variable values (never as template
code), within limits on work, ``range()`` size and rendered size
(:mod:`whenpro_core.attribution.template_sandbox`). Errors are one line naming the file
and the line.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whenpro_core.attribution.prompts import ALL_AT_ONCE_FORMAT, Message, taxonomy_block, transcript_parts
from whenpro_core.errors import ConfigError, TemplateRenderError
from whenpro_core.trace.model import Trace
from whenpro_core.trace.taxonomy import Taxonomy
from whenpro_core.views.transcript import ImagePart, Part, TextPart, Transcript

COORDINATE_HINT = (
    "Steps are headed `Step <coordinate> | Agent: <name>`. Write the coordinate and the agent "
    "name exactly as they appear there."
)


@dataclass(frozen=True)
class PromptTemplate:
    """A loaded template: its ``path`` and the compiled Jinja2 template."""

    path: Path
    compiled: Any


def load_template(path: str | Path) -> PromptTemplate:
    """Read and compile a Jinja2 template; ConfigError naming the file (and line) when it
    cannot be read or does not parse."""
    import jinja2  # lazy: only --template needs Jinja2

    from whenpro_core.attribution.template_sandbox import LimitedSandbox  # lazy: imports Jinja2

    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read template: {getattr(exc, 'strerror', None) or exc}", path=path) from None
    env = LimitedSandbox(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    try:
        return PromptTemplate(path, env.from_string(source))
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"template syntax error at line {exc.lineno}: {exc.message}", path=path) from None


def template_sha(path: str | Path) -> str:
    """The first 12 hex digits of the SHA-256 of the template file's bytes (a bench
    setting's identity: results with different templates never mix). ConfigError naming
    the file when it cannot be read."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    except OSError as exc:
        raise ConfigError(f"cannot read template: {exc.strerror or exc}", path=path) from None


def templated_protocol(protocol: str, sha: str) -> str:
    """The bench setting name of ``protocol`` worded by the template ``sha``:
    ``all-at-once@template:<sha>`` (its resume key, record and report label)."""
    return f"{protocol}@template:{sha}"


def base_protocol(protocol: str) -> str:
    """The protocol a bench setting runs: ``all-at-once@template:<sha>`` -> ``all-at-once``,
    ``whowhen-pro:all-at-once@official-wording`` -> ``whowhen-pro:all-at-once`` (other
    names unchanged)."""
    return protocol.split("@", 1)[0]


def _transcript_text(transcript: Transcript, marker: str) -> tuple[str, list[ImagePart]]:
    """The task's images, then the fenced transcript, as text with each image replaced by
    ``marker<n>marker``."""
    text, images = "", list[ImagePart]()
    for part in [*transcript.task_images, *transcript_parts(transcript)]:
        if isinstance(part, TextPart):
            text += part.text
        else:
            text += f"{marker}{len(images)}{marker}"
            images.append(part)
    return text, images


def template_messages(
    template: PromptTemplate, trace: Trace, transcript: Transcript, taxonomy: Taxonomy, with_gold: bool
) -> list[Message]:
    """The all-at-once request from ``template``: one user message whose images sit where
    ``{{ transcript }}`` placed them. ConfigError (file and line) for an undefined name;
    TemplateRenderError (file and line) when the template raises or reaches a limit of
    :mod:`~whenpro_core.attribution.template_sandbox` (work, range, size)."""
    import jinja2  # lazy: only --template needs Jinja2

    from whenpro_core.attribution.template_sandbox import RenderFailure, render_limited

    marker = f"\x00img{secrets.token_hex(4)}\x00"
    text, images = _transcript_text(transcript, marker)
    values = {
        "question": trace.task.query.strip(),
        "options": str(trace.task.options or ""),
        "gold_answer": (trace.task.answer or "") if with_gold else "",
        "taxonomy": taxonomy_block(taxonomy),
        "coordinate_hint": COORDINATE_HINT,
        "transcript": text,
        "framework": trace.framework,
        "answer_format": ALL_AT_ONCE_FORMAT,
    }
    try:
        rendered = render_limited(template.compiled, values)
    except RenderFailure as exc:
        where = f" at line {exc.line}" if exc.line else ""
        raise TemplateRenderError(f"template failed{where}: {exc.what}", path=template.path) from None
    except jinja2.TemplateError as exc:
        line = getattr(exc, "lineno", None)
        where = f" at line {line}" if line else ""
        raise ConfigError(f"template error{where}: {exc}", path=template.path) from None
    parts: list[Part] = []
    for n, piece in enumerate(rendered.split(marker)):
        if n % 2 == 0:
            if piece:
                parts.append(TextPart(piece))
        elif piece.isdigit() and int(piece) < len(images):
            parts.append(images[int(piece)])
    return [Message("user", parts or [TextPart(" ")])]
