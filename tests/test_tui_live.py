"""The live views driven with Pilot: ``whenpro view --follow FILE`` while a background
thread writes the run (steps appear in order, the cursor stays where the user put it
unless it is on the last step, bad lines and the decisive error are notifications, a
truncated file keeps the shared steps), and ``whenpro view --otlp`` with the real
OpenTelemetry SDK exporter (the trace appears in the list with the judge's verdict and
opens live).

These views wait on another thread (the writer, the exporter): :func:`until` polls a
condition with Pilot pauses and a deadline, never a fixed sleep."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import SAMPLES, screen_text
from tests.support.live_writer import LineWriter, dump_lines
from tests.support.waiting import until
from whenpro_core.errors import ConfigError, TraceFormatError
from whenpro_core.formats import load_trace
from whenpro_core.live.events import Idle, LineError
from whenpro_tui.app import WhenproApp
from whenpro_tui.messages import LiveEvents
from whenpro_tui.screens.incoming import IncomingScreen
from whenpro_tui.screens.live_trace import LiveTraceScreen
from whenpro_tui.starts import LiveOptions, follow_start, otlp_start, view_start

TEAM = SAMPLES / "team_text" / "trace.json"


def native_lines(trace) -> list[bytes]:
    """The run as an agent writes it live: a header, then one step a line."""
    header = {
        "format": "whenpro.trace/1",
        "id": trace.id,
        "framework": trace.framework,
        "task": trace.task.model_dump(mode="json"),
        "agents": [a.model_dump() for a in trace.agents],
    }
    return dump_lines([header, *(s.model_dump(mode="json", exclude={"index", "raw"}) for s in trace.steps)])


async def first_screen(pilot, kind: type, ready=lambda screen: True):
    """The app's first screen once it is a ``kind`` and ``ready`` (it is pushed, then
    starts, after the app mounts: on a busy machine that is not at once)."""
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, kind) and ready(app.screen), f"a {kind.__name__}")
    return app.screen


def notes(app) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


async def noted(pilot, part: str) -> list[str]:
    """The notifications once one of them contains ``part`` (``notify`` posts a message:
    the app lists it a round after the state that caused it has changed)."""
    app = pilot.app
    await until(
        pilot, lambda: any(part in n for n in notes(app)), f"a notification {part!r}", detail=lambda: notes(app)
    )
    return notes(app)


async def shows(pilot, *texts: str) -> str:
    """The screen's text once it shows every one of ``texts``: a state change is drawn
    at the next refresh, which a loaded machine makes later than the messages after it."""
    app = pilot.app

    def shown() -> str:
        text = screen_text(app)
        return text if all(t in text for t in texts) else ""

    return await until(pilot, shown, f"the screen to show {texts}", detail=lambda: screen_text(app))


async def test_follow_shows_steps_as_they_are_written_and_keeps_the_cursor(tmp_path):
    sample = load_trace(TEAM)
    lines = native_lines(sample)
    path = tmp_path / "run.jsonl"
    app = WhenproApp("", cursor_blink=False, start=follow_start(str(path), LiveOptions()))
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await first_screen(pilot, LiveTraceScreen, lambda _s: "Waiting for the first step" in screen_text(app))
        # the file appears and grows: header + 3 steps, with a torn line and a bad line
        writer = LineWriter(path, lines[:4] + [b"{not json\n"], split=[2])
        writer.start()
        await until(pilot, lambda: len(screen.trace.steps) == 3 and screen.line_errors == 1, "3 steps")
        writer.join()
        steps = screen.steps
        assert [screen.trace.steps[i].coord for i in steps.shown] == [s.coord for s in sample.steps[:3]]
        assert steps.step_index == 2  # the cursor was on the last step: it followed
        await noted(pilot, "Line skipped: line 5: not valid JSON")
        # the user moves up; the rest of the run arrives; the cursor stays put
        await pilot.press("k")
        assert steps.step_index == 1
        writer = LineWriter(path, lines[4:])
        writer.start()
        await until(
            pilot,
            lambda: len(screen.trace.steps) == len(sample.steps) and screen.decisive is not None,
            "the whole run and a decisive error",
        )
        writer.join()
        await pilot.pause()
        assert steps.step_index == 1
        assert [screen.trace.steps[i].coord for i in steps.shown] == [s.coord for s in sample.steps]
        decisive = [n for n in await noted(pilot, "Decisive error") if n.startswith("Decisive error")]
        assert len(decisive) == 1 and "step 3 [solver] R.3" in decisive[0]
        # trace text is shown as it is, never read as Rich markup ("[solver]" would vanish)
        assert all(n.markup is False for n in app._notifications)
        assert steps.attributed == frozenset({3})  # the decisive step is marked
        await shows(pilot, "DECISIVE step 3 [solver] R.3", "◆")
        await pilot.press("s")
        assert steps.step_index == 3
        # at the last step the list follows again; a closing header updates the header
        await until(pilot, lambda: screen.ended == "final_answer", "the run's end")
        await pilot.press("G")
        with path.open("ab") as fh:
            fh.write(dump_lines([{"id": sample.id, "outcome": "failure", "final_answer": "11:45"}])[0])
        await until(pilot, lambda: screen.trace.outcome.value == "failure", "the closing header")
        await shows(pilot, "failure", "run ended (final_answer)")


async def test_a_truncated_file_keeps_the_shared_steps_and_the_cursor(tmp_path):
    sample = load_trace(TEAM)
    lines = native_lines(sample)
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(lines[:6]))
    app = WhenproApp("", cursor_blink=False, start=follow_start(str(path), LiveOptions(judge=False)))
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await first_screen(pilot, LiveTraceScreen)
        await until(pilot, lambda: len(screen.trace.steps) == 5, "5 steps")
        await pilot.press("g", "j")
        assert screen.steps.step_index == 1
        path.write_bytes(b"".join(lines[:4]))  # shorter: steps 0-2 are kept
        await until(pilot, lambda: len(screen.trace.steps) == 3, "the truncation")
        assert screen.steps.step_index == 1
        await noted(pilot, "truncated")
        with path.open("ab") as fh:
            fh.write(b"".join(lines[4:]))
        await until(pilot, lambda: len(screen.trace.steps) == len(sample.steps), "the rest")
        assert screen.steps.step_index == 1
        await pilot.press("s")
        await noted(pilot, "Live judging is off")
        await shows(pilot, "judging off")
        assert not screen.steps.attributed


async def test_a_decisive_step_cut_away_by_truncation_is_forgotten(tmp_path):
    sample = load_trace(TEAM)
    lines = native_lines(sample)
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(lines))
    app = WhenproApp("", cursor_blink=False, start=follow_start(str(path), LiveOptions()))
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await first_screen(pilot, LiveTraceScreen)
        await until(pilot, lambda: screen.decisive is not None, "a decisive error")
        await shows(pilot, "DECISIVE")
        path.write_bytes(b"".join(lines[:2]))  # the run was restarted: one step so far
        await until(pilot, lambda: len(screen.trace.steps) == 1, "the truncation")
        await pilot.pause()
        await until(
            pilot, lambda: "DECISIVE" not in screen_text(app), "the mark to go", detail=lambda: screen_text(app)
        )
        assert screen.decisive is None


async def test_an_idle_spell_after_the_run_ended_leaves_the_end_as_the_news(tmp_path):
    """Once the run has ended, "no new data" is no news: the bar keeps saying how it
    ended (a loaded machine made the idle notice replace it, 2 s after the last line)."""
    sample = load_trace(TEAM)
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(native_lines(sample)))
    app = WhenproApp("", cursor_blink=False, start=follow_start(str(path), LiveOptions()))
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await first_screen(pilot, LiveTraceScreen)
        await until(pilot, lambda: screen.ended == "final_answer", "the run's end")
        # a quiet spell, then a bad line: once the line is counted, the spell was handled too
        screen.post_message(LiveEvents([Idle(sample.id, 2.0), LineError(sample.id, 9, "not valid JSON")]))
        await until(pilot, lambda: screen.line_errors == 1, "the events")
        assert screen.news == "run ended (final_answer) after 7 steps"
        await shows(pilot, "run ended (final_answer)", "1 bad line skipped")


async def test_otlp_traces_appear_live_and_open(tmp_path):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from tests.support.otel_agent import provider, run_workshop_agent

    def export(endpoint: str) -> str:
        tp = provider(endpoint)
        trace_id = run_workshop_agent(tp)
        tp.shutdown()
        return trace_id

    store = tmp_path / "store"
    app = WhenproApp("", cursor_blink=False, start=otlp_start("127.0.0.1:0", LiveOptions(), store=store))
    async with app.run_test(size=(130, 34)) as pilot:
        screen = await first_screen(pilot, IncomingScreen, lambda s: s.started)
        await shows(pilot, "waiting for traces")
        trace_id = await asyncio.to_thread(export, screen.receiver.endpoint)
        await until(
            pilot,
            lambda: trace_id in screen.listing.rows and screen.listing.rows[trace_id].decisive is not None,
            "the trace and its verdict",
        )
        await shows(pilot, trace_id[:16], "workshop-agent", "DECISIVE step 2 [planner] R.3")
        row = screen.listing.rows[trace_id]
        assert row.steps == 5 and row.service == "workshop-agent"  # the invoke_agent span frames the steps
        flagged = [n for n in await noted(pilot, "Decisive error") if n.startswith("Decisive error")]
        assert len(flagged) == 1 and trace_id[:16] in flagged[0] and "[planner] R.3" in flagged[0]
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, LiveTraceScreen), "the live trace view")
        live = app.screen
        # the steps, the verdict and the run's end each arrive as their own message
        await until(
            pilot,
            lambda: len(live.trace.steps) == 5 and live.steps.attributed and live.ended is not None,
            "the steps, the verdict and the run's end",
        )
        await shows(pilot, "DECISIVE step 2 [planner] R.3", "run ended (root_span_ended)")
        assert live.trace.id == trace_id and len(live.trace.steps) == 5
        assert live.steps.step_index == 4  # opened on the newest step, following
        assert live.steps.attributed == frozenset({2})
        assert len([n for n in notes(app) if n.startswith("Decisive error")]) == 1  # not again
        await pilot.press("q")
        assert app.screen is screen and screen.live_screen is None
    assert (store / f"{trace_id}.json").exists()


def test_live_options_are_checked_before_the_tui(tmp_path):
    with pytest.raises(ConfigError, match="do not go together"):
        view_start(None, follow=str(tmp_path / "a"), otlp="127.0.0.1:0")
    with pytest.raises(ConfigError, match="is a folder"):
        view_start(None, follow=str(tmp_path))
    with pytest.raises(ConfigError, match="takes no PATH"):
        view_start("x.json", follow=str(tmp_path / "a"))
    with pytest.raises(ConfigError, match="cannot judge live"):
        view_start(None, follow=str(tmp_path / "a"), live=LiveOptions(protocol="binary-search"))
    assert view_start(str(tmp_path)) is None  # a plain view
    with pytest.raises(TraceFormatError, match="no such results file"):
        view_start(None, results=[str(tmp_path / "r.jsonl")])  # --results alone: no dataset needed


def test_cli_view_errors_are_one_line(tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT

    def whenpro(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "whenpro_core.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
        )

    (tmp_path / "t.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    for args, message in [
        (("view", str(tmp_path), "--results", str(tmp_path / "t.jsonl")), "not a whenpro bench results file"),
        (("view", str(tmp_path), "--validate"), "not a dataset built by whenpro build"),
        (("view", "--follow", str(tmp_path / "x.jsonl"), "--otlp"), "do not go together"),
        (("view",), "nothing to view"),
        (("view", "--follow", str(tmp_path)), "is a folder"),
    ]:
        proc = whenpro(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("whenpro: error:") and message in lines[0], lines


@pytest.mark.parametrize("budget", [None, 1])
async def test_follow_judges_step_by_step_through_the_openai_sdk(tmp_path, llm_server, monkeypatch, budget):
    from tests.support.fixtures import TEST_KEY
    from tests.support.judge_oracle import oracle_for

    sample = load_trace(TEAM)
    llm_server.respond_with(oracle_for(sample))
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    path = tmp_path / "run.jsonl"
    opts = LiveOptions(model="openai:gpt-4.1", budget_calls=budget, no_cache=True)
    app = WhenproApp("", cursor_blink=False, start=follow_start(str(path), opts))
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await first_screen(pilot, LiveTraceScreen, lambda _s: "step-by-step judging" in screen_text(app))
        writer = LineWriter(path, native_lines(sample))
        writer.start()
        if budget is None:
            # the verdict, then its notification
            await until(
                pilot,
                lambda: any(n.startswith("Decisive error (step-by-step)") for n in notes(app)),
                "the step-by-step verdict",
            )
            writer.join()
            d = screen.decisive
            assert (d.step, d.agent, d.mode) == ("3", "solver", "R.3")
            assert screen.decisive.protocol == "step-by-step"
            assert screen.steps.attributed == frozenset({3})
        else:
            await until(pilot, lambda: "budget" in screen.judging, "the budget to run out")
            writer.join()
            assert screen.decisive is None and len(llm_server.answered) == 1
            await noted(pilot, "Budget exhausted (calls): 1 calls")
            await shows(pilot, "judging stopped: calls budget spent")
        assert TEST_KEY not in screen_text(app)


async def test_a_burst_of_bad_lines_is_one_notification_and_a_lasting_count(tmp_path):
    lines = native_lines(load_trace(TEAM))
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(lines[:3]) + b"not json\n" * 40 + lines[3])
    app = WhenproApp("", cursor_blink=False, start=follow_start(str(path), LiveOptions(judge=False)))
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await first_screen(pilot, LiveTraceScreen)
        await until(pilot, lambda: len(screen.trace.steps) == 3 and screen.line_errors == 40, "40 bad lines")
        skipped = [n for n in await noted(pilot, "skipped") if "skipped" in n.lower()]
        assert len(skipped) == 1 and "40 lines skipped" in skipped[0], notes(app)
        await until(pilot, lambda: "no new data" in screen.news, "an idle spell")  # newer news...
        await shows(pilot, "40 bad lines skipped")  # ...keeps the count on the bar


async def test_follow_with_the_counterfactual_replays_the_run_when_it_ends(tmp_path):
    """``view --follow --protocol counterfactual`` on a replayable run: judged live, then the
    replay search's final verdict is the news and a notification (issue 32)."""
    from tests.test_watch_counterfactual import _failed_run, _write_lines

    path = _write_lines(_failed_run(), tmp_path / "run.jsonl")
    start = follow_start(str(path), LiveOptions(protocol="counterfactual"))
    app = WhenproApp("", cursor_blink=False, start=start)
    async with app.run_test(size=(120, 34), notifications=True) as pilot:
        screen = await first_screen(pilot, LiveTraceScreen)
        await noted(pilot, "final verdict (counterfactual): step 1 [planner]")
        assert screen.decisive is not None


async def test_follow_marks_the_decisive_step_after_a_header_stating_the_outcome(tmp_path):
    """Issue 32: a first line saying ``"outcome": "failure"`` used to end judging there, so
    ``view --follow`` marked nothing; the steps after it are judged and ◆ is shown."""
    import orjson

    sample = load_trace(TEAM)
    lines = native_lines(sample)
    header = orjson.loads(lines[0]) | {"outcome": "failure"}
    path = tmp_path / "run.jsonl"
    path.write_bytes(dump_lines([header])[0])
    app = WhenproApp("", cursor_blink=False, start=follow_start(str(path), LiveOptions()))
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await first_screen(pilot, LiveTraceScreen)
        writer = LineWriter(path, lines[1:])
        writer.start()
        await until(pilot, lambda: len(screen.trace.steps) == len(sample.steps), "every step")
        writer.join()
        await until(pilot, lambda: screen.decisive is not None, "a decisive error")
        await shows(pilot, "DECISIVE")
