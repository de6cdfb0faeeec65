"""Text evidence the offline heuristic reads from a trajectory: salient values (numbers,
quoted or bold phrases, capitalised names), the final answer, and which steps speak for
an agent rather than echo the environment.

All functions are pure and never raise on odd content.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from whenpro_core.storage import jsonio
from whenpro_core.trace.model import Step, Trace

_NUMBER = re.compile(r"(?<![\w.])[-+]?\$?\d[\d,]*(?:\.\d+)?%?(?![\w])")
_QUOTED = re.compile(r"\*\*([^*\n]{2,60})\*\*|\"([^\"\n]{2,60})\"|'([^'\n]{3,60})'")
_NAME = re.compile(r"\b(?:[A-Z][a-z]+(?:[ -](?:of|the|de|la|and|&)?\s?[A-Z][a-z]+)+)\b")
_FINAL = re.compile(r"final answer\s*[:：]\s*(.+)", re.IGNORECASE)

#: Kinds that frame a run rather than act in it (no decisive error lives there).
FRAMING_KINDS = frozenset({"user", "system"})
#: Kinds that carry what the environment returned, not what an agent decided.
ENVIRONMENT_KINDS = frozenset({"observation", "tool"})
#: Speakers that are the environment or a human, never the responsible agent.
ENVIRONMENT_AGENTS = frozenset(
    {"computer_terminal", "computerterminal", "human", "user", "system", "tool", "environment"}
)
#: Agents whose messages relay what they saw (web pages, files, terminals): facts in them
#: are observed, not asserted.
_RELAY_HINTS = ("surfer", "browser", "terminal", "search", "retriev", "reader", "executor")


#: Characters of one field the heuristic reads: the head and the tail of longer ones
#: (a 50 MB tool output must not make attribution take minutes).
FIELD_CAP = 40_000


def capped(text: str, cap: int = FIELD_CAP) -> str:
    """``text`` itself, or its first 3/4 and last 1/4 within ``cap`` characters."""
    if len(text) <= cap:
        return text
    head = cap * 3 // 4
    return text[:head] + "\n…\n" + text[len(text) - (cap - head) :]


def step_text(step: Step) -> str:
    """Everything an agent wrote in a step: content plus tool-call arguments (capped)."""
    parts = [capped(step.content or "")]
    for call in step.tool_calls:
        parts.append(capped(f"{call.name} {jsonio.as_text(call.arguments)}"))
    return "\n".join(parts)


def full_text(step: Step) -> str:
    """What a step wrote plus what came back (observation and error), capped."""
    return "\n".join(p for p in (step_text(step), capped(step.observation or ""), capped(step.error or "")) if p)


def normalize_number(token: str) -> str:
    """``"$1,400.00"`` -> ``"1400"``; ``"45%"`` -> ``"45"``; leaves non-numbers alone."""
    t = token.strip().lstrip("+$").rstrip("%").replace(",", "")
    try:
        value = float(t)
    except ValueError:
        return token.strip().lower()
    return str(int(value)) if value == int(value) else f"{value:g}"


# ------------------------------------------------------------------ harness and log noise

#: Text a harness or a library writes, not an agent or a tool result: values in it are
#: not facts of the run. Each pattern's match is blanked (same length) before values are
#: read or looked up.
_FLAGS = re.MULTILINE | re.IGNORECASE
#: (cheap guard: a substring the noise cannot lack, pattern). Each pattern runs only when
#: its guard is in the text: a 50 kB web page has no traceback frame to look for.
_NOISE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("warn", re.compile(r"^(?-i:[^\n]*?(?:[A-Z]\w*Warning\b|warnings\.warn))[^\n]*$", _FLAGS)),
    ('file "', re.compile(r"^\s*File \"[^\"\n]*\", line \d+[^\n]*$", _FLAGS)),  # traceback frames
    ("/", re.compile(r"(?<![\w.~/])(?:[A-Za-z]:)?(?:[./~]*/[\w.@+-]+){2,}/?", _FLAGS)),  # file-system paths
    (
        "-",
        re.compile(r"\b(?:gpt|claude|gemini|llama|mistral|mixtral|qwen|deepseek|o[134])(?:-[\w.]+)+", _FLAGS),
    ),  # model ids
    (
        ":",
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
            r"|\b\d{1,2}:\d{2}:\d{2}[.,]\d+\b",
            _FLAGS,
        ),
    ),  # timestamps
    (
        "",
        re.compile(
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # uuids
            r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{16,}\b",
            _FLAGS,
        ),
    ),  # hashes
)
_URL = re.compile(r"https?://[^\s)\]>\"'`]+")
#: Inside a URL, a query value (``?year=2015``) is a value; the rest is an address.
_URL_VALUE = re.compile(r"=([^&#]+)")


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def _blank_url(match: re.Match[str]) -> str:
    url = match.group(0)
    kept = [" "] * len(url)
    for m in _URL_VALUE.finditer(url):
        kept[m.start(1) : m.end(1)] = m.group(1)
    return "".join(kept)


@lru_cache(maxsize=4096)
def denoise(text: str) -> str:
    """``text`` with harness and log noise blanked out (warnings, traceback frames, file
    paths, model ids, timestamps, uuids and hashes, URLs except their query values). The
    result has the same length, so positions still point into ``text``."""
    out = _URL.sub(_blank_url, text) if "://" in text else text
    low = out.lower()
    for guard, pattern in _NOISE:
        if guard in low:
            out = pattern.sub(_blank, out)
    return out


def is_noise_shaped(value: str) -> bool:
    """True when ``value`` itself looks like noise (a path, a URL, a model id...): such a
    value is looked up in the raw text, since it *is* what the run produced."""
    return denoise(value) != value


@lru_cache(maxsize=4096)
def _values_cached(text: str) -> frozenset[str]:
    text = denoise(text)
    found: set[str] = set()
    for m in _NUMBER.finditer(text):
        tok = m.group(0)
        digits = sum(ch.isdigit() for ch in tok)
        if digits >= 2 or "." in tok or "$" in tok or "%" in tok:
            found.add(normalize_number(tok))
    for m in _QUOTED.finditer(text):
        phrase = next(g for g in m.groups() if g)
        if len(phrase.split()) <= 8:
            found.add(phrase.strip().lower())
    for m in _NAME.finditer(text):
        found.add(m.group(0).lower())
    return frozenset(found)


#: Words too common to trace as a value of an answer.
STOPWORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "then",
        "so",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "not",
        "no",
        "yes",
        "none",
        "all",
        "any",
        "some",
        "each",
        "which",
        "who",
        "what",
        "when",
        "where",
        "why",
        "how",
        "i",
        "we",
        "you",
        "he",
        "she",
        "they",
        "me",
        "us",
        "them",
        "my",
        "our",
        "your",
        "his",
        "her",
        "their",
    }
)
#: ``@name[value]`` fields of a structured answer (DABench style).
_FIELD = re.compile(r"@\w+\[([^\]]*)\]")


def exact_answers(final: str) -> set[str]:
    """What the answer is *exactly*: the whole answer, and each field of a structured
    ``@name[value]`` answer, stripped and lower-cased."""
    whole = final.strip().strip(".!").lower()
    fields = {f.strip().lower() for f in _FIELD.findall(final)}
    return {v for v in {whole, *fields} if v}


def is_weak_value(value: str) -> bool:
    """A stopword, or a lone integer of one or two digits: too common to locate."""
    v = value.strip().lower()
    if v in STOPWORDS:
        return True
    digits = v.lstrip("-")
    return digits.isdigit() and len(digits) <= 2


def answer_values(final: str) -> set[str]:
    """The values a final answer states: its salient values, the whole answer when it is
    short (``"Apr"``, ``"Subway (1985)"``) and its ``@name[value]`` fields. Stopwords and
    lone one- or two-digit numbers are dropped unless the answer is exactly that."""
    exact = exact_answers(final)
    values = set(salient_values(final))
    # Numeric fields are computed results; a named field (a column, a category) first shows
    # up in a data listing, which says nothing about who chose it: only the whole answer is traced.
    whole = final.strip().strip(".!").lower()
    values |= {
        normalize_number(v)
        for v in exact
        if (v == whole and len(v.split()) <= 6) or normalize_number(v) != v or v.isdigit()
    }
    return {v for v in values if v and (not is_weak_value(v) or v in exact or normalize_number(v) in exact)}


def salient_values(text: str) -> frozenset[str]:
    """Specific facts in ``text``: numbers with two or more digits (normalised), bold or
    quoted phrases, and capitalised multi-word names, lower-cased."""
    return _values_cached(text[:20000] if text else "")


#: Numbers that label rather than state: list markers (``3.``, ``(2)``) and ordinals
#: (``step 3``, ``#2``, ``page 4``).
_MARKER = re.compile(
    r"^\s*(?:[#*>-]+\s*)?[(\[]?\d{1,2}[.)\]](?!\d)"
    r"|\b(?:step|item|page|round|turn|no\.?|#)\s*\d{1,2}\b|#\d{1,2}\b",
    re.MULTILINE | re.IGNORECASE,
)


def find_value(text: str, value: str) -> re.Match[str] | None:
    """Where ``value`` occurs in ``text`` as a whole token (case-insensitive), outside
    harness noise unless the value is itself noise-shaped; ``None`` when it does not."""
    if not text or not value:
        return None
    haystack = text if is_noise_shaped(value) else denoise(text)
    if is_weak_value(value):  # a list marker or a step number is not the value
        haystack = _MARKER.sub(_blank, haystack)
    return re.search(r"(?<!\w)" + re.escape(value) + r"(?!\w)", haystack, re.IGNORECASE)


def contains_value(text: str, value: str) -> bool:
    """True if ``value`` (as produced by :func:`salient_values`) occurs in ``text``
    (harness noise ignored, see :func:`denoise`)."""
    if not text:
        return False
    if value in _values_cached(text[:20000]):
        return True
    if len(value) < 2:  # a single character, even a digit the answer is exactly, is everywhere
        return False
    return find_value(text, value) is not None


def quote(text: str, start: int, end: int, width: int = 24) -> str:
    """``…context…`` around ``text[start:end]``, on one line, for a reason a reader can
    check (at most ``2 * width`` characters of context)."""
    lo, hi = max(0, start - width), min(len(text), end + width)
    snippet = " ".join(text[lo:hi].split())
    return ("…" if lo > 0 else "") + snippet + ("…" if hi < len(text) else "")


def quote_value(text: str, value: str) -> str:
    """:func:`quote` of where ``value`` occurs in ``text`` (its rounding's place when only
    a more precise number is there), or ``value`` itself when it is not found."""
    m = find_value(text, value)
    if m is None:
        m = _rounding_match(text, value)
    return quote(text, m.start(), m.end()) if m else value


_PRECISE = re.compile(r"(?<![\w.])-?\d+\.\d+")


def contains_rounding_of(text: str, value: str) -> bool:
    """True if ``text`` holds a more precise number that rounds to the decimal ``value``
    (``"0.53"`` in ``"Skewness: 0.5322275903080874"``): agents print full precision and
    round when they answer, so the step that computed a wrong final value shows it
    unrounded. Only values with 1..6 decimals are compared; never raises."""
    return _rounding_match(text, value) is not None


def _rounding_match(text: str, value: str) -> re.Match[str] | None:
    """The first number in ``text`` (outside noise) more precise than ``value`` that rounds to it."""
    whole, dot, decimals = value.lstrip("-").partition(".")
    if not dot or not whole.isdigit() or not decimals.isdigit() or not 1 <= len(decimals) <= 6:
        return None
    target, places = float(value), len(decimals)
    tolerance = 0.5 * 10**-places + 1e-12
    for m in _PRECISE.finditer(denoise(text[:FIELD_CAP]) if text else ""):
        token = m.group(0)
        if len(token.partition(".")[2]) > places and abs(float(token) - target) <= tolerance:
            return m
    return None


def is_candidate(step: Step) -> bool:
    """True for steps that can hold the decisive error: an agent acting (not framing,
    not the environment's output, not a human)."""
    if step.coord is None or step.kind in FRAMING_KINDS:
        return False
    if step.agent.lower() in ENVIRONMENT_AGENTS:
        return False
    return step.kind not in ENVIRONMENT_KINDS


#: Frameworks whose user is a simulated agent (an LLM playing the customer): its turns can
#: hold the decisive error, and the labels of such benchmarks name the user.
SIMULATED_USER_FRAMEWORKS = frozenset({"tau-bench"})


def candidate_steps(trace: Trace) -> list[Step]:
    """The steps a verdict may name (:func:`may_be_blamed`), in trajectory order."""
    return [step for step in trace.steps if may_be_blamed(trace, step)]


def may_be_blamed(trace: Trace, step: Step) -> bool:
    """:func:`is_candidate`, or a user turn after the first when the framework's user is
    simulated (:data:`SIMULATED_USER_FRAMEWORKS`): such a user can make the decisive error."""
    if is_candidate(step):
        return True
    if trace.framework not in SIMULATED_USER_FRAMEWORKS or step.kind != "user" or step.coord is None:
        return False
    return any(s.kind == "user" for s in trace.steps[: step.index])


def is_relay_agent(name: str) -> bool:
    """True for agents whose messages relay observations (web, file and terminal agents)."""
    low = name.lower()
    return any(h in low for h in _RELAY_HINTS)


def is_verifier(name: str) -> bool:
    """True for agents whose role is to check others' work."""
    low = name.lower()
    return any(h in low for h in ("verif", "valid", "check", "critic", "review", "test"))


def _stated_answer(trace: Trace) -> tuple[str, int | None] | None:
    """The last ``FINAL ANSWER:`` line (first 500 chars), else the last non-empty
    final-answer step (first 2000 chars), with its step index; None when there is neither."""
    for step in reversed(trace.steps):
        m = _FINAL.search(step.content or "")
        if m:
            return m.group(1).strip()[:500], step.index
    for step in reversed(trace.steps):
        if step.kind == "final_answer" and (step.content or "").strip():
            return step.content.strip()[:2000], step.index
    return None


def _terminated_answer(trace: Trace) -> tuple[str, int | None]:
    """When one of the last three steps ends with ``TERMINATE`` (a group chat's end), the
    last substantive agent message (over 20 chars, first 2000) and its index; else ``("", None)``."""
    tail = trace.steps[-3:]
    if any((s.content or "").strip().upper().endswith("TERMINATE") for s in tail):
        for step in reversed(trace.steps):
            text = (step.content or "").strip()
            if is_candidate(step) and text and text.upper() != "TERMINATE" and len(text) > 20:
                return text[:2000], step.index
    return "", None


def final_answer(trace: Trace) -> tuple[str, int | None]:
    """The run's final answer and the index of the step that gave it (``None`` when it
    comes from the trace header only). Looks at ``Trace.final_answer``, then a
    ``FINAL ANSWER:`` line or a final-answer step, then, when the run ended with
    ``TERMINATE``, the last substantive agent message. ``("", None)`` when the run
    never stated an answer (it hit a round limit, say)."""
    if trace.final_answer:
        for step in reversed(trace.steps):
            if step.kind == "final_answer" or trace.final_answer.strip() in (step.content or ""):
                return trace.final_answer, step.index
        return trace.final_answer, None
    return _stated_answer(trace) or _terminated_answer(trace)


def _without_punctuation(text: str, sep: str = "") -> str:
    """``text`` with each punctuation mark (Unicode category P*) replaced by ``sep``,
    whitespace collapsed."""
    return " ".join("".join(sep if unicodedata.category(c).startswith("P") else c for c in text).split())


def same_without_punctuation(a: str, g: str) -> bool:
    """``a`` and ``g`` are equal with punctuation dropped (``U.S.A.`` / ``USA``) or read as
    a space (``rock-and-roll`` / ``rock and roll``); never for a ``g`` of punctuation only.
    Case is compared as given (callers case-fold first)."""
    return bool(_without_punctuation(g)) and any(
        _without_punctuation(a, sep) == _without_punctuation(g, sep) for sep in ("", " ")
    )


def answer_matches(answer: str, gold: str) -> bool:
    """Lenient check that ``answer`` states ``gold``: equal after normalisation (case,
    whitespace, punctuation: :func:`same_without_punctuation`), the gold contained in the
    answer, or every salient gold value present in the answer."""
    a, g = " ".join(answer.lower().split()), " ".join(gold.lower().split())
    if not g:
        return False
    if a == g or same_without_punctuation(a, g) or (len(g) >= 4 and contains_value(a, g)):
        return True
    gold_values = salient_values(gold) | {normalize_number(t) for t in _NUMBER.findall(gold)}
    return bool(gold_values) and all(contains_value(answer, v) for v in gold_values)
