"""TraceElephant (Chen et al., "Seeing the Whole Elephant: A Benchmark for Failure
Attribution in LLM-based Multi-Agent Systems", arXiv 2604.22708; GitHub
``TraceElephant/TraceElephant``, CC-BY-4.0; data on Hugging Face
``TraceElephant/TraceElephant``): 220 human-labelled failed runs of Captain-Agent,
Magentic-One and SWE-agent on GAIA, AssistantBench and SWE-bench Verified, each with the
full input of every model call.

The layout and fields are the ones the benchmark's own loader reads
(``code/trace_locate/lib/utils.py`` and ``evaluate.py`` of the repository, commit
``351703c``): ``<data>/{captain,magentic,swe-agent}-runs-*/<task>/`` holds

* ``step_records.json``: a list of ``{agent_name, input, output}``, one per model call;
  ``input`` is the request (``{messages, model, ...}``), ``output`` the answer, either the
  chat completion as JSON or its Python repr as a string (``"ChatCompletion(id=..., choices=[
  Choice(... message=ChatCompletionMessage(content='...', ...))])"``);
* ``trace_metadata.json``: ``{task_instruction, ground_truth, tests_status, mistake_agent,
  mistake_step, agent_system_intro, system_name?}``.

The older layout (``history.json`` of ``{agent_name, request, response}`` beside a
``summary.json`` whose task is ``question``) is read the same way.

Steps: one per record, coordinate its **1-based** position (the benchmark shows the judge
``Step 1 - <agent>: ...`` and compares the predicted number to ``mistake_step`` as a
string), agent ``agent_name``; content the answer's text, tool calls its ``tool_calls``;
``meta["input"]`` the last input message's text, ``meta["input_messages"]`` how many
messages the call was given; ``raw`` the record as stored. Ground truth: ``mistake_agent``
at step ``mistake_step``; outcome ``failure`` when labelled. Trace id
``traceelephant-<runs folder>-<task folder>``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import (
    DocumentImporter,
    LoadContext,
    as_text,
    dict_or_empty,
    label_file_note,
    list_or_empty,
    read_json_file,
    redact_secrets,
    text_or_none,
    wrong_type,
)
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Agent, GroundTruth, Outcome, Step, Task, ToolCall, Trace

#: The metadata files of the two layouts, in the order they are looked for.
METADATA_FILES = ("trace_metadata.json", "summary.json")
#: Framework of a run by the prefix of its runs folder (the benchmark's own categories).
FRAMEWORKS = (("captain", "captain-agent"), ("magentic", "magentic-one"), ("swe", "swe-agent"))
_RECORD_KEYS = ("input", "output", "request", "response")
#: A Python string literal in a repr, single- or double-quoted.
_LITERAL = r"'(?:[^'\\]|\\.)*'" + "|" + r'"(?:[^"\\]|\\.)*"'
_REPR_CONTENT = re.compile(rf"message=ChatCompletionMessage\(content=(?P<lit>{_LITERAL})")
_REPR_CALL = re.compile(rf"Function\(arguments=(?P<args>{_LITERAL}), name='(?P<name>[^']*)'\)")


def is_step_records(doc: Any) -> bool:
    """A TraceElephant ``step_records.json`` (or older ``history.json``): a non-empty list of
    objects that all have ``agent_name`` and a request or answer."""
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(r, dict) and "agent_name" in r and any(k in r for k in _RECORD_KEYS) for r in doc)
    )


def is_metadata(doc: Any) -> bool:
    """A TraceElephant ``trace_metadata.json`` / ``summary.json``: a label (``mistake_agent``
    or ``mistake_step``) and a task but no ``history`` (that would be a Who&When file)."""
    return (
        isinstance(doc, dict)
        and "history" not in doc
        and ("mistake_agent" in doc or "mistake_step" in doc)
        and any(k in doc for k in ("task_instruction", "agent_system_intro", "tests_status"))
    )


def _literal(text: str) -> str:
    """A Python string literal from a repr, decoded without evaluating anything else."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text[1:-1]
    return value if isinstance(value, str) else text[1:-1]


def _repr_answer(text: str) -> tuple[str, list[ToolCall]]:
    """Content and tool calls of a ``ChatCompletion(...)`` repr; the text itself when it is
    not one."""
    if not text.startswith("ChatCompletion("):
        return text, []
    content = _REPR_CONTENT.search(text)
    calls = [ToolCall(name=m["name"] or "tool", arguments=_literal(m["args"])) for m in _REPR_CALL.finditer(text)]
    return (_literal(content["lit"]) if content else ""), calls


def _json_answer(output: JSONObject) -> tuple[str, list[ToolCall], Any]:
    """Content, tool calls and usage of a chat completion stored as JSON (the middleware's
    ``output``); a dict of another shape is shown as text."""
    choices = list_or_empty(output.get("choices"))
    if not choices:
        return as_text(output.get("content") if "content" in output else output), [], None
    message = dict_or_empty(dict_or_empty(choices[0]).get("message"))
    calls = []
    for call in list_or_empty(message.get("tool_calls")):
        fn = dict_or_empty(dict_or_empty(call).get("function"))
        calls.append(
            ToolCall(id=text_or_none(call.get("id")), name=str(fn.get("name") or "tool"), arguments=fn.get("arguments"))
        )
    return as_text(message.get("content")), calls, output.get("usage")


def _input_text(request: Any) -> tuple[str | None, int]:
    """The last input message's text and the number of input messages of a request."""
    messages = list_or_empty(dict_or_empty(request).get("messages"))
    if not messages:
        return (as_text(request) or None) if isinstance(request, str) else None, 0
    return as_text(dict_or_empty(messages[-1]).get("content")) or None, len(messages)


def _step(i: int, record: JSONObject) -> Step:
    output = record.get("output", record.get("response"))
    usage = None
    if isinstance(output, dict) and "raw_output" in output:  # the benchmark's own converted form
        output = output["raw_output"]
    if isinstance(output, dict):
        content, calls, usage = _json_answer(output)
    else:
        content, calls = _repr_answer(as_text(output))
    last, count = _input_text(record.get("input", record.get("request")))
    meta: dict[str, Any] = {"input_messages": count}
    if last:
        meta["input"] = last
    if isinstance(usage, dict):
        meta["usage"] = usage
    return Step(
        index=i,
        coord=str(i + 1),
        agent=as_text(record.get("agent_name")) or "Unknown",
        kind="action" if calls else "assistant",
        content=content,
        tool_calls=calls,
        meta=meta,
        raw=redact_secrets(record),
    )


def _metadata(path: Path) -> tuple[JSONObject, list[str]]:
    """The metadata beside ``path`` and the notes on a metadata file that could not be read."""
    for name in METADATA_FILES:
        candidate = path.parent / name
        if not candidate.is_file():
            continue
        try:
            doc = read_json_file(candidate)
        except TraceFormatError as exc:
            return {}, [f"labels not read: {exc.one_line()}"]
        if not isinstance(doc, dict):
            expected = "an object {task_instruction, mistake_agent, ...}"
            return {}, [label_file_note(candidate, "$", wrong_type(doc), expected)]
        return doc, []
    return {}, []


def _framework(runs: str, meta: JSONObject) -> str:
    low = runs.lower()
    found = next((name for prefix, name in FRAMEWORKS if low.startswith(prefix)), None)
    return found or text_or_none(meta.get("system_name")) or "traceelephant"


def ground_truth(meta: JSONObject, steps: list[Step], where: Path) -> tuple[GroundTruth | None, list[str]]:
    """The label of ``meta`` (module doc) and a note when it names no step of the run."""
    agent, raw_step = meta.get("mistake_agent"), meta.get("mistake_step")
    if agent is None and raw_step is None:
        return None, []
    coord = str(raw_step).strip() if raw_step is not None and not isinstance(raw_step, bool) else None
    step = next((s for s in steps if s.coord == coord), None)
    if coord is not None and step is None:
        note = label_file_note(where, "$.mistake_step", f"step {coord} is not one of the {len(steps)} steps", "1..N")
        return GroundTruth(agent=text_or_none(agent), native=dict(meta)), [note]
    return (
        GroundTruth(
            agent=text_or_none(agent),
            step=coord,
            step_index=step.index if step else None,
            native={k: meta[k] for k in ("mistake_agent", "mistake_step", "mistake_reason") if k in meta},
            reason=text_or_none(meta.get("mistake_reason")),
        ),
        [],
    )


class TraceElephantImporter(DocumentImporter):
    """A TraceElephant run folder's ``step_records.json`` (module doc), with the labels of
    the ``trace_metadata.json`` beside it."""

    name = "traceelephant"
    priority = 9

    def matches(self, doc: Any) -> bool:
        return is_step_records(doc)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        steps = [_step(i, r) for i, r in enumerate(doc)]
        meta, notes = _metadata(ctx.path)
        where = next((ctx.path.parent / n for n in METADATA_FILES if (ctx.path.parent / n).is_file()), ctx.path)
        gt, more = ground_truth(meta, steps, where)
        task_dir = ctx.path.parent
        runs = task_dir.parent.name
        kept = ("tests_status", "agent_system_intro", "system_name")
        extras: dict[str, Any] = {k: meta[k] for k in kept if k in meta}
        if notes or more:
            extras["whenpro_warnings"] = notes + more
        agents = list(dict.fromkeys(s.agent for s in steps))
        final = next((s.content for s in reversed(steps) if s.content), None)
        return [
            Trace(
                id=f"traceelephant-{runs}-{task_dir.name}",
                framework=_framework(runs, meta),
                benchmark="traceelephant",
                agents=[Agent(id=a) for a in agents],
                task=Task(
                    query=as_text(meta.get("task_instruction", meta.get("question"))),
                    answer=text_or_none(as_text(meta.get("ground_truth"))),
                ),
                steps=steps,
                final_answer=final,
                outcome=Outcome.failure if gt is not None else Outcome.unknown,
                ground_truth=gt,
                source=ctx.source(self.name),
                extras=extras,
            )
        ]


__all__ = ["TraceElephantImporter", "ground_truth", "is_metadata", "is_step_records"]
