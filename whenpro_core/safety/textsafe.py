"""Make untrusted trace text safe to show on a terminal (docs/architecture.md, 'Untrusted content').

Trace content is written by models, tools and web pages. It may carry terminal escape
sequences (``ESC [ 2 J`` clears the screen, OSC 52 writes the clipboard, OSC 8 forges
links), other control characters, and bidirectional-override characters that make text
read differently from what it is. Neither Rich ``Text`` nor Textual ``Content`` removes
``ESC``, so every string from a trace goes through :func:`clean` before it is rendered.

The policy is *show, don't execute*: an escape sequence is kept as visible text with its
``ESC`` replaced by ``␛`` (U+241B), other C0 controls become their Control Pictures
(U+2400 block), C1 controls, bidi overrides and lone surrogates become ``⟨U+XXXX⟩``. Newlines and tabs are
kept; ``\\r\\n`` and a lone ``\\r`` become ``\\n``. The result contains no code point a
terminal interprets.
"""

from __future__ import annotations

import re

#: Characters that change text direction (Trojan Source, CVE-2021-42574).
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"

_NEWLINES = re.compile(r"\r\n?")
# C0 controls except \t and \n, DEL, C1 controls, bidi controls, and lone surrogates
# (JSON's "\ud800" decodes to one; it cannot be encoded as UTF-8 for a terminal, the
# clipboard, a file or a judge's request).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f" + BIDI_CONTROLS + "\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    ch = match.group(0)
    code = ord(ch)
    if code == 0x1B:
        return "\u241b"  # ␛
    if code < 0x20:
        return chr(0x2400 + code)  # Control Pictures: ␀ ␁ ... ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\u27e8U+{code:04X}\u27e9"  # ⟨U+009B⟩


def clean(text: str | None) -> str:
    """``text`` with every terminal-interpreted character made visible and inert.

    ``"a\\x1b[2Jb"`` -> ``"a␛[2Jb"``; ``"x\\r\\ny"`` -> ``"x\\ny"``; ``None`` -> ``""``.
    Linear time; a 10 MB string takes tens of milliseconds, so callers clean only the
    part they render.
    """
    if not text:
        return ""
    if "\r" in text:
        text = _NEWLINES.sub("\n", text)
    return _UNSAFE.sub(_visible, text)


#: What JSON writes raw but a terminal may act on: DEL, C1 controls, bidi controls.
_JSON_RAW_UNSAFE = re.compile("[\x7f-\x9f" + BIDI_CONTROLS + "]")


def inert_json(data: bytes) -> bytes:
    """UTF-8 JSON text with every DEL, C1 control and bidi control written as a
    ``\\uXXXX`` escape: the same JSON value, with nothing a terminal interprets (JSON
    escapes C0 controls itself; these can only stand inside strings)."""
    text = data.decode("utf-8")
    if _JSON_RAW_UNSAFE.search(text) is None:
        return data
    return _JSON_RAW_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text).encode("utf-8")


def is_clean(text: str) -> bool:
    """True if ``text`` holds no character :func:`clean` would replace (``\\r`` included)."""
    return "\r" not in text and _UNSAFE.search(text) is None


def one_line(text: str | None, limit: int = 200) -> str:
    """The first ``limit`` characters of ``text`` as one safe line: whitespace runs
    (newlines included) collapse to one space; an ellipsis marks a cut. Reads at most
    ``4 * limit`` characters of the input, so a 10 MB step costs no more than a short one."""
    if not text:
        return ""
    head = text[: limit * 4]
    line = " ".join(clean(head).split())
    if len(line) > limit or len(text) > len(head):
        return line[: max(limit - 1, 0)].rstrip() + "…"
    return line


def whole_sentences(text: str | None, limit: int = 200, *, more: str = "…") -> str:
    """:func:`one_line`, but a cut falls after the last whole sentence that fits in
    ``limit`` characters (then ``more`` is appended); a first sentence longer than
    ``limit`` is cut at a word instead. Never cuts a text that fits."""
    line = one_line(text, limit * 2)
    if len(line) <= limit:
        return line
    head = line[:limit]
    ends = [m.end() for m in re.finditer(r"[.!?;:][)\"'»”]*(?=\s)", head)]
    if ends:
        return head[: ends[-1]] + " " + more
    return head[: head.rfind(" ")].rstrip() + more if " " in head else head + more


def plural(n: int, word: str, many: str | None = None) -> str:
    """The count with thousands commas and the word agreeing with it: ``"1 step"``,
    ``"0 steps"``, ``"2,500 hits"``; ``many`` for irregular plurals (``"entries"``)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def human_size(n_chars: int) -> str:
    """A character count as ``"812 chars"``, ``"3.4 K chars"``, ``"10.0 M chars"``."""
    if n_chars < 1000:
        return f"{n_chars} chars"
    if n_chars < 1_000_000:
        return f"{n_chars / 1000:.1f} K chars"
    return f"{n_chars / 1_000_000:.1f} M chars"


#: CSI (``ESC [ ... final``), OSC (``ESC ] ... BEL`` or ``ESC ] ... ESC \\``), and any
#: other two-byte ESC sequence.
_ESCAPE_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\s\S])?")


def strip_controls(text: str | None) -> str:
    """``text`` with escape sequences removed whole and every other unsafe character
    dropped (for judges and reports, where a visible ``␛[2J`` is only noise; the TUI
    uses :func:`clean`, which shows them)."""
    if not text:
        return ""
    text = _NEWLINES.sub("\n", _ESCAPE_SEQUENCE.sub("", text))
    return _UNSAFE.sub("", text)


def compact(n: int) -> str:
    """``1234567`` -> ``"1.2M"``, ``12345`` -> ``"12.3K"``, small numbers as they are
    (token counts in a narrow column)."""
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    if n >= 10_000:
        return f"{n / 1e3:.1f}K"
    return f"{n:,}"


def elide_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut in its middle with ``…`` so that
    both ends stay: a long path keeps its start and its file name
    (``/home/me/…/deep/run.html``). A name longer than ``width - 1`` alone keeps its end
    (the extension). ``width`` under 2 gives ``text[:width]``."""
    if len(text) <= width:
        return text
    if width < 2:
        return text[:width]
    name_start = max(text.rfind("/"), text.rfind("\\")) + 1
    tail = min(len(text) - name_start, width - 1)
    tail = max(tail, (width - 1) // 2)
    head = width - 1 - tail
    return text[:head] + "…" + text[len(text) - tail :]


#: Characters of a path a notice shows (:func:`shown_path`): a TUI toast line is about 42 columns
#: wide at 80x24 and a path (one word) is cut at the line end, so a longer path lost its file name to the toast's own
#: ellipsis (seen with pytest's xdist temp paths, about 230 characters).
SHOWN_PATH = 40


def shown_path(path: object, width: int = SHOWN_PATH) -> str:
    """A file path for a one-line notice (a TUI toast): inert (:func:`clean`) and, past
    ``width`` characters, cut in its middle (:func:`elide_middle`) so its start and its
    file name stay visible."""
    return elide_middle(clean(str(path)), width)
