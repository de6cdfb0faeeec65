"""Seeded variation in what the built-in agents say (issue 14: a run must not be
reproducible from its task text alone).

A run's *style* is an integer drawn with its task (``EnvTask.params["style"]``) and given
to the policies in :class:`~whenpro_core.envs.base.EnvState`. Every choice a policy makes
about wording, optional extra steps or slips is a function of ``(style, step index,
agent, slot)``, so a run replays exactly from any prefix (the turn order stays a function
of the steps) while two runs of the same task text differ from their first agent step.
``style=None`` (a trace recorded before styles existed) always takes the first option, the
original wording.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def _rng(style: int | None, *key: object) -> random.Random:
    return random.Random(":".join(str(k) for k in (style, *key)))


def pick(style: int | None, options: Sequence[T], *key: object) -> T:
    """One of ``options``: the first when ``style`` is None, else a seeded choice keyed by
    ``key`` (e.g. step index, agent, slot)."""
    if style is None:
        return options[0]
    return options[_rng(style, *key).randrange(len(options))]


def chance(style: int | None, p: float, *key: object) -> bool:
    """A seeded coin with probability ``p`` (never true when ``style`` is None)."""
    return style is not None and _rng(style, "chance", *key).random() < p


def draw_style(rng: random.Random) -> int:
    """A fresh style for a new task (a 48-bit integer)."""
    return rng.getrandbits(48)


__all__ = ["chance", "draw_style", "pick"]
