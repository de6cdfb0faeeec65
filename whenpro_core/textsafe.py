"""Untrusted trace text made safe to show (DESIGN §9): terminal escape sequences and
control characters removed whole, so ``\\x1b[2J`` or an OSC title sequence inside an agent's
message can neither act on a terminal nor leave debris like ``[2J`` behind."""

from __future__ import annotations

import re

#: CSI (``ESC [ ... final``), OSC (``ESC ] ... BEL`` or ``ESC ] ... ESC \\``), and any
#: other two-byte ESC sequence; then C0/C1 control characters except newline and tab.
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\s\S])?")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]")


def strip_controls(text: str) -> str:
    """``text`` without escape sequences and control characters (``\\n``, ``\\t`` and
    ``\\r\\n`` line ends kept; a lone ``\\r`` becomes a newline)."""
    if not text:
        return ""
    text = _ESCAPE.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)
