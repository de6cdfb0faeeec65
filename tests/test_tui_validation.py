"""Validation mode driven with Pilot, on a dataset built with ``whenpro build`` from
``whenpro run arith_team`` seeds: accept, reject and relabel are recorded in
``validation.jsonl`` at once, the progress and the manifest's counts follow, a refused
decision keeps the dialog open with its reason, the trace opens on its injected step and
the next pending one opens after a decision. Also ``v`` on the library of a built
dataset, and a snapshot of the review list."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import Select

from tests.conftest import screen_text, settle
from whenpro_core.dataset import validate
from whenpro_core.dataset.build import BuildOptions, run_build
from whenpro_core.dataset.build_store import read_manifest
from whenpro_core.dataset.review import next_pending, progress_line, relabel_choices, save_counts
from whenpro_core.envs.run import run_many
from whenpro_core.errors import WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.views.search import gt_step_index
from whenpro_tui.app import WhenproApp
from whenpro_tui.screens.library import LibraryScreen
from whenpro_tui.screens.review_dialogs import DecisionDialog, VerdictMenu
from whenpro_tui.screens.review_trace import ReviewTraceScreen
from whenpro_tui.screens.validation import ValidationScreen
from whenpro_tui.starts import validate_start


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """``whenpro run arith_team --n 4 --seed 0`` then ``whenpro build --per-seed 3`` (a
    fixed creation time and id salt, so the screens are the same every time)."""
    base = tmp_path_factory.mktemp("val")
    run_many("arith_team", 4, base / "seeds", seed=0, echo=lambda _line: None)
    asyncio.run(
        run_build(
            base / "seeds",
            base / "ds",
            BuildOptions(per_seed=3, detect=False),
            now="2026-01-01T00:00:00+00:00",
            salt="tui-validation",
        )
    )
    return base / "ds"


@pytest.fixture
def ds(built: Path, tmp_path: Path) -> Path:
    """A private copy of the built dataset (decisions are per test)."""
    return Path(shutil.copytree(built, tmp_path / "ds"))


def decisions(root: Path) -> list[dict]:
    path = root / validate.VALIDATION_FILE
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def open_validation(pilot) -> ValidationScreen:
    await settle(pilot)
    assert isinstance(pilot.app.screen, ValidationScreen)
    return pilot.app.screen


async def test_accept_and_reject_are_saved_at_once_with_counts(ds):
    items = validate.review_items(ds)
    total = len(items)
    assert total >= 3
    app = WhenproApp("", cursor_blink=False, start=validate_start(str(ds)))
    async with app.run_test(size=(120, 32)) as pilot:
        screen = await open_validation(pilot)
        assert f"0 of {total} reviewed" in screen_text(app)
        assert "labels as built (none reviewed yet): " in screen_text(app)  # was "validated labels"
        await pilot.press("a")
        await settle(pilot)
        assert "labels after review (pending ones as built): " in screen_text(app)
        assert [(d["trace_id"], d["verdict"]) for d in decisions(ds)] == [(items[0].id, "accept")]
        assert f"1 of {total} reviewed · 1 accepted" in screen_text(app)
        assert read_manifest(ds, fresh_validation=False)["validation"]["accepted"] == 1  # written
        # reject: a reason is required; the dialog says so and stays open
        await pilot.press("j", "x")
        await settle(pilot)
        assert isinstance(app.screen, DecisionDialog)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DecisionDialog)
        assert "a reject needs a reason" in screen_text(app)
        await pilot.press(*"the flaw does not change the answer", "enter")
        await settle(pilot)
        assert app.screen is screen
        last = decisions(ds)[-1]
        assert (last["trace_id"], last["verdict"], last["reason"]) == (
            items[1].id,
            "reject",
            "the flaw does not change the answer",
        )
        text = screen_text(app)
        assert f"2 of {total} reviewed · 1 accepted · 1 rejected" in text
        assert "✓" in text and "✗" in text and "rejected: the flaw does not change" in text
        counts = read_manifest(ds, fresh_validation=False)["validation"]
        assert (counts["accepted"], counts["rejected"], counts["pending"]) == (1, 1, total - 2)
        assert items[1].mode not in counts["validated_modes"] or counts["validated_modes"][items[1].mode] < sum(
            1 for i in items if i.mode == items[1].mode
        )
        # n: the next pending trace; escape in the menu changes nothing
        await pilot.press("g", "n")
        assert screen.rlist.cursor == 2
        await pilot.press("v")
        assert isinstance(app.screen, VerdictMenu)
        await pilot.press("escape")
        assert len(decisions(ds)) == 2


async def test_review_a_trace_relabel_from_the_cursor_and_move_on(ds):
    items = validate.review_items(ds)
    app = WhenproApp("", cursor_blink=False, start=validate_start(str(ds)))
    async with app.run_test(size=(130, 40)) as pilot:
        screen = await open_validation(pilot)
        await pilot.press("enter")
        await settle(pilot)
        review = app.screen
        assert isinstance(review, ReviewTraceScreen) and app.show_labels
        trace = review.trace
        injected = gt_step_index(trace)
        assert review.steps.step_index == injected  # the cursor starts on the injected step
        text = screen_text(app)
        assert f"Review 1 of {len(items)}" in text and "built label: agent " + items[0].agent in text
        assert "★" in text  # the built label (released files carry no injection markers: no ⚑)
        # move to another agent's step and relabel: the step under the cursor is preselected
        target = next(s for s in trace.steps[injected + 1 :] if s.coord and s.agent != items[0].agent)
        review._go_to_step(target.index)
        await pilot.press("v")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, DecisionDialog)
        assert dialog.query_one("#relabel-step", Select).value == target.coord
        assert dialog.query_one("#relabel-agent", Select).value == items[0].agent
        # pick the mode with the keyboard: shift+tab to the mode list, open it, move, choose
        # (arrow keys: type-to-search forgets what was typed after 0.7 s, too short on a busy machine)
        new_mode = "V.2" if items[0].mode != "V.2" else "R.2"
        codes = [code for code, _ in relabel_choices(ds, trace, items[0]).modes]
        move = codes.index(new_mode) - codes.index(items[0].mode)
        await pilot.press("shift+tab", "enter")
        await pilot.press(*(["down"] * move if move > 0 else ["up"] * -move))
        await pilot.press("enter")
        await pilot.pause()
        assert dialog.query_one("#relabel-mode", Select).value == new_mode
        await pilot.press("tab", *"the slip is a reasoning error", "enter")
        await settle(pilot)
        last = decisions(ds)[-1]
        assert last["verdict"] == "relabel" and last["trace_id"] == items[0].id
        assert last["label"] == {"agent": target.agent, "step": target.coord, "mode": new_mode}
        assert last["original"] == {"agent": items[0].agent, "step": items[0].step, "mode": items[0].mode}
        # the next pending trace opened
        assert review.position == 1 and review.trace.id == items[1].id
        assert any("Saved: relabelled" in n for n in notes(app))
        assert "1 relabelled" in screen_text(app)
        # accept the rest with v a; the last decision says every trace is done
        for _ in range(len(items) - 1):
            await pilot.press("v", "a")
            await settle(pilot)
        assert [d["verdict"] for d in decisions(ds)] == ["relabel"] + ["accept"] * (len(items) - 1)
        assert any(f"All {len(items)} traces have a decision" in n for n in notes(app))
        counts = validate.validation_counts(ds)
        assert (counts["relabelled"], counts["accepted"], counts["pending"]) == (1, len(items) - 1, 0)
        assert counts["relabelled_fields"] == {"agent": 1, "step": 1, "mode": 1}
        await pilot.press("q")
        assert app.screen is screen and "(0 pending)" not in screen_text(app)
        assert f"{len(items)} of {len(items)} reviewed" in screen_text(app)


async def test_v_on_the_library_of_a_built_dataset(ds, dataset_dir):
    app = WhenproApp(str(ds), cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, LibraryScreen)
        assert "Validate" in screen_text(app)
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, ValidationScreen) and app.screen.root == ds
        await pilot.press("q")
        assert isinstance(app.screen, LibraryScreen)
    other = WhenproApp(str(dataset_dir), cursor_blink=False)
    async with other.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert "Validate" not in screen_text(other)
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(other.screen, LibraryScreen)


@pytest.mark.parametrize("m", ["[b]x[/i]", "[/]", "[@click=app.quit]q[/]"])
async def test_relabel_choices_with_markup_like_names_stay_text(ds, m):
    """Agent names, step summaries and mode names in the relabel dialog's lists are
    trace content: plain text, never markup (a MarkupError used to end the app)."""
    from tests.test_tui_markup import marked_trace

    items = validate.review_items(ds)
    choices = relabel_choices(ds, marked_trace(m), items[0])
    choices.modes.append((f"X{m}", f"mode {m}"))
    app = WhenproApp("", cursor_blink=False, start=validate_start(str(ds)))
    async with app.run_test(size=(130, 40)) as pilot:
        await open_validation(pilot)
        app.push_screen(DecisionDialog(ds, items[0], "relabel", choices=choices, step="1"))
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, DecisionDialog)
        for select_id in ("#relabel-agent", "#relabel-step", "#relabel-mode"):
            await pilot.click(select_id)
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
        assert f"coder{m}" in screen_text(app)
        assert app.is_running and app._exception is None


def test_validate_needs_a_built_dataset(dataset_dir):
    with pytest.raises(WhenproError, match="not a dataset built by whenpro build"):
        validate_start(str(dataset_dir))


def test_review_helpers(ds):
    items = validate.review_items(ds)
    trace = load_trace(ds / items[0].ref)
    choices = relabel_choices(ds, trace, items[0])
    assert choices.agents == trace.agent_ids() and len(choices.modes) == 17
    assert [c for c, _, _ in choices.steps] == list(dict.fromkeys(s.coord for s in trace.steps if s.coord))
    assert next_pending(items, 0) == 1
    validate.record(ds, items[1].id, "accept")
    items = validate.review_items(ds)
    assert next_pending(items, 0) == 2 and next_pending(items, len(items) - 1) == 0
    counts = save_counts(ds)
    assert progress_line(counts).startswith(f"1 of {len(items)} reviewed · 1 accepted")
    assert read_manifest(ds, fresh_validation=False)["validation"]["accepted"] == 1


def test_validation_list_snapshot(snap_compare, built: Path, tmp_path: Path, monkeypatch) -> None:
    shutil.copytree(built, tmp_path / "ds")
    monkeypatch.chdir(tmp_path)
    items = validate.review_items(tmp_path / "ds")
    validate.record(tmp_path / "ds", items[0].id, "accept", now="2026-01-01T00:00:00+00:00")
    validate.record(
        tmp_path / "ds", items[1].id, "reject", "the injected slip is corrected later", now="2026-01-01T00:00:00+00:00"
    )
    app = WhenproApp("", cursor_blink=False, start=validate_start("ds"))
    assert snap_compare(app, terminal_size=(100, 24), run_before=settle)


def test_review_trace_snapshot(snap_compare, built: Path, tmp_path: Path, monkeypatch) -> None:
    shutil.copytree(built, tmp_path / "ds")
    monkeypatch.chdir(tmp_path)
    app = WhenproApp("", cursor_blink=False, start=validate_start("ds"))

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("v")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 34), run_before=run_before)


async def test_relabel_errors_clear_on_typing_and_speak_the_dialogs_language(ds):
    app = WhenproApp("", cursor_blink=False, start=validate_start(str(ds)))
    async with app.run_test(size=(120, 32)) as pilot:
        await open_validation(pilot)
        await pilot.press("r")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, DecisionDialog)
        error = dialog.query_one("#decision-error")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "a relabel needs a reason" in screen_text(app)
        await pilot.press(*"wrong step")
        await pilot.pause()
        assert "needs a reason" not in screen_text(app) and not str(error.render()).strip()
        await pilot.press("ctrl+s")  # nothing changed yet: the dialog says what to do, in its terms
        await settle(pilot)
        text = screen_text(app)
        assert "choose a new agent, step or mode" in text and "agent=" not in text
        assert app.screen is dialog and decisions(ds) == []
