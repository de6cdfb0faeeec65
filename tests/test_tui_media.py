"""Images and video keyframes in the trace screen, driven with Pilot: thumbnails with
labels and sizes on the real Who&When Pro image trace and the bar-chart sample, the
full-size modal (open, next, previous, close, click), ``--images off``, the keyframe
strip of a real generated video (timestamps on its known cuts) and of the frames a
real video trace references, cancelling keyframe extraction by moving on (and the
disk cache on the next visit), error lines for bad media, and the library on the
Who&When Pro JSONL release and sample folder.

Images use the half-cell renderer with a fixed 10×20 px cell (no terminal queries)."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import orjson
import pytest
from PIL import Image as PILImage
from textual.worker import WorkerState

from tests.conftest import REAL_TRACES, SAMPLES, screen_text, settle, tiny_png
from tests.support.waiting import TIMEOUT_S, until
from tests.test_media_preview import png_header
from tests.videoclips import write_clip
from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import MediaRef, Step, Task, Trace
from whenpro_tui import imaging
from whenpro_tui.app import WhenproApp
from whenpro_tui.messages import KeyframesLoaded, KeyframesProgress
from whenpro_tui.screens.library import LibraryScreen
from whenpro_tui.screens.media_modal import MediaModal
from whenpro_tui.screens.trace import TraceScreen
from whenpro_tui.widgets.media_panel import MediaPanel
from whenpro_tui.widgets.media_strip import Tile
from whenpro_tui.widgets.step_list import StepList

PRO_SAMPLES = REAL_TRACES / "who-when-pro-samples"
PRO_JSONL = REAL_TRACES / "who-when-pro-jsonl"


@pytest.fixture(autouse=True)
def fixed_cells() -> None:
    imaging.fix_cell_size(10, 20)


def real_path(*parts: str) -> Path:
    path = REAL_TRACES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real traces not present at {path} (set WHENPRO_REAL_TRACES)")
    return path


def make_app(target: Path | str, images: str = "halfcell") -> WhenproApp:
    return WhenproApp(str(target), cursor_blink=False, images=images)


async def go_to(pilot, index: int) -> TraceScreen:
    """Open the trace, move the cursor to step ``index`` and wait for the media workers."""
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, TraceScreen)
    screen.query_one(StepList).move_cursor(index)
    await settle(pilot)
    return screen


def panel(app) -> MediaPanel:
    return app.screen.query_one(MediaPanel)


def captions(app, strip: str) -> list[tuple[str, str]]:
    return [(e.label, e.detail) for e in panel(app).strip(strip).entries]


def error_lines(app) -> str:
    errors = panel(app).query_one("#mp-errors")
    return str(errors.render()) if errors.display else ""


# ----------------------------------------------------------------------------- images


async def test_real_image_trace_task_and_observation_images() -> None:
    trace = real_path("who-when-pro-samples", "data", "traces", "mmsearch_car.json")
    app = make_app(trace)
    async with app.run_test(size=(140, 45)) as pilot:
        await go_to(pilot, 0)
        assert captions(app, "images")[0][0] == "task: query #1"
        assert captions(app, "images")[0][1].startswith("900×532 · ")
        assert len(captions(app, "images")) == 1  # the step's copy of the same picture is not repeated
        assert all(e.image is not None for e in panel(app).strip("images").entries)
        await go_to(pilot, 2)
        text = screen_text(app)
        assert "▣ Images 5" in text and "observation #1" in text and "570×570 · " in text
        entries = panel(app).strip("images").entries
        assert len(entries) == 5 and all(e.image is not None and e.error is None for e in entries)
        assert error_lines(app) == ""
        # decoded thumbnails are kept per MediaRef: coming back needs no worker
        await go_to(pilot, 3)
        assert not panel(app).display
        app.screen.query_one(StepList).move_cursor(2)
        await pilot.pause()
        assert all(e.image is not None and not e.loading for e in panel(app).strip("images").entries)


async def test_resize_and_keys_while_the_media_panel_mounts() -> None:
    """Issue 13 item 6: in a browser session the first resize and the first keys arrive
    while the media panel of the first image step is still being mounted (it is in the
    DOM, its strips and tiles are not yet). A resize (refit) and showing another step
    in that window must wait for the panel, not query its missing strips
    (``NoMatches '#mp-images'``, ``IndexError`` in ``_mark_cursor``)."""
    trace = real_path("who-when-pro-samples", "data", "traces", "mmsearch_car.json")
    imaging.import_widgets()  # the panel's mount then starts one thread hop after the first paint
    app = make_app(trace)
    async with app.run_test(size=(120, 40)) as pilot:
        mounting = None
        for _ in range(100_000):  # bounded: yield to the app until the panel is attached
            found = app.screen.query(MediaPanel)
            if found:
                mounting = found.first()
                break
            await asyncio.sleep(0)
        assert mounting is not None and not mounting.is_mounted, "not caught while mounting"
        screen = app.screen
        assert isinstance(screen, TraceScreen)
        screen.media_resized()  # what the browser's first resize does
        screen.query_one(StepList).move_cursor(2)  # the user presses j j
        screen.show_media(2)
        await settle(pilot)
        assert app.is_running and app._exception is None
        assert screen.query_one(StepList).step_index == 2
        assert "▣ Images 5" in screen_text(app) and "observation #1" in screen_text(app)
        assert all(e.image is not None for e in panel(app).strip("images").entries)


async def test_sample_bar_chart_image_with_label_and_size() -> None:
    chart = SAMPLES / "bar_chart" / "chart.png"
    with PILImage.open(chart) as im:
        width, height = im.size
    size = f"{width}×{height} · {round(chart.stat().st_size / 1024)} KB"
    app = make_app(SAMPLES / "bar_chart" / "trace.json")
    async with app.run_test(size=(120, 40)) as pilot:
        await go_to(pilot, 0)
        assert captions(app, "images") == [("chart", size)]
        tile = panel(app).strip("images").query_one(Tile)
        thumb = tile.query_one(".t-img").image
        assert max(thumb.size) <= 256 and abs(thumb.size[0] / thumb.size[1] - width / height) < 0.02
        assert "chart" in screen_text(app) and size in screen_text(app)
        await go_to(pilot, 1)
        assert not panel(app).display


async def test_modal_opens_moves_and_closes() -> None:
    trace = real_path("who-when-pro-samples", "data", "traces", "mmsearch_car.json")
    app = make_app(trace)
    async with app.run_test(size=(100, 30)) as pilot:
        await go_to(pilot, 2)
        await pilot.press("m")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, MediaModal)
        assert "observation #1   1/5   570×570" in screen_text(app)
        assert modal.image_widget.image is not None
        assert modal.image_widget.image.size[0] <= 120  # decoded for the screen, not 570 px
        await pilot.press("n")
        await settle(pilot)
        assert "observation #2   2/5" in screen_text(app)
        await pilot.press("right", "right")
        await settle(pilot)
        assert "observation #4   4/5" in screen_text(app)
        await pilot.press("p")
        await settle(pilot)
        assert "observation #3   3/5" in screen_text(app) and modal.image_widget.image is not None
        await pilot.press("end", "n")
        await settle(pilot)
        assert "5/5" in screen_text(app)
        assert any("last image" in str(n.message) for n in app._notifications)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        # clicking a thumbnail opens that image
        tiles = list(panel(app).strip("images").query(Tile))
        await pilot.click(tiles[1])
        await settle(pilot)
        assert isinstance(app.screen, MediaModal) and "observation #2   2/5" in screen_text(app)
        await pilot.press("escape")
        await pilot.press("j")  # a step without media
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, TraceScreen)
        assert any("no images or frames" in str(n.message) for n in app._notifications)


async def test_images_off_keeps_the_text_placeholders() -> None:
    trace = real_path("who-when-pro-samples", "data", "traces", "mmsearch_car.json")
    app = make_app(trace, images="off")
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await go_to(pilot, 2)
        assert not screen.query(MediaPanel)
        text = screen_text(app)
        assert "[image: observation #1]" in text and "▀" not in text
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, TraceScreen)
        assert any("Images are off" in str(n.message) for n in app._notifications)


async def test_bad_images_show_error_lines(tmp_path: Path) -> None:
    data = tmp_path / "dataset"
    data.mkdir()
    (tmp_path / "secret.png").write_bytes(base64.b64decode(tiny_png()))
    (data / "ok.png").write_bytes(base64.b64decode(tiny_png(8, 6)))
    (data / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"not really" * 40)
    (data / "bomb.png").write_bytes(png_header(40_000, 40_000))
    refs = [
        MediaRef(kind="image", path="ok.png", label="good"),
        MediaRef(kind="image", path="../secret.png", label="outside"),
        MediaRef(kind="image", path="missing.png", label="missing"),
        MediaRef(kind="image", path="corrupt.png", label="corrupt"),
        MediaRef(kind="image", path="bomb.png", label="bomb"),
        MediaRef(kind="image", data="@@@", label="bad base64"),
    ]
    trace = Trace(
        id="bad-media",
        steps=[Step(index=0, coord="0", kind="tool", media=refs), Step(index=1, coord="1", content="next")],
    )
    path = write_trace(trace, data / "trace.json")
    app = make_app(path)
    async with app.run_test(size=(140, 45)) as pilot:
        await go_to(pilot, 0)
        entries = panel(app).strip("images").entries
        assert entries[0].image is not None and entries[0].error is None
        assert [e.image for e in entries[1:]] == [None] * 5
        lines = error_lines(app).splitlines()
        assert len(lines) == 5
        assert lines[0].startswith("✗ outside: ") and "refused" in lines[0]
        assert lines[1].startswith("✗ missing: ") and "not found" in lines[1]
        assert lines[2].startswith("✗ corrupt: ") and "not a decodable image" in lines[2]
        assert lines[3].startswith("✗ bomb: ") and "decompression bomb" in lines[3]
        assert lines[4].startswith("✗ bad base64: ") and "base64" in lines[4]
        assert "✗ outside" in screen_text(app)
        # the modal shows the error instead of an image, and the app keeps running
        await pilot.press("m", "n")
        await settle(pilot)
        assert "refused" in screen_text(app) and app.screen.image_widget.image is None
        await pilot.press("escape", "j")
        await settle(pilot)
        assert app.is_running and not panel(app).display


# ----------------------------------------------------------------------------- video


async def test_keyframe_strip_of_the_sample_video_has_its_cuts() -> None:
    app = make_app(SAMPLES / "video_scene_qa" / "trace.json")
    async with app.run_test(size=(120, 36)) as pilot:
        await go_to(pilot, 1)  # the user step presents the task video
        labels = [label for label, _ in captions(app, "frames")]
        assert len(labels) == 8
        assert [x for x in labels if x.endswith("✂")] == ["1.60 s ✂", "3.20 s ✂", "4.80 s ✂"]
        assert labels[0] == "0.00 s"
        text = screen_text(app)
        assert "▶ task: clip · 8 keyframes (3 cuts ✂) · 150 frames, 6.00 s" in text
        assert "cached" not in text
        await pilot.press("M")
        strip = panel(app).strip("frames")
        assert app.focused is strip and strip.cursor == 0
        await pilot.press("right", "right", "right", "left")
        assert strip.cursor == 2
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, MediaModal)
        assert "task: clip · 1.60 s · frame 40 · scene cut   3/8   320×180" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is strip
        await pilot.press("escape")
        assert isinstance(app.focused, StepList)
        # frames the trace references: the tool step
        await go_to(pilot, 3)
        assert [label for label, _ in captions(app, "frames")][:2] == ["0.48 s", "1.48 s"]
        assert "Frames 6  0.48 s – 5.48 s referenced by the trace" in screen_text(app)


async def test_frames_referenced_by_a_real_video_trace() -> None:
    trace = real_path("who-when-pro-samples", "data", "traces", "lvbench_camel.json")
    app = make_app(trace)
    async with app.run_test(size=(120, 36)) as pilot:
        await go_to(pilot, 3)
        frames = captions(app, "frames")
        assert [label for label, _ in frames] == [
            "0.00 s",
            "11.00 s",
            "22.00 s",
            "33.00 s",
            "44.00 s",
            "55.00 s",
            "1:06.0",
            "1:17.0",
            "1:28.0",
            "1:40.0",
        ]
        assert frames[1][1] == "frame 1 @ 11s"
        assert all(e.image is not None for e in panel(app).strip("frames").entries[:10])
        assert "Frames 10  0.00 s – 1:40.0 referenced by the trace" in screen_text(app)
        await pilot.press("M", "right", "enter")
        await settle(pilot)
        assert "frame 1 @ 11s · 11.00 s   2/10   640×" in screen_text(app)


@pytest.fixture(scope="module")
def long_video_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace whose task is a 6,000-frame video (solid scenes, cuts at 80 s and
    160 s): long enough to still be decoding when the user moves on."""
    folder = tmp_path_factory.mktemp("longvideo")
    write_clip(
        folder / "long.mp4",
        [(2000, ("solid", (200, 40, 40))), (2000, ("solid", (40, 200, 40))), (2000, ("solid", (40, 40, 200)))],
        size=(160, 90),
    )
    trace = Trace(
        id="long-video",
        task=Task(query="What happens?", images=[MediaRef(kind="video", path="long.mp4", label="long")]),
        steps=[
            Step(index=0, coord="0", kind="user", content="watch this"),
            Step(index=1, coord="1", content="it is red, then green, then blue"),
        ],
    )
    return write_trace(trace, folder / "trace.json")


async def test_moving_on_cancels_keyframes_and_the_cache_makes_revisits_instant(long_video_trace: Path) -> None:
    started = asyncio.Event()
    loaded: list[KeyframesLoaded] = []

    def hook(message) -> None:
        if isinstance(message, KeyframesProgress):
            started.set()
        elif isinstance(message, KeyframesLoaded):
            loaded.append(message)

    app = make_app(long_video_trace)
    async with app.run_test(size=(160, 40), message_hook=hook) as pilot:
        await asyncio.wait_for(started.wait(), timeout=TIMEOUT_S)
        # the hook sees the progress message before the screen shows it
        await until(pilot, lambda: "decoding" in screen_text(app), "the decoding progress on screen")
        workers = [w for w in app.workers if w.group == "media-keyframes"]
        await pilot.press("j")  # move on while the video is decoding
        await settle(pilot)
        assert [w.state for w in workers] == [WorkerState.CANCELLED]
        assert not loaded and not panel(app).display
        await pilot.press("k")  # back: decodes again (nothing was cached)
        await settle(pilot)
        assert len(loaded) == 1 and not loaded[0].result.cache_hit
        assert [e.label for e in panel(app).strip("frames").entries if e.label.endswith("✂")] == [
            "1:20.0 ✂",
            "2:40.0 ✂",
        ]
        await pilot.press("j", "k")  # third visit: read from the disk cache
        await settle(pilot)
        assert loaded[-1].result.cache_hit
        assert "6,000 frames, 4:00.0 · cached" in screen_text(app)


async def test_bad_video_is_an_error_line(tmp_path: Path) -> None:
    (tmp_path / "fake.mp4").write_bytes(b"this is not a video" * 100)
    trace = Trace(
        id="bad-video",
        task=Task(images=[MediaRef(kind="video", path="fake.mp4")]),
        steps=[
            Step(index=0, kind="user", content="q"),
            Step(index=1, kind="tool", media=[MediaRef(kind="video", path="/etc/passwd")]),
        ],
    )
    path = write_trace(trace, tmp_path / "trace.json")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await go_to(pilot, 0)
        assert "unavailable" in screen_text(app)
        assert error_lines(app).startswith("✗ task: fake.mp4: ") and "cannot open video" in error_lines(app)
        await go_to(pilot, 1)
        assert "refused" in error_lines(app)
        assert app.is_running


# ----------------------------------------------------------------------------- library


async def test_jsonl_release_lists_lazily_and_opens_a_row() -> None:
    release = real_path("who-when-pro-jsonl", "data", "text.jsonl")
    app = make_app(release)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, LibraryScreen)
        text = screen_text(app)
        assert "dabench_smolagents_0004" in text and "64 traces" in text.replace(",", "")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        assert app.screen.trace.id == "dabench_smolagents_0004"
        assert not app.screen.query(MediaPanel)  # a text trace: the panel is never mounted
        await pilot.press("]")
        await settle(pilot)
        assert app.screen.trace.id == "dabench_smolagents_0023"
        await pilot.press("q")
        await settle(pilot)
        library = app.screen
        assert isinstance(library, LibraryScreen)  # the row ] showed is filled in, as one opened with enter
        [row] = [r for r in library.table.rows if r.id == "dabench_smolagents_0023"]
        assert row.step_count is not None and row.step_count > 0


async def test_a_release_row_that_fails_to_open_does_not_stop_next_trace(tmp_path: Path) -> None:
    """``]`` onto a row whose trajectory is cut said "Could not open trace" and stayed
    put: every later ``]`` tried the same row again."""
    release = real_path("who-when-pro-jsonl", "data", "text.jsonl")
    rows = release.read_bytes().splitlines()[:3]
    broken = orjson.loads(rows[1])
    broken["trajectory"] = broken["trajectory"][:200]  # no longer JSON: the listing cannot tell
    data = tmp_path / "ds" / "data"
    data.mkdir(parents=True)
    (data / "text.jsonl").write_bytes(b"\n".join([rows[0], orjson.dumps(broken), rows[2]]) + b"\n")
    ids = [orjson.loads(r)["id"] for r in rows]
    app = make_app(data / "text.jsonl")
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen) and app.screen.trace.id == ids[0]
        await pilot.press("]")
        await settle(pilot)
        told = [str(n.message) for n in app._notifications]
        assert app.screen.trace.id == ids[0] and any("(trace 2; ]/[ move on from it)" in m for m in told), told
        await pilot.press("]")
        await settle(pilot)
        assert app.screen.trace.id == ids[2]


async def test_sample_folder_library_opens_image_and_video_traces() -> None:
    folder = real_path("who-when-pro-samples")
    app = make_app(folder)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        library = app.screen
        assert isinstance(library, LibraryScreen)
        text = screen_text(app)
        assert "image" in text and "video" in text
        ids = [library.table.rows[i].id for i in library.table.shown]
        library.table.move_cursor(ids.index("smolagents__mmsearch__PL.1__task_0274_auto_9__20260309_legacy"))
        await pilot.press("enter")
        screen = await go_to(pilot, 2)
        assert "▣" in screen_text(app)  # image marker in the step list
        assert len(panel(app).strip("images").entries) == 5
        assert all(e.image is not None for e in panel(app).strip("images").entries)
        await pilot.press("escape")
        await settle(pilot)
        library.table.move_cursor(ids.index("eva__lvbench__P.1__task_2393__20260423"))
        await pilot.press("enter")
        await go_to(pilot, 3)
        assert screen is not app.screen
        assert len(panel(app).strip("frames").entries) == 10
        assert panel(app).strip("frames").entries[9].image is not None


# ----------------------------------------------------------------------------- renderers


@pytest.mark.parametrize(
    "mode, widget", [("sixel", "SixelImage"), ("kitty", "TGPImage"), ("halfcell", "HalfcellImage")]
)
async def test_named_renderers_show_thumbnails(mode: str, widget: str) -> None:
    import textual_image.widget as widgets

    cls = getattr(widgets, widget)
    app = make_app(SAMPLES / "bar_chart" / "trace.json", images=mode)
    async with app.run_test(size=(100, 30)) as pilot:
        await go_to(pilot, 0)
        tile = panel(app).strip("images").query_one(Tile)
        image = tile.query_one(".t-img")
        assert type(image) is cls and image.image is not None
        assert captions(app, "images")[0][0] == "chart"
        await pilot.press("m")
        await settle(pilot)
        assert type(app.screen.image_widget) is cls
        assert app.screen.image_widget.image is not None


def test_browser_sessions_get_half_cell_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(imaging, "_prepared", {})
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.web_driver:WebDriver")
    assert [imaging.resolve(m) for m in imaging.MODES] == ["halfcell"] * 4 + ["off"]
    assert imaging.prepare("kitty") == "halfcell" and imaging.prepare("off") == "off"
    monkeypatch.delenv("TEXTUAL_DRIVER")
    assert imaging.resolve("sixel") == "sixel" and imaging.resolve("off") == "off"


async def test_M_on_a_step_without_media_goes_to_the_task_video() -> None:
    """Issue 32: the video sample's video is the task's (shown on the step presenting the
    task); ``M`` on another step used to do nothing. It moves there, shows the keyframes
    and says so in one line; a trace with no media at all says that instead."""
    app = make_app(SAMPLES / "video_scene_qa" / "trace.json")
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        screen = await go_to(pilot, 4)
        await pilot.press("M")
        await settle(pilot)
        await until(pilot, lambda: len(captions(app, "frames")) == 8, "the task video's keyframes")
        assert screen.query_one(StepList).step_index == 1
        assert "▶ task: clip · 8 keyframes" in screen_text(app)
        notes = [str(n.message) for n in app._notifications]
        assert any("task's video" in n and "step 1" in n for n in notes), notes
        await pilot.press("M")
        assert app.focused is panel(app).strip("frames")
    plain = make_app(SAMPLES / "team_text" / "trace.json")
    async with plain.run_test(size=(120, 36), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("M")
        await pilot.pause()
        assert any("no images or frames" in str(n.message) for n in plain._notifications)
