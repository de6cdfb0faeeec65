"""Shape-aware fuzzing of the importers of other tools' traces: start from a small valid
document of each format and replace or delete random parts of it. Whatever comes out,
loading raises only TraceFormatError, a walk lists the file without raising, and nothing
hangs (the suite's per-test timeout; no per-example deadline: that is wall-clock time,
which a loaded machine exceeds)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import zipfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, walk

#: More examples for a longer local run: WHENPRO_FUZZ_EXAMPLES=500.
FUZZ = settings(
    max_examples=int(os.environ.get("WHENPRO_FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

leaf = (
    st.none()
    | st.booleans()
    | st.integers(-2, 50)
    | st.text(max_size=12)
    | st.sampled_from(
        [
            "user",
            "assistant",
            "tool",
            "system",
            "null",
            "run",
            "C",
            "I",
            "attachment://abc",
            "data:image/png;base64,AA",
            "Orchestrator (thought)",
            "FM-1.2",
            "invoke_agent",
            "chat",
            "execute_tool",
            "LLM",
            "TOOL",
            "AGENT",
            "1",
            "{}",
        ]
    )
)
json_values = st.recursive(
    leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=8
)

SWE = {
    "environment": "swe_main",
    "info": {"exit_status": "submitted", "submission": "diff"},
    "history": [
        {"role": "system", "content": "sys", "agent": "primary"},
        {"role": "user", "content": "demo", "agent": "primary", "is_demo": True},
        {"role": "user", "content": "task", "agent": "primary"},
        {
            "role": "assistant",
            "content": "ls",
            "thought": "t",
            "action": "ls",
            "agent": "primary",
            "tool_calls": [{"id": "c", "function": {"name": "bash", "arguments": "{}"}}],
        },
    ],
    "trajectory": [
        {
            "action": "ls",
            "observation": "o",
            "response": "r",
            "thought": "t",
            "state": '{"open_file": "n/a"}',
            "execution_time": 0.1,
        }
    ],
}
MINI = {
    "trajectory_format": "mini-swe-agent-1.1",
    "info": {"exit_status": "Submitted"},
    "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "```bash\nls\n```", "extra": {"actions": [{"command": "ls"}]}},
        {"role": "user", "content": "out"},
        {"role": "exit", "content": "", "extra": {"exit_status": "x"}},
    ],
}
OH_EVENTS = [
    {"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}},
    {"id": 1, "source": "user", "observation": "null", "cause": 0, "content": ""},
    {
        "id": 3,
        "source": "agent",
        "action": "run",
        "args": {"command": "ls", "thought": "t"},
        "tool_call_metadata": {
            "function_name": "bash",
            "tool_call_id": "x",
            "model_response": {"usage": {"prompt_tokens": 1}},
        },
    },
    {
        "id": 4,
        "source": "agent",
        "observation": "run",
        "cause": 3,
        "content": "a.py",
        "extras": {"metadata": {"exit_code": 0}},
    },
    {"id": 5, "source": "agent", "observation": "error", "content": "bad"},
    {"id": 6, "source": "agent", "action": "finish", "args": {"final_thought": "done"}},
]
OH_LINE = {
    "instance_id": "i",
    "instruction": "do",
    "metadata": {"llm_config": {"api_key": "**"}},
    "history": OH_EVENTS,
    "error": "RuntimeError: max iteration",
    "test_result": {"git_patch": "d"},
}
INSPECT_SAMPLE = {
    "id": 1,
    "epoch": 1,
    "input": "q",
    "target": ["a"],
    "scores": {"match": {"value": "I"}},
    "messages": [
        {"role": "system", "content": "attachment://abc"},
        {"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "image", "image": "attachment://def"}]},
        {
            "role": "assistant",
            "content": "x",
            "tool_calls": [{"id": "t1", "function": "bash", "arguments": {"cmd": "ls"}}],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "", "error": {"type": "timeout", "message": "slow"}},
    ],
    "events": [{"event": "tool", "id": "t1", "error": {"type": "timeout", "message": "m"}}],
    "attachments": {"abc": "sys", "def": "data:image/png;base64,AA"},
}
INSPECT = {"version": 2, "status": "success", "eval": {"task": "t"}, "samples": [INSPECT_SAMPLE]}
CHAT = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": [{"type": "text", "text": "q"}]},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "1", "content": "r"},
    {"role": "assistant", "content": "a", "name": "Coder"},
]
MAST_INNER = {
    "problem_statement": ["q"],
    "note": {"text": ["x"]},
    "other_data": {"correct": False},
    "trajectory": [
        {"content": ["a", "b"], "role": "user", "name": "Planner"},
        {"content": "c", "role": "assistant", "name": "Coder"},
    ],
}
MAST = {
    "round": "Round 1",
    "mas_name": "AG2",
    "benchmark_name": "b",
    "trace_id": 3,
    "annotations": [
        {"failure mode": "1.1 Name\n\ndef", "annotator_1": True, "annotator_2": True, "annotator_3": False}
    ],
}
MAGENTIC = [
    {"content": "q", "role": "human"},
    {"content": "plan", "role": "Orchestrator (thought)"},
    {"content": "go", "role": "Orchestrator (-> WebSurfer)"},
    {"content": "page", "role": "WebSurfer"},
]
TAU = {
    "task_id": 1,
    "reward": 0.0,
    "trial": 0,
    "info": {"task": {"instruction": "i", "outputs": ["x"]}},
    "traj": [
        {"role": "system", "content": "p", "index": 1},
        {"role": "user", "content": "u", "index": 2},
        {
            "role": "assistant",
            "content": None,
            "index": 3,
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c", "name": "f", "content": "r", "index": 4},
    ],
}


def _otel():
    attrs = lambda d: [{"key": k, "value": v} for k, v in d.items()]  # noqa: E731
    span = lambda sid, parent, name, a, t: {  # noqa: E731
        "traceId": "ab" * 16,
        "spanId": sid,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": str(t),
        "endTimeUnixNano": str(t + 5),
        "attributes": attrs(a),
        "events": [{"name": "gen_ai.choice", "attributes": attrs({"message": {"stringValue": '{"content": "x"}'}})}],
        "status": {"code": 2, "message": "m"},
    }
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attrs({"service.name": {"stringValue": "s"}})},
                "scopeSpans": [
                    {
                        "scope": {"name": "x"},
                        "spans": [
                            span(
                                "01" * 8,
                                "",
                                "invoke_agent a",
                                {"gen_ai.operation.name": {"stringValue": "invoke_agent"}},
                                1,
                            ),
                            span(
                                "02" * 8,
                                "01" * 8,
                                "chat m",
                                {
                                    "gen_ai.output.messages": {
                                        "stringValue": json.dumps(
                                            [
                                                {
                                                    "role": "assistant",
                                                    "parts": [{"type": "tool_call", "name": "f", "arguments": {}}],
                                                }
                                            ]
                                        )
                                    }
                                },
                                2,
                            ),
                            span(
                                "03" * 8,
                                "01" * 8,
                                "LLM",
                                {
                                    "openinference.span.kind": {"stringValue": "LLM"},
                                    "llm.output_messages.0.message.content": {"stringValue": "y"},
                                },
                                3,
                            ),
                        ],
                    }
                ],
            }
        ]
    }


OTEL = _otel()


def paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


@st.composite
def mutated(draw, base):
    """``base`` with 1-4 random parts replaced by random JSON or deleted."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        choices = list(paths(doc))[1:]
        if not choices:
            break
        path = draw(st.sampled_from(choices))
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        if draw(st.booleans()):
            parent[path[-1]] = draw(json_values)
        else:
            del parent[path[-1]]
    return doc


def _check(path) -> None:
    with contextlib.suppress(TraceFormatError):
        load_trace(path)
    list(walk(path))  # never raises: bad files become error rows


def _write(tmp_path, name: str, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _fuzz_doc(base, name="f.json", indent=True):
    @FUZZ
    @given(doc=mutated(base))
    def run(tmp_path, doc):
        _check(_write(tmp_path, name, json.dumps(doc, indent=1 if indent else None).encode()))

    return run


test_fuzz_swe_agent = _fuzz_doc(SWE, "x.traj")
test_fuzz_mini_swe_agent = _fuzz_doc(MINI)
test_fuzz_openhands_events = _fuzz_doc(OH_EVENTS)
test_fuzz_openhands_output_object = _fuzz_doc(OH_LINE)
test_fuzz_inspect_json = _fuzz_doc(INSPECT)
test_fuzz_chat = _fuzz_doc(CHAT)
test_fuzz_magentic_one_list = _fuzz_doc(MAGENTIC)
test_fuzz_tau_bench = _fuzz_doc(TAU)
test_fuzz_otlp_json = _fuzz_doc(OTEL)


@FUZZ
@given(rows=st.lists(mutated(OH_LINE), min_size=2, max_size=3))
def test_fuzz_openhands_jsonl(tmp_path, rows):
    _check(_write(tmp_path, "out.jsonl", b"".join(json.dumps(r).encode() + b"\n" for r in rows)))


@FUZZ
@given(rows=st.lists(mutated({"messages": CHAT}), min_size=2, max_size=3))
def test_fuzz_chat_jsonl(tmp_path, rows):
    _check(_write(tmp_path, "c.jsonl", b"".join(json.dumps(r).encode() + b"\n" for r in rows)))


@FUZZ
@given(rows=st.lists(mutated(OTEL), min_size=2, max_size=3))
def test_fuzz_otlp_json_lines(tmp_path, rows):
    _check(_write(tmp_path, "s.jsonl", b"".join(json.dumps(r).encode() + b"\n" for r in rows)))


@FUZZ
@given(inner=mutated(MAST_INNER), rec=mutated(MAST), as_list=st.booleans())
def test_fuzz_mast_records(tmp_path, inner, rec, as_list):
    rec["trace"] = json.dumps(inner)
    rec.setdefault("mas_name", "AG2")
    rec.setdefault("trace_id", 1)
    _check(_write(tmp_path, "r.json", json.dumps([rec] if as_list else rec, indent=1).encode()))


@FUZZ
@given(
    header=mutated({k: v for k, v in INSPECT.items() if k != "samples"}),
    sample=mutated(INSPECT_SAMPLE),
    cut=st.integers(0, 400),
)
def test_fuzz_inspect_eval_zip(tmp_path, header, sample, cut):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("_journal/start.json", json.dumps(header))
        zf.writestr("header.json", json.dumps(header))
        zf.writestr("samples/1_epoch_1.json", json.dumps(sample))
    data = buf.getvalue()
    _check(_write(tmp_path, "log.eval", data[: len(data) - cut] if cut else data))
