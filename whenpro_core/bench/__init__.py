"""Benchmarks (DESIGN §7): per-prediction scoring (:mod:`.score`), results records and
the resumable results file (:mod:`.records`), the evaluation runner (:mod:`.runner`,
``whenpro bench``), aggregates (:mod:`.aggregate`) and reports (:mod:`.report`,
``whenpro report``)."""
