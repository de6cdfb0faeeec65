"""Files that sit beside traces in a dataset but are not traces: label files and
context files. Recognised by content so that a dataset walk skips them instead of
listing them as broken traces, and so that opening one says what it is.

Recognised (by shape, never by file name):

* AgentRx ground truth (``ground_truth.json``): a JSON list of
  ``{trajectory_id, failures: [...], root_cause, ...}`` (SOURCE.md of real_traces/agentrx).
  Its labels are read by :mod:`whenpro_core.formats.agentrx` when a trajectory is opened.
* mast-lint gold labels (``gold_labels.json``): ``{meta, modes: [...], labels: {<trace_id>:
  {present: [...], notes}}}`` (SOURCE.md of real_traces/mast-lint-ag2-dogfood); read by
  :mod:`whenpro_core.formats.mast`.
* AgentRx tool-call examples (``tools_structure.json``): a list of assistant tool calls
  and tool results whose 1-based ``index`` values are not in increasing order, so they
  cannot be one run; they document each tool's call and answer shape.
* AgentErrorBench labels (``Label/*_labels.json``): a list of ``{trajectory_id,
  critical_failure_step, ...}``; read by :mod:`whenpro_core.formats.agenterrorbench`.
* TRAIL annotations (``processed_annotations_*/<trace_id>.json``): ``{trace_id, errors:
  [{category, location, impact, ...}], scores?}``; read by :mod:`whenpro_core.formats.trail`.
* TraceElephant run metadata (``<runs>/<task>/trace_metadata.json``, older ``summary.json``):
  ``{task_instruction, mistake_agent, mistake_step, ...}`` without a ``history``; read by
  :mod:`whenpro_core.formats.traceelephant` with the ``step_records.json`` beside it.
* Gemini CLI prompt log (``~/.gemini/tmp/<hash>/logs.json``): a list of ``{sessionId,
  messageId, type: "user", message, timestamp}`` holding only the user's prompts (SOURCE.md
  of real_traces/gemini-cli); the session itself is the chat recording under ``chats/``.

:meth:`AuxiliaryImporter.summaries` returns no rows; :meth:`AuxiliaryImporter.load`
raises a TraceFormatError naming what the file is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from whenpro_core.formats.base import DocumentImporter, LoadContext, is_message_list
from whenpro_core.formats.traceelephant import is_metadata
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Trace, TraceSummary


def _rows_with(doc: Any, test: Callable[[JSONObject], bool]) -> bool:
    """A non-empty JSON list of objects that all pass ``test``."""
    return isinstance(doc, list) and bool(doc) and all(isinstance(d, dict) and test(d) for d in doc)


def _agentrx_labels(doc: Any) -> bool:
    return _rows_with(doc, lambda d: "trajectory_id" in d and isinstance(d.get("failures"), list))


def _agenterrorbench_labels(doc: Any) -> bool:
    return _rows_with(doc, lambda d: "critical_failure_step" in d)


def _mast_labels(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("labels"), dict)
        and isinstance(doc.get("modes"), list)
        and "trace" not in doc
    )


def _trail_labels(doc: Any) -> bool:
    return isinstance(doc, dict) and "trace_id" in doc and isinstance(doc.get("errors"), list) and "spans" not in doc


def _gemini_prompt_log(doc: Any) -> bool:
    return is_message_list(doc, ("sessionId", "messageId", "type", "message"))


def _tool_call_examples(doc: Any) -> bool:
    return is_message_list(doc, ("role", "index")) and _tool_examples(doc)


#: Each kind of non-trace file: its test and what opening one says it is.
_KINDS: tuple[tuple[Callable[[Any], bool], str], ...] = (
    (_agentrx_labels, "an AgentRx ground-truth file (labels for the trajectories beside it)"),
    (
        _agenterrorbench_labels,
        "an AgentErrorBench label file (labels for the trajectories in Original_Failure_Trajectory/)",
    ),
    (_mast_labels, "a MAST gold-labels file (labels for the records beside it)"),
    (_trail_labels, "a TRAIL annotation file (labels for the trace with the same trace_id)"),
    (is_metadata, "a TraceElephant run's metadata and labels (the run is step_records.json beside it)"),
    (
        _gemini_prompt_log,
        "a Gemini CLI prompt log (logs.json: the user's prompts only; "
        "the session is the recording in chats/session-*.json)",
    ),
    (_tool_call_examples, "a collection of tool-call examples (AgentRx tool schemas), not one run"),
)


def aux_kind(doc: Any) -> str | None:
    """What kind of non-trace file ``doc`` is, or ``None`` if it is none of them."""
    return next((what for test, what in _KINDS if test(doc)), None)


def _tool_examples(messages: list[JSONObject]) -> bool:
    if not all(m.get("role") in ("assistant", "tool") for m in messages):
        return False
    indexes = [i for m in messages if isinstance(i := m.get("index"), int)]
    if len(indexes) != len(messages):
        return False
    return any(b <= a for a, b in zip(indexes, indexes[1:], strict=False))


class AuxiliaryImporter(DocumentImporter):
    """Recognises label and context files so walks skip them (no rows) and opening one
    gives a one-line explanation instead of a misleading parse."""

    name = "auxiliary"
    priority = 90

    def matches(self, doc: Any) -> bool:
        return aux_kind(doc) is not None

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        raise ctx.error(f"this is {aux_kind(doc)}, not a trace", "$", "a trace file; open the trajectories next to it")

    def summaries(self, doc: Any, ctx: LoadContext) -> list[TraceSummary]:
        return []
