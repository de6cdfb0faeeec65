"""How one step is shown: its one-line row, its markers, how its content should be
rendered (Markdown, code, JSON or plain text), folding of long content, and the readable
text form used for ``$EDITOR`` and the clipboard.

UI-free: the TUI (and the CLI) turn these plain values into widgets. Every string that
comes out of here has passed :func:`whenpro_core.safety.textsafe.clean`.
"""

from __future__ import annotations

import ast
import base64
import binascii
import difflib
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from whenpro_core.errors import MediaError
from whenpro_core.media import image_size
from whenpro_core.safety.textsafe import clean, human_size, one_line
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import MediaRef, Step

# ----------------------------------------------------------------------------- markers

#: Marker glyphs in the step list (docs/architecture.md, 'Module map', trace screen). Order = display order.
MARK_TOOL_ERROR = "✗"
MARK_IMAGE = "▣"
MARK_VIDEO = "▶"
MARK_ATTRIBUTED = "◆"
MARK_INJECTED = "⚑"
MARK_GT = "★"
#: Width in cells of the marker column (one cell per marker kind that can show).
MARKER_WIDTH = 6


def is_injected(step: Step) -> bool:
    """True when a label-leaking hidden field says the error was injected at this step
    (``is_injected``, ``injected``, or ``phase`` holding ``"injected"``; Who&When Pro
    construction markers). Replayed prefix steps (``is_replayed``, phase ``replayed``)
    are not: they are the original run's steps, copied."""
    hidden = step.hidden
    phase = hidden.get("phase")
    phases = phase if isinstance(phase, list) else [phase]
    return bool(hidden.get("is_injected") or hidden.get("injected") or "injected" in phases)


@dataclass(frozen=True)
class StepRow:
    """One line of the step list.

    Attributes:
        index: position in ``Trace.steps``.
        coord: the step coordinate (``""`` for framing entries without one).
        agent: the speaking agent's id.
        kind: ``user``, ``plan``, ``action``, ...
        summary: the first words of the step, one safe line.
        tool_error: the step recorded an error.
        image / video: the step carries images (or frames) / a video.
        attributed: an attribution names this step (the ◆ marker; set by phase 3).
        injected: a hidden field marks the step as injected (shown with labels only).
        gt: the ground truth names this step (shown with labels only).
    """

    index: int
    coord: str
    agent: str
    kind: str
    summary: str
    tool_error: bool = False
    image: bool = False
    video: bool = False
    attributed: bool = False
    injected: bool = False
    gt: bool = False

    def markers(self, show_labels: bool) -> str:
        """The marker glyphs in display order; ``★`` and ``⚑`` only when ``show_labels``."""
        out = []
        if self.tool_error:
            out.append(MARK_TOOL_ERROR)
        if self.image:
            out.append(MARK_IMAGE)
        if self.video:
            out.append(MARK_VIDEO)
        if self.attributed:
            out.append(MARK_ATTRIBUTED)
        if show_labels and self.injected:
            out.append(MARK_INJECTED)
        if show_labels and self.gt:
            out.append(MARK_GT)
        return "".join(out)


def step_summary(step: Step, limit: int = 160) -> str:
    """One safe line saying what the step did: its content, else its tool calls
    (``→ search(query=…)``), else its observation, else its error."""
    if step.content.strip():
        return one_line(step.content, limit)
    if step.tool_calls:
        calls = ", ".join(f"{c.name}({_args_inline(c.arguments)})" for c in step.tool_calls[:3])
        return one_line("→ " + calls, limit)
    if step.observation:
        return one_line("⇐ " + step.observation, limit)
    if step.error:
        return one_line("error: " + step.error, limit)
    if step.media:
        return one_line(", ".join(media_label(m) for m in step.media[:3]), limit)
    return ""


def _args_inline(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, dict):
        return ", ".join(f"{k}={_short(v)}" for k, v in list(arguments.items())[:4])
    return _short(arguments)


def _short(value: Any, n: int = 40) -> str:
    text = value if isinstance(value, str) else _json_compact(value)
    return text if len(text) <= n else text[: n - 1] + "…"


def _json_compact(value: Any) -> str:
    return jsonio.dumps(value, default=str).decode("utf-8")  # any depth the readers take


#: Short forms of common step kinds, for a narrow kind column (:func:`short_kind`).
KIND_SHORT = {
    "assistant": "asst",
    "observation": "obs",
    "demonstration": "demo",
    "system": "sys",
    "final_answer": "final",
}


def short_kind(kind: str, width: int) -> str:
    """``kind`` in at most ``width`` cells for the step list's kind column: whole when it
    fits; else its usual short form (``observation`` → ``obs``) or its first word
    (``final_answer`` → ``final``, ``tool-result`` → ``tool``) when that fits; else cut
    with ``…`` (never cut silently mid-word)."""
    if width <= 0:
        return ""
    if len(kind) <= width:
        return kind
    for short in (KIND_SHORT.get(kind), kind.replace("-", "_").split("_")[0]):
        if short and len(short) <= width:
            return short
    return kind[: width - 1] + "…"


def step_row(step: Step, *, gt_index: int | None = None, attributed: bool = False) -> StepRow:
    """The list row of ``step``. ``gt_index`` is the GT step's index (``None`` when the
    trace has no step label); ``attributed`` sets the ◆ marker."""
    return StepRow(
        index=step.index,
        coord=clean(step.coord or ""),
        agent=clean(step.agent),
        kind=clean(step.kind),
        summary=step_summary(step),
        tool_error=bool(step.error),
        image=any(m.kind in ("image", "frame") for m in step.media),
        video=any(m.kind == "video" for m in step.media),
        attributed=attributed,
        injected=is_injected(step),
        gt=gt_index is not None and step.index == gt_index,
    )


def step_reasoning(step: Step) -> str | None:
    """The step's thinking (``meta["reasoning"]``: Claude's thinking blocks, a reasoning
    model's summary, as importers keep them), or ``None`` when it has none. What the TUI
    shows as *Reasoning* and the HTML and Markdown exports include."""
    reasoning = step.meta.get("reasoning") if isinstance(step.meta, dict) else None
    return reasoning if isinstance(reasoning, str) and reasoning.strip() else None


# ----------------------------------------------------------------------------- content

BlockKind = Literal["text", "markdown", "json", "code", "label"]


@dataclass(frozen=True)
class Block:
    """A piece of step content and how to render it: ``text`` (verbatim), ``markdown``,
    ``json`` (already pretty-printed), ``code`` (``language`` names the lexer) or
    ``label`` (a short caption naming the block after it)."""

    kind: BlockKind
    text: str
    language: str = ""


_MD_HINTS = re.compile(r"(^|\n)(#{1,6} \S|```|\s*[-*+] \S|\s*\d+\. \S|>\s)|\*\*\S|\[[^\]\n]+\]\(https?://", re.M)
_CODE_HINTS = re.compile(
    r"^(\s*)(def |class |import |from \S+ import |for .+:\s*$|if .+:\s*$|print\(|return\b|"
    r"[A-Za-z_][A-Za-z0-9_]* = )",
    re.M,
)
_CODE_TAG = re.compile(r"<code>[ \t]*\n?(.*?)\n?[ \t]*</code>", re.S)
_PROSE_LEAD = re.compile(r"^(Thought|Thoughts|Observation|Plan|Reasoning|Answer|Final answer)\s*:", re.I)
#: JSON larger than this is shown as text (pretty-printing it costs more than it helps).
JSON_PRETTY_LIMIT = 1_000_000


def _try_json(text: str) -> str | None:
    s = text.strip()
    if len(s) < 2 or s[0] not in "{[" or s[-1] not in "}]" or len(s) > JSON_PRETTY_LIMIT:
        return None
    try:
        value = orjson.loads(s)
    except orjson.JSONDecodeError:
        return None
    return jsonio.pretty(value)


#: Step kinds whose text a model wrote, where Markdown is the convention: their content
#: is rendered as Markdown when it has Markdown structure (:func:`renders_markdown`).
MARKDOWN_KINDS = frozenset({"assistant", "final_answer", "plan", "thought", "agent", "llm"})


def renders_markdown(step: Step) -> bool:
    """Whether ``step``'s content may be rendered as Markdown: only text a model wrote
    (:data:`MARKDOWN_KINDS`). Prompts (``system``, ``user``, demonstrations), tool
    output and observations are plain text written for their line breaks and
    indentation (a SWE-agent system prompt's command list), shown verbatim (issue 32)."""
    return step.kind in MARKDOWN_KINDS


def content_blocks(text: str, *, markdown: bool = True) -> list[Block]:
    """Split step content into rendering blocks, deciding by content (not by kind):

    * the whole content is JSON -> one ``json`` block, pretty-printed;
    * a heading line followed by JSON (Magentic-One's ``Updated Ledger:\\n{...}``) ->
      ``text`` + ``json``;
    * Markdown features (headings, fences, lists, bold, links) -> ``markdown``, when
      ``markdown`` (the caller's :func:`renders_markdown`), else ``text``;
    * prose with ``<code>...</code>`` regions (smolagents) -> the prose as ``text`` or
      ``markdown`` and each region as ``code`` (``python``): prose is never highlighted;
    * mostly Python-looking lines and no sentence line -> ``code`` (``python``);
    * else ``text`` (verbatim).

    ``text`` must already be cleaned (:func:`whenpro_core.safety.textsafe.clean`) and capped by
    the caller. Never raises.
    """
    if not text.strip():
        return []
    pretty = _try_json(text)
    if pretty is not None:
        return [Block("json", pretty)]
    head, sep, rest = text.partition("\n")
    if sep and len(head) < 200 and rest.lstrip()[:1] in ("{", "["):
        pretty = _try_json(rest)
        if pretty is not None:
            return [Block("text", head), Block("json", pretty)]
    if "</code>" in text and _CODE_TAG.search(text):
        return _tagged_code_blocks(text, markdown)
    if _looks_like_code(text):
        return [Block("code", text, "python")]
    return _prose_blocks(text, markdown)


def _prose_blocks(text: str, markdown: bool) -> list[Block]:
    if not text.strip():
        return []
    return [Block("markdown" if markdown and _MD_HINTS.search(text) else "text", text)]


def _tagged_code_blocks(text: str, markdown: bool) -> list[Block]:
    """Prose with ``<code>...</code>`` regions (smolagents' ``Thought: ... <code>``): the
    prose as text or Markdown, each region as Python; only the code is highlighted."""
    blocks: list[Block] = []
    pos = 0
    for m in _CODE_TAG.finditer(text):
        blocks += _prose_blocks(text[pos : m.start()].rstrip(), markdown)
        if m.group(1).strip():
            blocks.append(Block("code", m.group(1), "python"))
        pos = m.end()
    return blocks + _prose_blocks(text[pos:].strip("\n"), markdown)


def _is_prose_line(line: str) -> bool:
    """A line of a sentence, not code: a ``Thought:``-style lead, or eight or more words
    ending like a sentence (comments excepted)."""
    s = line.strip()
    if _PROSE_LEAD.match(s):
        return True
    return len(s.split()) >= 8 and s[-1:] in ".?!" and not s.startswith(("#", "//", '"', "'"))


def _looks_like_code(text: str) -> bool:
    if "```" in text:
        return False
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2 or any(_is_prose_line(ln) for ln in lines):
        return False
    hits = sum(1 for ln in lines if _CODE_HINTS.match(ln))
    return hits / len(lines) >= 0.4


def pretty_arguments(arguments: Any) -> Block:
    """Tool-call arguments as a block: JSON values (and strings holding JSON)
    pretty-printed (:func:`~whenpro_core.storage.jsonio.pretty`: any depth), other
    strings as text."""
    if arguments is None:
        return Block("text", "")
    if isinstance(arguments, str):
        pretty = _try_json(arguments)
        if pretty is not None:
            return Block("json", clean(pretty))
        return Block("text", clean(arguments))
    return Block("json", clean(jsonio.pretty(arguments)))


#: Lexer names by file extension, for code written to a file (``file_text``, ``content``).
_EXT_LANG = {
    "py": "python",
    "js": "javascript",
    "mjs": "javascript",
    "ts": "typescript",
    "tsx": "tsx",
    "jsx": "jsx",
    "sh": "bash",
    "bash": "bash",
    "json": "json",
    "md": "markdown",
    "html": "html",
    "css": "css",
    "yaml": "yaml",
    "yml": "yaml",
    "toml": "toml",
    "rs": "rust",
    "go": "go",
    "java": "java",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "hpp": "cpp",
    "rb": "ruby",
    "sql": "sql",
    "ex": "elixir",
    "exs": "elixir",
    "txt": "text",
}
_SHELLS = ("bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh")
_PATCH_START = "*** Begin Patch"


def _language_of(path: Any) -> str:
    if not isinstance(path, str) or "." not in path.rsplit("/", 1)[-1]:
        return "text"
    return _EXT_LANG.get(path.rsplit(".", 1)[-1].lower(), "text")


def _shell_text(command: Any) -> str | None:
    """A shell command as one string: a string as is; an argv list joined, with
    ``["bash", "-lc", "<script>"]`` (Codex) shown as its script."""
    if isinstance(command, str):
        return command
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        argv: list[str] = command
        if len(argv) == 3 and argv[0] in _SHELLS and argv[1] in ("-c", "-lc"):
            return argv[2]
        return shlex.join(argv)
    return None


def _diff(old: str, new: str, path: str) -> str:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), path, path, lineterm="", n=2)
    return "\n".join(lines) or f"(no change to {path})"


_FILE_EDITOR_CALL = re.compile(r"^\s*print\(file_editor\(\*\*(\{.*\})\)\)\s*$", re.S)


def _editor_call(code: Any) -> dict[str, Any] | None:
    """The arguments of OpenHands' ``print(file_editor(**{...}))`` (its
    ``translated_ipython_code``), read as a Python literal, or ``None``."""
    m = _FILE_EDITOR_CALL.match(code) if isinstance(code, str) else None
    if not m:
        return None
    try:
        value = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) and all(isinstance(k, str) for k in value) else None


#: Blocks for the arguments that hold code, and the keys they used.
_CodeFields = tuple[list[Block], set[str]]


def _editor_fields(args: dict[str, Any]) -> _CodeFields | None:
    """The code fields of the editor call an OpenHands ``translated_ipython_code`` stands
    for (it holds the real file text and edits), using every key but ``path``; ``None``
    when there is no such call or it holds no code."""
    editor = _editor_call(args.get("translated_ipython_code"))
    if editor is None:
        return None
    inner, _ = _code_fields(
        {k: v for k, v in args.items() if k != "translated_ipython_code" and v not in (None, "")} | editor
    )
    return (inner, set(args) - {"path"}) if inner else None


def _edit_fields(args: dict[str, Any], path: str) -> _CodeFields:
    """Edits as a unified diff (``old_str``/``new_str``, ``old_string``/``new_string``),
    and the inserted text of an ``insert`` command."""
    blocks: list[Block] = []
    used: set[str] = set()
    for old_key, new_key in (("old_str", "new_str"), ("old_string", "new_string")):
        old, new = args.get(old_key), args.get(new_key)
        if isinstance(old, str) and old and isinstance(new, (str, type(None))):
            blocks += [Block("label", f"{old_key} → {new_key}:"), Block("code", _diff(old, new or "", path), "diff")]
            used |= {old_key, new_key}
        elif isinstance(new, str) and new and old is None and args.get("command") == "insert":
            blocks += [Block("label", f"{new_key}:"), Block("code", new, _language_of(path))]
            used.add(new_key)
    return blocks, used


def _file_fields(args: dict[str, Any], path: str) -> _CodeFields:
    """File contents (``file_text``; ``content`` only beside a path), highlighted by the path's extension."""
    blocks: list[Block] = []
    used: set[str] = set()
    for key in ("file_text", "content"):
        if isinstance(args.get(key), str) and args[key].strip() and (path or key == "file_text"):
            blocks += [
                Block("label", f"{key} ({path.rsplit('/', 1)[-1] or 'file'}):"),
                Block("code", args[key], _language_of(path)),
            ]
            used.add(key)
    return blocks, used


def _python_fields(args: dict[str, Any], path: str) -> _CodeFields:
    """``code`` and ``translated_ipython_code`` as Python (OpenHands run_ipython; editor calls as Python)."""
    blocks: list[Block] = []
    used: set[str] = set()
    for key in ("code", "translated_ipython_code"):
        if isinstance(args.get(key), str) and args[key].strip():
            blocks += [Block("label", f"{key}:"), Block("code", args[key], "python")]
            used.add(key)
    return blocks, used


def _shell_fields(args: dict[str, Any], path: str) -> _CodeFields:
    """Shell commands (``command``/``cmd``; argv lists joined) as Bash; a ``command`` that
    is one word (an editor sub-command such as ``view``) stays an argument."""
    blocks: list[Block] = []
    used: set[str] = set()
    for key in ("command", "cmd"):
        text = _shell_text(args.get(key))
        if text and (isinstance(args.get(key), list) or "\n" in text or " " in text or key == "cmd"):
            blocks += [Block("label", f"{key}:"), Block("code", text, "bash")]
            used.add(key)
    return blocks, used


def _patch_fields(args: dict[str, Any], path: str) -> _CodeFields:
    """Codex patches (``input``/``patch`` starting ``*** Begin Patch``) as a diff."""
    blocks: list[Block] = []
    used: set[str] = set()
    for key in ("input", "patch"):
        if isinstance(args.get(key), str) and args[key].lstrip().startswith(_PATCH_START):
            blocks += [Block("label", f"{key}:"), Block("code", args[key], "diff")]
            used.add(key)
    return blocks, used


#: The readers of code-holding arguments, in the order their blocks are shown.
_FIELD_READERS: tuple[Callable[[dict[str, Any], str], _CodeFields], ...] = (
    _edit_fields,
    _file_fields,
    _python_fields,
    _shell_fields,
    _patch_fields,
)


def _code_fields(args: dict[str, Any]) -> _CodeFields:
    """Blocks for the arguments that hold code, and the keys they used."""
    editor = _editor_fields(args)
    if editor is not None:
        return editor
    path = next((args[k] for k in ("path", "file_path", "filename") if isinstance(args.get(k), str)), "")
    blocks: list[Block] = []
    used: set[str] = set()
    for reader in _FIELD_READERS:
        more, keys = reader(args, path)
        blocks += more
        used |= keys
    return blocks, used


def call_blocks(arguments: Any) -> list[Block]:
    """Tool-call arguments as blocks, with code shown as code: edits (``old_str``/
    ``new_str``, ``old_string``/``new_string``) as a unified diff; file contents
    (``file_text``, ``content`` beside a path) highlighted by the path's extension;
    ``code`` as Python (OpenHands' ``translated_ipython_code`` editor calls read as the
    edit they stand for); shell commands (``command``/``cmd``, argv lists such as Codex's
    ``["bash", "-lc", ...]``) as Bash; Codex patches (``*** Begin Patch``) as a diff. The
    other arguments follow as pretty JSON; arguments holding no code give the single
    :func:`pretty_arguments` block. Every text is cleaned."""
    if isinstance(arguments, str) and arguments.lstrip().startswith(_PATCH_START):
        return [Block("code", clean(arguments), "diff")]
    if not isinstance(arguments, dict):
        return [pretty_arguments(arguments)]
    blocks, used = _code_fields(arguments)
    if not blocks:
        return [pretty_arguments(arguments)]
    rest = {k: v for k, v in arguments.items() if k not in used and v not in (None, "", [], {})}
    out = [Block(b.kind, clean(b.text), b.language) for b in blocks]
    return ([pretty_arguments(rest)] if rest else []) + out


@dataclass(frozen=True)
class Folded:
    """A capped view of a long string.

    Attributes:
        text: the part to render (cleaned).
        shown_chars: characters of the original shown.
        total_chars: length of the original.
        hidden_lines: lines of the original not shown (counted only up to
            ``count_limit`` characters; ``None`` when the rest was not scanned).
    """

    text: str
    shown_chars: int
    total_chars: int
    hidden_lines: int | None = None

    @property
    def complete(self) -> bool:
        """True when nothing was cut."""
        return self.shown_chars >= self.total_chars

    def note(self) -> str:
        """``"… 120 more lines, 3.4 K chars of 10.0 M chars shown"`` (``""`` if complete)."""
        if self.complete:
            return ""
        more = f"{self.hidden_lines:,} more lines, " if (self.hidden_lines or 0) > 1 else ""
        return f"… {more}{human_size(self.shown_chars)} of {human_size(self.total_chars)} shown"


def fold(text: str, *, max_lines: int, max_chars: int, count_limit: int = 2_000_000) -> Folded:
    """The first ``max_lines`` lines of ``text``, at most ``max_chars`` characters,
    cleaned for display. The caller grows the limits to expand in chunks; even "all" is
    a cap, so a 10 MB step never reaches the renderer whole.
    """
    total = len(text)
    cut = min(total, max_chars)
    # find the end of line max_lines within the char budget
    pos = -1
    for _ in range(max_lines):
        pos = text.find("\n", pos + 1, cut)
        if pos == -1:
            break
    if pos != -1:
        cut = pos
    shown = text[:cut]
    hidden_lines = None
    if cut < total and total - cut <= count_limit:
        start = cut + 1 if text[cut : cut + 1] == "\n" else cut
        hidden_lines = text.count("\n", start) + (0 if text.endswith("\n") else 1)
    return Folded(text=clean(shown), shown_chars=cut, total_chars=total, hidden_lines=hidden_lines)


# ----------------------------------------------------------------------------- media


def media_label(ref: MediaRef) -> str:
    """The placeholder line for a media item: ``[image: query_0 640x480]``,
    ``[video: clip.mp4]``, ``[frame: #3 12.5s 320x240]``. Sizes are read from the header
    of inline data only (phase 1; files are opened by ``media.py``, which confines paths)."""
    name = ref.label or (ref.path.replace("\\", "/").rsplit("/", 1)[-1] if ref.path else "inline")
    parts = [clean(name)]
    if ref.kind == "frame":
        if ref.index is not None:
            parts.append(f"#{ref.index}")
        if ref.time_s is not None:
            parts.append(f"{ref.time_s:.1f}s")
    size = _inline_size(ref.data) if ref.data else None
    if size:
        parts.append(f"{size[0]}x{size[1]}")
    return f"[{ref.kind}: {' '.join(parts)}]"


def _inline_size(data: str) -> tuple[int, int] | None:
    """Width and height of inline base64 image data from its first 64 KiB (header
    only); ``None`` when unknown. Never raises."""
    head = data.split(",", 1)[-1][: 65536 // 4 * 4]
    try:
        return image_size(base64.b64decode(head))
    except (MediaError, binascii.Error, ValueError):
        return None


# ----------------------------------------------------------------------------- text form


@dataclass
class TextOptions:
    """What :func:`step_as_text` includes: ``show_labels`` adds the hidden (label-
    leaking) fields; ``max_chars`` caps each field (``None``: no cap)."""

    show_labels: bool = False
    max_chars: int | None = None
    extra_header: list[str] = field(default_factory=list)


def step_as_text(step: Step, options: TextOptions | None = None) -> str:
    """The step as readable plain text (for ``$EDITOR`` and the clipboard): a header
    line ``Step <coord> | Agent: <agent> | <kind>``, then content, tool calls with
    pretty arguments, observation, error, media placeholders and, only with
    ``show_labels``, the hidden fields. Control characters are made visible."""
    opts = options or TextOptions()

    def cap(text: str) -> str:
        if opts.max_chars is not None and len(text) > opts.max_chars:
            return clean(text[: opts.max_chars]) + f"\n… ({human_size(len(text))} in total)"
        return clean(text)

    coord = step.coord if step.coord is not None else f"#{step.index}"
    out = [f"Step {clean(coord)} | Agent: {clean(step.agent)} | {clean(step.kind)}", *opts.extra_header, ""]
    if step.content:
        out += [cap(step.content), ""]
    for call in step.tool_calls:
        args = pretty_arguments(call.arguments).text
        out += [f"Tool call: {clean(call.name)}" + (f" (id {clean(call.id)})" if call.id else ""), cap(args), ""]
    if step.observation:
        out += ["Observation:", cap(step.observation), ""]
    if step.error:
        out += ["Error:", cap(step.error), ""]
    for ref in step.media:
        out.append(media_label(ref))
    if opts.show_labels and step.hidden:
        out += ["", "Hidden (label) fields:"]
        for key, value in step.hidden.items():
            out.append(f"  {clean(str(key))}: {cap(value if isinstance(value, str) else _json_compact(value))}")
    return "\n".join(out).rstrip() + "\n"
