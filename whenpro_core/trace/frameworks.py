"""The per-framework spec table: what whenpro knows about each agent framework whose
traces it reads (a leaf: step coordinates (:mod:`whenpro_core.trace.coords`), the
ground-truth mapping (:mod:`whenpro_core.trace.gt_map`), scoring and the Who&When Pro
prompt rendering read it; it imports nothing of whenpro).

The Who&When Pro release's frameworks follow its reference renderers and scorer
(``whowhen_eval/render/<framework>.py``, ``whowhen_eval/score.py``); see
docs/architecture.md, 'Formats and step coordinates'.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FrameworkSpec:
    """One framework's rules.

    Attributes:
        name: canonical name (lower case; see :func:`canonical_framework`).
        single_agent: its traces have one agent, which is left out of the agent metric.
        round_only: scored on the round ``R`` of an ``R.P`` coordinate only.
        fixed_agent: the label every step carries when its entries name no agent.
        gui: GUI-action entries (``render/gui.py``, ``alfagent.py``).
        whenpro: one of whenpro's own multi-agent systems (:mod:`whenpro_core.envs`),
            whose steps carry ``step_number`` (the generic rule is theirs by design).
    """

    name: str
    single_agent: bool = False
    round_only: bool = False
    fixed_agent: str | None = None
    gui: bool = False
    whenpro: bool = False


#: Every framework whenpro knows, by canonical name.
FRAMEWORKS: dict[str, FrameworkSpec] = {
    spec.name: spec
    for spec in (
        FrameworkSpec("smolagents", single_agent=True, fixed_agent="agent"),
        FrameworkSpec("alfagent", single_agent=True, fixed_agent="agent", gui=True),
        FrameworkSpec("coact", gui=True),
        FrameworkSpec("openai_cua", single_agent=True, fixed_agent="computer_use_agent", gui=True),
        FrameworkSpec("agentoccam", single_agent=True, fixed_agent="web_agent", gui=True),
        FrameworkSpec("gemini", single_agent=True, fixed_agent="web_agent", gui=True),
        FrameworkSpec("debate", round_only=True),
        FrameworkSpec("dylan", round_only=True),
        FrameworkSpec("macnet"),
        FrameworkSpec("magentic-one"),
        FrameworkSpec("mathchat", single_agent=True),
        FrameworkSpec("metagpt"),
        FrameworkSpec("pixelcraft", single_agent=True),
        FrameworkSpec("dvd"),
        FrameworkSpec("eva", single_agent=True, fixed_agent="agent"),
        FrameworkSpec("arith_team", whenpro=True),
        FrameworkSpec("code_pair", whenpro=True),
    )
}

#: Frameworks whose traces have one agent: they expect agent ``agent`` (or their fixed
#: label) and are left out of the agent metric (``openai_cua``, ``agentoccam`` and
#: ``gemini`` from the reference scorer).
SINGLE_AGENT_FRAMEWORKS = frozenset(s.name for s in FRAMEWORKS.values() if s.single_agent)

#: Frameworks scored on the round only (the ``R`` of ``R.P``).
ROUND_ONLY_FRAMEWORKS = frozenset(s.name for s in FRAMEWORKS.values() if s.round_only)

#: The label every step of a single-acting framework carries when its entries name no
#: agent (reference renderers: ``agent``; GUI frameworks: the trace's acting agent).
FIXED_AGENT_LABELS = {s.name: s.fixed_agent for s in FRAMEWORKS.values() if s.fixed_agent}

#: GUI-action frameworks sharing one entry shape.
GUI_FRAMEWORKS = frozenset(s.name for s in FRAMEWORKS.values() if s.gui)

#: whenpro's own multi-agent systems (the built-in environments of ``whenpro run``):
#: reading a dataset built from them warns about nothing.
WHENPRO_FRAMEWORKS = frozenset(s.name for s in FRAMEWORKS.values() if s.whenpro)

_ALIASES = {
    "magentic": "magentic-one",
    "magentic_one": "magentic-one",
    "magenticone": "magentic-one",
    "openai-cua": "openai_cua",
}


def canonical_framework(name: object) -> str:
    """The framework name whenpro uses: lower-cased, aliases folded (``magentic`` ->
    ``magentic-one``). Non-strings give ``"unknown"``."""
    if not isinstance(name, str) or not name.strip():
        return "unknown"
    low = name.strip().lower()
    return _ALIASES.get(low, low)
