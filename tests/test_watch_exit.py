"""Exit statuses of ``whenpro watch`` a script can trust (issue 32, item 2): 1 whenever a
decisive error was flagged, whatever the header's outcome; 0 only when the run ended with
an outcome and nothing was flagged; 3 when the run ended without an outcome and nothing was
flagged. A gold answer and a final answer in the first header do not end a run still being
written (they used to: ``run ended (outcome) after 1 step``, exit 0, the error at step 2
never judged), and ``view --follow`` marks the decisive step ◆."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO, SAMPLES
from tests.support.live_writer import dump_lines
from tests.support.waiting import TIMEOUT_S
from whenpro_core.cli.watch import EXIT_NO_OUTCOME, Printer
from whenpro_core.live.events import DecisiveError, RunEnded

#: A header whose final answer matches the gold answer (an outcome derivable at once), then
#: a wrong calculation at step 2 (the decisive error) and a tool error.
HEADER = {
    "format": "whenpro.trace/1",
    "id": "r-gold",
    "framework": "custom",
    "outcome": "unknown",
    "task": {"query": "What is 2+3+4?", "answer": "9"},
    "final_answer": "9",
}
STEPS = [
    {"kind": "user", "agent": "user", "content": "What is 2+3+4?"},
    {"kind": "action", "agent": "planner", "content": "Plan: add the numbers."},
    {"kind": "action", "agent": "solver", "content": "2+3 = 6, then 6+4 = 10"},
    {"kind": "tool", "agent": "calc", "content": "", "error": "Traceback: ZeroDivisionError: division by zero"},
]


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "whenpro_core.cli", *args],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _whenpro(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_S
    )


def test_a_gold_answer_in_the_first_header_does_not_end_a_growing_run(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(dump_lines([HEADER, STEPS[0]])))
    proc = _spawn("watch", str(path), "--steps", "--idle-timeout", "3")
    try:
        assert proc.stdout is not None
        seen = [proc.stdout.readline()]
        while not seen[-1].startswith("step 0 [user] user"):  # the first step was read: the rest comes after
            assert seen[-1], seen
            seen.append(proc.stdout.readline())
        with path.open("ab") as fh:
            fh.write(b"".join(dump_lines(STEPS[1:])))
        out, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        proc.kill()
    out = "".join(seen) + out
    assert "run ended (outcome) after 1 step" not in out
    assert "DECISIVE ERROR step 2 [solver] R.3" in out, out
    assert proc.returncode == 1, err


def test_a_run_ended_without_an_outcome_is_its_own_status(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    header = {k: v for k, v in HEADER.items() if k != "final_answer"} | {"task": {"query": "Say hi."}}
    path.write_bytes(b"".join(dump_lines([header, STEPS[0], {"kind": "action", "agent": "a", "content": "hi"}])))
    out = _whenpro("watch", str(path), "--idle-timeout", "1", "--json")
    assert out.returncode == EXIT_NO_OUTCOME == 3, out.stdout + out.stderr
    ended = [json.loads(line) for line in out.stdout.splitlines() if '"run_ended"' in line]
    assert ended[-1]["reason"] == "idle" and ended[-1]["outcome"] == "unknown"


def test_a_finished_run_with_an_outcome_and_nothing_flagged_is_0(tmp_path: Path) -> None:
    from tests.test_tui_live import native_lines
    from whenpro_core.formats import load_trace

    clean = load_trace(SAMPLES / "arith_team" / "arith_team-s1.json")
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(native_lines(clean)) + b"".join(dump_lines([{"id": clean.id, "outcome": "success"}])))
    out = _whenpro("watch", str(path), "--idle-timeout", "3")
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_flagged_error_is_1_whatever_the_outcome() -> None:
    printer = Printer(as_json=True, show_steps=False, write=lambda _line: None)
    printer(DecisiveError("t", 2, "2", "solver", "R.3", "wrong sum", "heuristic", None))
    printer(RunEnded("t", "outcome", 4, "success"))
    assert printer.exit_code == 1
    for outcome, code in (("success", 0), ("failure", 0), ("unknown", EXIT_NO_OUTCOME)):
        printer = Printer(as_json=True, show_steps=False, write=lambda _line: None)
        printer(RunEnded("t", "final_answer", 4, outcome))
        assert printer.exit_code == code, outcome
    assert Printer(as_json=True, show_steps=False).exit_code == EXIT_NO_OUTCOME  # nothing ended at all


async def test_view_follow_marks_the_decisive_step_of_such_a_run(tmp_path: Path) -> None:
    from tests.conftest import screen_text
    from tests.support.waiting import until
    from tests.test_tui_live import first_screen, shows
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.live_trace import LiveTraceScreen
    from whenpro_tui.starts import LiveOptions, follow_start

    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(dump_lines([HEADER, STEPS[0]])))
    app = WhenproApp("", cursor_blink=False, start=follow_start(str(path), LiveOptions()))
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await first_screen(pilot, LiveTraceScreen, lambda s: len(s.trace.steps) == 1)
        with path.open("ab") as fh:
            fh.write(b"".join(dump_lines(STEPS[1:])))
        await until(pilot, lambda: screen.decisive is not None, "a decisive error", detail=lambda: screen_text(app))
        assert screen.steps.attributed == frozenset({2})
        await shows(pilot, "DECISIVE step 2 [solver] R.3", "◆")
