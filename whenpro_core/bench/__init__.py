"""Evaluation (docs/architecture.md, 'Scoring'): the plan of work items (:mod:`.plan`), results
records and the resumable results file (:mod:`.records`), the evaluation runner (:mod:`.runner`,
``whenpro bench``), aggregates (:mod:`.aggregate`), reports (:mod:`.report`, ``whenpro report``)
with the official, substring and TRAIL rules, scores under reviewers' labels (:mod:`.reviewed`)
and, for the TUI, exploring results cell by cell (:mod:`.explore`). Dataset building is
``whenpro_core.dataset``; shards, Ray and rate limits are ``whenpro_core.scale``."""
