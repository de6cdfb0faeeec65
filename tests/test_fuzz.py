"""Fuzz the importers: whatever the bytes, only TraceFormatError, and no hang."""

from __future__ import annotations

import contextlib
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, walk

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)

KEYS = [
    "history",
    "question",
    "ground_truth",
    "mistake_agent",
    "mistake_step",
    "content",
    "role",
    "name",
    "trajectory",
    "id",
    "framework",
    "benchmark",
    "task",
    "kind",
    "step_number",
    "format",
    "steps",
    "modality",
    "agents",
    "round",
    "position",
    "step",
    "mode",
    "agent",
]

shaped = st.recursive(
    st.none()
    | st.integers(-3, 40)
    | st.text(max_size=12)
    | st.sampled_from(["whenpro.trace/1", "0", "1.1", "smolagents", "magentic-one"]),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.sampled_from(KEYS), children, max_size=8),
    max_leaves=40,
)

# no per-example deadline (wall-clock, and a loaded machine exceeds it): a hang is caught by
# the suite's per-test timeout (pytest-timeout)
FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _check(tmp_path, data: bytes) -> None:
    p = tmp_path / "fuzz.json"
    p.write_bytes(data)
    with contextlib.suppress(TraceFormatError):
        load_trace(p)
    rows = list(walk(p))
    assert rows  # a bad file becomes an error row, never an exception


@FUZZ
@given(data=st.binary(max_size=200))
def test_random_bytes(tmp_path, data):
    _check(tmp_path, data)


@FUZZ
@given(doc=json_values)
def test_random_json(tmp_path, doc):
    _check(tmp_path, json.dumps(doc).encode())


@FUZZ
@given(doc=shaped)
def test_trace_shaped_json(tmp_path, doc):
    _check(tmp_path, json.dumps(doc).encode())
