"""The failure-mode taxonomy: 17 codes in 6 families (docs/architecture.md, 'Failure-mode taxonomy'; the Who&When Pro
release's ``taxonomy.yaml``). A dataset's own ``taxonomy.yaml`` at its root replaces the
built-in table when present.

The built-in table's names, one-line meanings and full descriptions are whenpro's own: each
description says what the error is, how it typically shows in a trace, and how it differs
from its nearest neighbours ("Not R.4: ...").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from whenpro_core.errors import TraceFormatError

#: Family names by code prefix (``PL.1`` -> ``Planning``).
FAMILIES = {
    "P": "Perception",
    "R": "Reasoning",
    "PL": "Planning",
    "A": "Action",
    "V": "Verification",
    "C": "Coordination",
}


@dataclass(frozen=True)
class FailureMode:
    """One failure mode: ``code`` (``"R.3"``), ``name``, a one-line ``meaning`` and
    the full ``description`` (whitespace collapsed to single spaces; whenpro's own text in
    the built-in table, the file's in a loaded one)."""

    code: str
    name: str
    meaning: str
    description: str = ""

    @property
    def family(self) -> str:
        """The family name derived from the code prefix (``"Reasoning"`` for ``R.3``)."""
        return FAMILIES.get(self.code.split(".", 1)[0], "Other")


_BUILTIN = [
    FailureMode(
        "P.1",
        "Visual misidentification",
        "Wrong object, entity or text recognised in an image (misread chart, OCR error, wrong entity).",
        "The agent looks at an image and gets its content wrong: it reads a number, word or label the image "
        "does not show, or takes one person, product or object for a similar-looking one. In a trace, the "
        "step that describes or transcribes the image states something the image contradicts (a bar read as "
        "40 against an axis that says 30, a logo named as the wrong brand), and later steps reason soundly "
        "from that wrong reading, so the mode belongs to the step where the misreading first appears. Not "
        "P.2: the agent looked at the right place and recognised it wrongly. Not R.1: the false claim comes "
        "from a faulty look at an image the agent really had, not from nothing.",
    ),
    FailureMode(
        "P.2",
        "Spatial/grounding error",
        "Wrong region targeted in an image or UI (misclick, wrong box, wrong crop).",
        "The agent knows what it is looking for but acts on or inspects the wrong location: it clicks the "
        "wrong button, crops or zooms into the wrong area, draws a box or mark in the wrong place, or refers "
        "to a neighbouring element of a screen. In a trace, the typical sign is an action whose coordinates "
        "or element id do not match the element the agent said it wanted, or a crop that does not contain "
        "what the agent then describes. Not P.1: in P.2 the position is wrong, in P.1 the right region is "
        "seen but misread. Not A.1: the call is well formed and the tool is right; only its spatial target is "
        "off.",
    ),
    FailureMode(
        "R.1",
        "Hallucination",
        "A claim not grounded in any observation: fabricated facts stated as found.",
        "The agent states as fact something no observation in the run supports: a figure, name, date, "
        "quotation, file content or search result it never retrieved, usually supplied from its own memory or "
        "invented outright. In a trace the claim appears with no tool output, document or message before it "
        "that contains it, often phrased as if it had been looked up ('the page says ...'). Not R.2: there "
        "the wrong claim can be traced to something the agent did see and then misused; if the fact is "
        "nowhere in the earlier observations, it is R.1. Not V.2: taking a peer's or a tool's false statement "
        "on trust is a failure to check, not an invention.",
    ),
    FailureMode(
        "R.2",
        "Reasoning error",
        "Right frame, but a local reasoning slip: misapplied evidence or one broken derivation step.",
        "The agent's overall approach suits the task, but one inference within it is wrong: it confuses two "
        "entities or dates from its sources, reverses a comparison, concludes more than the evidence gives, "
        "or, in code, gets one case, condition or state update wrong. In a trace the facts the agent needs "
        "are in its observations and its plan is reasonable, yet one step's conclusion does not follow from "
        "what it had. Not R.4: if fixing that step, or a few such local steps, would let the approach "
        "succeed, it is R.2; if no local fix could rescue the chosen approach, it is R.4. Not R.3 (the slip "
        "is in interpretation, not arithmetic) and not R.1 (the misused fact was really observed).",
    ),
    FailureMode(
        "R.3",
        "Numerical/calculation error",
        "Arithmetic, unit conversion, counting, rounding or off-by-one mistakes.",
        "A quantity is computed wrongly: bad arithmetic, a unit or currency conversion gone wrong, a "
        "miscount, wrong rounding, or an off-by-one in a range, date span or index. In a trace the sign is a "
        "step whose inputs are right but whose number comes out differently when recomputed by hand, such as "
        "a total, a percentage or a count of items listed just above it. Not R.2: the facts combined were the "
        "right ones and correctly understood; only the calculation is wrong. Not R.1: the wrong number is "
        "derived from real inputs, not made up.",
    ),
    FailureMode(
        "R.4",
        "Task misunderstanding",
        "The task is misread, or solved with a structurally wrong approach.",
        "The agent's picture of what the task wants is wrong at the root: it answers a different question, "
        "asks about the wrong attribute, drops a stated constraint, adds things nobody asked for, or commits "
        "to a model of the problem (a reduction, an algorithm family, a simplifying assumption) that cannot "
        "give a valid answer however carefully it is carried out. In a trace the sign is usually early: the "
        "agent restates the task or picks its method in a way that departs from the actual question, and what "
        "follows is consistent with that reading. Not R.2: no amount of local fixes would make the output "
        "satisfy the task. Not PL.1: in R.4 the goal itself is misread; in PL.1 the goal is understood and "
        "the route to it is poor.",
    ),
    FailureMode(
        "PL.1",
        "Ineffective planning",
        "An unsound plan or strategy that leads toward a dead end.",
        "The agent understands the goal but lays out a plan or strategy that cannot reach it well: sub-goals "
        "missing or in the wrong order, a plan resting on an unchecked premise, one weak source relied on "
        "where several were needed, or an approach kept after it has plainly failed. In a trace it shows in a "
        "planning or orchestrating step, and later steps follow the plan faithfully into a dead end that only "
        "a new plan would escape; each step is carried out correctly, the plan is what fails. Not R.4: the "
        "task was read correctly. Not C.1: when the plan is sound but its pieces go to the wrong agents, or "
        "the agents' roles are mixed up, it is C.1.",
    ),
    FailureMode(
        "PL.2",
        "Goal drift",
        "Gradually drifting away from the original objective.",
        "Over several steps the agent's attention slides from the original objective to a side question, a "
        "tangent or a sub-goal pursued for its own sake, and the final answer addresses that instead. In a "
        "trace the early steps are on target, then the searches, code or messages turn to something the task "
        "did not ask, without any stated decision to change course; the mode belongs to the step where the "
        "turn begins. Not R.4: the task was understood at the start and lost gradually. Not V.1: V.1 forgets "
        "a particular fact or constraint, PL.2 loses the objective as a whole.",
    ),
    FailureMode(
        "A.1",
        "Tool parameter/invocation error",
        "Right tool, wrong arguments, malformed call or missing parameters.",
        "The agent picks a suitable tool but calls it wrongly: wrong or misspelt arguments, missing required "
        "parameters, wrong types or settings, or a call made without the earlier call it depends on (for "
        "example acting on a record before looking it up). In a trace the typical sign is an error or an "
        "empty result right after the call, or a tool output that answers a different request than the agent "
        "meant to make. Not A.2: A.2 is the agent's own written output in the wrong form, A.1 a flawed "
        "request to a tool. Not A.4: one bad call is A.1; sending the same bad call again and again is A.4.",
    ),
    FailureMode(
        "A.2",
        "Output format/syntax error",
        "Malformed structured output, broken syntax or a final answer in the wrong format.",
        "What the agent produces is malformed or in the wrong shape: invalid JSON, code that does not parse, "
        "a broken patch, a final answer in the wrong unit, notation or option style, or a paragraph of "
        "explanation where a single value was asked for. In a trace the sign is content that is right or "
        "nearly right but rejected or scored wrong because of its form, such as a parse error from the "
        "harness or the correct number buried in prose. Not A.1: the fault is in the text the agent writes, "
        "not in the arguments it passes to a tool. Not R.4: the agent knew what was asked and delivered it in "
        "the wrong form.",
    ),
    FailureMode(
        "A.3",
        "Premature termination",
        "Stopping before the task is done; returning partial results as final.",
        "The agent stops, or declares the task done, before its objectives are met: it returns a partial or "
        "placeholder answer as final, ends a turn without the action the turn needed, gives up or refuses, or "
        "completes one part of a multi-part task and silently drops the rest. In a trace a final answer or "
        "termination message arrives while planned steps are still open, often straight after a failed or "
        "incomplete search. Not V.2: V.2 returns finished work without checking it, A.3 leaves work undone. "
        "Not A.4: an agent that loops until it runs out of turns fails by repetition, not by stopping early.",
    ),
    FailureMode(
        "A.4",
        "Repetitive/looping behaviour",
        "Repeating the same or equivalent actions without progress.",
        "The agent keeps doing the same thing, or equivalent things, without getting closer to the goal: "
        "identical retries after a failure, re-running steps already completed, or agents handing the same "
        "message back and forth. In a trace it shows as a run of near-identical calls or messages with the "
        "same outcome, often ending at a turn or budget limit. Not A.1: the first failing call may itself be "
        "A.1, but the decisive error is A.4 when repeating it instead of changing course is what wastes the "
        "run. Not PL.1: PL.1 persists with a bad strategy through varied steps; A.4 repeats the same step.",
    ),
    FailureMode(
        "V.1",
        "Context/memory loss",
        "Losing or failing to use information from history or earlier observations.",
        "The agent fails to use information already in its own history: it forgets a constraint stated in the "
        "task, searches again for something already found, keeps using a value that has since been updated, "
        "or contradicts an earlier observation it did not look back at. In a trace the sign is a step that "
        "conflicts with, or ignores, something visible earlier in the same transcript, often after a long "
        "stretch of output. Not R.1: the right information was there and overlooked, not replaced by an "
        "invention. Not C.2: C.2 is information that never crossed from one agent to another; V.1 is "
        "information the agent had and lost.",
    ),
    FailureMode(
        "V.2",
        "Inadequate or incorrect verification",
        "Not verifying results, or verifying them wrongly, before returning them.",
        "The agent accepts or returns a result without the check it needed, or checks it badly: it skips "
        "verification, runs a test that cannot catch the error, takes a tool's or a peer's claim at face "
        "value, passes over sources that disagree, misreads what its own action did, or talks itself out of a "
        "right answer into a wrong one. In a trace the sign is a checking step or a reviewer agent that "
        "approves a wrong result, or a conflicting observation that goes unremarked before the final answer. "
        "Not A.3: the work was finished but not checked. Not C.3: C.3 gives up a sound answer of its own for "
        "a peer's; V.2 lets a wrong result through without having had a better one.",
    ),
    FailureMode(
        "C.1",
        "Delegation/orchestration error",
        "A subtask given to the wrong agent, bad decomposition or role confusion.",
        "The team's work is organised badly: a subtask goes to an agent that lacks the tools or ability for "
        "it, the work is split so that pieces overlap, conflict or leave gaps, or an agent steps outside its "
        "role and does another's job. In a trace the sign is an orchestrator message that assigns work to the "
        "wrong member, an agent answering outside its remit, or two agents undoing each other's actions. Not "
        "PL.1: the plan's content may be sound; the error is in who is asked to do which part. Not C.2: C.2 "
        "concerns what information passes between agents, C.1 how the work is divided among them.",
    ),
    FailureMode(
        "C.2",
        "Communication failure",
        "Withholding information, ignoring a peer's input or not asking for clarification.",
        "Information does not flow between agents as it should: an agent keeps back a finding or constraint a "
        "peer needed, ignores a peer's warning or advice, passes on a garbled or incomplete summary, or acts "
        "on an ambiguous instruction instead of asking what was meant. In a trace the sign is a fact present "
        "in one agent's step that is missing from, or contradicted by, the message it sends on, or a reply "
        "that does not engage with what the previous agent said. Not V.1: the loss happens at the boundary "
        "between agents, not inside one agent's context. Not C.3: C.3 takes a peer's input too readily, C.2 "
        "ignores it or never receives it.",
    ),
    FailureMode(
        "C.3",
        "Over-reliance on other agents",
        "Abandoning a sound answer to adopt a peer's worse one.",
        "An agent that had reached a sound answer or line of reasoning on its own gives it up after seeing "
        "another agent's output and adopts that agent's worse position. In a trace its earlier step is "
        "correct and a later one switches to a peer's wrong claim with no new evidence, often citing the peer "
        "('as the analyst pointed out ...'); the mode belongs to that switch. Not R.2: in R.2 the agent's own "
        "reasoning is broken, while in C.3 it would have been right had it not deferred. Not V.2: V.2 fails "
        "to check a result it had no sound alternative to, C.3 discards the sound alternative it had.",
    ),
]


class Taxonomy:
    """An ordered set of failure modes, looked up by code.

    ``Taxonomy.builtin()`` is the built-in 17-code table (the release's codes, whenpro's
    words); :func:`load_taxonomy` reads a dataset's ``taxonomy.yaml`` (``code: {name,
    description}``).
    """

    def __init__(self, modes: list[FailureMode], source: str = "built-in") -> None:
        self.modes = {m.code: m for m in modes}
        self.source = source

    @classmethod
    def builtin(cls) -> Taxonomy:
        """The Who&When Pro taxonomy's 17 codes in 6 families, with whenpro's own names,
        meanings and full descriptions."""
        return cls(list(_BUILTIN))

    def __contains__(self, code: object) -> bool:
        return code in self.modes

    def __iter__(self) -> Iterator[FailureMode]:
        return iter(self.modes.values())

    def __len__(self) -> int:
        return len(self.modes)

    def get(self, code: str | None) -> FailureMode | None:
        """The mode for ``code`` (case-insensitive), or ``None``."""
        if not code:
            return None
        return self.modes.get(code) or self.modes.get(code.strip().upper())

    def name(self, code: str | None) -> str:
        """``"R.3 Numerical/calculation error"`` or the bare code when unknown."""
        mode = self.get(code)
        return f"{mode.code} {mode.name}" if mode else (code or "—")

    def find_code(self, text: str) -> str | None:
        """The first taxonomy code that appears anywhere in ``text`` (lenient parsing,
        docs/architecture.md, 'Attribution protocols'), or a mode whose name appears; ``None`` if neither."""
        for match in _CODE_RE.finditer(text or ""):
            code = match.group(1).upper()
            if code in self.modes:
                return code
        low = (text or "").lower()
        for mode in self.modes.values():
            if mode.name.lower() in low:
                return mode.code
        return None

    def by_family(self) -> dict[str, list[FailureMode]]:
        """Modes grouped by family name, in taxonomy order."""
        out: dict[str, list[FailureMode]] = {}
        for mode in self.modes.values():
            out.setdefault(mode.family, []).append(mode)
        return out


_CODE_RE = re.compile(r"(?<![A-Za-z0-9])((?:PL|P|R|A|V|C)\.\d+)(?![0-9])", re.IGNORECASE)


def load_taxonomy(path: str | Path) -> Taxonomy:
    """Read a ``taxonomy.yaml`` (``code: {name, description}``). Raises
    TraceFormatError naming the file and the bad entry."""
    import yaml  # start-up: only a dataset with its own taxonomy.yaml needs the parser (~30 ms)

    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise TraceFormatError(
            f"cannot read taxonomy: {exc}", path=path, expected="a YAML mapping of code -> {name, description}"
        ) from None
    if not isinstance(doc, dict):
        raise TraceFormatError(
            "wrong type", path=path, json_path="$", expected="a mapping of code -> {name, description}"
        )
    modes = []
    for code, entry in doc.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise TraceFormatError(
                "bad taxonomy entry", path=path, json_path=f"$.{code}", expected="{name: str, description: str}"
            )
        desc = " ".join(str(entry.get("description") or "").split())
        meaning = desc.split(". ")[0].rstrip(".") + "." if desc else entry["name"]
        modes.append(FailureMode(str(code), entry["name"], meaning, desc))
    return Taxonomy(modes, source=str(path))


@lru_cache(maxsize=32)
def _cached(path: str, mtime: float) -> Taxonomy:
    return load_taxonomy(path)


def taxonomy_for(root: str | Path | None) -> Taxonomy:
    """The taxonomy that applies to a dataset: its root's ``taxonomy.yaml`` when present,
    else the built-in one."""
    if root:
        p = Path(root) / "taxonomy.yaml"
        if p.is_file():
            return _cached(str(p), p.stat().st_mtime)
    return Taxonomy.builtin()
