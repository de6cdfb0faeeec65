"""Step coordinates: the label a judge sees for each step and that scoring compares.

Rules per framework follow DESIGN §4 (the Who&When Pro release's step addressing).
"""

from __future__ import annotations

import re

#: Frameworks whose traces have one agent. They expect agent ``agent`` and are left out
#: of the agent metric (DESIGN §4, Who&When Pro scoring).
SINGLE_AGENT_FRAMEWORKS = frozenset({"smolagents", "alfagent", "mathchat", "pixelcraft", "eva"})

#: Frameworks scored on the round only (the ``R`` of ``R.P``), DESIGN §4.
ROUND_ONLY_FRAMEWORKS = frozenset({"debate", "dylan"})

_PREFIX = re.compile(r"^\s*(?:step|round|turn)\b[\s:#]*", re.IGNORECASE)


def normalize_coord(value: object) -> str:
    """Canonical string form of a step coordinate for exact comparison (DESIGN §4:
    "exact string match on the coordinate after stripping step/round/turn").

    ``"Step 3"`` -> ``"3"``, ``" round 1.1 "`` -> ``"1.1"``, ``3`` -> ``"3"``,
    ``"03"`` -> ``"3"``. Never raises; non-numeric text is returned stripped.
    """
    text = _PREFIX.sub("", str(value)).strip().rstrip(".:,")
    parts = text.split(".")
    if all(p.isdigit() for p in parts):
        return ".".join(str(int(p)) for p in parts)
    return text


def round_of(coord: str) -> str:
    """The round part ``R`` of an ``R.P`` coordinate (the whole coordinate if flat)."""
    return normalize_coord(coord).split(".", 1)[0]
