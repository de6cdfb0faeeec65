"""Issue 33, item 8 (the small ones): ``convert t.json -`` writes C1 controls and bidi
overrides as JSON escapes (the same value, nothing a terminal acts on), as every other
output shows them inert; a trace id of 64 hex digits is judged, and named, as itself;
one member of an ``.eval`` with a bad CRC leaves out that sample only."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.conftest import team_trace
from tests.support.cli import run_whenpro
from whenpro_core.formats.native import write_trace

HOSTILE = "\x9b31m c1 \u202ebidi \u2066isolate\u2069 \x7fdel"


def test_convert_to_stdout_escapes_c1_and_bidi_controls(tmp_path: Path) -> None:
    trace = team_trace()
    trace.steps[1].content = HOSTILE
    trace.steps[2].tool_calls[0].arguments = {"cmd": HOSTILE}
    path = write_trace(trace, tmp_path / "t.json")
    for to in ("native", "atif", "otlp-json"):
        out = run_whenpro("convert", str(path), "-", "--to", to)
        assert out.returncode == 0, out.stderr
        raw = out.stdout.encode("utf-8", "surrogateescape")
        for char in ("\x9b", "\u202e", "\u2066", "\u2069", "\x7f"):
            assert char.encode() not in raw, (to, char)
        assert HOSTILE in json.dumps(json.loads(out.stdout), ensure_ascii=False), to  # the value is kept
