"""The obvious priors of the heuristic table (benchmarks/heuristic_accuracy.py): always
answering the most frequent gold agent, step or mode of a subset."""

from __future__ import annotations

from whenpro_core.bench.baselines import majority_mode, most_common


def test_the_most_common_value_and_how_many_it_gets_right() -> None:
    assert most_common(["Orchestrator", "WebSurfer", "Orchestrator", ""]) == ("Orchestrator", 2)
    assert most_common(["4", "2", "2", "4"]) == ("2", 2)  # a tie goes to the first in order
    assert most_common([]) == (None, 0) and most_common(["", ""]) == (None, 0)
    # agent names keep their case; modes compare without it
    assert most_common(["websurfer", "WebSurfer", "WebSurfer"]) == ("WebSurfer", 2)
    assert majority_mode(["r.2", "R.2 ", "C.3"]) == ("R.2", 2)
