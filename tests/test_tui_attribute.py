"""Attribution from the trace screen, driven with Pilot: ``a`` ``enter`` runs the offline
heuristic, the verdict panel and ◆ marker, the sidecar file and reopening, the ground
truth comparison with labels, LLM protocols through the real openai SDK against the
local server (live progress in the step list, binary search shading), Esc cancelling a
run, several verdicts and ``A``, unusable models, a real Who&When trace, help and
palette."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import orjson
import pytest

from conftest import SAMPLES, WHOWHEN, screen_text, settle, team_trace
from tests.support.fixtures import TEST_KEY
from tests.support.judge_oracle import Oracle, oracle_for
from tests.support.llm_server import Fault
from tests.support.waiting import until
from whenpro_core.attribution.heuristic import attribute_heuristic
from whenpro_core.attribution.verdicts import save_verdict, verdicts_path
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_tui.app import WhenproApp
from whenpro_tui.messages import AttributionDone, AttributionProgress
from whenpro_tui.screens.attribute_picker import AttributePicker
from whenpro_tui.screens.help import HelpScreen
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.step_list import StepList

SIZE = (120, 40)


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """The bundled sample trace, copied so its sidecar verdict file lands in tmp."""
    copy = tmp_path / "trace.json"
    shutil.copy(SAMPLES / "team_text" / "trace.json", copy)
    return copy


@pytest.fixture
def llm_env(llm_server, monkeypatch: pytest.MonkeyPatch):
    """Point the app at the local server the way a user would: environment variables."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    monkeypatch.setenv("WHENPRO_MODEL", "openai:gpt-4.1")
    monkeypatch.setenv("WHENPRO_BACKOFF_BASE_S", "0.01")
    monkeypatch.setenv("WHENPRO_BACKOFF_MAX_S", "0.05")
    return llm_server


def sidecar(trace_file: Path) -> list[dict]:
    """The verdicts saved for ``trace_file`` (in whenpro's verdicts folder, never beside it)."""
    path = verdicts_path(load_trace(trace_file))
    assert path is not None
    if not path.is_file():
        return []
    return [orjson.loads(line)["attribution"] for line in path.read_bytes().splitlines()]


def panel(app) -> str:
    """The verdict slot's text ("" when hidden)."""
    slot = app.screen.query_one("#d-verdict")
    return str(slot.content) if slot.display else ""


def notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


def steps(app) -> StepList:
    return app.screen.query_one(StepList)


async def opened(pilot) -> TraceScreen:
    await settle(pilot)
    assert isinstance(pilot.app.screen, TraceScreen)
    return pilot.app.screen


async def pick(pilot, downs: int = 0) -> None:
    """``a``, move down the protocol list ``downs`` times, enter."""
    await pilot.press("a")
    await pilot.pause()
    assert isinstance(pilot.app.screen, AttributePicker)
    for _ in range(downs):
        await pilot.press("down")
    await pilot.press("enter")
    await pilot.pause()


# --------------------------------------------------------------------------- offline


async def test_a_enter_gives_the_heuristic_verdict_offline(sample_copy: Path) -> None:
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        assert panel(app) == ""
        await pick(pilot)
        await settle(pilot)
        text = panel(app)
        assert "Verdict" in text and "heuristic" in text
        assert "agent solver" in text and "step 3" in text
        assert "R.3 Numerical/calculation error" in text and "confidence" in text
        assert "✓" not in text  # labels are hidden: no comparison
        assert steps(app).step_index == 3  # jumped to the attributed step
        assert steps(app).attributed == {3}
        row3 = next(line for line in screen_text(app).splitlines() if " 3 solver" in line)
        assert "◆" in row3
        # the verdict is in the panel, uncovered: no toast repeats it
        assert not any("solver · step 3" in n for n in notes(app))
        assert "agent solver" in screen_text(app)
    saved = sidecar(sample_copy)
    assert len(saved) == 1
    assert (saved[0]["protocol"], saved[0]["agent"], saved[0]["step"], saved[0]["mode"]) == (
        "heuristic",
        "solver",
        "3",
        "R.3",
    )


async def test_no_save_keeps_verdicts_in_memory_and_writes_nothing(sample_copy: Path) -> None:
    app = WhenproApp(str(sample_copy), cursor_blink=False, save_verdicts=False)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await pick(pilot)
        await settle(pilot)
        assert "agent solver" in panel(app) and "not saved (--no-save)" in panel(app)
    assert sidecar(sample_copy) == []
    assert sorted(p.name for p in sample_copy.parent.iterdir()) == ["trace.json"]


async def test_rerunning_the_same_protocol_keeps_one_verdict(sample_copy: Path) -> None:
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await opened(pilot)
        await pick(pilot)
        await settle(pilot)
        await pick(pilot)
        await settle(pilot)
        assert len(screen.attribution.verdicts) == 1 and "Verdict 2/2" not in panel(app)
        assert any("the same as verdict 1, kept once" in n for n in notes(app))
    assert len(sidecar(sample_copy)) == 1


async def test_a_sidecar_with_repeated_verdicts_shows_each_once(sample_copy: Path) -> None:
    """Files written by repeated CLI runs (or older versions) hold the same verdict many
    times; the panel lists it once (the file is left as it is)."""
    trace = load_trace(sample_copy)
    verdict = attribute_heuristic(trace)
    other = verdict.model_copy(update={"with_gold": not verdict.with_gold})
    for v in (verdict, verdict, other, verdict):
        save_verdict(trace, v)
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await settle(pilot)
        assert len(screen.attribution.verdicts) == 2 and "Verdict 2/2" in panel(app)
    assert len(sidecar(sample_copy)) == 4


async def test_verdicts_reopen_with_the_trace_and_compare_with_labels(sample_copy: Path) -> None:
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await pick(pilot)
        await settle(pilot)
        assert "saved in " in panel(app)  # the panel says where
    assert len(sidecar(sample_copy)) == 1
    assert sorted(p.name for p in sample_copy.parent.iterdir() if p.is_file()) == ["trace.json"]  # nothing beside it
    again = WhenproApp(str(sample_copy), cursor_blink=False)
    async with again.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await settle(pilot)
        text = panel(again)
        assert "agent solver" in text and "R.3 Numerical/calculation error" in text
        assert "saved in " in text  # reopened: read from that file
        assert steps(again).attributed == {3} and steps(again).step_index == 0
        await pilot.press("t")
        await pilot.pause()
        text = panel(again)
        assert "agent solver ✓" in text and "step 3 ✓" in text
        assert "R.3 Numerical/calculation error ✓" in text and "✗" not in text
        await pilot.press("t")
        await pilot.pause()
        assert "✓" not in panel(again)
    assert len(sidecar(sample_copy)) == 1  # reopening does not write


async def test_wrong_axes_show_the_ground_truth_with_labels(tmp_path: Path) -> None:
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    trace.source.path = str(write_trace(trace, tmp_path / "t.json"))
    wrong = attribute_heuristic(trace).model_copy(update={"agent": "verifier", "step": "4", "mode": "V.2"})
    save_verdict(trace, wrong)
    app = WhenproApp(str(tmp_path / "t.json"), cursor_blink=False, show_labels=True)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        text = panel(app)
        assert "agent verifier ✗ (GT solver)" in text and "step 4 ✗ (GT 3)" in text
        assert "✗ (GT R.3)" in text
        assert steps(app).attributed == {4}


async def test_unreadable_saved_verdicts_are_a_notification(sample_copy: Path) -> None:
    trace = load_trace(sample_copy)
    path = save_verdict(trace, attribute_heuristic(trace))
    with path.open("ab") as fh:
        fh.write(b"{ torn line\n")
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        assert any("Skipped unreadable saved verdicts" in n and ":2:" in n for n in notes(app))
        assert "agent solver" in panel(app)  # the readable verdict still shows


async def test_a_foreign_file_in_the_old_sidecars_place_is_left_alone(sample_copy: Path) -> None:
    """A file named like the sidecar of older versions that whenpro did not write is
    neither read (no "unreadable verdicts" note) nor written."""
    foreign = sample_copy.with_name(sample_copy.name + ".verdicts.jsonl")
    foreign.write_text("my own notes\n")
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await pick(pilot)
        await settle(pilot)
        assert "agent solver" in panel(app)  # the verdict shows
        await until(pilot, lambda: "saved in " in panel(app), "the saved note")
        assert notes(app) == []
    assert foreign.read_text() == "my own notes\n"
    assert len(sidecar(sample_copy)) == 1


async def test_an_old_sidecar_beside_the_trace_is_still_read(sample_copy: Path) -> None:
    """Verdicts older versions saved beside the trace reopen; new ones go to the verdicts folder."""
    trace = load_trace(sample_copy)
    record = {"key": trace.id, "trace_id": trace.id, "saved_at": 1.0}
    record["attribution"] = attribute_heuristic(trace).model_dump(mode="json")
    old = sample_copy.with_name(sample_copy.name + ".verdicts.jsonl")
    old.write_bytes(orjson.dumps(record) + b"\n")
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await until(pilot, lambda: "agent solver" in panel(app), "the old verdict")
        assert len(screen.attribution.verdicts) == 1
    assert old.read_bytes() == orjson.dumps(record) + b"\n"


async def test_no_gold_answer_disables_the_gold_choice(tmp_path: Path) -> None:
    trace = team_trace()
    trace.task.answer = None
    write_trace(trace, tmp_path / "nogold.json")
    app = WhenproApp(str(tmp_path / "nogold.json"), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await pilot.press("a")
        await pilot.pause()
        gold = app.screen.query_one("#ap-gold")
        assert gold.disabled and gold.value is False
        assert "this trace has none" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert "without gold" in panel(app)
    assert sidecar(tmp_path / "nogold.json")[0]["with_gold"] is False


async def test_unusable_models_are_one_line_notifications(sample_copy: Path) -> None:
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await pick(pilot, downs=2)  # step-by-step, default model "heuristic"
        assert isinstance(app.screen, AttributePicker)  # stays open to fix the choice
        assert any("protocol step-by-step needs a model" in n for n in notes(app))
        app.screen.query_one("#ap-model-input").focus()
        await pilot.press(*"openai:gpt-4.1", "enter")
        await pilot.pause()
        assert any("no API key for openai:gpt-4.1" in n and "OPENAI_API_KEY" in n for n in notes(app))
        await pilot.press(*["backspace"] * 14, *"gpt4", "enter")
        await pilot.pause()
        assert any("model name 'gpt4' has no provider" in n for n in notes(app))
        assert isinstance(app.screen, AttributePicker)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, TraceScreen) and panel(app) == ""
    assert sidecar(sample_copy) == []


async def test_help_and_palette_list_the_attribution_actions(sample_copy: Path) -> None:
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=(120, 60)) as pilot:
        await opened(pilot)
        await pilot.press("?")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        described = {a.description: a.keys for a in app.screen.actions}
        assert described["Attribute"] == "a" and described["Next verdict / hide"] == "A"
        assert described["Cancel a running attribution"] == "esc"
        assert "a verdict names this step" in screen_text(app)
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"attribute")
        await settle(pilot)
        assert "Attribute (a)" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, AttributePicker)  # the palette command opens the picker


async def test_help_and_palette_list_the_attribute_dialog_keys_f2_included(sample_copy: Path) -> None:
    """f2 (preview requests) only works inside the attribute dialog: the trace screen's
    help lists the dialog's keys, f1 in the dialog lists them, and the palette opened in
    the dialog offers them, all from the same bindings."""
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=(120, 60)) as pilot:
        trace = await opened(pilot)
        await pilot.press("?")
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        dialogs = {name: {a.description: a.keys for a in keys} for name, keys in help_screen.dialog_actions}
        assert dialogs["Attribute dialog (a)"] == {
            "Start": "⏎",
            "Cancel": "esc",
            "Preview requests": "f2",
            "Help": "f1",
        }
        shown = screen_text(app)
        assert "Attribute dialog (a)" in shown and "Preview requests" in shown
        assert {"Inject dialog (i)", "Filter dialog (f)", "Media full size (m)"} <= set(dialogs)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is trace
        await pilot.press("a")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, AttributePicker)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        own = {a.description: a.keys for a in app.screen.actions}
        assert own["Preview requests"] == "f2" and own["Start"] == "⏎" and own["Help"] == "f1"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is picker
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"preview")
        await settle(pilot)
        assert "Preview requests (f2)" in screen_text(app)


# --------------------------------------------------------------------------- LLM protocols


class Recorder:
    """A message hook: the progress views posted by the run, and what the step list and
    the panel showed while the model answered each call (the state the previous event
    left on screen, read when the next event or the verdict arrives)."""

    def __init__(self) -> None:
        self.app = None
        self.views = []
        self.shown: list[tuple[frozenset[int], int | None, str]] = []

    def __call__(self, message) -> None:
        if isinstance(message, (AttributionProgress, AttributionDone)) and self.views:
            lst = steps(self.app)
            self.shown.append((lst.probe, lst.probe_focus, panel(self.app)))
        if isinstance(message, AttributionProgress):
            self.views.append(message.view)


async def test_step_by_step_moves_the_marker_as_it_asks(sample_copy: Path, llm_env) -> None:
    llm_env.latency_s = 0.1
    llm_env.respond_with(oracle_for(load_trace(sample_copy)))
    rec = Recorder()
    app = rec.app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE, message_hook=rec) as pilot:
        await opened(pilot)
        await pick(pilot, downs=2)
        await settle(pilot)
        assert [v.focus for v in rec.views] == [1, 2, 3]
        # while each call was answered, the step asked about was highlighted
        assert [focus for _, focus, _ in rec.shown] == [1, 2, 3]
        assert [probe for probe, _, _ in rec.shown] == [{1}, {2}, {3}]
        live = rec.shown[-1][2]
        assert "Attributing · step-by-step · openai:gpt-4.1" in live
        assert "asking about step 3" in live and "(call 3)" in live and "esc: cancel" in live
        assert re.search(r"3 calls · [1-9][\d,]* tokens", live)  # two answered, one asked
        assert steps(app).probe == frozenset() and steps(app).probe_focus is None
        text = panel(app)
        assert "step-by-step · openai:gpt-4.1" in text and "3 calls" in text and "tokens" in text
        assert steps(app).step_index == 3 and steps(app).attributed == {3}
    (saved,) = sidecar(sample_copy)
    assert (saved["protocol"], saved["model"], saved["step"], saved["mode"]) == (
        "step-by-step",
        "openai:gpt-4.1",
        "3",
        "R.3",
    )
    assert saved["usage"]["calls"] == 3 and len(llm_env.answered) == 3


async def test_binary_search_shades_a_shrinking_range(sample_copy: Path, llm_env) -> None:
    llm_env.latency_s = 0.1
    llm_env.respond_with(oracle_for(load_trace(sample_copy)))
    rec = Recorder()
    app = rec.app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE, message_hook=rec) as pilot:
        await opened(pilot)
        await pick(pilot, downs=3)
        await settle(pilot)
        shaded = [probe for probe, _, _ in rec.shown]
        assert len(shaded) >= 3 and shaded[0] == {1, 2, 3, 4, 5, 6}
        assert all(later < earlier for earlier, later in zip(shaded, shaded[1:], strict=False))  # shrinking
        assert shaded[-1] == {3} and rec.shown[-1][1] == 3  # the last call: its failure mode
        assert "first or second half?" in rec.shown[0][2]
        assert "binary-search · openai:gpt-4.1" in panel(app) and steps(app).attributed == {3}
    assert sidecar(sample_copy)[0]["step"] == "3"


async def test_esc_cancels_a_running_attribution(sample_copy: Path, llm_env) -> None:
    llm_env.latency_s = 5.0
    llm_env.respond_with(oracle_for(load_trace(sample_copy)))
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pick(pilot, downs=2)
        await until(pilot, lambda: steps(app).probe_focus == 1, "the probe on step 1")
        judge = screen.attribution.judge
        worker = screen.attribution.worker
        assert judge is not None and not judge.closed and "Attributing" in panel(app)
        await pilot.press("escape")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert worker.is_cancelled and judge.closed
        assert any("Attribution cancelled" in n and "no verdict saved" in n for n in notes(app))
        assert app.screen is screen and panel(app) == "" and steps(app).probe == frozenset()
        assert not screen.attribution.verdicts
        assert app.return_code is None
        await pilot.press("escape")  # nothing runs now: Esc never quits the first screen
        await pilot.pause()
        assert app.return_code is None and app.screen is screen
        assert any("press q to quit" in n for n in notes(app))
    assert sidecar(sample_copy) == []


async def test_two_verdicts_side_by_side_and_A_cycles(sample_copy: Path, llm_env) -> None:
    trace = load_trace(sample_copy)
    order = [s.coord for s in trace.steps]
    llm_env.respond_with(Oracle(agent="verifier", step="4", mode="V.2", order=order))
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pick(pilot)  # heuristic: step 3
        await settle(pilot)
        await pick(pilot, downs=1)  # all-at-once through the model: step 4
        await settle(pilot)
        assert [v.protocol for v in screen.attribution.verdicts] == ["heuristic", "all-at-once"]
        lst = steps(app)
        assert lst.attributed == {3, 4}
        assert lst.attributed_styles[3].color != lst.attributed_styles[4].color  # one colour each
        text = panel(app)
        assert "Verdict 2/2" in text and "◆1 heuristic" in text and "◆2 all-at-once · openai:gpt-4.1" in text
        assert "agent verifier" in text and lst.step_index == 4
        await pilot.press("A")  # after the last: hidden
        await pilot.pause()
        assert panel(app) == "" and lst.attributed == {3, 4}
        await pilot.press("A")
        await pilot.pause()
        assert "Verdict 1/2" in panel(app) and "agent solver" in panel(app) and lst.step_index == 3
        await pilot.press("A")
        await pilot.pause()
        assert "Verdict 2/2" in panel(app) and lst.step_index == 4
    assert [v["protocol"] for v in sidecar(sample_copy)] == ["heuristic", "all-at-once"]
    again = WhenproApp(str(sample_copy), cursor_blink=False)
    async with again.run_test(size=SIZE) as pilot:
        await opened(pilot)
        assert "Verdict 2/2" in panel(again) and steps(again).attributed == {3, 4}


# --------------------------------------------------------------------------- real trace


async def test_on_a_real_who_and_when_hand_crafted_trace(whowhen: Path, tmp_path: Path, llm_env) -> None:
    copy = tmp_path / "11.json"  # 130 steps; copied so the verdict file lands in tmp
    shutil.copy(WHOWHEN / "Hand-Crafted" / "11.json", copy)
    trace = load_trace(copy)
    llm_env.respond_with(oracle_for(trace))
    gt = trace.ground_truth
    app = WhenproApp(str(copy), cursor_blink=False, show_labels=True)
    async with app.run_test(size=SIZE) as pilot:
        await opened(pilot)
        await pick(pilot)  # heuristic
        await settle(pilot)
        offline = attribute_heuristic(trace)
        assert f"agent {offline.agent}" in panel(app) and f"step {offline.step}" in panel(app)
        await pick(pilot, downs=3)  # binary search through the model
        await settle(pilot)
        text = panel(app)
        assert f"agent {gt.agent} ✓" in text and f"step {gt.step} ✓" in text
        assert steps(app).step_index == trace.step_by_coord(gt.step).index
        assert len(steps(app).attributed) == 2 - (offline.step == gt.step)
    saved = sidecar(copy)
    assert [v["protocol"] for v in saved] == ["heuristic", "binary-search"]
    assert saved[1]["usage"]["calls"] <= 9  # ⌈log2 n⌉ + 1 on ~65 candidate steps


async def test_each_trace_of_a_file_keeps_its_own_verdicts(tmp_path: Path, llm_env) -> None:
    path = tmp_path / "three.json"
    path.write_bytes(orjson.dumps([team_trace(f"team-{i}").model_dump(mode="json") for i in (1, 2, 3)]))
    llm_env.latency_s = 5.0
    llm_env.respond_with(oracle_for(team_trace()))
    app = WhenproApp(f"{path}#2", cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pick(pilot)  # heuristic on team-2
        await settle(pilot)
        assert screen.trace.id == "team-2" and "Verdict" in panel(app)
        await pick(pilot, downs=2)  # step-by-step, still running when we move on
        await until(pilot, lambda: steps(app).probe_focus is not None, "a probed step")
        await pilot.press("]")
        await settle(pilot)
        assert screen.trace.id == "team-3"
        assert any("cancelled (another trace was opened)" in n for n in notes(app))
        assert panel(app) == "" and steps(app).attributed == frozenset()
        assert steps(app).probe == frozenset()
        await pilot.press("[")
        await settle(pilot)
        assert screen.trace.id == "team-2" and "heuristic" in panel(app)
        assert len(screen.attribution.verdicts) == 1
    saved = verdicts_path(load_trace(f"{path}#2"))
    assert saved is not None and not (tmp_path / "three.json.verdicts.jsonl").exists()
    records = [orjson.loads(line) for line in saved.read_bytes().splitlines()]
    assert [(r["key"], r["attribution"]["protocol"]) for r in records] == [("2", "heuristic")]


async def test_a_backend_failure_is_a_notification_without_a_verdict(sample_copy: Path, llm_env) -> None:
    llm_env.fail(Fault.http(401, message="invalid api key"))
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pick(pilot, downs=1)  # all-at-once
        await settle(pilot)
        failed = [n for n in app._notifications if n.title == "Attribution failed"]
        assert len(failed) == 1 and "401" in failed[0].message and "\n" not in failed[0].message
        assert all(TEST_KEY not in str(n.message) for n in app._notifications)
        assert panel(app) == "" and not screen.attribution.verdicts and steps(app).probe == frozenset()
    assert sidecar(sample_copy) == []


async def test_the_panel_says_when_a_failed_call_waits_for_its_retry(sample_copy: Path, llm_env, monkeypatch) -> None:
    monkeypatch.setenv("WHENPRO_BACKOFF_BASE_S", "1.5")
    monkeypatch.setenv("WHENPRO_BACKOFF_MAX_S", "1.5")
    llm_env.respond_with(oracle_for(load_trace(sample_copy)))
    llm_env.fail(Fault.http(500, message="overloaded"))
    app = WhenproApp(str(sample_copy), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pick(pilot, downs=1)  # all-at-once
        await until(pilot, lambda: "retry 1/" in panel(app), "the retry line")
        assert "500" in panel(app) and TEST_KEY not in panel(app)
        await until(pilot, lambda: bool(screen.attribution.verdicts), "a verdict")
        assert "retry" not in panel(app)
