"""The label-leak audit (issue 14): can a dataset's labels be found without
understanding a single error?

A panel of form-only baselines (:mod:`.baselines`: how a step is written, what differs
from other runs, where labels usually are) is scored against the dataset's ground truth
next to the exact random baseline (:mod:`.run`, :mod:`.stats`), with consistency checks
that read one step (:mod:`.checks`) and a learned attacker trained on the dataset's own
labels with grouped cross-validation, beside the same learner on position, agent and
kind only, the structural prior (:mod:`.learned`, :mod:`.features`; issue 28). The baselines read only
the judge's view of a trace (:mod:`.view`), never injection markers. ``whenpro audit``
prints the result (:mod:`.report`); ``whenpro build``'s detectability filter
(:mod:`.detect`) drops items a form-only baseline pins to their step.
"""

from whenpro_core.audit.baselines import BASELINES, Baseline
from whenpro_core.audit.run import LEAK_MARGIN, AuditResult, audit_dataset, audit_traces

__all__ = ["BASELINES", "LEAK_MARGIN", "AuditResult", "Baseline", "audit_dataset", "audit_traces"]
