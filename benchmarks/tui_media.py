"""What the media caches buy in the trace screen's detail pane, measured in one run.

* **Keyframe strip**: :func:`whenpro_core.media.preview.video_keyframes` on a video
  the first time (sequential decode + cut detection) versus the next visit (on-disk
  cache hit: nothing decoded), on ``sample_traces/video_scene_qa/clip.mp4`` and, when
  present, ``$WHENPRO_REAL_TRACES/sample-videos/bikes.mp4``.
* **Thumbnails**: :func:`whenpro_core.media.preview.load_image` for the five
  observation images of the real Who&When Pro trace ``mmsearch_car.json`` (or the
  bar-chart sample when real traces are absent) with an empty cache versus the on-disk
  thumbnail cache, plus the JPEG → Pillow decode the worker does after it.
* **Step change in the TUI** (Pilot, half-cell): moving onto the image step until
  every thumbnail is shown, first visit (thread worker decodes) versus coming back
  (decoded thumbnails kept per MediaRef: no worker).

Each line prints the median of ``--reps`` runs and the ratio first/next. The machine
is shared: absolute numbers move between runs, the ratios much less.

Usage: ``python benchmarks/tui_media.py [--reps 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

REAL = Path(os.environ.get("WHENPRO_REAL_TRACES") or REPO.parent / "shared" / "real_traces")


def fresh_cache() -> None:
    """Point the media cache at a new empty folder."""
    os.environ["WHENPRO_CACHE_DIR"] = tempfile.mkdtemp(prefix="whenpro-bench-")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def line(name: str, first: list[float], nxt: list[float]) -> None:
    a, b = statistics.median(first), statistics.median(nxt)
    print(
        f"{name:<44} first {a * 1000:9.1f} ms   next {b * 1000:8.2f} ms   "
        f"first/next {a / b if b else float('inf'):8.1f}x"
    )


def bench_keyframes(reps: int) -> None:
    from whenpro_core.formats import load_trace
    from whenpro_core.media.preview import video_keyframes
    from whenpro_core.trace.model import MediaRef, Source, Trace

    sample = load_trace(str(REPO / "sample_traces" / "video_scene_qa" / "trace.json"))
    cases = [("keyframes: sample clip.mp4 (150 frames)", sample.task.images[0], sample)]
    bikes = REAL / "sample-videos" / "bikes.mp4"
    if bikes.is_file():
        trace = Trace(id="bikes", source=Source(path=str(bikes), root=str(bikes.parent)))
        cases.append(("keyframes: bikes.mp4 (250 frames, H.264)", MediaRef(kind="video", path="bikes.mp4"), trace))
    else:
        print(f"(bikes.mp4 not found under {REAL}: skipped)")
    for name, ref, trace in cases:
        first, nxt = [], []
        for _ in range(reps):
            fresh_cache()
            first.append(timed(lambda ref=ref, trace=trace: video_keyframes(ref, trace)))
            nxt.append(timed(lambda ref=ref, trace=trace: video_keyframes(ref, trace)))
        line(name, first, nxt)


def image_case():
    from whenpro_core.formats import load_trace

    real = REAL / "who-when-pro-samples" / "data" / "traces" / "mmsearch_car.json"
    if real.is_file():
        trace = load_trace(str(real))
        return "thumbnails: mmsearch_car step 1 (5 images)", trace, 2
    print(f"(real traces not found under {REAL}: using the bar-chart sample)")
    trace = load_trace(str(REPO / "sample_traces" / "bar_chart" / "trace.json"))
    return "thumbnails: bar_chart step 0 (1 image)", trace, 0


def bench_thumbnails(reps: int) -> None:
    from whenpro_core.media.images import THUMB_MAX_SIDE
    from whenpro_core.media.preview import load_image
    from whenpro_tui.imaging import pil_from_jpeg

    name, trace, index = image_case()
    refs = trace.steps[index].media

    def load_all() -> None:
        for ref in refs:
            pil_from_jpeg(load_image(ref, trace, max_side=THUMB_MAX_SIDE).jpeg)

    first, nxt = [], []
    for _ in range(reps):
        fresh_cache()
        first.append(timed(load_all))
        nxt.append(timed(load_all))
    line(name, first, nxt)


async def _step_change(trace_path: str, index: int) -> tuple[float, float]:
    from whenpro_tui import imaging
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.widgets.media_panel import MediaPanel
    from whenpro_tui.widgets.step_list import StepList

    imaging.fix_cell_size(10, 20)
    app = WhenproApp(trace_path, cursor_blink=False, images="halfcell")

    async with app.run_test(size=(140, 45)) as pilot:
        for _ in range(5):
            await app.workers.wait_for_complete()
            await pilot.pause()
        steps = app.screen.query_one(StepList)
        panel = app.screen.query_one(MediaPanel)

        async def visit() -> float:
            start = time.perf_counter()
            steps.move_cursor(index)
            while True:
                await pilot.pause()
                entries = panel.strip("images").entries
                if entries and all(not e.loading for e in entries):
                    return time.perf_counter() - start

        first = await visit()
        steps.move_cursor(index + 1)
        await pilot.pause()
        await pilot.pause()
        return first, await visit()


def bench_step_change(reps: int) -> None:
    name, trace, index = image_case()
    first, nxt = [], []
    for _ in range(reps):
        fresh_cache()
        a, b = asyncio.run(_step_change(str(trace.source.path), index))
        first.append(a)
        nxt.append(b)
    line("TUI step change: " + name.split(": ", 1)[1], first, nxt)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    reps = parser.parse_args().reps
    bench_keyframes(reps)
    bench_thumbnails(reps)
    bench_step_change(max(1, reps // 2))


if __name__ == "__main__":
    main()
