"""Build ``sample_traces/video_scene_qa/``: a small failed video-QA run with its video.

The folder holds ``clip.mp4`` (320x180, 25 fps, 6 s, four scenes with hard cuts at
frames 40, 80 and 120, i.e. 1.6 s, 3.2 s and 4.8 s; MPEG-4 Part 2 written by OpenCV),
the six JPEG frames a ``frame_select`` tool returned (``frames/``), and
``trace.json``, a native whenpro trace (``whenpro.trace/1``) of a single agent that
answers a multiple-choice question about the video:

    system, user                         (no coordinate: the framing)
    "0" assistant  calls frame_select(start_time=0, end_time=6, nframes=6)
    "1" tool       returns 6 frames (MediaRef kind="frame", with time_s)
    "2" assistant  calls the white triangle after the second cut a circle  <- decisive
    "3" final_answer  "A" (gold "C")

Ground truth: agent ``agent``, step ``"2"``, mode ``P.1`` (visual misidentification).

Everything is deterministic (fixed seed, no timestamps), so running the script again
rewrites byte-identical files: ``python sample_traces/make_video_sample.py [--out DIR]``
(the MP4 container names the FFmpeg build of the installed OpenCV wheel; the coded frames
matched between Lavc62 and Lavc63: the test compares those).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from whenpro_core.formats.native import write_trace  # noqa: E402
from whenpro_core.media.video import frames_at  # noqa: E402
from whenpro_core.storage.fsutil import atomic_write_bytes  # noqa: E402
from whenpro_core.trace.model import (  # noqa: E402
    Agent,
    GroundTruth,
    MediaRef,
    Modality,
    Outcome,
    Step,
    Task,
    ToolCall,
    Trace,
)

SIZE = (320, 180)
FPS = 25.0
SEED = 20260423
#: (frames, background BGR, shape, shape BGR) per scene.
SCENES = [
    (40, (150, 80, 20), "circle", (40, 40, 230)),  # blue sky, red ball
    (40, (60, 150, 40), "square", (30, 220, 240)),  # green field, yellow box
    (40, (40, 30, 30), "triangle", (245, 245, 245)),  # dark stage, white triangle
    (30, (40, 140, 240), "star", (150, 40, 140)),  # orange wall, purple star
]
SAMPLE_TIMES = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]
QUESTION = "Which shape appears on screen right after the second scene cut?"
OPTIONS = {"A": "circle", "B": "square", "C": "triangle", "D": "star"}


def _draw(frame: np.ndarray, shape: str, colour: tuple[int, int, int], cx: int, cy: int) -> None:
    r = 26
    if shape == "circle":
        cv2.circle(frame, (cx, cy), r, colour, -1, cv2.LINE_AA)
    elif shape == "square":
        cv2.rectangle(frame, (cx - r, cy - r), (cx + r, cy + r), colour, -1, cv2.LINE_AA)
    elif shape == "triangle":
        pts = np.array([[cx, cy - r], [cx - r, cy + r], [cx + r, cy + r]], np.int32)
        cv2.fillPoly(frame, [pts], colour, cv2.LINE_AA)
    else:
        angles = np.arange(10) * np.pi / 5 - np.pi / 2
        radii = np.where(np.arange(10) % 2 == 0, r, r * 0.45)
        pts = np.stack([cx + radii * np.cos(angles), cy + radii * np.sin(angles)], axis=1).astype(np.int32)
        cv2.fillPoly(frame, [pts], colour, cv2.LINE_AA)


def write_clip(path: Path) -> list[int]:
    """Write the clip and return its cut frames."""
    rng = np.random.default_rng(SEED)
    w, h = SIZE
    ramp = np.linspace(0.75, 1.15, h, dtype=np.float32)[:, None, None]  # a soft vertical gradient
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, SIZE)
    if not writer.isOpened():
        raise SystemExit("OpenCV cannot write mp4v video here")
    cuts, pos = [], 0
    for n, bg, shape, colour in SCENES:
        base = np.clip(np.full((h, w, 3), bg, np.float32) * ramp, 0, 255).astype(np.uint8)
        x0, y0 = int(rng.integers(50, 90)), int(rng.integers(60, 120))
        vx, vy = float(rng.uniform(3.0, 4.5)), float(rng.uniform(-0.6, 0.6))
        for i in range(n):
            frame = base.copy()
            _draw(frame, shape, colour, int(x0 + vx * i), int(y0 + vy * i))
            writer.write(frame)
        if pos:
            cuts.append(pos)
        pos += n
    writer.release()
    return cuts


def build(out: Path) -> Trace:
    """Write clip, frames and trace into ``out``; return the trace."""
    out.mkdir(parents=True, exist_ok=True)
    clip = out / "clip.mp4"
    cuts = write_clip(clip)
    duration = sum(n for n, *_ in SCENES) / FPS
    grabs = frames_at(clip, SAMPLE_TIMES, max_side=320, quality=80)
    frames: list[MediaRef] = []
    listing = []
    for i, g in enumerate(grabs):
        rel = f"frames/frame_{i:02d}.jpg"
        atomic_write_bytes(out / rel, g.jpeg)
        frames.append(
            MediaRef(
                kind="frame",
                path=rel,
                mime="image/jpeg",
                time_s=g.time_s,
                index=g.frame,
                label=f"frame {i} at {g.time_s:.2f}s",
            )
        )
        listing.append(f"Frame {i} at [{g.time_s:.2f}s]: <image>")
    options = "\n".join(f"({k}) {v}" for k, v in OPTIONS.items())
    system = (
        "You answer multiple-choice questions about a video. You cannot watch it directly: call "
        "frame_select(start_time, end_time, nframes) to receive frames sampled uniformly between the two "
        "times (seconds), then reason about what the frames show and reply with <answer>LETTER</answer>."
    )
    steps = [
        Step(index=0, coord=None, agent="agent", kind="system", content=system),
        Step(
            index=1,
            coord=None,
            agent="agent",
            kind="user",
            content=f"Video length: {duration:.1f} seconds. {QUESTION}\n{options}",
        ),
        Step(
            index=2,
            coord="0",
            agent="agent",
            kind="assistant",
            content="I will look at frames spread over the whole video to find the scene cuts.",
            tool_calls=[
                ToolCall(
                    id="call_frames_1",
                    name="frame_select",
                    arguments={"start_time": 0, "end_time": int(duration), "nframes": 6},
                )
            ],
        ),
        Step(
            index=3,
            coord="1",
            agent="agent",
            kind="tool",
            content=(
                f"Returned {len(grabs)} frames at timestamps (seconds): "
                f"{[round(g.time_s, 2) for g in grabs]}.\n" + "\n".join(listing)
            ),
            media=frames,
            meta={"tool_call_id": "call_frames_1", "tool_name": "frame_select"},
        ),
        Step(
            index=4,
            coord="2",
            agent="agent",
            kind="assistant",
            content=(
                "The frames show four scenes: a red ball on blue (0.5 s, 1.5 s), a yellow box on green "
                "(2.5 s), then after the second cut a white circle on a dark background (3.5 s, 4.5 s), and a "
                "purple star on orange (5.5 s). So the shape right after the second cut is a circle."
            ),
        ),
        Step(index=5, coord="3", agent="agent", kind="final_answer", content="<answer>A</answer>"),
    ]
    trace = Trace(
        id="whenpro-video__scene-qa__P.1__demo",
        framework="whenpro-video",
        benchmark="scene-qa-demo",
        modality=Modality.video,
        agents=[Agent(id="agent", role="VideoQA")],
        task=Task(
            query=QUESTION,
            options=OPTIONS,
            answer="C",
            images=[MediaRef(kind="video", path="clip.mp4", mime="video/mp4", label="clip")],
        ),
        steps=steps,
        ground_truth=GroundTruth(
            agent="agent",
            step="2",
            step_index=4,
            mode="P.1",
            reason=(
                "The frame at 3.5 s, right after the second cut, shows a white triangle; the agent called it "
                "a circle and answered A instead of C."
            ),
        ),
        final_answer="A",
        outcome=Outcome.failure,
        extras={
            "generator": "sample_traces/make_video_sample.py",
            "video_context": {
                "videos": ["clip.mp4"],
                "duration_s": duration,
                "fps": FPS,
                "cut_frames": cuts,
                "cut_times_s": [c / FPS for c in cuts],
            },
        },
    )
    write_trace(trace, out / "trace.json")
    return trace


def main() -> int:
    parser = argparse.ArgumentParser(description="Build the video_scene_qa sample trace.")
    parser.add_argument("--out", type=Path, default=HERE / "video_scene_qa", help="output folder")
    args = parser.parse_args()
    build(args.out)
    total = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {args.out} ({total} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
