"""MAST / MAD records (Cemri et al., "Why Do Multi-Agent LLM Systems Fail?", arXiv
2503.13657) and the mast-lint AG2 dogfood records that imitate them.

A record is ``{round, mas_name, benchmark_name, trace_id, trace, annotations?}``; a file
holds one record or a list of them (several traces, key = ``trace_id``). ``trace`` is a
**string** (SOURCE.md of real_traces/mast-mad-sample and mast-lint-ag2-dogfood):

* AG2: a JSON document ``{instance_id?, problem_statement: [lines], other_data?,
  trajectory: [{content (a string or a list of lines), role, name}], note?}``. The speaker
  is ``name``; ``role`` is only the chat-API role (mast-lint's Planner/Coder/Tester all
  send role ``user``), so kinds follow the AG2 group-chat rule of
  :func:`~whenpro_core.formats.chat.chat_steps`: the opening task message and the user
  proxy's messages are ``user`` steps, the agents' messages ``assistant`` steps.
  ``note`` (the annotator's verdict) and ``other_data`` (``correct``) leak the labels:
  they are moved to ``extras["hidden"]``
  (:data:`~whenpro_core.trace.model.TRACE_HIDDEN_KEY`), which renderers and judges never
  read.
* MetaGPT: a plain-text communication log, or a JSON document ``{run_id, prompt, content,
  timestamp, cost, log_file}`` whose ``content`` holds one. A communication log is split
  into steps at its speaker markers: ``[time] FROM: <agent> TO: ...`` blocks (``CONTENT:``
  follows) and ``[time] NEW MESSAGES:`` blocks whose first line is ``<agent>: <text>``;
  blocks end at a line of dashes. A loguru log (``<time> | INFO | <module>:_act:<line> -
  Alice(SimpleCoder): to do SimpleWriteCode(SimpleWriteCode)`` lines, each followed by what
  the role wrote) gives one step per role action: the agent is ``Alice(SimpleCoder)`` (name
  and role, as logged; ``Agent.role`` is the role), the step's content the text up to the
  next log line, ``meta`` the time, action, name and role. ``prompt`` is the task.

Labels, trace-level only (no step, no agent):

* MAD ``annotations``: ``[{"failure mode": "<code> <name>\\n\\n<definition>", annotator_1..3}]``.
  A mode is present when most annotators who gave a yes/no said yes (a NaN vote counts as
  none). It becomes an :class:`Annotation` whose ``label`` is the mode's *name*, because
  codes mean different things in different rounds.
* mast-lint ``gold_labels.json`` beside the records: ``labels[trace_id].present`` lists
  final-taxonomy codes (``FM-1.2``), mapped to names by :data:`MAST_MODES`.
"""

from __future__ import annotations

import math
import re
from typing import Any

from whenpro_core.formats.base import (
    DocumentImporter,
    LoadContext,
    as_text,
    expect,
    maybe_json,
    redact_secrets,
    sibling_json,
)
from whenpro_core.formats.chat import chat_steps
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import TRACE_HIDDEN_KEY, Agent, Annotation, Source, Step, Task, Trace

#: The final 14 MAST failure modes (arXiv 2503.13657, Figure 1), by code.
MAST_MODES = {
    "1.1": "Disobey Task Specification",
    "1.2": "Disobey Role Specification",
    "1.3": "Step Repetition",
    "1.4": "Loss of Conversation History",
    "1.5": "Unaware of Termination Conditions",
    "2.1": "Conversation Reset",
    "2.2": "Fail to Ask for Clarification",
    "2.3": "Task Derailment",
    "2.4": "Information Withholding",
    "2.5": "Ignored Other Agent's Input",
    "2.6": "Reasoning-Action Mismatch",
    "3.1": "Premature Termination",
    "3.2": "No or Incomplete Verification",
    "3.3": "Incorrect Verification",
}
GOLD_FILE = "gold_labels.json"
_LEAKING = ("note", "other_data")
_RECORD_KEYS = ("mas_name", "trace")
_BLOCK_END = re.compile(r"^-{20,}\s*$", re.M)
_FROM = re.compile(r"^\[(?P<time>[^\]]*)\]\s*FROM:\s*(?P<agent>.+?)\s+TO:\s*(?P<to>.*)$", re.M)
_NEW = re.compile(r"^\[(?P<time>[^\]]*)\]\s*NEW MESSAGES:\s*$", re.M)
_SPEAKER = re.compile(r"^\s*(?P<agent>[A-Za-z][\w .-]{0,60}?):[ \t]?(?P<rest>.*)$")
#: A loguru line: ``2025-01-17 11:40:27.872 | INFO     | metagpt.roles.role:_act:391 - <message>``.
_LOGURU = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)\s*\|\s*(?P<level>[A-Z]+)\s*\|"
    r"\s*(?P<where>\S+)\s+-\s+(?P<message>.*)$",
    re.M,
)
#: A role action logged by MetaGPT's ``Role._act``: ``Alice(SimpleCoder): to do SimpleWriteCode(...)``.
_ROLE_ACTION = re.compile(
    r"^(?P<name>[^():|]{1,80}?)\((?P<role>[^()]{1,80})\):\s*(?:to do|ready to)\s+"
    r"(?P<action>[\w.]+)"
)


def is_record(doc: Any) -> bool:
    """A MAD-style record ``{mas_name, trace, ...}``."""
    return isinstance(doc, dict) and all(k in doc for k in _RECORD_KEYS) and "trace_id" in doc


def mode_name(failure_mode: str) -> tuple[str, str]:
    """Split a MAD ``failure mode`` text into (code, name):
    ``"1.1 Disobey Task Specification\\n\\n<definition>"`` -> ``("1.1", "Disobey Task
    Specification")``."""
    head = failure_mode.strip().split("\n", 1)[0].strip()
    code, _, name = head.partition(" ")
    if not re.fullmatch(r"\d+(\.\d+)*", code):
        return "", head
    return code, name.strip()


def majority(votes: dict[str, Any]) -> tuple[int, int]:
    """(yes votes, valid votes) over ``annotator_*`` members; NaN or missing counts as none."""
    valid = [
        v
        for k, v in votes.items()
        if k.startswith("annotator") and isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))
    ]
    return sum(1 for v in valid if v), len(valid)


def split_metagpt_log(text: str) -> list[tuple[str, str, JSONObject]]:
    """Split a MetaGPT communication log into ``(agent, content, meta)`` turns at its
    ``FROM:``/``NEW MESSAGES:`` markers. Text before the first marker is dropped when it
    is only ``===`` banner lines."""
    turns: list[tuple[str, str, JSONObject]] = []
    for block in _BLOCK_END.split(text):
        m = _FROM.search(block)
        if m:
            body = block[m.end() :]
            action = re.search(r"^ACTION:\s*(.*)$", body, re.M)
            content = body.split("CONTENT:", 1)[1] if "CONTENT:" in body else body
            meta = {"time": m.group("time"), "to": m.group("to").strip()}
            if action:
                meta["action"] = action.group(1).strip()
            turns.append((m.group("agent").strip(), content.strip("\n"), meta))
            continue
        m = _NEW.search(block)
        if m:
            body = block[m.end() :].lstrip("\n")
            first, _, rest = body.partition("\n")
            sp = _SPEAKER.match(first)
            if sp:
                content = (sp.group("rest") + ("\n" + rest if rest else "")).strip("\n")
                turns.append((sp.group("agent").strip(), content, {"time": m.group("time")}))
            elif body.strip():
                turns.append(("unknown", body.strip("\n"), {"time": m.group("time")}))
    return turns


def split_loguru_log(text: str) -> list[tuple[str, str, JSONObject]]:
    """Split a MetaGPT loguru log into ``(agent, content, meta)`` turns, one per role action
    line (``Alice(SimpleCoder): to do SimpleWriteCode``); the content is the text up to the
    next log line. Other log lines (costs, saves) end a turn's content and give no turn."""
    turns: list[tuple[str, str, JSONObject]] = []
    lines = list(_LOGURU.finditer(text))
    for n, line in enumerate(lines):
        act = _ROLE_ACTION.match(line.group("message"))
        if act is None:
            continue
        end = lines[n + 1].start() if n + 1 < len(lines) else len(text)
        name, role = act.group("name").strip(), act.group("role").strip()
        meta = {
            "time": line.group("time"),
            "action": act.group("action"),
            "name": name,
            "role": role,
            "logger": line.group("where"),
        }
        turns.append((f"{name}({role})", text[line.end() : end].strip("\n"), meta))
    return turns


def _log_steps(text: str) -> list[Step]:
    """Steps of a MetaGPT log: communication-log markers, else loguru role actions."""
    turns = split_metagpt_log(text) or split_loguru_log(text)
    return [
        Step(index=i, coord=str(i), agent=a, kind="user" if a.lower() == "human" else "message", content=c, meta=m)
        for i, (a, c, m) in enumerate(turns)
    ]


def _agents_of(steps: list[Step]) -> list[Agent]:
    """The steps' agents in order of first appearance, with the role of their first step (when a string)."""
    agents: dict[str, str | None] = {}
    for s in steps:
        agents.setdefault(s.agent, s.meta.get("role") if isinstance(s.meta.get("role"), str) else None)
    return [Agent(id=a, role=r) for a, r in agents.items()]


class MastImporter(DocumentImporter):
    """MAD records and mast-lint AG2 records: one record, or a list of records."""

    name = "mast"
    priority = 9

    def matches(self, doc: Any) -> bool:
        if isinstance(doc, list):
            return bool(doc) and all(is_record(d) for d in doc)
        return is_record(doc)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        if isinstance(doc, dict):
            return [self._record(doc, ctx, "$", key=None)]
        return [self._record(r, ctx, f"$[{i}]", key=str(r.get("trace_id"))) for i, r in enumerate(doc)]

    def _record(self, rec: Any, ctx: LoadContext, where: str, key: str | None) -> Trace:
        expect(rec, dict, ctx, where, "a record {mas_name, trace_id, trace, annotations}")
        hidden: dict[str, Any] = {}
        extras: dict[str, Any] = {k: v for k, v in rec.items() if k not in ("trace", "annotations")}
        inner, query = self._unwrap(rec, ctx, where, extras)
        steps, query = self._trace_steps(inner, query, ctx, where, hidden, extras)
        annotations = self._mad_annotations(rec, ctx, where, hidden)
        tid = rec.get("trace_id")
        mas = as_text(rec.get("mas_name")) or "unknown"
        annotations += self._gold(ctx, tid)
        if hidden:
            extras[TRACE_HIDDEN_KEY] = hidden
        bench = as_text(rec.get("benchmark_name")).lower()
        return Trace(
            id=f"mast-{mas.lower()}-{bench or 'x'}-{tid}",
            framework=mas.lower(),
            benchmark=bench,
            agents=_agents_of(steps),
            task=Task(query=query),
            steps=steps,
            annotations=annotations,
            source=Source(format=self.name, path=str(ctx.path), key=key, root=str(ctx.root) if ctx.root else None),
            extras=redact_secrets(extras),
        )

    @staticmethod
    def _unwrap(rec: dict[str, Any], ctx: LoadContext, where: str, extras: dict[str, Any]) -> tuple[Any, str]:
        """``(run, query)``: the record's ``trace`` parsed when it is a JSON string; a
        ``{content, prompt, ...}`` wrapper gives its content as the run, its prompt as the
        query and its other fields as ``extras["trace_meta"]``. Raises when ``trace`` is
        neither a string nor an object."""
        raw_trace = rec.get("trace")
        expect(raw_trace, (str, dict), ctx, f"{where}.trace", "the run as a JSON string or log text")
        inner = maybe_json(raw_trace) if isinstance(raw_trace, str) else raw_trace
        if isinstance(inner, dict) and isinstance(inner.get("content"), str) and "trajectory" not in inner:
            extras["trace_meta"] = {k: v for k, v in inner.items() if k != "content"}
            return inner["content"], as_text(inner.get("prompt"))
        return inner, ""

    @classmethod
    def _trace_steps(
        cls,
        inner: Any,
        query: str,
        ctx: LoadContext,
        where: str,
        hidden: dict[str, Any],
        extras: dict[str, Any],
    ) -> tuple[list[Step], str]:
        """``(steps, query)`` of the run: an AG2 JSON trace (its label-leaking fields go to
        ``hidden``, the rest to ``extras["trace_meta"]``) or MetaGPT log text (the query,
        when not known yet, is the first user step). Raises for log text with no speaker
        markers or a run of another type."""
        if isinstance(inner, dict):
            steps, query = cls._json_steps(inner, ctx, f"{where}.trace")
            hidden.update({k: inner[k] for k in _LEAKING if k in inner})
            extras["trace_meta"] = {
                k: v for k, v in inner.items() if k not in ("trajectory", "problem_statement", *_LEAKING)
            }
            return steps, query
        if not isinstance(inner, str):
            raise ctx.error("wrong type", f"{where}.trace", "a JSON object or log text")
        steps = _log_steps(inner)
        if not steps:
            raise ctx.error(
                "no speaker markers in the log text",
                f"{where}.trace",
                "a MetaGPT log with FROM:/NEW MESSAGES: blocks or 'Name(Role): to do Action' "
                "log lines, or an AG2 JSON trace",
            )
        return steps, query or next((s.content for s in steps if s.kind == "user"), "")

    @staticmethod
    def _json_steps(inner: JSONObject, ctx: LoadContext, where: str) -> tuple[list[Step], str]:
        traj = expect(
            inner.get("trajectory"), list, ctx, f"{where}.trajectory", "a list of messages {content, role, name}"
        )
        return chat_steps(traj, ctx, f"{where}.trajectory"), as_text(inner.get("problem_statement"))

    @staticmethod
    def _mad_annotations(rec: JSONObject, ctx: LoadContext, where: str, hidden: JSONObject) -> list[Annotation]:
        anns = rec.get("annotations")
        if anns is None:
            return []
        anns = maybe_json(anns)
        expect(anns, list, ctx, f"{where}.annotations", "a list of {failure mode, annotator_1..3}")
        hidden["annotations"] = anns
        out = []
        for j, a in enumerate(anns):
            expect(a, dict, ctx, f"{where}.annotations[{j}]", "a {failure mode, annotator_*} object")
            text = a.get("failure mode")
            if not isinstance(text, str):
                raise ctx.error(
                    "wrong type", f"{where}.annotations[{j}].failure mode", "the failure mode as '<code> <name>'"
                )
            code, name = mode_name(text)
            yes, valid = majority(a)
            if valid and yes * 2 > valid:
                out.append(
                    Annotation(
                        label=name,
                        source="mad",
                        reason=f"{yes} of {valid} annotators; code {code} in {rec.get('round')}",
                    )
                )
        return out

    @staticmethod
    def _gold(ctx: LoadContext, trace_id: Any) -> list[Annotation]:
        found = sibling_json(ctx.path, GOLD_FILE, levels=1)
        if found is None or not isinstance(found[1], dict) or not isinstance(found[1].get("labels"), dict):
            return []
        gold_path, doc = found
        entry = doc["labels"].get(str(trace_id))
        if entry is None:
            return []
        gctx = LoadContext(path=gold_path)
        where = f"$.labels.{trace_id}"
        expect(entry, dict, gctx, where, "{present: [...], notes}")
        present = expect(entry.get("present"), list, gctx, f"{where}.present", "a list of FM codes")
        notes = as_text(entry.get("notes")) or None
        out = []
        for code in present:
            num = str(code).removeprefix("FM-")
            out.append(
                Annotation(
                    label=MAST_MODES.get(num, str(code)),
                    source="mast-lint gold",
                    reason=f"{code}. {notes}" if notes else str(code),
                )
            )
        return out
