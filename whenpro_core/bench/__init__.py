"""Benchmarks (docs/architecture.md, 'Scoring' and 'Injection and warm-start replay'): dataset building
(:mod:`.build`, ``whenpro build``, with
:mod:`.build_plan` choosing the injections, :mod:`.build_store` writing the dataset, its
journal and manifest) and review of built datasets (:mod:`.validate`); per-prediction
scoring (:mod:`.score`), results records and the resumable results file (:mod:`.records`),
the evaluation runner (:mod:`.runner`, ``whenpro bench``), aggregates (:mod:`.aggregate`)
and reports (:mod:`.report`, ``whenpro report``); for the TUI, exploring results cell by
cell (:mod:`.explore`) and reviewing a built dataset trace by trace (:mod:`.review`)."""
