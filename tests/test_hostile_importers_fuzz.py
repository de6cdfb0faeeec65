"""Issue 13, "Done when" (importer half): hostile documents to every importer.

Start from a small valid document of each format and put, at random places, deeply nested
values, escape-laden strings (terminal escapes, C1 controls, bidi overrides, lone
surrogates, NUL, path traversal, huge strings) and values of the wrong type. Whatever comes
in, each import is a trace or one clear error (a WhenproError whose line is one inert line
naming the file), a listing never raises, ``whenpro info`` exits 0 or 2 with nothing a
terminal would act on, and nothing is written anywhere (the importers only read).
"""

from __future__ import annotations

import copy
import io
import json
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import SAMPLES
from test_importers_fuzz import (
    CHAT,
    INSPECT,
    INSPECT_SAMPLE,
    MAGENTIC,
    MAST,
    MAST_INNER,
    MINI,
    OH_EVENTS,
    OH_LINE,
    OTEL,
    SWE,
    TAU,
    json_values,
    paths,
)
from whenpro_core.cli import app
from whenpro_core.errors import WhenproError
from whenpro_core.formats import load_trace, walk
from whenpro_core.formats.native import dumps_trace
from whenpro_core.formats.whowhen_pro_write import to_document, to_jsonl_row
from whenpro_core.safety.textsafe import is_clean

#: More examples for a longer local run: WHENPRO_FUZZ_EXAMPLES=500.
FUZZ = settings(
    max_examples=int(os.environ.get("WHENPRO_FUZZ_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

HOSTILE_STRINGS = [
    "esc\x1b]52;c;cHduZWQ=\x07\x1b[2J",
    "\x1b]8;;http://evil\x07link\x1b]8;;\x07",
    "\x9b31mC1",
    "bidi\u202eevil",
    "lone \ud800 surrogate",
    "nul\x00byte",
    "../../../../etc/passwd",
    "/etc/passwd",
    "..\\..\\windows",
    "file:///etc/passwd",
    "data:image/png;base64,!!!",
    "x" * 20_000,
    "line\r\nbreak\rcr",
    "NaN",
    "",
    "Authorization: Basic dXNlcjpwdw==",
    "http://user:pw@example.com/v1",
]
DEEP = "@@deep-{}@@"

hostile_leaf = st.sampled_from(HOSTILE_STRINGS) | st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x20AF), max_size=20
)
deep_marker = st.builds(lambda depth, kind: DEEP.format(f"{kind}{depth}"), st.integers(20, 1500), st.sampled_from("[{"))
hostile_value = hostile_leaf | deep_marker | json_values | st.just(float("nan")) | st.just(float("inf"))


def _deep(kind: str, depth: int) -> str:
    return "[" * depth + "]" * depth if kind == "[" else '{"a":' * depth + "1" + "}" * depth


_DEEP_MARKER = re.compile(r'"@@deep-([\[{])(\d+)@@"')


def to_bytes(doc: Any, indent: int | None = 1) -> bytes:
    """JSON text of ``doc`` with every deep marker replaced by that deep nesting (json.dumps
    itself cannot write 1500 levels)."""
    text = json.dumps(doc, indent=indent, allow_nan=True)
    text = _DEEP_MARKER.sub(lambda m: _deep(m.group(1), int(m.group(2))), text)
    return text.encode("utf-8", "surrogatepass")


@st.composite
def hostile(draw: st.DrawFn, base: Any) -> Any:
    """``base`` with 1-4 parts replaced by hostile values, strings made escape-laden, or
    parts deleted."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        choices = list(paths(doc))[1:]
        if not choices:
            break
        path = draw(st.sampled_from(choices))
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        action = draw(st.sampled_from(["replace", "taint", "delete"]))
        old = parent[path[-1]]
        if action == "taint" and isinstance(old, str):
            parent[path[-1]] = old + draw(st.sampled_from(HOSTILE_STRINGS))
        elif action == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(hostile_value)
    return doc


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def check_import(store: Path, name: str, data: bytes) -> None:
    """Write ``data`` as ``store/name``; import, list and ``info`` it; check the outcome."""
    store.mkdir(parents=True, exist_ok=True)
    path = store / name
    path.write_bytes(data)
    outside = store.parent
    before = _files(outside)
    try:
        trace = load_trace(path)
    except WhenproError as exc:
        line = exc.one_line()
        assert "\n" not in line and is_clean(line), repr(line)
        assert str(path) in line or path.name in line, line
    else:  # writing it back (convert) is issue 13 item 1's: free-form fields may nest too deep for orjson
        assert trace.steps is not None and all(isinstance(s.content, str) for s in trace.steps)
    for row in walk(path):
        assert row.error is None or ("\n" not in row.error and is_clean(row.error)), repr(row.error)
    result = CliRunner().invoke(app, ["info", str(path)])
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    for stream in (result.stdout, result.stderr):
        assert not any(ch in stream for ch in "\x1b\x07\x9b\u202e\x00"), repr(stream[:500])
    for line in result.stderr.splitlines():
        assert line.startswith(("whenpro: error: ", "whenpro: warning: ")), line
    assert _files(outside) == before, "an import wrote a file"


# ------------------------------------------------------------------ base documents of every importer


def _native() -> dict:
    return json.loads(dumps_trace(load_trace(SAMPLES / "bar_chart" / "trace.json")))


def _whowhen_pro() -> dict:
    return to_document(load_trace(SAMPLES / "team_text" / "trace.json"))


WHOWHEN = {
    "question": "How many?",
    "ground_truth": "4",
    "mistake_agent": "Assistant",
    "mistake_step": "1",
    "mistake_reason": "wrong sum",
    "is_correct": False,
    "question_ID": "q1",
    "level": 1,
    "history": [
        {"content": "How many?", "role": "assistant", "name": "Planner"},
        {"content": "It is 5.", "name": "Assistant", "role": "assistant"},
        {"content": "Done.", "name": "Orchestrator", "role": "assistant"},
    ],
}
LOGURU = (
    "2025-02-03 09:15:01.120 | INFO     | metagpt.roles.role:_act:391 - Alice(SimpleCoder): to do Write(Write)\n"
    "code\n2025-02-03 09:15:04.610 | INFO     | __main__:_act:85 - Bob(SimpleTester): to do Test(Test)\ntests"
)
MAD_METAGPT = {
    "round": "Round 1",
    "mas_name": "MetaGPT",
    "benchmark_name": "ProgramDev",
    "trace_id": 4,
    "trace": {"run_id": 1, "prompt": "write code", "content": LOGURU},
    "annotations": MAST["annotations"],
}

DOCS: dict[str, tuple[str, Any]] = {
    "native": ("trace.json", _native()),
    "whowhen": ("1.json", WHOWHEN),
    "whowhen_pro": ("pro.json", _whowhen_pro()),
    "swe_agent": ("x.traj", SWE),
    "mini_swe_agent": ("mini.json", MINI),
    "openhands_events": ("events.json", OH_EVENTS),
    "openhands_output": ("output.json", OH_LINE),
    "inspect_json": ("log.json", INSPECT),
    "chat": ("chat.json", CHAT),
    "magentic_one": ("m1.json", MAGENTIC),
    "tau_bench": ("task_1.json", TAU),
    "otlp_json": ("otel.json", OTEL),
    "mast_ag2": ("ag2.json", {**MAST, "trace": MAST_INNER}),
    "mad_metagpt": ("metagpt.json", MAD_METAGPT),
}


def _stringify_trace(doc: Any) -> Any:
    """MAD records keep their run as a JSON *string*."""
    if isinstance(doc, dict) and isinstance(doc.get("trace"), dict):
        return {**doc, "trace": to_bytes(doc["trace"], indent=None).decode("utf-8", "surrogatepass")}
    return doc


def test_every_base_document_imports(tmp_path: Path) -> None:
    for name, (file_name, doc) in DOCS.items():
        path = tmp_path / name / file_name
        path.parent.mkdir()
        path.write_bytes(to_bytes(_stringify_trace(doc)))
        assert load_trace(path).steps, name


@pytest.mark.parametrize("fmt", sorted(DOCS))
def test_hostile_documents(tmp_path: Path, fmt: str) -> None:
    file_name, base = DOCS[fmt]

    @FUZZ
    @given(doc=hostile(base))
    def run(doc: Any) -> None:
        check_import(tmp_path / "store", file_name, to_bytes(_stringify_trace(doc)))

    run()


def test_a_step_field_nested_a_thousand_deep(tmp_path: Path) -> None:
    """Found by the fuzz test: a Who&When Pro step whose ``kind`` is an array nested 992
    deep overflowed the recursion of the inline-media scrub (exit 1, RecursionError)."""
    doc = _whowhen_pro()
    doc["trajectory"][0]["kind"] = DEEP.format("[992")
    check_import(tmp_path / "store", "pro.json", to_bytes(doc))


JSONL_ROW = json.loads(to_jsonl_row(_whowhen_pro()))


@FUZZ
@given(rows=st.lists(hostile(JSONL_ROW), min_size=1, max_size=3))
def test_hostile_jsonl_release(tmp_path: Path, rows: list) -> None:
    check_import(tmp_path / "store" / "data", "text.jsonl", b"".join(to_bytes(r, None) + b"\n" for r in rows))


@FUZZ
@given(rows=st.lists(hostile({"messages": CHAT}), min_size=1, max_size=3))
def test_hostile_chat_jsonl(tmp_path: Path, rows: list) -> None:
    check_import(tmp_path / "store", "c.jsonl", b"".join(to_bytes(r, None) + b"\n" for r in rows))


@FUZZ
@given(header=hostile({k: v for k, v in INSPECT.items() if k != "samples"}), sample=hostile(INSPECT_SAMPLE))
def test_hostile_inspect_eval(tmp_path: Path, header: Any, sample: Any) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", to_bytes(header))
        zf.writestr("samples/1_epoch_1.json", to_bytes(sample))
        zf.writestr("../../escape.json", b"{}")  # a member name that climbs out: never extracted
    check_import(tmp_path / "store", "log.eval", buf.getvalue())
