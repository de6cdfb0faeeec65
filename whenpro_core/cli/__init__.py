"""The ``whenpro`` command line: a typer app (:mod:`.app`) whose commands (:mod:`.commands`)
parse options and hand over to one thin module per command family, imported only when its
command runs:

* :mod:`.traces` — ``info``, ``ls``, ``convert``, ``export``, ``diff`` (text), ``sessions``, ``schema``
* :mod:`.view` — ``view``, ``serve --tui``, ``diff`` on a terminal (the only importers of the TUI)
* :mod:`.attribute` — ``attribute`` (every protocol, the counterfactual search included)
* :mod:`.bench` — ``bench``; :mod:`.report` — ``report`` (and the report after ``bench``)
* :mod:`.build` — ``build``, ``inject``, ``run``
* :mod:`.audit`, :mod:`.live` (``watch``, ``serve``), :mod:`.tools` (``keyframes``, ``models``)

Command modules call domain functions and own the printing; :mod:`.output` holds the shared
printing helpers (stdout/stderr consoles, ``whenpro: error:``/``warning:`` lines).
"""

from __future__ import annotations

import time

#: Process start (as seen by this package), for the TUI's "started in N ms" log line.
START_NS = time.perf_counter_ns()

from whenpro_core.cli.app import app, main  # noqa: E402

__all__ = ["START_NS", "app", "main"]
