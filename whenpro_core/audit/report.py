"""``whenpro audit``'s result as a JSON document (issue 14); the tables are
:mod:`whenpro_core.cli.audit`'s.

JSON (:func:`audit_json`): ``{"traces": N, "random": {"step", "agent", "mode"},
"baselines": [{"name", "step", "agent", "mode", "joint"}], "leaky": bool}`` with
fractions 0..1, plus ``step_low``/``step_high`` (the 95% Wilson interval) on each
baseline, ``random.joint``, ``leaking`` (the baselines behind the verdict),
``interval`` (``"wilson"``), ``skipped`` (unlabelled traces and files that failed to
import), ``against`` (corpus runs) and ``groups`` (per failure mode and per
framework: traces, random step accuracy and each baseline's step accuracy with its
interval). ``mode`` is ``null`` when no trace has a mode label (Who&When).

Issue 28 added, on each baseline: ``family`` (``learned``, ``form`` or ``prior``),
``n`` (traces) and ``p_random`` (the one-sided exact binomial p-value of its step
accuracy against the mean random chance); on the learned attacks (``learned form``,
``structural prior``) also ``feature_set``, ``folds`` and ``features`` (the top
permutation weights: ``[{"name", "weight"}]``, points of step accuracy lost when that
feature is shuffled, as fractions); on ``learned form`` also ``over_prior`` (its step
accuracy minus the prior's) and ``p_prior`` (the paired one-sided p-value). The
document's ``learned`` is ``{"ran": bool, "note": str | null}`` (the note says why it
did not run) and ``rule`` the verdict's margins and level; each group has ``n`` on each
baseline, ``p_random``, and ``p_form_over_prior``.
"""

from __future__ import annotations

from typing import Any

from whenpro_core.audit.baselines import BASELINES
from whenpro_core.audit.learned import LearnedAttack
from whenpro_core.audit.run import (
    ALPHA,
    FORM_MARGIN,
    LEAK_MARGIN,
    LEARNED_FORM,
    LEARNED_NAMES,
    PRIOR_MARGIN,
    STRUCTURAL_PRIOR,
    AuditResult,
    GroupResult,
    Tally,
)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


_FAMILY = {b.name: b.family for b in BASELINES}


def family(name: str) -> str:
    """``learned`` for the learned attacks, else the panel baseline's family."""
    return "learned" if name in LEARNED_NAMES.values() else _FAMILY.get(name, "form")


def _learned_json(attack: LearnedAttack) -> dict[str, Any]:
    return {
        "feature_set": attack.feature_set,
        "folds": attack.folds,
        "features": [{"name": n, "weight": _round(w)} for n, w in attack.weights],
    }


def _baseline_json(name: str, tally: Tally, result: AuditResult) -> dict[str, Any]:
    rates = tally.rates()
    low, high = tally.interval()
    out: dict[str, Any] = {
        "name": name,
        "family": family(name),
        "n": tally.n,
        "step": _round(rates["step"]),
        "agent": _round(rates["agent"]),
        "mode": _round(rates["mode"]),
        "joint": _round(rates["joint"]),
        "step_low": _round(low),
        "step_high": _round(high),
        "p_random": _round(tally.p_random(result.overall.random.rates()["step"] or 0.0)),
    }
    for feature_set, shown in LEARNED_NAMES.items():
        if name == shown and feature_set in result.learned:
            out.update(_learned_json(result.learned[feature_set]))
    if name == LEARNED_FORM and STRUCTURAL_PRIOR in result.overall.baselines:
        prior = result.overall.baselines[STRUCTURAL_PRIOR].rates()["step"] or 0.0
        out["over_prior"] = _round((rates["step"] or 0.0) - prior)
        out["p_prior"] = _round(result.overall.p_form_over_prior())
    return out


def _group_json(by: str, value: str, group: GroupResult) -> dict[str, Any]:
    return {
        "by": by,
        "value": value,
        "traces": group.traces,
        "random_step": _round(group.random.rates()["step"]),
        "baselines": [
            {
                "name": n,
                "n": t.n,
                "step": _round(t.rates()["step"]),
                "step_low": _round(t.interval()[0]),
                "step_high": _round(t.interval()[1]),
                "p_random": _round(t.p_random(group.random.rates()["step"] or 0.0)),
            }
            for n, t in group.baselines.items()
        ],
        "p_form_over_prior": _round(group.p_form_over_prior()),
        "leaking": group.leaks(),
    }


def audit_json(result: AuditResult) -> dict[str, Any]:
    """The ``--json`` document (module docstring)."""
    rnd = result.overall.random.rates()
    groups = [_group_json("mode", k, g) for k, g in result.by_mode.items()]
    groups += [_group_json("framework", k, g) for k, g in result.by_framework.items()]
    return {
        "traces": result.overall.traces,
        "random": {
            "step": _round(rnd["step"]),
            "agent": _round(rnd["agent"]),
            "mode": _round(rnd["mode"]),
            "joint": _round(rnd["joint"]),
        },
        "baselines": [_baseline_json(n, t, result) for n, t in result.overall.baselines.items()],
        "leaky": result.leaky,
        "leaking": result.leaking,
        "learned": {"ran": bool(result.learned), "note": result.learned_note},
        "rule": {
            "baseline_over_random": LEAK_MARGIN,
            "prior_over_random": PRIOR_MARGIN,
            "form_over_prior": FORM_MARGIN,
            "alpha": ALPHA,
        },
        "interval": "wilson",
        "skipped": result.skipped,
        "against": result.against,
        "groups": groups,
    }


__all__ = ["audit_json"]
