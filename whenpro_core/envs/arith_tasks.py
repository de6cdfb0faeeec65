"""Tasks and tools of the ``arith_team`` environment.

Twelve task families (:data:`FAMILIES`), chosen by ``seed % 12`` and filled in from a
seeded RNG, of three kinds:

* money (``shop``, ``bakery``, ``cafe``, ``tickets``, ``garden``, ``hardware``) — unit
  prices × quantities, then a percentage discount, a sales tax, a tip or a delivery fee
  (answer: dollars with two decimals);
* schedule (``workshop``, ``conference``, ``baking``) — parts of an event, gaps between
  them and an optional long pause added to a start time (answer: ``HH:MM``);
* table (``table``, ``bookshop``, ``workshop_stock``) — an inventory table reachable only
  through the ``lookup`` tool; the value of several items in stock is summed (answer:
  dollars with two decimals).

:func:`derive` is the team's *understanding* of a task: it reads the query text (never the
hidden parameters) and returns the computation the planner writes down and the verifier
recomputes. Tools: ``calculator`` (safe arithmetic), ``clock_add`` and ``lookup``.
"""

from __future__ import annotations

import ast
import operator
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: (singular, plural) stationery items of the shop family.
SHOP_ITEMS = [
    ("pen", "pens"),
    ("notebook", "notebooks"),
    ("folder", "folders"),
    ("marker", "markers"),
    ("eraser", "erasers"),
    ("ruler", "rulers"),
]
FRUITS = ["apple", "pear", "plum", "lemon", "lime", "fig", "kiwi", "melon"]
BUYERS = ["Maya", "Omar", "Lena", "Ravi", "Ines", "Tomas"]

VALUE_RE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?::\d\d)?(?![\w])")


@dataclass
class Item:
    """One computation of a plan: ``var = expr``; ``kind`` is ``calc`` (arithmetic over
    numbers and earlier vars), ``lookup`` (``lookup(item, column)``) or ``clock``
    (``clock(HH:MM + var)``)."""

    var: str
    expr: str
    kind: str = "calc"


@dataclass
class Derivation:
    """How to solve a task: ordered ``items``, the vars a verifier should ``checks``,
    the var to ``report`` and the answer ``fmt`` (``money`` or ``time``)."""

    items: list[Item] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    report: str = ""
    fmt: str = "money"


# --- task generation ------------------------------------------------------------------


def _money(x: float) -> str:
    return f"{x:.2f}"


def _price(rng: random.Random) -> str:
    value = rng.choice([2, 3, 4, 5, 6, 7, 8, 9, 1.5, 2.5, 3.5, 4.25, 0.75])
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


#: Money families: (name, goods as (singular, plural), how the story opens, the buying
#: verb, the extras it may have). ``{sells}`` lists the goods with prices, ``{buys}`` the
#: quantities bought.
MONEY_FAMILIES: dict[str, dict[str, Any]] = {
    "shop": {
        "goods": SHOP_ITEMS,
        "open": "A stationery shop sells {sells}. {buyer} buys {buys}",
        "extras": ("discount", "discount", "fee"),
    },
    "bakery": {
        "goods": [
            ("roll", "rolls"),
            ("bagel", "bagels"),
            ("muffin", "muffins"),
            ("scone", "scones"),
            ("croissant", "croissants"),
        ],
        "open": "A bakery prices {sells}. {buyer} orders {buys}",
        "extras": ("tax", "discount"),
    },
    "cafe": {
        "goods": [
            ("latte", "lattes"),
            ("tea", "teas"),
            ("cookie", "cookies"),
            ("sandwich", "sandwiches"),
            ("juice", "juices"),
        ],
        "open": "At a cafe the menu lists {sells}. {buyer}'s group gets {buys}",
        "extras": ("tip", "tip", "fee"),
    },
    "tickets": {
        "goods": [("adult", "adults"), ("child", "children"), ("senior", "seniors"), ("student", "students")],
        "open": "A museum charges {sells}. {buyer} books entry for {buys}",
        "extras": ("fee", "discount"),
    },
    "garden": {
        "goods": [
            ("fern", "ferns"),
            ("tulip", "tulips"),
            ("shrub", "shrubs"),
            ("cactus", "cacti"),
            ("seedling", "seedlings"),
        ],
        "open": "A garden centre sells {sells}. {buyer} picks up {buys}",
        "extras": ("discount", "tax"),
    },
    "hardware": {
        "goods": [
            ("hammer", "hammers"),
            ("bolt", "bolts"),
            ("hinge", "hinges"),
            ("clamp", "clamps"),
            ("hook", "hooks"),
        ],
        "open": "A hardware store sells {sells}. {buyer} buys {buys}",
        "extras": ("tax", "fee", "discount"),
    },
}
EXTRA_TEXT = {
    "discount": ", and uses a {pct}% discount coupon on the whole order",
    "fee": ", and pays a flat delivery fee of ${fee}",
    "tax": ", and a {pct}% sales tax is added to the order",
    "tip": ", and adds a {pct}% tip on the whole bill",
}
#: Schedule families: the event, what its parts are called, the gap between parts, the long pause.
SCHEDULE_FAMILIES: dict[str, dict[str, str]] = {
    "workshop": {
        "event": "A workshop",
        "part": "sessions",
        "gap": "break",
        "pause": "lunch break",
        "ask": "At what time does it end?",
    },
    "conference": {
        "event": "A conference track",
        "part": "talks",
        "gap": "changeover",
        "pause": "lunch pause",
        "ask": "When does the last talk finish?",
    },
    "baking": {
        "event": "A bakery's oven shift",
        "part": "batches",
        "gap": "reload",
        "pause": "cleaning stop",
        "ask": "At what time is the last batch out?",
    },
}
#: Table families: whose table, which goods (plural = singular + "s").
TABLE_FAMILIES: dict[str, dict[str, Any]] = {
    "table": {"owner": "Our fruit stand's", "goods": FRUITS},
    "bookshop": {"owner": "The bookshop's", "goods": ["novel", "comic", "poster", "journal", "map", "calendar"]},
    "workshop_stock": {
        "owner": "The repair workshop's",
        "goods": ["bolt", "nail", "screw", "washer", "spring", "gear"],
    },
}
#: Every task family, in the order ``seed % 12`` picks them.
FAMILIES = (
    "shop",
    "workshop",
    "table",
    "bakery",
    "conference",
    "bookshop",
    "cafe",
    "baking",
    "workshop_stock",
    "tickets",
    "garden",
    "hardware",
)


def family_kind(family: str) -> str | None:
    """``money``, ``schedule`` or ``table`` for a known family, else None."""
    if family in MONEY_FAMILIES:
        return "money"
    if family in SCHEDULE_FAMILIES or family == "schedule":
        return "schedule"
    if family in TABLE_FAMILIES:
        return "table"
    return None


def make_money(rng: random.Random, family: str = "shop") -> tuple[str, dict[str, Any]]:
    """A buying question of a money family and its parameters."""
    fam = MONEY_FAMILIES[family]
    n = rng.choice([2, 2, 3])
    items = rng.sample(fam["goods"], n)
    prices = [_price(rng) for _ in items]
    qty = [rng.randint(2, 9) for _ in items]
    buyer = rng.choice(BUYERS)
    extra = rng.choice(fam["extras"])
    pct = rng.choice([10, 15, 20, 25]) if extra in ("discount", "tip") else rng.choice([5, 8, 10, 20])
    fee = rng.choice([3, 4, 5, 6])
    sells = _join([f"{plural} at ${p} each" for (_, plural), p in zip(items, prices, strict=True)])
    buys = _join([f"{q} {plural}" for (_, plural), q in zip(items, qty, strict=True)])
    tail = EXTRA_TEXT[extra].format(pct=pct, fee=fee)
    query = (
        fam["open"].format(sells=sells, buyer=buyer, buys=buys)
        + tail
        + f". How much does {buyer} pay, in dollars? Give the amount with two decimals."
    )
    params = {
        "family": family,
        "items": [p for _, p in items],
        "prices": prices,
        "qty": qty,
        "extra": extra,
        "pct": pct,
        "fee": fee,
    }
    return query, params


def make_shop(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """A shopping question and its parameters."""
    return make_money(rng, "shop")


def make_schedule(rng: random.Random, family: str = "workshop") -> tuple[str, dict[str, Any]]:
    """A schedule question (when does the event end) and its parameters."""
    fam = SCHEDULE_FAMILIES[family]
    start = f"{rng.randint(8, 10):02d}:{rng.choice([0, 5, 10, 15, 20, 30, 40, 45]):02d}"
    n = rng.randint(2, 4)
    length = rng.choice([30, 40, 45, 50, 60])
    brk = rng.choice([5, 10, 15, 20])
    lunch = rng.choice([0, 0, 30, 45, 60])
    after = rng.randint(1, n - 1)
    part = fam["part"]
    lunch_text = f", and a {lunch}-minute {fam['pause']} after {part[:-1]} {after}" if lunch else ""
    query = (
        f"{fam['event']} starts at {start}. It has {n} {part} of {length} minutes each, "
        f"with a {brk}-minute {fam['gap']} between consecutive {part}{lunch_text}. "
        f"{fam['ask']} Answer as HH:MM."
    )
    params = {"family": family, "start": start, "n": n, "length": length, "break": brk, "lunch": lunch, "after": after}
    return query, params


def make_table(rng: random.Random, family: str = "table") -> tuple[str, dict[str, Any]]:
    """An inventory-table question and its parameters (the table is hidden behind
    ``lookup``)."""
    fam = TABLE_FAMILIES[family]
    names = rng.sample(fam["goods"], 5)
    table = {
        name: {
            "price": f"{rng.choice([0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.25]):.2f}",
            "stock": str(rng.randint(8, 60)),
        }
        for name in names
    }
    asked = rng.sample(names, rng.choice([2, 2, 3]))
    query = (
        f"{fam['owner']} inventory table can be read with the lookup tool (arguments: "
        "item, column; columns: price, stock). What is the total value in dollars "
        f"(price × stock) of the {_join([a + 's' for a in asked])} in stock? "
        "Give the amount with two decimals."
    )
    return query, {"family": family, "table": table, "asked": asked}


def make_query(seed: int) -> tuple[str, dict[str, Any]]:
    """The query and parameters for ``seed``: family ``FAMILIES[seed % 12]``, details
    from a seeded RNG."""
    rng = random.Random(f"arith_team:{seed}")
    family = FAMILIES[seed % len(FAMILIES)]
    kind = family_kind(family)
    if kind == "money":
        return make_money(rng, family)
    if kind == "schedule":
        return make_schedule(rng, family)
    return make_table(rng, family)


def gold_answer(params: dict[str, Any]) -> str:
    """The gold answer, computed from the hidden parameters (independently of
    :func:`derive`, which reads the text)."""
    kind = family_kind(params["family"])
    if kind == "money":
        subtotal = sum(q * float(p) for q, p in zip(params["qty"], params["prices"], strict=True))
        if params["extra"] == "discount":
            total = subtotal - subtotal * params["pct"] / 100
        elif params["extra"] in ("tax", "tip"):
            total = subtotal + subtotal * params["pct"] / 100
        else:
            total = subtotal + params["fee"]
        return _money(round(total + 1e-9, 2))
    if kind == "schedule":
        total = params["n"] * params["length"] + (params["n"] - 1) * params["break"] + params["lunch"]
        return clock_add(params["start"], total)
    table = params["table"]
    total = sum(float(table[a]["price"]) * int(table[a]["stock"]) for a in params["asked"])
    return _money(round(total + 1e-9, 2))


# --- the team's reading of a query ----------------------------------------------------

_PRICE_RE = re.compile(r"(\w+) at \$(\d+(?:\.\d+)?) each")
_QTY_RE = re.compile(r"(?<![\d.$])(\d+) (\w+)")


def derive(query: str) -> Derivation:
    """The computation a careful agent reads off ``query`` (planner and verifier).

    Returns an empty Derivation when the text matches no known family."""
    if "inventory table" in query:
        return _derive_table(query)
    if re.search(r"starts at \d\d:\d\d", query):
        return _derive_schedule(query)
    if _PRICE_RE.search(query):
        return _derive_money(query)
    return Derivation()


def _derive_money(query: str) -> Derivation:
    prices = dict(_PRICE_RE.findall(query))
    asked, _, _ = query.partition("How much")
    lines = [(q, noun) for q, noun in _QTY_RE.findall(asked.split(". ", 1)[-1]) if noun in prices]
    items = [Item(noun, f"{qty} * {prices[noun]}") for qty, noun in lines]
    leaves = [i.var for i in items]
    if not items:
        return Derivation()
    items.append(Item("subtotal", " + ".join(leaves)))
    pct = re.search(r"(\d+)% discount", query)
    fee = re.search(r"fee of \$(\d+(?:\.\d+)?)", query)
    add = re.search(r"(\d+)% (sales tax|tip)", query)
    if pct:
        items.append(Item("discount", f"subtotal * {pct.group(1)} / 100"))
        items.append(Item("total", "subtotal - discount"))
    elif add:
        name = "tax" if add.group(2) == "sales tax" else "tip"
        items.append(Item(name, f"subtotal * {add.group(1)} / 100"))
        items.append(Item("total", f"subtotal + {name}"))
    elif fee:
        items.append(Item("total", f"subtotal + {fee.group(1)}"))
    else:
        items.append(Item("total", "subtotal"))
    checks = leaves + (["total"] if len(leaves) <= 2 else [])
    return Derivation(items, checks, "total", "money")


def _derive_schedule(query: str) -> Derivation:
    start = re.search(r"starts at (\d\d:\d\d)", query)
    sess = re.search(r"(\d+) \w+ of (\d+) minutes", query)
    brk = re.search(r"(\d+)-minute \w+ between", query)
    lunch = re.search(r"(\d+)-minute [\w ]+? after", query)
    if not (start and sess):
        return Derivation()
    n, length = sess.groups()
    items = [Item("sessions", f"{n} * {length}")]
    parts = ["sessions"]
    if brk:
        items.append(Item("breaks", f"({n} - 1) * {brk.group(1)}"))
        parts.append("breaks")
    if lunch:
        parts.append(lunch.group(1))
    items.append(Item("total", " + ".join(parts)))
    items.append(Item("end", f"clock({start.group(1)} + total)", "clock"))
    checks = ["sessions"] + (["breaks"] if lunch and brk else ["end"])
    return Derivation(items, checks, "end", "time")


def _derive_table(query: str) -> Derivation:
    asked = re.search(r"\(price × stock\) of the (.*?) in stock", query)
    if not asked:
        return Derivation()
    names = [w[:-1] if w.endswith("s") else w for w in re.findall(r"[a-z]+", asked.group(1)) if w != "and"]
    items: list[Item] = []
    for name in names:
        items.append(Item(f"{name}_price", f"lookup({name}, price)", "lookup"))
        items.append(Item(f"{name}_stock", f"lookup({name}, stock)", "lookup"))
        items.append(Item(f"{name}_value", f"{name}_price * {name}_stock"))
    items.append(Item("total", " + ".join(f"{n}_value" for n in names)))
    return Derivation(items, [f"{n}_value" for n in names], "total", "money")


# --- tools ----------------------------------------------------------------------------


class ToolFailure(Exception):
    """A tool call that failed; its message becomes the observation."""


_OPS: dict[type[ast.AST], Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def calculate(expression: Any) -> str:
    """Evaluate ``+ - * /`` and parentheses over numbers, safely (an AST walk, no
    ``eval``). Raises ToolFailure on anything else."""
    if not isinstance(expression, str) or len(expression) > 200:
        raise ToolFailure("expression must be a short string")
    try:
        tree = ast.parse(expression.replace("×", "*"), mode="eval")
    except SyntaxError:
        raise ToolFailure(f"cannot parse {expression!r}") from None

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Div) and right == 0:
                raise ToolFailure("division by zero")
            return _OPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise ToolFailure(f"unsupported expression {expression!r}")

    return fmt_number(ev(tree))


def fmt_number(x: float) -> str:
    """``12.0`` -> ``"12"``, ``23.4000000001`` -> ``"23.4"``."""
    if abs(x - round(x)) < 1e-9:
        return str(int(round(x)))
    return f"{round(x, 9):.9f}".rstrip("0").rstrip(".")


def clock_add(start: Any, minutes: Any) -> str:
    """``HH:MM`` plus a number of minutes, wrapping at midnight. Raises ToolFailure on
    a malformed time or minute count."""
    m = re.fullmatch(r"(\d{1,2}):(\d\d)", str(start).strip())
    try:
        mins = float(minutes)
    except (TypeError, ValueError):
        raise ToolFailure(f"minutes must be a number, got {minutes!r}") from None
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59 or mins != mins:
        raise ToolFailure(f"start must be HH:MM, got {start!r}")
    total = (int(m.group(1)) * 60 + int(m.group(2)) + int(round(mins))) % (24 * 60)
    return f"{total // 60:02d}:{total % 60:02d}"


def lookup(table: dict[str, dict[str, str]], item: Any, column: Any) -> str:
    """A cell of the hidden inventory table. Raises ToolFailure for an unknown item or
    column (naming the valid ones, as a real tool would)."""
    row = table.get(str(item).strip().lower())
    if row is None:
        raise ToolFailure(f"no item {item!r} in the table (items: {', '.join(sorted(table))})")
    if column not in row:
        raise ToolFailure(f"no column {column!r} (columns: price, stock)")
    return row[column]


def parse_value(text: str | None) -> float | str | None:
    """A value token read from text: a number (float) or a ``HH:MM`` time (str); the
    last one in ``text``, or ``None``."""
    if not text:
        return None
    found = VALUE_RE.findall(text)
    if not found:
        return None
    token = found[-1]
    return token if ":" in token else float(token)


def same_value(a: float | str | None, b: float | str | None) -> bool:
    """Equal times, or numbers equal within 1e-6 (relative)."""
    if a is None or b is None:
        return False
    if isinstance(a, str) or isinstance(b, str):
        return str(a) == str(b)
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))
