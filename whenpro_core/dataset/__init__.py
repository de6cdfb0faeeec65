"""Dataset building (docs/architecture.md, 'Injection and warm-start replay'): ``whenpro build``
(:mod:`.build`, with :mod:`.build_plan` choosing the injections and :mod:`.build_adapt` the
adaptive rounds), the dataset store (:mod:`.build_store`: the journal and its lock, release
selection, the manifest and publishing), the adversarial filter (:mod:`.build_adversarial`),
reviewers' validation (:mod:`.validate`, :mod:`.review`) and the release of accepted traces
(:mod:`.export`)."""
