"""Shared fixtures: real traces from ../shared/real_traces (skipped with a clear reason
when absent), small made-up native traces, and helpers to drive the TUI with Pilot
without sleeps (harlequin's functional-test style)."""

from __future__ import annotations

import asyncio
import base64
import os
import struct
import zlib
from pathlib import Path

import pytest
from textual.worker import WorkerState

from tests.support.waiting import POLL_S, TIMEOUT_S, Deadline, until, wait_until  # noqa: F401  (the one way tests wait)
from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import Agent, GroundTruth, MediaRef, Outcome, Step, Task, ToolCall, Trace

ROOT = REPO = REPO_ROOT = Path(__file__).resolve().parent.parent
#: ``$WHENPRO_REAL_TRACES`` or ``<repo>/../shared/real_traces``: present in CI and the dev
#: sandbox, absent in a user's clone (tests using it skip with a reason).
REAL_TRACES = Path(os.environ.get("WHENPRO_REAL_TRACES") or ROOT.parent / "shared" / "real_traces")
REAL = REAL_TRACES  # alias used by other test modules
SAMPLES = ROOT / "sample_traces"

# ``whenpro_env`` (autouse) isolates config/cache/data folders and provider keys;
# ``llm_server`` / ``llm_settings`` run the local LLM test server.
# ``browser`` / ``chromium_path``: headless system Chromium through Playwright.
pytest_plugins = ["tests.support.fixtures", "tests.support.browser", "tests.support.real_model"]
WHOWHEN = REAL_TRACES / "who-and-when" / "Who&When"
#: The official Who&When Pro harness (``whowhen_eval``): ``$WHENPRO_OFFICIAL_HARNESS_DIR``,
#: or ``official-harness`` beside the real traces (``<repo>/../shared/official-harness`` in CI).
OFFICIAL_HARNESS = Path(os.environ.get("WHENPRO_OFFICIAL_HARNESS_DIR") or REAL_TRACES.parent / "official-harness")


@pytest.fixture
def official_harness() -> Path:
    """The official harness checkout, importable as ``whowhen_eval`` (its folder put on
    sys.path); skips the test when it is not there."""
    import sys

    if not (OFFICIAL_HARNESS / "whowhen_eval" / "parse.py").is_file():
        pytest.skip(f"the official harness is not present at {OFFICIAL_HARNESS} (set WHENPRO_OFFICIAL_HARNESS_DIR)")
    if str(OFFICIAL_HARNESS) not in sys.path:
        sys.path.insert(0, str(OFFICIAL_HARNESS))
    return OFFICIAL_HARNESS


@pytest.fixture
def real_traces() -> Path:
    """The shared real-trace folder; skips the test when it is not there."""
    if not REAL_TRACES.is_dir():
        pytest.skip(f"real traces not present at {REAL_TRACES} (set WHENPRO_REAL_TRACES)")
    return REAL_TRACES


@pytest.fixture
def whowhen(real_traces: Path) -> Path:
    """The Who&When (original) folder with Hand-Crafted/ and Algorithm-Generated/."""
    path = real_traces / "who-and-when" / "Who&When"
    if not path.is_dir():
        pytest.skip(f"Who&When traces not present at {path}")
    return path


# --------------------------------------------------------------------------- made-up traces


def tiny_png(width: int = 4, height: int = 3) -> str:
    """A valid RGB PNG of the given size, base64 (no data: prefix)."""
    raw = b"".join(b"\x00" + b"\x80\x40\x20" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode()


def team_trace(trace_id: str = "team-1", *, n_extra: int = 0) -> Trace:
    """A small multi-agent trace with every kind of step field: Markdown, JSON and code
    content, a tool call with arguments, an observation, an error, an image, a hidden
    injection marker on the GT step, and text that looks like Rich markup."""
    steps = [
        Step(
            index=0,
            coord="0",
            agent="user",
            kind="user",
            content="Compute the total cost of 3 widgets at $4.50 each, plus 8% tax.",
        ),
        Step(
            index=1,
            coord="1",
            agent="planner",
            kind="plan",
            content="## Plan\n\n1. Multiply price by quantity\n2. Add **8%** tax\n3. Report",
        ),
        Step(
            index=2,
            coord="2",
            agent="coder",
            kind="action",
            content="subtotal = 3 * 4.50\ntax = subtotal * 0.08\nprint(subtotal + tax)",
            tool_calls=[ToolCall(id="call_1", name="python", arguments={"code": "print(3*4.5*1.08)"})],
            observation="14.58",
        ),
        Step(
            index=3,
            coord="3",
            agent="coder",
            kind="action",
            content="The tax is 8 so the total is [bold]13.50 + 8 = 21.50[/bold].",
            hidden={"is_injected": True},
        ),
        Step(
            index=4,
            coord="4",
            agent="checker",
            kind="observation",
            content='{"verdict": "looks fine", "checked": ["subtotal", "tax"]}',
            media=[MediaRef(kind="image", data=tiny_png(), mime="image/png", label="receipt")],
        ),
        Step(
            index=5,
            coord="5",
            agent="coder",
            kind="tool",
            content="",
            tool_calls=[ToolCall(name="submit", arguments='{"answer": "21.50"}')],
            error="ToolError: submit rejected the answer format",
        ),
        Step(index=6, coord="6", agent="planner", kind="final_answer", content="Final answer: 21.50"),
    ]
    for k in range(n_extra):
        i = len(steps)
        steps.append(
            Step(index=i, coord=str(i), agent=("coder", "checker")[k % 2], kind="assistant", content=f"filler step {i}")
        )
    return Trace(
        id=trace_id,
        framework="toyteam",
        benchmark="arith",
        agents=[Agent(id="user"), Agent(id="planner"), Agent(id="coder"), Agent(id="checker")],
        task=Task(query="Compute the total cost of 3 widgets at $4.50 each, plus 8% tax.", answer="14.58"),
        steps=steps,
        ground_truth=GroundTruth(
            agent="coder", step="3", step_index=3, mode="R.3", reason="Used 8 as an absolute tax instead of 8%."
        ),
        final_answer="21.50",
        outcome=Outcome.failure,
    )


@pytest.fixture
def team_file(tmp_path: Path) -> Path:
    """The made-up team trace written as a native file."""
    return write_trace(team_trace(), tmp_path / "team-1.json")


@pytest.fixture
def dataset_dir(tmp_path: Path) -> Path:
    """A folder of three native traces, a truncated JSON file and a binary file."""
    folder = tmp_path / "dataset"
    folder.mkdir()
    for i, (fw, bench) in enumerate([("toyteam", "arith"), ("toyteam", "gaia"), ("other", "gaia")], start=1):
        t = team_trace(f"team-{i}", n_extra=i)
        t.framework, t.benchmark = fw, bench
        write_trace(t, folder / f"team-{i}.json")
    (folder / "truncated.json").write_text('{"format": "whenpro.trace/1", "id": "x", "steps": [')
    (folder / "binary.json").write_bytes(b"\x00\x01\x02\xff\xfe" * 50)
    return folder


# --------------------------------------------------------------------------- TUI helpers


@pytest.fixture(autouse=True)
def keys_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pilot.press(*keys)`` sends each key only once the screen has handled what the
    previous one started. Textual's own press moves on to the next key when the process
    *looks* idle (CPU time barely advancing for 20 ms): on a loaded machine a starved
    process looks idle too, and ``press(":", "4", "enter", "i")`` then types the ``4``
    before the go-to prompt is mounted and focused (the key is lost, the dialog opens
    on the wrong step). Here, after each key, the current screen is waited for until it
    is mounted (a screen the key pushed), then it handles once more every message queued
    so far (what its ``on_mount`` started: the focus on its input). Not
    ``pilot.pause()``: after a key that ends the app there is no screen to pause on."""
    from textual.pilot import Pilot

    press_all = Pilot.press

    async def press(self: Pilot, *keys: str) -> None:
        for key in keys:
            await press_all(self, key)
            await screen_ready(self)

    monkeypatch.setattr(Pilot, "press", press)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five successful arith_team runs (seeds 0-4), once per module: the seed runs of the
    sharded and Ray build tests (a module may define its own ``seeds``)."""
    from whenpro_core.envs import get_env
    from whenpro_core.envs.run import run_env
    from whenpro_core.formats.native import write_trace

    folder = tmp_path_factory.mktemp("seeds")
    env = get_env("arith_team")
    for s in range(5):
        write_trace(run_env(env, s), folder / f"arith_team-s{s}.json")
    return folder


@pytest.fixture(autouse=True)
def notifications_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Toasts stay until the test ends: a test that waits for a notification reads
    ``app._notifications``, and on a loaded machine the few seconds a toast is shown could
    pass before the test looked (a truncation notice had come and gone: "timed out waiting
    for a notification 'truncated'", with no notification left)."""
    from whenpro_tui.app import WhenproApp

    notify = WhenproApp.notify

    def lasting(self: WhenproApp, message: str, **kwargs) -> None:
        kwargs["timeout"] = 3600
        notify(self, message, **kwargs)

    monkeypatch.setattr(WhenproApp, "notify", lasting)


async def screen_ready(pilot) -> None:
    """Wait until the app's current screen is mounted and has handled the messages queued
    so far (returns at once when the app has ended)."""
    deadline = Deadline(TIMEOUT_S)
    while True:
        await pilot._wait_for_screen()
        try:
            screen = pilot.app.screen
        except Exception:  # noqa: BLE001 - no screen: the app has ended
            return
        if screen.is_mounted:
            break
        deadline.check("the screen to be mounted", lambda shown=screen: repr(shown))
        await asyncio.sleep(POLL_S)
    await pilot._wait_for_screen()


async def settle(pilot, rounds: int = 2) -> None:
    """Wait until the app is quiet: no worker pending or running at ``rounds`` checks in a
    row, each after the screen has handled every message queued before it (so what the
    last workers posted, and what those messages started, is done too). Waits for the
    event, never for a time; fails (``tests.support.waiting.Deadline``) if it never comes."""
    deadline = Deadline(TIMEOUT_S)
    quiet = 0
    while quiet < rounds:
        deadline.check("the app to settle", lambda: f"busy: {busy_workers(pilot.app)}")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        quiet = 0 if busy_workers(pilot.app) else quiet + 1


def busy_workers(app) -> list[str]:
    """Names of the app's workers that are pending or running."""
    return [w.name or w.description for w in app.workers if w.state in (WorkerState.PENDING, WorkerState.RUNNING)]


def screen_text(app) -> str:
    """What the terminal would show, as plain text lines."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def terminal_output(app) -> str:
    """The exact characters a full repaint would write to the terminal."""
    update = app.screen._compositor.render_full_update()
    return update.render_segments(app.console)
