"""Verification of a counterfactual (docs/architecture.md, 'Injection and warm-start replay' step 3).

* **Answer check** — :func:`check_trace`: a built-in environment's own checker (hidden
  tests for ``code_pair``, two-decimal tolerance for ``arith_team``), a checker registered
  for the trace's framework (:func:`register_checker`), else :func:`check_answer` against
  ``task.answer`` by the first rule that matches (:data:`ANSWER_RULES`): ``case and
  whitespace`` (case-folded, whitespace collapsed, surrounding quotes, a ``Final answer:``
  label and trailing punctuation removed), ``number`` (numbers within a relative 1e-6 or
  equal after rounding to the gold's decimals), ``punctuation`` (every punctuation mark
  removed too: ``CSI Cyber`` is ``CSI: Cyber``), ``numbers written alike`` (each number in
  the text written one way too: ``$1,200`` is ``1200``, ``3.0`` is ``3``).
* **Decisive** iff the original run succeeded and the counterfactual fails.
* **Filters** (a kept injection must pass both): the injected step must not reveal the
  construction (``inject``, ``intentionally``, ``deliberately``, ``error introduced``,
  ``as instructed``, ... — only words the original step did not already contain), and the
  gold answer must not be visible in an agent step before ``t`` (the task text itself is
  not counted).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from whenpro_core.envs import env_for_trace
from whenpro_core.envs.base import CheckResult, extract_final_answer
from whenpro_core.trace.evidence import same_without_punctuation
from whenpro_core.trace.model import Outcome, Step, Trace

#: Phrases that give the construction away (case-insensitive regular expressions).
REVEALING = [
    r"\binject(?:ed|ion|ions|ing|s)?\b",
    r"\bintentional(?:ly)?\b",
    r"\bdeliberate(?:ly)?\b",
    r"\bon purpose\b",
    r"\bpurpose(?:ly|fully)\b",
    r"\berror (?:was |is |has been )?introduced\b",
    r"\bintroduc(?:e|ed|es|ing) (?:an? |the )?(?:error|mistake|bug|flaw)s?\b",
    r"\bas instructed\b",
    r"\b(?:fake|simulated|planted|seeded|synthetic|artificial) (?:error|mistake|bug|flaw)s?\b",
    r"\bcounterfactual\b",
    r"\bfailure mode\b",
    r"\bsabotag\w*\b",
    r"\bwrong on purpose\b",
    r"\b(?:the )?(?:injected|inserted) (?:error|mistake|flaw)\b",
]
_REVEAL_RE = [re.compile(p, re.IGNORECASE) for p in REVEALING]
_NUM_TOKEN = re.compile(r"(?<![\w.])-?\$?\d[\d,]*(?:\.\d+)?%?(?!\w|\.\d)")

#: framework -> checker(trace, final_answer) registered by plugins or tests.
CHECKERS: dict[str, Callable[[Trace, str | None], CheckResult]] = {}


def register_checker(framework: str, checker: Callable[[Trace, str | None], CheckResult]) -> None:
    """Use ``checker(trace, final_answer)`` for traces of ``framework`` (pluggable
    per environment)."""
    CHECKERS[framework] = checker


def _number(text: str) -> Decimal | None:
    t = text.strip().replace(",", "").replace("$", "").rstrip("%").strip()
    if not re.fullmatch(r"-?\d+(?:\.\d+)?", t):
        return None
    try:
        return Decimal(t)
    except InvalidOperation:
        return None


def normalise(text: str) -> str:
    """Case-folded answer text without a ``Final answer:`` label, surrounding quotes,
    trailing punctuation or repeated whitespace."""
    t = extract_final_answer(text or "")
    t = " ".join(t.split()).casefold()
    return t.strip(" \"'`*").rstrip(".!;").strip()


def _numbers_alike(text: str) -> str:
    """``text`` (already normalised) with each number written one way (no ``$``, thousands
    commas or trailing zeros)."""

    def one(m: re.Match[str]) -> str:
        value = _number(m.group(0))
        return m.group(0) if value is None else format(value.normalize(), "f")

    return _NUM_TOKEN.sub(one, text)


#: The rules :func:`check_answer` tries, in order, on two normalised answers
#: (:func:`normalise`) that are not both numbers (two numbers match by the ``number`` rule,
#: :func:`numbers_equal`, only): a name and the test.
ANSWER_RULES: tuple[tuple[str, Callable[[str, str], bool]], ...] = (
    ("case and whitespace", lambda a, g: a == g),
    ("punctuation", same_without_punctuation),
    ("numbers written alike", lambda a, g: same_without_punctuation(_numbers_alike(a), _numbers_alike(g))),
)


def numbers_equal(a: Decimal, b: Decimal) -> bool:
    """Equal within a relative 1e-6, or equal after rounding ``a`` to ``b``'s decimals."""
    if abs(a - b) <= max(Decimal("1e-9"), Decimal("1e-6") * abs(b)):
        return True
    exp = b.as_tuple().exponent
    return isinstance(exp, int) and exp < 0 and a.quantize(Decimal(1).scaleb(exp)) == b


def check_answer(answer: str | None, gold: str | None) -> CheckResult:
    """Compare a final answer with the gold answer (see the module docstring).
    ``success`` is ``None`` when there is no gold answer."""
    if gold is None or not str(gold).strip():
        return CheckResult(None, "no gold answer")
    if answer is None or not str(answer).strip():
        return CheckResult(False, "no final answer")
    a, g = normalise(str(answer)), normalise(str(gold))
    both = f"answer {_short(answer)!r}, gold {_short(gold)!r}"
    na, ng = _number(a), _number(g)
    if na is not None and ng is not None:
        rule = "number" if numbers_equal(na, ng) else None
    else:
        rule = next((name for name, matches in ANSWER_RULES if matches(a, g)), None)
    if rule is None:
        return CheckResult(False, f"{both} (no rule matched)")
    return CheckResult(True, f"{both} (matched: {rule})", rule=rule)


def _short(text: str, n: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def check_trace(trace: Trace, final_answer: str | None = None) -> CheckResult:
    """Whether ``final_answer`` (default: the trace's own) solves the trace's task, by the
    checker that applies (module docstring)."""
    final = trace.final_answer if final_answer is None else final_answer

    env = env_for_trace(trace)
    if env is not None:
        return env.check(env.task_from_trace(trace), final)
    if trace.framework in CHECKERS:
        return CHECKERS[trace.framework](trace, final)
    return check_answer(final, trace.task.answer)


def original_success(trace: Trace) -> bool | None:
    """Whether the seed run succeeded: its recorded outcome, or a check when unknown."""
    if trace.outcome == Outcome.success:
        return True
    if trace.outcome == Outcome.failure:
        return False
    return check_trace(trace).success


def _step_text(step: Step) -> str:
    parts = [step.content or ""]
    for call in step.tool_calls:
        args = call.arguments
        if isinstance(args, dict):
            parts += [str(v) for v in args.values()]
        elif args is not None:
            parts.append(str(args))
    return "\n".join(parts)


def revealing_phrases(new: Step, original: Step | None = None) -> list[str]:
    """Phrases of ``new`` that reveal the construction and that ``original`` (the step it
    replaced) did not already contain."""
    text = _step_text(new)
    before = _step_text(original).casefold() if original is not None else ""
    found = []
    for rx in _REVEAL_RE:
        for m in rx.finditer(text):
            if m.group().casefold() not in before and m.group() not in found:
                found.append(m.group())
    return found


def gold_visible_before(trace: Trace, index: int) -> bool:
    """True when the gold answer appears in an agent step (content, tool arguments or
    observation) before step ``index``: numerically for a numeric gold, else as a
    whitespace-normalised, case-folded substring (whole words for short golds)."""
    gold = trace.task.answer
    if gold is None or not gold.strip():
        return False
    texts = [
        (_step_text(s) + "\n" + (s.observation or ""))
        for s in trace.steps[:index]
        if s.kind not in ("user", "system") and s.agent not in ("user", "system")
    ]
    if not texts:
        return False
    blob = "\n".join(texts)
    g_num = _number(normalise(gold))
    if g_num is not None:
        for m in _NUM_TOKEN.finditer(blob):
            value = _number(m.group())
            if value is not None and abs(value - g_num) <= max(Decimal("1e-9"), Decimal("1e-6") * abs(g_num)):
                return True
        return False
    g = " ".join(gold.split()).casefold()
    hay = " ".join(blob.split()).casefold()
    if len(g) <= 12 and re.fullmatch(r"[\w :.-]+", g):
        return re.search(rf"(?<!\w){re.escape(g)}(?!\w)", hay) is not None
    return g in hay


@dataclass
class Verdict:
    """The verification of one counterfactual.

    Attributes:
        original_success, counterfactual_success: ``None`` when undecidable.
        decisive: the original succeeded and the counterfactual fails.
        detail: the checker's explanation for the counterfactual.
        revealing: phrases of the injected step that give the construction away.
        gold_visible_before_t: the gold answer was visible before the injected step.
        kept: decisive and both filters pass.
    """

    original_success: bool | None
    counterfactual_success: bool | None
    decisive: bool
    detail: str
    revealing: list[str] = field(default_factory=list)
    gold_visible_before_t: bool = False
    kept: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``extras["injection"]["verdict"]``."""
        return asdict(self)


def verify(original: Trace, counterfactual: Trace, index: int, *, final_answer: str | None = None) -> Verdict:
    """Check the counterfactual's answer (``final_answer`` or its own), decide whether the
    injection at ``index`` is decisive, and apply the filters."""
    before = original_success(original)
    after = check_trace(counterfactual, final_answer)
    decisive = before is True and after.success is False
    revealing = (
        revealing_phrases(counterfactual.steps[index], original.steps[index])
        if index < len(counterfactual.steps)
        else []
    )
    visible = gold_visible_before(original, index)
    return Verdict(
        before,
        after.success,
        decisive,
        after.detail,
        revealing,
        visible,
        kept=decisive and not revealing and not visible,
    )
