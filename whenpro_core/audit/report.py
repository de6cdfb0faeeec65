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
"""

from __future__ import annotations

from typing import Any

from whenpro_core.audit.run import AuditResult, GroupResult, Tally


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _baseline_json(name: str, tally: Tally) -> dict[str, Any]:
    rates = tally.rates()
    low, high = tally.interval()
    return {
        "name": name,
        "step": _round(rates["step"]),
        "agent": _round(rates["agent"]),
        "mode": _round(rates["mode"]),
        "joint": _round(rates["joint"]),
        "step_low": _round(low),
        "step_high": _round(high),
    }


def _group_json(by: str, value: str, group: GroupResult) -> dict[str, Any]:
    return {
        "by": by,
        "value": value,
        "traces": group.traces,
        "random_step": _round(group.random.rates()["step"]),
        "baselines": [
            {
                "name": n,
                "step": _round(t.rates()["step"]),
                "step_low": _round(t.interval()[0]),
                "step_high": _round(t.interval()[1]),
            }
            for n, t in group.baselines.items()
        ],
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
        "baselines": [_baseline_json(n, t) for n, t in result.overall.baselines.items()],
        "leaky": result.leaky,
        "leaking": result.leaking,
        "interval": "wilson",
        "skipped": result.skipped,
        "against": result.against,
        "groups": groups,
    }


__all__ = ["audit_json"]
