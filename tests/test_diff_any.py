"""Diff any two runs (``whenpro diff A B``, ``whenpro view --diff A B``): two real runs
of one task from the shared Who&When Pro JSONL release, and two made-up traces of
different lengths; alignment by content, then by step signature; the first divergence
marked; outcomes and final answers side by side."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES, screen_text, settle, team_trace, until
from whenpro_core.cli import app as cli_app
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.injection.diff import diff_lines, diff_traces
from whenpro_core.trace.model import Step
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.diff import DiffScreen
from whenpro_tui.starts import diff_start
from whenpro_tui.widgets.diff_list import DiffList


@pytest.fixture
def same_task_pair(real_traces: Path) -> tuple[str, str]:
    """Rows 4 and 38 of the release: two smolagents runs of one DABench task."""
    release = real_traces / "who-when-pro-jsonl" / "data" / "text.jsonl"
    a, b = f"{release}#4", f"{release}#38"
    ta, tb = load_trace(a), load_trace(b)
    assert ta.task.query == tb.task.query and ta.id != tb.id
    return a, b


def test_two_real_runs_of_one_task(same_task_pair: tuple[str, str]) -> None:
    a, b = (load_trace(r) for r in same_task_pair)
    diff = diff_traces(a, b)
    # every step of each run appears once, in order, on its side
    assert [r.a for r in diff.rows if r.a is not None] == list(range(len(a.steps)))
    assert [r.b for r in diff.rows if r.b is not None] == list(range(len(b.steps)))
    assert diff.shared_prefix >= 1  # the same task prompt
    first = diff.first_divergence
    assert first is not None and first >= diff.shared_prefix
    assert diff.rows[first].op != "same" and all(r.op == "same" for r in diff.rows[:first])


def test_runs_of_different_lengths_align_by_content_not_index(tmp_path: Path) -> None:
    a = team_trace("run-a")
    b = team_trace("run-b", n_extra=3)
    # B has two extra steps at the front: index alignment would call every step changed
    extra = [
        Step(index=0, coord="0", agent="planner", kind="plan", content="Think first."),
        Step(index=1, coord="1", agent="checker", kind="observation", content="Nothing to check."),
    ]
    b.steps = extra + b.steps
    for i, s in enumerate(b.steps):
        s.index, s.coord = i, str(i)
    b.final_answer = "14.58"
    diff = diff_traces(a, b)
    assert len(diff.added) == 5 and not diff.removed  # 2 in front + 3 fillers at the end
    same = [(r.a, r.b) for r in diff.rows if r.op == "same"]
    assert same == [(i, i + 2) for i in range(len(a.steps))]  # each step found 2 further on
    assert diff.first_divergence == 0 and diff.rows[0].op == "added"
    lines = diff_lines(a, b, diff)
    assert lines[0].startswith("A run-a · failure · final '21.50'") and "final '14.58'" in lines[1]
    assert lines[2].startswith("first divergence: A step — / B step 0 (added)")
    assert any(line.rstrip().endswith("1 checker: Nothing to check.") and " + " in line for line in lines)


def test_a_changed_step_shows_where_its_text_differs() -> None:
    """The changed number sits past the first 45 characters of the step; each side was
    cut there, so both sides read the same."""
    a = load_trace(SAMPLES / "arith_team" / "arith_team-s1.json")
    b = load_trace(SAMPLES / "arith_team" / "arith_team-s1__R.3__4.json")
    [row] = [line for line in diff_lines(a, b, diff_traces(a, b)) if " ▶ " in line]
    left, right = row.split(" ▶ ")
    assert left.startswith("4 solver: …") and right.startswith("4 solver: …"), row
    assert "80 + 5 + 60" in left and "80 + 5 + 61" in right, row
    wide = diff_lines(a, b, diff_traces(a, b), width=400)
    assert any("Computing total = sessions + breaks + " in line and "80 + 5 + 61" in line for line in wide)


def test_a_change_at_the_end_of_a_long_step_or_in_its_observation_is_shown() -> None:
    """Both sides showed the same first characters of a 400-line step, and of two steps
    whose content was equal but whose observation differed."""
    a, b = team_trace("run-a"), team_trace("run-b")
    long = "".join(f"line {n}: the quick brown fox jumps over the lazy dog\n" for n in range(400))
    a.steps[2].content, b.steps[2].content = long + "TOTAL 135 minutes", long + "TOTAL 145 minutes"
    a.steps[3].observation, b.steps[3].observation = "135", "136"
    lines = diff_lines(a, b, diff_traces(a, b))
    assert any("TOTAL 135 minutes" in line and "TOTAL 145 minutes" in line for line in lines), lines
    assert any("observation: 135" in line and "observation: 136" in line for line in lines), lines


async def test_attributing_run_b_of_two_plain_runs_does_not_speak_of_an_injection(tmp_path: Path) -> None:
    a, b = team_trace("run-a"), team_trace("run-b")
    b.steps[3].content += " (changed)"
    b.ground_truth = None  # no label either: nothing to compare the verdict with
    write_trace(a, tmp_path / "a.json")
    write_trace(b, tmp_path / "b.json")
    app = WhenproApp("diff", cursor_blink=False, start=diff_start(str(tmp_path / "a.json"), str(tmp_path / "b.json")))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        dialog = " ".join(str(w.render()) for w in app.screen.query("Static"))
        assert "Attribute run B" in dialog and "injected" not in dialog and "counterfactual" not in dialog, dialog
        await pilot.press("escape")
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "o Open run B" in footer and "counterfactual" not in footer, footer
        await pilot.press("o")  # opens run B
        await settle(pilot)
        assert app.screen.trace.id == "run-b"
        await pilot.press("q")
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("ctrl+r")  # the offline heuristic
        await until(pilot, lambda: "blames step" in screen_text(app), "the heuristic verdict on run B")
        assert "of run B" in screen_text(app) and "injected" not in screen_text(app)


def test_diff_command_prints_text_when_not_on_a_terminal() -> None:
    a = SAMPLES / "arith_team" / "arith_team-s0.json"
    b = SAMPLES / "arith_team" / "arith_team-s0__PL.1__1.json"
    result = CliRunner().invoke(cli_app, ["diff", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert "A arith_team-s0 · success · final '51.85'" in result.output
    assert "B arith_team-s0__‹mode›__‹step› · failure · final '13.60'" in result.output  # labels hidden
    assert "first divergence" in result.output and "▶" in result.output
    bad = CliRunner().invoke(cli_app, ["view", "--diff", str(a)])
    assert bad.exit_code != 0 and "whenpro view --diff A B" in bad.output


async def test_diff_screen_on_two_real_runs(same_task_pair: tuple[str, str]) -> None:
    app = WhenproApp("diff", cursor_blink=False, start=diff_start(*same_task_pair))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen) and screen.plain and screen.diff is not None
        rows = screen.query_one(DiffList)
        assert rows.current is rows.divergence is screen.diff.rows[screen.diff.first_divergence]
        text = screen_text(app)
        assert "A failure · final" in text and "B failure · final" in text
        assert "▶ first divergence: A step" in text
        assert "Save" not in text.splitlines()[-1]  # both runs are files already
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running
