"""The original Who&When benchmark files (Zhang et al., ICML 2025, arXiv 2505.00212).

One JSON object per failed run: ``history`` [{content, role, name?}], ``question``,
``ground_truth`` (the gold *answer*), ``mistake_agent``, ``mistake_step`` (a string holding
a 0-based index into ``history``), ``mistake_reason``, and ``system_prompt`` (a dict) in
some files. Two subsets (SOURCE.md of real_traces/who-and-when):

* **Algorithm-Generated** (CaptainAgent / AG2 group chats): the speaker is ``name``;
  ``role`` is only the chat-API role.
* **Hand-Crafted** (Magentic-One): no ``name``; ``role`` is the speaker, decorated as in
  ``Orchestrator (-> WebSurfer)`` or ``Orchestrator (thought)``.

A step's coordinate is its 0-based ``history`` index as a string, so it equals
``mistake_step`` (docs/architecture.md, 'Formats and step coordinates'). Who&When has no failure-mode labels.

MP-Bench's normalised files are Who&When documents whose messages carry an annotator's
step verdicts (``fail_annotation``, ``fail_category``, ...): their labels are read by
:mod:`whenpro_core.formats.mpbench` (trace id ``mpbench-<annotator>-<split>-<file stem>``).
"""

from __future__ import annotations

import re
from typing import Any

from whenpro_core.formats.base import DocumentImporter, LoadContext, as_text, dict_or_empty, expect
from whenpro_core.formats.mpbench import is_annotated_history, mp_flags_beside, mp_labels
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Agent, GroundTruth, Modality, Outcome, Source, Step, Task, Trace

_DECORATED = re.compile(r"^\s*(?P<agent>[^()]+?)\s*\((?P<note>[^)]*)\)\s*$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
#: The line Magentic-One (Hand-Crafted) runs state their answer on, as they write it.
_FINAL_LINE = re.compile(r"^FINAL ANSWER:[ \t]*(?P<answer>\S.*?)\s*$", re.M)
_LABEL_KEYS = ("mistake_agent", "mistake_step", "mistake_reason", "mistake_type", "labels")
_KNOWN_KEYS = {"history", "question", "ground_truth", "system_prompt", *_LABEL_KEYS}
#: Keys of other formats that also have ``history`` (SWE-agent, OpenHands): a document
#: with one of them and a non-list ``history`` is not claimed as Who&When.
_LONE_KEYS = frozenset({"trajectory", "info", "environment", "instance_id", "instruction", "issue"})


def speaker_of(role: str) -> tuple[str, str | None]:
    """Split a Hand-Crafted role into (agent, decoration):
    ``"Orchestrator (-> WebSurfer)"`` -> ``("Orchestrator", "-> WebSurfer")``."""
    m = _DECORATED.match(role or "")
    if m:
        return m.group("agent").strip(), m.group("note").strip()
    return (role or "unknown").strip(), None


def _kind_hand_crafted(agent: str, note: str | None) -> str:
    if agent.lower() == "human":
        return "user"
    if note == "thought":
        return "plan"
    if note and note.startswith("->"):
        return "instruction"
    if note == "termination condition":
        return "final_answer"
    if agent.lower() == "computerterminal":
        return "observation"
    return "assistant"


def _kind_algorithm(name: str, role: str) -> str:
    if name.lower() in ("computer_terminal", "computerterminal"):
        return "observation"
    return "assistant" if role == "assistant" else "message"


def stated_answer(steps: list[Step]) -> str | None:
    """The answer the run states on a ``FINAL ANSWER: ...`` line (the last such line of
    the last step holding one), or ``None`` when it states none (CaptainAgent chats end
    with ``TERMINATE`` and no answer line)."""
    for step in reversed(steps):
        found: list[str] = _FINAL_LINE.findall(step.content or "")
        if found:
            return found[-1]
    return None


def benchmark_of(question_id: Any) -> str:
    """GAIA question ids are UUIDs; AssistantBench ids are 64-hex hashes."""
    qid = str(question_id or "")
    if _UUID.match(qid):
        return "gaia"
    if re.fullmatch(r"[0-9a-f]{64}", qid):
        return "assistantbench"
    return ""


def _agents(doc: JSONObject, steps: list[Step]) -> list[Agent]:
    """The speakers in order, then the agents only the system prompts name."""
    agents = dict.fromkeys(s.agent for s in steps)
    agents.update(dict.fromkeys(str(name) for name in dict_or_empty(doc.get("system_prompt"))))
    return [Agent(id=a) for a in agents]


def _extras(doc: JSONObject, hand_crafted: bool) -> dict[str, Any]:
    """Every field the trace has no place for, the subset and the system prompts."""
    extras = {k: v for k, v in doc.items() if k not in _KNOWN_KEYS}
    extras["subset"] = "Hand-Crafted" if hand_crafted else "Algorithm-Generated"
    if isinstance(doc.get("system_prompt"), dict):
        extras["system_prompt"] = doc["system_prompt"]
    return extras


class WhoWhenImporter(DocumentImporter):
    """Reads one Who&When (original) file, either subset."""

    name = "whowhen"
    priority = 10

    def matches(self, doc: Any) -> bool:
        """A dict with ``history`` and a Who&When label (``mistake_agent`` /
        ``mistake_step``), or a list ``history`` with a ``question``. A labelled document
        whose ``history`` is not a list still matches, so :meth:`load` can say so at
        ``$.history``."""
        if not isinstance(doc, dict) or "history" not in doc:
            return False
        if "mistake_agent" in doc or "mistake_step" in doc:
            return True
        return (
            "question" in doc
            and "trajectory" not in doc
            and (isinstance(doc["history"], list) or _LONE_KEYS.isdisjoint(doc))
        )

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        history = expect(doc.get("history"), list, ctx, "$.history", "a list of messages")
        hand_crafted = not any(isinstance(h, dict) and "name" in h for h in history)
        steps = [self._step(i, h, hand_crafted, ctx) for i, h in enumerate(history)]
        question = doc.get("question")
        if question is not None and not isinstance(question, str):
            raise ctx.error("wrong type", "$.question", "a string")
        answer = doc.get("ground_truth")
        trace = Trace(
            id=f"whowhen-{'hc' if hand_crafted else 'ag'}-{ctx.path.stem}",
            framework="magentic-one" if hand_crafted else "captainagent",
            benchmark=benchmark_of(doc.get("question_ID")),
            modality=Modality.text,
            agents=_agents(doc, steps),
            task=Task(query=question or "", answer=None if answer is None else as_text(answer)),
            steps=steps,
            final_answer=stated_answer(steps),
            ground_truth=self._ground_truth(doc, steps, ctx),
            outcome=Outcome.failure,
            source=Source(format=self.name, path=str(ctx.path), root=str(ctx.root) if ctx.root else None),
            extras=_extras(doc, hand_crafted),
        )
        if trace.ground_truth is not None and is_annotated_history(history):  # MP-Bench flags beside W&W labels
            trace.annotations = mp_flags_beside(trace.ground_truth, history, steps, ctx.path)
        elif is_annotated_history(history):  # MP-Bench
            trace.ground_truth, trace.annotations = mp_labels(history, steps, ctx.path)
            trace.id = f"mpbench-{ctx.path.parent.parent.name}-{ctx.path.parent.name}-{ctx.path.stem}"
            trace.benchmark = trace.benchmark or "mp-bench"
        return [trace]

    @staticmethod
    def _step(i: int, entry: Any, hand_crafted: bool, ctx: LoadContext) -> Step:
        where = f"$.history[{i}]"
        expect(entry, dict, ctx, where, "a message object {content, role, name?}")
        role = entry.get("role")
        if role is not None and not isinstance(role, str):
            raise ctx.error("wrong type", f"{where}.role", "a string")
        content = entry.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise ctx.error("wrong type", f"{where}.content", "a string")
        meta: dict[str, Any] = {"role": role}
        if hand_crafted:
            agent, note = speaker_of(role or "")
            kind = _kind_hand_crafted(agent, note)
            if note and note.startswith("->"):
                meta["to"] = note[2:].strip()
        else:
            name = entry.get("name")
            if not isinstance(name, str) or not name.strip():
                raise ctx.error("missing speaker", f"{where}.name", "the agent's name")
            agent = name.strip()
            kind = _kind_algorithm(agent, role or "")
        return Step(index=i, coord=str(i), agent=agent, kind=kind, content=as_text(content), meta=meta, raw=entry)

    @staticmethod
    def _ground_truth(doc: JSONObject, steps: list[Step], ctx: LoadContext) -> GroundTruth | None:
        if "mistake_step" not in doc and "mistake_agent" not in doc:
            return None
        raw_step = doc.get("mistake_step")
        index: int | None = None
        if raw_step is None and "mistake_step" in doc:  # JSON null, or NaN (read as null)
            raise ctx.error(
                "no step index (null or NaN)", "$.mistake_step", "a 0-based index into history, as a string"
            )
        if raw_step is not None:
            try:
                index = int(str(raw_step).strip())
            except ValueError:
                raise ctx.error(
                    f"not a step index: {raw_step!r}", "$.mistake_step", "a 0-based index into history, as a string"
                ) from None
            if not steps:
                raise ctx.error(
                    f"step index {index} out of range: the history is empty",
                    "$.mistake_step",
                    "messages in $.history for the labelled step",
                )
            if not 0 <= index < len(steps):
                raise ctx.error(f"step index {index} out of range", "$.mistake_step", f"0..{len(steps) - 1}")
        agent = doc.get("mistake_agent")
        if agent is not None and not isinstance(agent, str):
            raise ctx.error("wrong type", "$.mistake_agent", "an agent name")
        return GroundTruth(
            agent=agent,
            step=str(index) if index is not None else None,
            step_index=index,
            mode=None,
            reason=doc.get("mistake_reason") if isinstance(doc.get("mistake_reason"), str) else None,
            native={k: doc[k] for k in _LABEL_KEYS if k in doc},
        )
