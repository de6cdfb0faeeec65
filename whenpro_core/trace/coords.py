"""Step coordinates: the label a judge sees for each step and that scoring compares.

Rules per framework follow docs/architecture.md, 'Formats and step coordinates' (the Who&When Pro
release's step addressing),
checked against the release's reference evaluation code (``just1nlee/whowhen_pro``,
``whowhen_eval/render/<framework>.py`` and ``whowhen_eval/score.py``). Where the two
differ, the release data decides (see the notes on each rule below).

Two entry points:

* :func:`layout` turns a raw trajectory into :class:`Slot` s, one per step whenpro
  builds: most entries give one slot; round-grouped entries (``kind: "round"`` with
  ``turns``: debate, dylan, pixelcraft) give one slot per turn. Each slot has the
  coordinate (``None`` for framing entries: the user's task, a system prompt, a final
  answer record) and the speaking agent's id as used in labels.
* :func:`resolve_ground_truth` maps a native ``ground_truth`` dict onto that layout:
  the coordinate, the index of the labelled slot, the agent(s), ``round_only``, the
  accepted alternatives. :func:`gt_coord` gives the coordinate from the dict alone
  (no trajectory), for cheap listings. Both live in :mod:`whenpro_core.trace.gt_map` and are
  re-exported here.

Both raise :class:`~whenpro_core.errors.TraceFormatError` naming a JSON path
(``$.trajectory[3].round``, ``$.ground_truth.step``) for wrong types, and for a
ground-truth step that maps to no step ("step index out of range", with the range).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from whenpro_core.errors import TraceFormatError
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.frameworks import (
    FIXED_AGENT_LABELS,
    GUI_FRAMEWORKS,
    WHENPRO_FRAMEWORKS,
    canonical_framework,
)

#: MacNet role -> (layer R, position P), ``render/macnet.py``.
MACNET_ROLES = {"author": (0, 0), "critic": (1, 0), "rewriter": (1, 1), "sink": (2, 0)}

_PREFIX = re.compile(r"^\s*(?:step|round|turn)\b[\s:#]*", re.IGNORECASE)

#: The longest digit string read as a number: a step, row or position past 10**18 exists in
#: no trace, and ``int()`` refuses strings past 4,300 digits (CPython's limit).
MAX_NUMBER_DIGITS = 18


def small_int(text: str) -> int | None:
    """``text`` (surrounding whitespace ignored) as a non-negative int when it is all digits
    and at most :data:`MAX_NUMBER_DIGITS` long, else ``None``: the one reading of a
    user-given step number, row number or 1-based position (a longer one names nothing)."""
    digits = text.strip()
    if not digits.isdigit() or len(digits) > MAX_NUMBER_DIGITS:
        return None
    return int(digits)


def normalize_coord(value: object) -> str:
    """Canonical string form of a step coordinate for exact comparison (docs/architecture.md,
    'Formats and step coordinates':
    "exact string match on the coordinate after stripping step/round/turn").

    ``"Step 3"`` -> ``"3"``, ``" round 1.1 "`` -> ``"1.1"``, ``3`` -> ``"3"``,
    ``"03"`` -> ``"3"``. Never raises; non-numeric text is returned stripped.
    """
    text = _PREFIX.sub("", str(value)).strip().rstrip(".:,")
    parts = text.split(".")
    numbers = [small_int(p) for p in parts]
    if all(n is not None for n in numbers):
        return ".".join(map(str, numbers))
    return text


def round_of(coord: str) -> str:
    """The round part ``R`` of an ``R.P`` coordinate (the whole coordinate if flat)."""
    return normalize_coord(coord).split(".", 1)[0]


@dataclass(frozen=True)
class Slot:
    """One step to build from a trajectory.

    Attributes:
        entry: index of the source entry in the trajectory.
        turn: index into that entry's ``turns`` (round-grouped frameworks), else None.
        coord: the step coordinate, ``None`` for framing entries.
        agent: the speaking agent's id in label space (``websurfer``, ``node_1``,
            ``agent``); ``user``/``system`` for framing entries.
        round, position: the ``R.P`` parts when the framework has them.
    """

    entry: int
    turn: int | None = None
    coord: str | None = None
    agent: str = "agent"
    round: int | None = None
    position: int | None = None


@dataclass
class Layout:
    """The slots of one trajectory plus what was noticed while laying it out.

    ``warnings`` are user-facing notes (unknown framework, entries without a step
    number); importers copy them into ``Trace.extras["whenpro_warnings"]``.
    """

    framework: str
    slots: list[Slot]
    warnings: list[str] = field(default_factory=list)
    agent_names: dict[str, str] = field(default_factory=dict)

    def coords(self) -> list[str | None]:
        """The coordinate of every slot, in order."""
        return [s.coord for s in self.slots]

    def resolve_agent(self, name: object) -> str | None:
        """Map a label's agent name (an id or a display role, any case) to the id the
        steps use; unknown names are returned stripped, ``None``/empty gives None."""
        if name is None:
            return None
        text = str(name).strip()
        if not text:
            return None
        return self.agent_names.get(text.lower(), text)

    def first_slot_of_entry(self, entry: int) -> int | None:
        """Index of the first slot built from trajectory entry ``entry``."""
        for i, slot in enumerate(self.slots):
            if slot.entry == entry:
                return i
        return None


# --------------------------------------------------------------------------- helpers


def int_field(value: Any, json_path: str, what: str = "an integer") -> int:
    """``value`` as an int (ints, integral floats and digit strings are accepted);
    TraceFormatError at ``json_path`` otherwise."""
    if isinstance(value, bool):
        pass
    elif isinstance(value, int):
        return value
    elif (
        isinstance(value, float)
        and value.is_integer()
        or isinstance(value, str)
        and re.fullmatch(r"\s*-?\d+\s*", value)
    ):
        return int(value)
    found = "missing" if value is None else f"got {type(value).__name__} {str(value)[:40]!r}"
    raise TraceFormatError(f"wrong type ({found})", json_path=json_path, expected=what)


def listish(value: Any) -> list[Any]:
    """A list field, also when the file stores it as Python or JSON text (the per-file
    Who&When Pro showcase samples do for eva's ``tool_calls`` and ``frames``); anything
    else is an empty list. Never raises."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return []
    return value if isinstance(value, list) else []


def _kind(entry: JSONObject) -> str | None:
    kind = entry.get("kind")
    return kind if isinstance(kind, str) else None


def _text_id(value: Any, default: str) -> str:
    return str(value).strip() if isinstance(value, (str, int)) and str(value).strip() else default


def _framing_agent(entry: JSONObject) -> str:
    kind = _kind(entry)
    return "user" if kind == "user" else "system"


def _check_entries(trajectory: Any) -> list[JSONObject]:
    if not isinstance(trajectory, list):
        found = "missing" if trajectory is None else f"got {type(trajectory).__name__}"
        raise TraceFormatError(
            f"wrong type ({found})", json_path="$.trajectory", expected="a list of trajectory entries"
        )
    for i, entry in enumerate(trajectory):
        if not isinstance(entry, dict):
            raise TraceFormatError(
                f"wrong type (got {type(entry).__name__})", json_path=f"$.trajectory[{i}]", expected="an object"
            )
    return trajectory


# --------------------------------------------------------------------------- per framework


def _smolagents(entries: list[JSONObject], warn: list[str]) -> list[Slot]:
    """Counter over non-framing entries (framing: ``user``, ``final_answer`` or no
    kind); starts at 0 when the first counted entry is a ``planning`` entry, else 1.
    Re-plans mid-trajectory take a number too (``render/smolagents.py``)."""
    slots, cursor = [], None
    for i, e in enumerate(entries):
        kind = _kind(e)
        if kind in ("user", "final_answer", "system", None):
            slots.append(Slot(i, agent=_framing_agent(e)))
            continue
        if cursor is None:
            cursor = 0 if kind == "planning" else 1
        slots.append(Slot(i, coord=str(cursor), agent="agent"))
        cursor += 1
    return slots


def _gui(fw: str, entries: list[JSONObject], warn: list[str]) -> list[Slot]:
    """GUI / ALFWorld actions: the 1-based ``step_number`` is the coordinate; ``user``
    and other entries without a step number are framing (``render/gui.py``,
    ``render/alfagent.py``). The agent is the entry's ``agent`` (coact) or the
    framework's fixed label."""
    slots = []
    for i, e in enumerate(entries):
        kind = _kind(e)
        sn = e.get("step_number", e.get("step"))
        if kind in ("user", "system", "final_answer") or sn is None:
            if kind == "action":
                warn.append(f"$.trajectory[{i}] is an action without a step_number; shown without a coordinate")
            slots.append(Slot(i, agent=_framing_agent(e)))
            continue
        key = "step_number" if "step_number" in e else "step"
        n = int_field(sn, f"$.trajectory[{i}].{key}")
        agent = _text_id(e.get("agent"), FIXED_AGENT_LABELS.get(fw, "agent"))
        if fw == "alfagent":
            agent = "agent"
        slots.append(Slot(i, coord=str(n), agent=agent))
    return slots


def _rounds(fw: str, entries: list[JSONObject], warn: list[str]) -> list[Slot]:
    """Round-grouped frameworks: ``{kind: "round", round, turns: [...]}``; one slot
    per turn with coordinate ``R.P`` (0-based). debate: P is the turn's place in the
    round; dylan and pixelcraft: P is the turn's ``position`` (dylan's may skip
    numbers). Entries of other kinds are framing."""
    slots = []
    for i, e in enumerate(entries):
        if _kind(e) != "round":
            slots.append(Slot(i, agent=_framing_agent(e)))
            continue
        r = int_field(e.get("round", 0), f"$.trajectory[{i}].round")
        turns = e.get("turns")
        if turns is None:
            turns = []
        if not isinstance(turns, list):
            raise TraceFormatError(
                f"wrong type (got {type(turns).__name__})",
                json_path=f"$.trajectory[{i}].turns",
                expected="a list of turns",
            )
        if not turns:
            slots.append(Slot(i, agent="system", round=r))
            continue
        for t, turn in enumerate(turns):
            tpath = f"$.trajectory[{i}].turns[{t}]"
            if not isinstance(turn, dict):
                raise TraceFormatError(f"wrong type (got {type(turn).__name__})", json_path=tpath, expected="an object")
            if fw == "debate" or turn.get("position") is None:
                p = t
            else:
                p = int_field(turn.get("position"), f"{tpath}.position")
            agent = _text_id(turn.get("agent_id", turn.get("agent")), "unknown")
            slots.append(Slot(i, turn=t, coord=f"{r}.{p}", agent=agent, round=r, position=p))
    return slots


def _macnet(entries: list[JSONObject], warn: list[str]) -> list[Slot]:
    """MacNet: coordinate from the role (author 0.0, critic 1.0, rewriter 1.1,
    sink 2.0); an unknown role goes to layer 1 after the turns already there
    (``render/macnet.py``). Entries without a role are framing."""
    slots: list[Slot] = []
    for i, e in enumerate(entries):
        role = e.get("role")
        if _kind(e) in ("user", "final_answer", "system") or not isinstance(role, str) or not role:
            slots.append(Slot(i, agent=_framing_agent(e)))
            continue
        rp = MACNET_ROLES.get(role.strip().lower())
        if rp is None:
            rp = (1, sum(1 for s in slots if s.round == 1))
            warn.append(f"$.trajectory[{i}].role {role!r} is not a known MacNet role; placed at {rp[0]}.{rp[1]}")
        agent = _text_id(e.get("agent_id", e.get("agent")), "unknown")
        slots.append(Slot(i, coord=f"{rp[0]}.{rp[1]}", agent=agent, round=rp[0], position=rp[1]))
    return slots


def _magentic(entries: list[JSONObject], warn: list[str]) -> list[Slot]:
    """Magentic-One: ``kind: "agent"`` entries with ``round`` and ``position``
    (0 orchestrator, 1 specialist) give ``R.P``; the rest are framing. The agent is
    the lower-case ``agent`` id (the display ``role`` is mapped when it is missing)."""
    slots = []
    for i, e in enumerate(entries):
        path = f"$.trajectory[{i}]"
        if _kind(e) in ("user", "system", "final_answer") or e.get("round") is None or e.get("position") is None:
            if _kind(e) == "agent":
                warn.append(f"{path} is an agent turn without round/position; shown without a coordinate")
            slots.append(Slot(i, agent=_framing_agent(e)))
            continue
        r, p = int_field(e["round"], f"{path}.round"), int_field(e["position"], f"{path}.position")
        agent = e.get("agent")
        if not isinstance(agent, str) or not agent.strip():
            agent = _text_id(e.get("role"), "unknown").lower()
        slots.append(Slot(i, coord=f"{r}.{p}", agent=agent.strip(), round=r, position=p))
    return slots


def _mathchat(entries: list[JSONObject], warn: list[str]) -> list[Slot]:
    """MathChat: ``2*round + position``; the round 0 position 0 ``user_proxy`` turn is
    the unnumbered user input (``render/mathchat.py``)."""
    slots = []
    for i, e in enumerate(entries):
        path = f"$.trajectory[{i}]"
        if _kind(e) in ("user", "system", "final_answer") or e.get("round") is None or e.get("position") is None:
            slots.append(Slot(i, agent=_framing_agent(e)))
            continue
        r, p = int_field(e["round"], f"{path}.round"), int_field(e["position"], f"{path}.position")
        agent = _text_id(e.get("agent_id", e.get("agent")), "unknown")
        if r == 0 and p == 0 and agent == "user_proxy":
            slots.append(Slot(i, agent=agent, round=r, position=p))
            continue
        slots.append(Slot(i, coord=str(2 * r + p), agent=agent, round=r, position=p))
    return slots


def _metagpt(entries: list[JSONObject], warn: list[str]) -> list[Slot]:
    """MetaGPT: the SOP ``stage`` (0 architect, 1 engineer, 2 reviewer)."""
    slots = []
    for i, e in enumerate(entries):
        if _kind(e) in ("user", "system", "final_answer") or e.get("stage") is None:
            slots.append(Slot(i, agent=_framing_agent(e)))
            continue
        s = int_field(e["stage"], f"$.trajectory[{i}].stage")
        slots.append(Slot(i, coord=str(s), agent=_text_id(e.get("agent_id", e.get("agent")), "unknown")))
    return slots


def _lead(entries: list[JSONObject]) -> int:
    """Number of leading ``system``/``user`` entries (the video frameworks' framing)."""
    n = 0
    while n < len(entries) and n < 2 and _kind(entries[n]) in ("system", "user"):
        n += 1
    return n


def _dvd(entries: list[JSONObject], warn: list[str]) -> list[Slot]:
    """DVD: native index minus the leading system+user entries (``index - 2``). Agents:
    ``orchestrator`` for assistant turns, ``frame_inspect_agent`` for the
    ``frame_inspect_tool`` sub-agent's replies, the tool name for plain tools."""
    lead = _lead(entries)
    slots = []
    for i, e in enumerate(entries):
        if i < lead:
            slots.append(Slot(i, agent=_framing_agent(e)))
            continue
        kind = _kind(e)
        if kind == "tool":
            name = _text_id(e.get("tool_name"), "tool")
            agent = "frame_inspect_agent" if name == "frame_inspect_tool" else name
        elif kind == "assistant":
            agent = "orchestrator"
        else:
            agent = _text_id(kind, "unknown")
        slots.append(Slot(i, coord=str(i - lead), agent=agent))
    return slots


def _eva(entries: list[JSONObject], warn: list[str]) -> list[Slot]:
    """EVA: a dense 0-based counter over assistant turns; the tool results answering
    a turn's calls (one per call, at least one) share its coordinate. For the released
    strictly alternating traces this equals ``(native index - 2) // 2``."""
    lead = _lead(entries)
    slots = [Slot(i, agent=_framing_agent(entries[i])) for i in range(lead)]
    counter, i = 0, lead
    while i < len(entries):
        e = entries[i]
        slots.append(Slot(i, coord=str(counter), agent="agent"))
        j = i + 1
        if _kind(e) == "assistant":
            budget = len(listish(e.get("tool_calls"))) or 1
            while j < len(entries) and _kind(entries[j]) == "tool" and j - i <= budget:
                slots.append(Slot(j, coord=str(counter), agent="agent"))
                j += 1
        counter += 1
        i = j
    return slots


_FRAMING_KINDS = ("user", "system", "final_answer")


def _generic(entries: list[JSONObject], warn: list[str]) -> list[Slot]:
    """Unknown framework: entries' own ``step``/``step_number`` when non-framing
    entries carry one; else ``round.position`` when they all carry both; else a 0-based
    counter over non-framing entries (framing: ``user``, ``system``, ``final_answer``).
    A ``final_answer`` entry that carries its own ``step``/``step_number`` is an agent's
    numbered step, not framing (the last turn of a team whose reporter answers, as
    ``whenpro build`` writes it)."""
    body = [
        (i, e)
        for i, e in enumerate(entries)
        if _kind(e) not in _FRAMING_KINDS
        or (_kind(e) == "final_answer" and e.get("step_number", e.get("step")) is not None)
    ]
    slots = [Slot(i, agent=_framing_agent(e)) for i, e in enumerate(entries)]

    def agent_of(e: JSONObject) -> str:
        return _text_id(e.get("agent_id", e.get("agent", e.get("name"))), "agent")

    numbered = [(i, e) for i, e in body if e.get("step_number", e.get("step")) is not None]
    if numbered:
        for i, e in numbered:
            key = "step_number" if e.get("step_number") is not None else "step"
            slots[i] = Slot(i, coord=str(int_field(e[key], f"$.trajectory[{i}].{key}")), agent=agent_of(e))
        if len(numbered) < len(body):
            warn.append(f"{len(body) - len(numbered)} entries have no step number and no coordinate")
        return slots
    if body and all(e.get("round") is not None and e.get("position") is not None for _, e in body):
        for i, e in body:
            r = int_field(e["round"], f"$.trajectory[{i}].round")
            p = int_field(e["position"], f"$.trajectory[{i}].position")
            slots[i] = Slot(i, coord=f"{r}.{p}", agent=agent_of(e), round=r, position=p)
        return slots
    for n, (i, e) in enumerate(body):
        slots[i] = Slot(i, coord=str(n), agent=agent_of(e))
    return slots


def layout(framework: str, trajectory: Any, agents: Iterable[Any] | None = None) -> Layout:
    """Lay a raw Who&When Pro trajectory out as slots, one per step, with coordinates.

    Args:
        framework: the trace's framework (any spelling; see :func:`canonical_framework`).
        trajectory: the ``trajectory`` list as stored (entries are dicts).
        agents: the trace's declared agents (``[{id, role}]``), used to map display
            roles and other spellings to label ids.

    Returns a :class:`Layout`. An unknown framework gets the generic rule and a
    warning. Raises TraceFormatError (``$.trajectory...``) for a trajectory that is not
    a list of objects, or coordinates fields of the wrong type.
    """
    fw = canonical_framework(framework)
    entries = _check_entries(trajectory)
    warn: list[str] = []
    if fw == "smolagents":
        slots = _smolagents(entries, warn)
    elif fw in GUI_FRAMEWORKS:
        slots = _gui(fw, entries, warn)
    elif fw in ("debate", "dylan", "pixelcraft"):
        slots = _rounds(fw, entries, warn)
    elif fw == "macnet":
        slots = _macnet(entries, warn)
    elif fw == "magentic-one":
        slots = _magentic(entries, warn)
    elif fw == "mathchat":
        slots = _mathchat(entries, warn)
    elif fw == "metagpt":
        slots = _metagpt(entries, warn)
    elif fw == "dvd":
        slots = _dvd(entries, warn)
    elif fw == "eva":
        slots = _eva(entries, warn)
    else:
        if fw not in WHENPRO_FRAMEWORKS:
            warn.append(
                f"unknown framework {framework!r}: step coordinates follow the generic "
                "rule (the entries' step/step_number, else a 0-based counter)"
            )
        slots = _generic(entries, warn)
    return Layout(fw, slots, warn, _agent_names(agents, slots))


def _agent_names(agents: Iterable[Any] | None, slots: list[Slot]) -> dict[str, str]:
    names: dict[str, str] = {}
    roles: dict[str, list[str]] = {}
    for a in agents or []:
        if isinstance(a, dict) and isinstance(a.get("id"), (str, int)):
            aid = str(a["id"])
            names[aid.lower()] = aid
            if isinstance(a.get("role"), str):
                roles.setdefault(a["role"].lower(), []).append(aid)
    for role, ids in roles.items():
        if len(set(ids)) == 1:
            names.setdefault(role, ids[0])
    for s in slots:
        names.setdefault(s.agent.lower(), s.agent)
    return names
