"""AgentRx trajectories (Microsoft AgentRx, arXiv 2602.02475): Magentic-One message
lists and τ-bench retail runs, with labels from the sibling ``ground_truth.json``.

Shapes (SOURCE.md of real_traces/agentrx):

* **Magentic-One**: a bare JSON list of ``{content, role}`` where ``role`` is the speaker,
  decorated as in Who&When Hand-Crafted (``Orchestrator (-> WebSurfer)``); the speaker is
  read with :func:`whenpro_core.formats.whowhen.speaker_of`. Coordinate: the 0-based list
  index, as in Who&When (the same lists are Who&When's ``history``).
* **τ-bench**: ``{task_id, reward, info, traj, trial, records}``; ``traj`` holds OpenAI
  messages with a 1-based ``index`` (system prompt = 1); assistant turns that call tools
  have ``content: null``. Coordinate: the ``index`` value. Outcome from ``reward``
  (1.0 = success).

Labels: ``ground_truth.json`` next to the file or one folder up, a list of
``{trajectory_id, failures: [{failure_id, step_number (1-based), step_reason,
failure_category, category_reason, failed_agent}], root_cause: {failure_id, ...},
failure_summary}``. Every failure becomes an :class:`Annotation`; the root cause
(``failure_id`` compared as text, since one entry stores it as the string ``"1"``) becomes
the :class:`GroundTruth`. AgentRx ``step_number`` N is coordinate ``N-1`` for Magentic-One
and ``N`` for τ-bench. ``failed_agent`` is matched to the trace's agents ignoring case
(``Websurfer`` -> ``WebSurfer``); the label as stored stays in ``GroundTruth.native``.
AgentRx categories are not taxonomy codes, so ``GroundTruth.mode`` stays ``None``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from whenpro_core.formats.base import (
    DocumentImporter,
    LoadContext,
    as_text,
    dict_or_empty,
    expect,
    is_message_list,
    label_file_note,
    redact_secrets,
    sibling_json,
    wrong_type,
)
from whenpro_core.formats.chat import chat_step, is_chat_role
from whenpro_core.formats.whowhen import _kind_hand_crafted, speaker_of
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import (
    TRACE_HIDDEN_KEY,
    Agent,
    Annotation,
    GroundTruth,
    Outcome,
    Source,
    Step,
    Task,
    Trace,
)

LABELS_FILE = "ground_truth.json"
_TAU_AGENTS = {"user": "User", "assistant": "Assistant", "system": "system", "tool": "tool"}
_TAU_KEYS = ("task_id", "reward", "info", "traj", "trial")


def is_magentic_list(doc: Any) -> bool:
    """A bare list of ``{content, role}`` where some role is a speaker, not a chat role."""
    return (
        is_message_list(doc, ("role", "content"))
        and all(isinstance(m.get("role"), str) for m in doc)
        and any(not is_chat_role(m["role"]) for m in doc)
    )


def is_tau_run(doc: Any) -> bool:
    """A τ-bench run ``{task_id, reward, traj: [...], ...}`` (a ``traj`` of the wrong
    type still matches, so loading reports it at ``$.traj``)."""
    return isinstance(doc, dict) and "task_id" in doc and "traj" in doc and ("reward" in doc or "info" in doc)


def _labels_for(path: Path, trajectory_id: Any, notes: list[str]) -> tuple[Path, int, JSONObject] | None:
    """``(labels file, row number, row)`` of ``trajectory_id``, or ``None``; a labels file
    that is not a list, or a row whose ``trajectory_id`` is not a string or integer, is
    passed over with a note appended to ``notes``."""
    found = sibling_json(path, LABELS_FILE)
    if found is None:
        return None
    gt_path, entries = found
    if not isinstance(entries, list):
        notes.append(label_file_note(gt_path, "$", wrong_type(entries), "a list of label entries"))
        return None
    for n, entry in enumerate(entries):
        tid = entry.get("trajectory_id") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or isinstance(tid, (dict, list, bool)) or tid is None:
            where = f"$[{n}]" if not isinstance(entry, dict) else f"$[{n}].trajectory_id"
            what = wrong_type(entry if not isinstance(entry, dict) else tid)
            notes.append(label_file_note(gt_path, where, what, "a trajectory id (string or integer)"))
        elif str(tid) == str(trajectory_id):
            return gt_path, n, entry
    return None


def apply_labels(trace: Trace, path: Path, trajectory_id: Any, *, offset: int) -> None:
    """Attach AgentRx labels for ``trajectory_id`` to ``trace`` (in place): one
    Annotation per failure, the root cause as GroundTruth, outcome ``failure``.
    ``offset`` turns a 1-based ``step_number`` into the trace's coordinate
    (``-1`` for Magentic-One, ``0`` for τ-bench). TraceFormatError names the labels
    file and JSON path of a malformed entry or a step that is not in the trace."""
    notes: list[str] = []
    hit = _labels_for(path, trajectory_id, notes)
    if notes:
        trace.extras.setdefault("whenpro_warnings", []).extend(notes)
    if hit is None:
        return
    gt_path, n, entry = hit
    ctx = LoadContext(path=gt_path)
    where = f"$[{n}]"
    failures = expect(entry.get("failures"), list, ctx, f"{where}.failures", "a list of failures")
    by_agent = {a.lower(): a for a in trace.agent_ids()}
    coords = {s.coord: s.index for s in trace.steps if s.coord is not None}
    root = dict_or_empty(entry.get("root_cause"))
    root_id = str(root.get("failure_id")) if root.get("failure_id") is not None else None
    trace.annotations = []
    for j, f in enumerate(failures):
        fw = f"{where}.failures[{j}]"
        expect(f, dict, ctx, fw, "a failure object")
        number = f.get("step_number")
        if not isinstance(number, int) or isinstance(number, bool):
            raise ctx.error("wrong type", f"{fw}.step_number", "a 1-based step number")
        coord = str(number + offset)
        if not trace.steps:
            raise ctx.error(
                f"step {number} is not in trajectory {trajectory_id}: the trajectory is empty",
                f"{fw}.step_number",
                "a trajectory with the labelled step",
            )
        if coord not in coords:
            raise ctx.error(
                f"step {number} is not in trajectory {trajectory_id}", f"{fw}.step_number", f"1..{len(trace.steps)}"
            )
        raw_agent = f.get("failed_agent")
        agent = by_agent.get(str(raw_agent).lower(), raw_agent) if raw_agent is not None else None
        decisive = root_id is not None and str(f.get("failure_id")) == root_id
        category = as_text(f.get("failure_category")) or "failure"
        reason = as_text(f.get("step_reason")).strip()
        if not reason and decisive:  # an empty step_reason: the root cause says why
            reason = as_text(root.get("reason_for_root_cause")).strip()
        trace.annotations.append(
            Annotation(
                label=category, agent=agent, step=coord, reason=reason or None, source="agentrx", decisive=decisive
            )
        )
        if decisive:
            trace.ground_truth = GroundTruth(
                agent=agent,
                step=coord,
                step_index=coords[coord],
                mode=None,
                reason=f"[{category}] {reason}".strip(),
                native=copy.deepcopy(entry),
            )  # the parsed labels file is cached: never share it
    trace.outcome = Outcome.failure
    if entry.get("failure_summary") is not None:  # label text: hidden with the labels, not in visible extras
        trace.extras.setdefault(TRACE_HIDDEN_KEY, {})["failure_summary"] = entry["failure_summary"]


class MagenticListImporter(DocumentImporter):
    """A bare Magentic-One message list (AgentRx ``magentic_one/trajectories/*.json``)."""

    name = "agentrx-magentic"
    priority = 8

    def matches(self, doc: Any) -> bool:
        return is_magentic_list(doc)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        steps = []
        for i, entry in enumerate(doc):
            where = f"$[{i}]"
            expect(entry, dict, ctx, where, "a message object {content, role}")
            role = expect(entry.get("role"), str, ctx, f"{where}.role", "the speaker as a string")
            content = entry.get("content")
            if content is not None and not isinstance(content, (str, list)):
                raise ctx.error("wrong type", f"{where}.content", "a string")
            agent, note = speaker_of(role)
            meta: dict[str, Any] = {"role": role}
            if note and note.startswith("->"):
                meta["to"] = note[2:].strip()
            steps.append(
                Step(
                    index=i,
                    coord=str(i),
                    agent=agent,
                    kind=_kind_hand_crafted(agent, note),
                    content=as_text(content),
                    meta=meta,
                    raw=entry,
                )
            )
        agents: dict[str, None] = {}
        for s in steps:
            agents.setdefault(s.agent, None)
        query = next((s.content for s in steps if s.kind == "user"), "")
        trace = Trace(
            id=f"agentrx-m1-{ctx.path.stem}",
            framework="magentic-one",
            agents=[Agent(id=a) for a in agents],
            task=Task(query=query),
            steps=steps,
            outcome=Outcome.unknown,
            source=Source(format=self.name, path=str(ctx.path), root=str(ctx.root) if ctx.root else None),
        )
        apply_labels(trace, ctx.path, ctx.path.stem, offset=-1)
        return [trace]


def _tau_steps(traj: list[Any], ctx: LoadContext) -> list[Step]:
    """One step per τ-bench message, its coordinate the message's 1-based ``index`` and
    its agent ``User``/``Assistant`` for the chat roles. Raises for a non-object message
    or a non-integer index."""
    steps = []
    for i, msg in enumerate(traj):
        where = f"$.traj[{i}]"
        expect(msg, dict, ctx, where, "a message object {role, content, index}")
        index = msg.get("index", i + 1)
        if not isinstance(index, int) or isinstance(index, bool):
            raise ctx.error("wrong type", f"{where}.index", "the 1-based message index")
        role = msg.get("role")
        agent = _TAU_AGENTS.get(role, role) if isinstance(role, str) else None
        steps.append(chat_step(i, msg, ctx, where, coord=str(index), agent=agent))
    return steps


def _tau_reward(doc: dict[str, Any], ctx: LoadContext) -> float | None:
    """The run's ``reward`` (None when absent); raises unless it is a number in 0..1."""
    reward = doc.get("reward")
    if reward is not None and (not isinstance(reward, (int, float)) or isinstance(reward, bool)):
        raise ctx.error("wrong type", "$.reward", "a number from 0 to 1 (1.0 = success)")
    if reward is not None and not 0 <= reward <= 1:
        raise ctx.error(f"reward {reward} out of range", "$.reward", "a number from 0 to 1 (1.0 = success)")
    return reward


def _tau_task(doc: dict[str, Any]) -> Task:
    """The task: ``info.task.instruction`` as the query, its ``outputs`` joined as the answer."""
    task = dict_or_empty(dict_or_empty(doc.get("info")).get("task"))
    outputs = task.get("outputs")
    return Task(
        query=as_text(task.get("instruction")),
        answer=", ".join(map(str, outputs)) if isinstance(outputs, list) and outputs else None,
    )


class TauBenchImporter(DocumentImporter):
    """A τ-bench run ``{task_id, reward, info, traj, trial, records}``."""

    name = "tau-bench"
    priority = 8

    def matches(self, doc: Any) -> bool:
        return is_tau_run(doc)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        traj = expect(doc.get("traj"), list, ctx, "$.traj", "a list of chat messages")
        steps = _tau_steps(traj, ctx)
        task = _tau_task(doc)
        reward = _tau_reward(doc, ctx)
        trace = Trace(
            id=f"tau-{doc.get('task_id')}" + (f"-t{doc['trial']}" if doc.get("trial") is not None else ""),
            framework="tau-bench",
            benchmark="tau-bench",
            agents=[Agent(id="User"), Agent(id="Assistant")],
            task=task,
            steps=steps,
            final_answer=next((s.content for s in reversed(steps) if s.agent == "Assistant" and s.content), None),
            outcome=Outcome.unknown if reward is None else (Outcome.success if reward >= 1.0 else Outcome.failure),
            source=ctx.source(self.name),
            extras=redact_secrets({k: v for k, v in doc.items() if k not in ("traj",)}),
        )
        apply_labels(trace, ctx.path, doc.get("task_id"), offset=0)
        return [trace]
