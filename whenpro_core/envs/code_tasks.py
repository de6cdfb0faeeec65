"""Task templates of the ``code_pair`` environment: small function specs with examples
(visible to the agents) and hidden tests (only the checker runs them).

Each :class:`Template` makes parameters from a seeded RNG, renders the spec text, parses a
spec text back (the coder's *reading* of the task), writes a first draft and a complete
solution (the reference coder's two behaviours), and computes the expected value of a call
with a plain Python reference function (independent of the code strings). Twelve templates
(:data:`TEMPLATES`); those with an ``Edge case:`` sentence have drafts that ignore it, so the
tester's failing example and the coder's fix are exercised in ordinary runs.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from whenpro_core.envs.style import draw_style

WORDS = ["banana", "rhythm", "syzygy", "lattice", "example", "quartz", "yellow", "strait"]


@dataclass(frozen=True)
class Template:
    """One spec family (see the module docstring). ``hidden_args`` are the argument
    tuples of the hidden tests; ``examples`` those shown in the spec."""

    name: str
    make: Callable[[random.Random], dict[str, Any]]
    spec: Callable[[dict[str, Any]], str]
    parse: Callable[[str], dict[str, Any] | None]
    draft: Callable[[dict[str, Any]], str]
    full: Callable[[dict[str, Any]], str]
    ref: Callable[..., Any]
    examples: Callable[[dict[str, Any]], list[tuple[Any, ...]]]
    hidden_args: Callable[[dict[str, Any]], list[tuple[Any, ...]]]


def _call(name: str, args: tuple[Any, ...]) -> str:
    return f"{name}({', '.join(repr(a) for a in args)})"


def render_spec(t: Template, p: dict[str, Any], body: str, edge: str | None) -> str:
    """The spec text: signature and behaviour, the optional edge case, the examples."""
    lines = [body] + ([f"Edge case: {edge}"] if edge else []) + ["Examples:"]
    lines += [f"- {_call(t.name, args)} == {t.ref(p, *args)!r}" for args in shown_examples(t, p)]
    return "\n".join(lines)


def shown_examples(t: Template, p: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The examples the spec shows: those at the indices ``p["shown"]`` (drawn per task by
    :func:`make_task`), all of them when it is absent (a task from before it was drawn)."""
    examples = t.examples(p)
    shown = p.get("shown")
    return examples if shown is None else [e for k, e in enumerate(examples) if k in shown]


def draw_shown(count: int, rng: random.Random) -> list[int]:
    """Indices of the examples a spec shows, out of ``count``: the last one (the edge case
    when the template has one, so a draft that ignores it is caught) and each other one
    with chance 1/2. A spec shows a few examples, not every case the hidden tests check,
    so a slip the examples do not exercise reaches the final code."""
    return [k for k in range(count) if k == count - 1 or rng.random() < 0.5]


# --- clamp_scale -----------------------------------------------------------------------
def _clamp_ref(p: dict[str, Any], x: int) -> int:
    k: int = p["k"]
    cap: int = p["cap"]
    return max(0, min(x * k, cap))


CLAMP: Template = Template(
    name="clamp_scale",
    make=lambda r: {"k": r.choice([2, 3, 4, 5]), "cap": r.choice([20, 30, 50, 60])},
    spec=lambda p: render_spec(
        CLAMP,
        p,
        (f"Write a Python function `clamp_scale(x)` that returns x multiplied by {p['k']}, capped at {p['cap']}."),
        "a negative result becomes 0.",
    ),
    parse=lambda s: (lambda m: {"k": int(m[1]), "cap": int(m[2])} if m else None)(
        re.search(r"x multiplied by (\d+), capped at (\d+)", s)
    ),
    draft=lambda p: f"def clamp_scale(x):\n    return min(x * {p['k']}, {p['cap']})\n",
    full=lambda p: f"def clamp_scale(x):\n    return max(0, min(x * {p['k']}, {p['cap']}))\n",
    ref=_clamp_ref,
    examples=lambda p: [(2,), (p["cap"],), (-3,)],
    hidden_args=lambda p: [
        (0,),
        (1,),
        (2,),
        (5,),
        (p["cap"] // p["k"],),
        (p["cap"] // p["k"] + 1,),
        (100,),
        (-1,),
        (-3,),
    ],
)


# --- count_letters ---------------------------------------------------------------------
def _count_ref(p: dict[str, Any], s: str) -> int:
    return sum(1 for c in s if c.lower() in p["letters"])


COUNT: Template = Template(
    name="count_letters",
    make=lambda r: {"letters": r.choice(["aeiou", "aeiouy", "rstln", "xyz"]), "words": r.sample(WORDS, 2)},
    spec=lambda p: render_spec(
        COUNT,
        p,
        (
            "Write a Python function `count_letters(s)` that counts how many characters of s "
            f"are among the letters '{p['letters']}'."
        ),
        "uppercase letters count too.",
    ),
    parse=lambda s: (lambda m: {"letters": m[1]} if m else None)(re.search(r"among the letters '([a-z]+)'", s)),
    draft=lambda p: f"def count_letters(s):\n    return sum(1 for c in s if c in '{p['letters']}')\n",
    full=lambda p: f"def count_letters(s):\n    return sum(1 for c in s if c.lower() in '{p['letters']}')\n",
    ref=_count_ref,
    examples=lambda p: [(p["words"][0],), (p["words"][1].upper(),)],
    hidden_args=lambda p: [(w,) for w in WORDS] + [(w.upper(),) for w in WORDS[:3]] + [("",), ("MiXeD CaSe",)],
)


# --- running_max -----------------------------------------------------------------------
def _running_ref(p: dict[str, Any], xs: list[int]) -> list[int]:
    out: list[int] = []
    for x in xs:
        out.append(x if not out else max(out[-1], x))
    return out


RUNNING: Template = Template(
    name="running_max",
    make=lambda r: {"xs": [r.randint(-5, 20) for _ in range(5)]},
    spec=lambda p: render_spec(
        RUNNING,
        p,
        (
            "Write a Python function `running_max(xs)` that returns the list of running maxima "
            "of the numbers in xs (element i is the largest of xs[0] .. xs[i])."
        ),
        "an empty list gives [].",
    ),
    parse=lambda s: {} if "running maxima" in s else None,
    draft=lambda p: (
        "def running_max(xs):\n    out = [xs[0]]\n    for x in xs[1:]:\n"
        "        out.append(max(out[-1], x))\n    return out\n"
    ),
    full=lambda p: (
        "def running_max(xs):\n    if not xs:\n        return []\n    out = [xs[0]]\n"
        "    for x in xs[1:]:\n        out.append(max(out[-1], x))\n    return out\n"
    ),
    ref=_running_ref,
    examples=lambda p: [(p["xs"],), ([],)],
    hidden_args=lambda p: [
        ([],),
        ([3],),
        ([1, 2, 3],),
        ([3, 2, 1],),
        ([-1, -5, 0, -2],),
        (p["xs"],),
        ([2, 2, 9, 1, 9, 10],),
    ],
)


# --- fizz_word -------------------------------------------------------------------------
def _fizz_ref(p: dict[str, Any], n: int) -> str:
    a, b = p["a"], p["b"]
    if n % a == 0 and n % b == 0:
        return "FizzBuzz"
    if n % a == 0:
        return "Fizz"
    if n % b == 0:
        return "Buzz"
    return str(n)


FIZZ: Template = Template(
    name="fizz_word",
    make=lambda r: dict(zip(("a", "b"), r.sample([2, 3, 5, 7], 2), strict=True)),
    spec=lambda p: render_spec(
        FIZZ,
        p,
        (
            f"Write a Python function `fizz_word(n)` that returns 'Fizz' when n is divisible by "
            f"{p['a']}, 'Buzz' when n is divisible by {p['b']}, and str(n) otherwise."
        ),
        "when n is divisible by both, return 'FizzBuzz'.",
    ),
    parse=lambda s: (lambda m: {"a": int(m[1]), "b": int(m[2])} if m else None)(
        re.search(r"'Fizz' when n is divisible by (\d+), 'Buzz' when n is divisible by (\d+)", s)
    ),
    draft=lambda p: (
        f"def fizz_word(n):\n    if n % {p['a']} == 0:\n        return 'Fizz'\n"
        f"    if n % {p['b']} == 0:\n        return 'Buzz'\n    return str(n)\n"
    ),
    full=lambda p: (
        f"def fizz_word(n):\n    if n % {p['a']} == 0 and n % {p['b']} == 0:\n"
        f"        return 'FizzBuzz'\n    if n % {p['a']} == 0:\n        return 'Fizz'\n"
        f"    if n % {p['b']} == 0:\n        return 'Buzz'\n    return str(n)\n"
    ),
    ref=_fizz_ref,
    examples=lambda p: [(p["a"],), (p["b"],), (1,), (p["a"] * p["b"],)],
    hidden_args=lambda p: [(n,) for n in (1, 2, 3, 4, 5, 6, 7, 10, 14, 15, 21, 35, 70, 0, 11)],
)


# --- grade -----------------------------------------------------------------------------
def _grade_ref(p: dict[str, Any], score: int) -> str:
    return "A" if score >= p["hi"] else "B" if score >= p["mid"] else "C"


GRADE: Template = Template(
    name="grade",
    make=lambda r: {"hi": r.choice([80, 85, 90]), "mid": r.choice([50, 60, 65])},
    spec=lambda p: render_spec(
        GRADE,
        p,
        (
            f"Write a Python function `grade(score)` that returns 'A' when score is at least "
            f"{p['hi']}, 'B' when score is at least {p['mid']}, and 'C' otherwise."
        ),
        None,
    ),
    parse=lambda s: (lambda m: {"hi": int(m[1]), "mid": int(m[2])} if m else None)(
        re.search(r"'A' when score is at least (\d+), 'B' when score is at least (\d+)", s)
    ),
    draft=lambda p: (
        f"def grade(score):\n    if score >= {p['hi']}:\n        return 'A'\n"
        f"    if score >= {p['mid']}:\n        return 'B'\n    return 'C'\n"
    ),
    full=lambda p: (
        f"def grade(score):\n    if score >= {p['hi']}:\n        return 'A'\n"
        f"    if score >= {p['mid']}:\n        return 'B'\n    return 'C'\n"
    ),
    ref=_grade_ref,
    examples=lambda p: [(p["hi"] + 3,), (p["mid"] + 2,), (p["mid"] - 10,)],
    hidden_args=lambda p: [(p["hi"],), (p["hi"] - 1,), (p["mid"],), (p["mid"] - 1,), (100,), (0,), (p["hi"] + 3,)],
)


# --- safe_mean -------------------------------------------------------------------------
def _mean_ref(p: dict[str, Any], xs: list[float]) -> float | None:
    return None if not xs else round(sum(xs) / len(xs), p["d"])


MEAN: Template = Template(
    name="safe_mean",
    make=lambda r: {"d": r.choice([1, 2, 3])},
    spec=lambda p: render_spec(
        MEAN,
        p,
        (
            "Write a Python function `safe_mean(xs)` that returns the mean of the numbers in xs "
            f"rounded to {p['d']} decimals."
        ),
        "an empty list gives None.",
    ),
    parse=lambda s: (lambda m: {"d": int(m[1])} if m else None)(re.search(r"rounded to (\d+) decimals", s)),
    draft=lambda p: f"def safe_mean(xs):\n    return round(sum(xs) / len(xs), {p['d']})\n",
    full=lambda p: (
        f"def safe_mean(xs):\n    if not xs:\n        return None\n    return round(sum(xs) / len(xs), {p['d']})\n"
    ),
    ref=_mean_ref,
    examples=lambda p: [([1, 2, 4],), ([],)],
    hidden_args=lambda p: [([1, 2, 4],), ([],), ([5],), ([1, 2],), ([2, 3, 3, 7],), ([0.1, 0.2, 0.4],)],
)


# --- bulk_price ------------------------------------------------------------------------
def _bulk_ref(p: dict[str, Any], n: int) -> int:
    if n <= 0:
        return 0
    total: int = n * p["unit"]
    return total - total * p["pct"] // 100 if n >= p["min"] else total


BULK: Template = Template(
    name="bulk_price",
    make=lambda r: {"unit": r.choice([3, 4, 5, 8, 12]), "min": r.choice([5, 10, 20]), "pct": r.choice([10, 20, 25])},
    spec=lambda p: render_spec(
        BULK,
        p,
        (
            f"Write a Python function `bulk_price(n)` that returns the price in whole dollars of n units at "
            f"{p['unit']} dollars each, with {p['pct']} percent off (integer division) when n is at least "
            f"{p['min']}."
        ),
        "n of 0 or less costs 0.",
    ),
    parse=lambda s: (lambda m: {"unit": int(m[1]), "pct": int(m[2]), "min": int(m[3])} if m else None)(
        re.search(
            r"units at (\d+) dollars each, with (\d+) percent off \(integer division\) when n is at least "
            r"(\d+)",
            s,
        )
    ),
    draft=lambda p: (
        f"def bulk_price(n):\n    total = n * {p['unit']}\n    if n >= {p['min']}:\n"
        f"        total -= total * {p['pct']} // 100\n    return total\n"
    ),
    full=lambda p: (
        f"def bulk_price(n):\n    if n <= 0:\n        return 0\n    total = n * {p['unit']}\n"
        f"    if n >= {p['min']}:\n        total -= total * {p['pct']} // 100\n    return total\n"
    ),
    ref=_bulk_ref,
    examples=lambda p: [(2,), (p["min"] + 5,), (-4,)],
    hidden_args=lambda p: [(0,), (1,), (p["min"] - 1,), (p["min"],), (p["min"] + 1,), (100,), (-1,)],
)


# --- pad_id ----------------------------------------------------------------------------
def _pad_ref(p: dict[str, Any], n: int) -> str:
    return ("-" if n < 0 else "") + str(abs(n)).zfill(p["w"])


PAD: Template = Template(
    name="pad_id",
    make=lambda r: {"w": r.choice([4, 5, 6, 8])},
    spec=lambda p: render_spec(
        PAD,
        p,
        (
            f"Write a Python function `pad_id(n)` that returns n as a string padded with leading zeros to "
            f"{p['w']} digits."
        ),
        "a negative n keeps its minus sign in front of the padded digits.",
    ),
    parse=lambda s: (lambda m: {"w": int(m[1])} if m else None)(re.search(r"leading zeros to (\d+) digits", s)),
    draft=lambda p: f"def pad_id(n):\n    return str(n).rjust({p['w']}, '0')\n",
    full=lambda p: (
        f"def pad_id(n):\n    if n < 0:\n        return '-' + str(-n).rjust({p['w']}, '0')\n"
        f"    return str(n).rjust({p['w']}, '0')\n"
    ),
    ref=_pad_ref,
    examples=lambda p: [(42,), (-7,)],
    hidden_args=lambda p: [(0,), (5,), (42,), (10 ** p["w"] - 1,), (10 ** p["w"],), (-7,), (-123,)],
)


# --- temp_band -------------------------------------------------------------------------
def _band_ref(p: dict[str, Any], t: float) -> str:
    return "hot" if t >= p["hi"] else "mild" if t >= p["lo"] else "cold"


BAND: Template = Template(
    name="temp_band",
    make=lambda r: {"lo": r.choice([5, 8, 10, 12]), "hi": r.choice([24, 25, 27, 30])},
    spec=lambda p: render_spec(
        BAND,
        p,
        (
            f"Write a Python function `temp_band(t)` that returns 'hot' when t is at least {p['hi']}, "
            f"'mild' when t is at least {p['lo']}, and 'cold' otherwise."
        ),
        None,
    ),
    parse=lambda s: (lambda m: {"hi": int(m[1]), "lo": int(m[2])} if m else None)(
        re.search(r"'hot' when t is at least (\d+), 'mild' when t is at least (\d+)", s)
    ),
    draft=lambda p: (
        f"def temp_band(t):\n    if t >= {p['hi']}:\n        return 'hot'\n"
        f"    if t >= {p['lo']}:\n        return 'mild'\n    return 'cold'\n"
    ),
    full=lambda p: (
        f"def temp_band(t):\n    if t >= {p['hi']}:\n        return 'hot'\n"
        f"    if t >= {p['lo']}:\n        return 'mild'\n    return 'cold'\n"
    ),
    ref=_band_ref,
    examples=lambda p: [(p["hi"] + 4,), (p["lo"] + 3,), (p["lo"] - 6,)],
    hidden_args=lambda p: [(p["hi"],), (p["hi"] - 1,), (p["lo"],), (p["lo"] - 1,), (40,), (-5,)],
)


# --- count_above -----------------------------------------------------------------------
def _above_ref(p: dict[str, Any], xs: list[int | None]) -> int:
    return sum(1 for x in xs if x is not None and x > p["t"])


ABOVE: Template = Template(
    name="count_above",
    make=lambda r: {"t": r.choice([3, 5, 10, 18]), "xs": [r.randint(0, 25) for _ in range(5)]},
    spec=lambda p: render_spec(
        ABOVE,
        p,
        (f"Write a Python function `count_above(xs)` that counts the numbers in xs greater than {p['t']}."),
        "None entries are skipped.",
    ),
    parse=lambda s: (lambda m: {"t": int(m[1])} if m else None)(re.search(r"numbers in xs greater than (\d+)", s)),
    draft=lambda p: f"def count_above(xs):\n    return sum(1 for x in xs if x > {p['t']})\n",
    full=lambda p: f"def count_above(xs):\n    return sum(1 for x in xs if x is not None and x > {p['t']})\n",
    ref=_above_ref,
    examples=lambda p: [(p["xs"],), ([p["t"] + 1, None, p["t"] - 1],)],
    hidden_args=lambda p: [
        ([],),
        ([p["t"]],),
        ([p["t"] + 1],),
        (p["xs"],),
        ([None, None],),
        ([p["t"] - 1, p["t"], p["t"] + 1, p["t"] + 2],),
    ],
)


# --- shift_word ------------------------------------------------------------------------
def _shift_ref(p: dict[str, Any], w: str) -> str:
    return "".join(chr((ord(c) - 97 + p["k"]) % 26 + 97) if "a" <= c <= "z" else c for c in w)


SHIFT: Template = Template(
    name="shift_word",
    make=lambda r: {"k": r.choice([1, 2, 3, 5, 13]), "words": r.sample(WORDS, 1)},
    spec=lambda p: render_spec(
        SHIFT,
        p,
        (
            f"Write a Python function `shift_word(w)` that shifts every lowercase letter of w {p['k']} places "
            "forward in the alphabet, wrapping from z to a."
        ),
        "characters that are not lowercase letters stay as they are.",
    ),
    parse=lambda s: (lambda m: {"k": int(m[1])} if m else None)(re.search(r"lowercase letter of w (\d+) places", s)),
    draft=lambda p: f"def shift_word(w):\n    return ''.join(chr((ord(c) - 97 + {p['k']}) % 26 + 97) for c in w)\n",
    full=lambda p: (
        f"def shift_word(w):\n    return ''.join(chr((ord(c) - 97 + {p['k']}) % 26 + 97) "
        "if 'a' <= c <= 'z' else c for c in w)\n"
    ),
    ref=_shift_ref,
    examples=lambda p: [(p["words"][0],), ("a-z!",)],
    hidden_args=lambda p: [("",), ("abc",), ("xyz",), ("hello world",), ("A1b2",), *((w,) for w in WORDS[:4])],
)


# --- percent_change --------------------------------------------------------------------
def _change_ref(p: dict[str, Any], a: float, b: float) -> float | None:
    return None if a == 0 else round((b - a) / a * 100, p["d"])


CHANGE: Template = Template(
    name="percent_change",
    make=lambda r: {"d": r.choice([0, 1, 2])},
    spec=lambda p: render_spec(
        CHANGE,
        p,
        (
            "Write a Python function `percent_change(a, b)` that returns the percent change from a to b "
            f"rounded to {p['d']} decimals."
        ),
        "when a is 0 the change is undefined: return None.",
    ),
    parse=lambda s: (lambda m: {"d": int(m[1])} if m else None)(
        re.search(r"percent change from a to b rounded to (\d+) decimals", s)
    ),
    draft=lambda p: f"def percent_change(a, b):\n    return round((b - a) / a * 100, {p['d']})\n",
    full=lambda p: (
        f"def percent_change(a, b):\n    if a == 0:\n        return None\n"
        f"    return round((b - a) / a * 100, {p['d']})\n"
    ),
    ref=_change_ref,
    examples=lambda p: [(40, 50), (0, 5)],
    hidden_args=lambda p: [(40, 50), (0, 5), (50, 40), (3, 4), (8, 8), (7, 1), (0, 0)],
)

TEMPLATES: list[Template] = [CLAMP, COUNT, RUNNING, FIZZ, GRADE, MEAN, BULK, PAD, BAND, ABOVE, SHIFT, CHANGE]
BY_NAME = {t.name: t for t in TEMPLATES}


def make_task(seed: int) -> tuple[str, dict[str, Any]]:
    """Spec text and parameters for ``seed``: template ``seed % 12``, parameters and the
    run's wording ``style`` (:mod:`whenpro_core.envs.style`) and the examples the spec shows
    (:func:`draw_shown`) from ``random.Random(seed)``."""

    t = TEMPLATES[seed % len(TEMPLATES)]
    rng = random.Random(f"code_pair:{seed}")
    p = t.make(rng)
    style = draw_style(rng)
    p["shown"] = draw_shown(len(t.examples(p)), rng)
    return t.spec(p), {"template": t.name, **p, "style": style}


def read_spec(spec: str) -> tuple[Template, dict[str, Any]] | None:
    """The coder's reading of a spec: which template and parameters (``None`` when no
    template recognises it). Only the spec text is used."""
    for t in TEMPLATES:
        if f"`{t.name}(" in spec:
            p = t.parse(spec)
            if p is not None:
                return t, p
    return None


def spec_examples(spec: str) -> list[tuple[str, str]]:
    """``(call, expected)`` source pairs from the spec's ``- call == expected`` lines."""
    return [(m[1].strip(), m[2].strip()) for m in re.finditer(r"^- (.+?) == (.+)$", spec, re.MULTILINE)]


def count_cases(tests: str) -> int:
    """How many ``(call, expected)`` rows the test code of :func:`harness` holds (a
    tester's kept test code may have fewer than the spec's examples)."""
    return len(re.findall(r"^    \(.*\),$", tests, re.MULTILINE))


def harness(cases: list[tuple[str, str]]) -> str:
    """Test code that runs each ``(call, expected)`` pair and prints ``PASS``/``FAIL``
    lines (an exception in one case is a failure of that case only). Each case is one
    row holding the call and the expected value once (source text, evaluated by the
    test code), as a tester writes a table of cases."""
    rows = "\n".join(f"    ({c!r}, {e!r})," for c, e in cases)
    return (
        "_cases = [\n" + rows + "\n]\n"
        "for _call, _want in _cases:\n"
        "    try:\n        _got = eval(_call)\n"
        "    except Exception as _exc:\n"
        "        print(f'FAIL {_call} == {_want}: raised {type(_exc).__name__}: {_exc}')\n"
        "    else:\n"
        "        print(f'PASS {_call} == {_want}' if _got == eval(_want) else "
        "f'FAIL {_call} == {_want}: got {_got!r}')\n"
    )


def hidden_cases(params: dict[str, Any]) -> list[tuple[str, str]]:
    """The hidden tests of a task as ``(call, expected)`` source pairs."""
    t = BY_NAME[params["template"]]
    return [(_call(t.name, args), repr(t.ref(params, *args))) for args in t.hidden_args(params)]


def reference_solution(params: dict[str, Any]) -> str:
    """A correct solution (the gold answer of the task)."""
    return BY_NAME[params["template"]].full(params)
