"""The failure-mode taxonomy: 17 codes in 6 families (docs/architecture.md, 'Failure-mode taxonomy'; the Who&When Pro
release's ``taxonomy.yaml``). A dataset's own ``taxonomy.yaml`` at its root replaces the
built-in table when present.
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
    the full ``description`` (equal to ``meaning`` in the built-in table)."""

    code: str
    name: str
    meaning: str
    description: str = ""

    @property
    def family(self) -> str:
        """The family name derived from the code prefix (``"Reasoning"`` for ``R.3``)."""
        return FAMILIES.get(self.code.split(".", 1)[0], "Other")


_BUILTIN = [
    (
        "P.1",
        "Visual misidentification",
        "Wrong object, entity or text recognised in an image (misread chart, OCR error, wrong entity).",
    ),
    ("P.2", "Spatial/grounding error", "Wrong region targeted in an image or UI (misclick, wrong box, wrong crop)."),
    ("R.1", "Hallucination", "A claim not grounded in any observation: fabricated facts stated as found."),
    (
        "R.2",
        "Reasoning error",
        "Right frame, but a local reasoning slip: misapplied evidence or one broken derivation step.",
    ),
    ("R.3", "Numerical/calculation error", "Arithmetic, unit conversion, counting, rounding or off-by-one mistakes."),
    ("R.4", "Task misunderstanding", "The task is misread, or solved with a structurally wrong approach."),
    ("PL.1", "Ineffective planning", "An unsound plan or strategy that leads toward a dead end."),
    ("PL.2", "Goal drift", "Gradually drifting away from the original objective."),
    ("A.1", "Tool parameter/invocation error", "Right tool, wrong arguments, malformed call or missing parameters."),
    (
        "A.2",
        "Output format/syntax error",
        "Malformed structured output, broken syntax or a final answer in the wrong format.",
    ),
    ("A.3", "Premature termination", "Stopping before the task is done; returning partial results as final."),
    ("A.4", "Repetitive/looping behaviour", "Repeating the same or equivalent actions without progress."),
    ("V.1", "Context/memory loss", "Losing or failing to use information from history or earlier observations."),
    (
        "V.2",
        "Inadequate or incorrect verification",
        "Not verifying results, or verifying them wrongly, before returning them.",
    ),
    (
        "C.1",
        "Delegation/orchestration error",
        "A subtask given to the wrong agent, bad decomposition or role confusion.",
    ),
    (
        "C.2",
        "Communication failure",
        "Withholding information, ignoring a peer's input or not asking for clarification.",
    ),
    ("C.3", "Over-reliance on other agents", "Abandoning a sound answer to adopt a peer's worse one."),
]


class Taxonomy:
    """An ordered set of failure modes, looked up by code.

    ``Taxonomy.builtin()`` is the released 17-code table; :func:`load_taxonomy` reads a
    dataset's ``taxonomy.yaml`` (``code: {name, description}``).
    """

    def __init__(self, modes: list[FailureMode], source: str = "built-in") -> None:
        self.modes = {m.code: m for m in modes}
        self.source = source

    @classmethod
    def builtin(cls) -> Taxonomy:
        """The released Who&When Pro taxonomy (17 codes, 6 families)."""
        return cls([FailureMode(c, n, m, m) for c, n, m in _BUILTIN])

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
