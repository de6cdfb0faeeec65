"""``whenpro audit``: the label-leak audit of a dataset (:mod:`whenpro_core.audit`)."""

from __future__ import annotations

from whenpro_core.audit.report import audit_command


def audit(dataset: str, *, against: str | None, as_json: bool) -> None:
    """Run the form-only baselines on ``dataset`` (and ``against`` successful runs); print
    the table and verdict, or one JSON document."""
    audit_command(dataset, against=against, as_json=as_json)
