"""Untrusted text made safe for a terminal (whenpro_core.safety.textsafe)."""

from __future__ import annotations

import re

from whenpro_core.safety.textsafe import clean, human_size, is_clean, one_line, plural

TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_escape_sequences_become_visible_and_inert() -> None:
    assert clean("a\x1b[2Jb") == "a␛[2Jb"
    assert clean("\x1b]52;c;SGVsbG8=\x07") == "␛]52;c;SGVsbG8=␇"
    assert clean("x\x9b31my") == "x⟨U+009B⟩31my"
    assert clean("tab\tand\nnewline") == "tab\tand\nnewline"


def test_carriage_returns_and_bidi_overrides() -> None:
    assert clean("one\r\ntwo\rthree") == "one\ntwo\nthree"
    assert clean("abc\u202edef") == "abc⟨U+202E⟩def"
    assert clean("\x7f") == "␡"
    assert clean(None) == "" and clean("") == ""


def test_every_control_character_is_neutralised() -> None:
    every = "".join(chr(c) for c in range(0x00, 0xA0)) + "\u202a\u202e\u2066\u2069\u200e"
    out = clean(every)
    assert not TERMINAL_CONTROLS.search(out.replace("\n", "").replace("\t", ""))
    assert is_clean(out)
    assert not is_clean(every)


def test_one_line_collapses_and_caps_without_reading_everything() -> None:
    assert one_line("  hello\n\n  world  ") == "hello world"
    assert one_line("x" * 50, limit=10) == "xxxxxxxxx…"
    huge = "word " * 2_000_000 + "\x1b[2J"
    line = one_line(huge, limit=80)
    assert len(line) <= 80 and line.endswith("…") and "\x1b" not in line
    assert one_line("ab\x1b[2Jcd") == "ab␛[2Jcd"


def test_human_size() -> None:
    assert human_size(812) == "812 chars"
    assert human_size(3_400) == "3.4 K chars"
    assert human_size(10_000_000) == "10.0 M chars"


def test_lone_surrogates_are_made_visible_or_dropped():
    """A lone surrogate (the valid JSON escape "\\ud800", seen in LLM output) cannot be
    encoded as UTF-8: copying, the editor, a judge's HTTP body and reports would fail."""
    from whenpro_core.safety.textsafe import clean, is_clean, strip_controls

    text = "Session \ud800 time \udfff."
    shown = clean(text)
    assert shown == "Session \u27e8U+D800\u27e9 time \u27e8U+DFFF\u27e9."
    shown.encode("utf-8")
    assert not is_clean(text)
    assert strip_controls(text) == "Session  time ."
    assert clean("emoji \U0001f600 stays") == "emoji \U0001f600 stays"


def test_plural_agrees_with_the_count() -> None:
    assert (plural(1, "step"), plural(0, "step"), plural(2_500, "hit")) == ("1 step", "0 steps", "2,500 hits")
    assert plural(1, "entry", "entries") == "1 entry" and plural(3, "entry", "entries") == "3 entries"
