"""Keyframe extraction speed and cut recall: whenpro vs PySceneDetect's ContentDetector.

Runs both on the same clips in one process, interleaved, and prints decoded frames per
wall-clock second, CPU milliseconds per frame (all threads of the process: FFmpeg's
decoder threads and PySceneDetect's decode thread included), cuts found, recall and false
cuts (a detected cut within 3 frames of a true cut counts), and the ratios whenpro /
PySceneDetect (medians of the repetitions). The machine is shared, so wall-clock numbers
move between runs; the CPU figure is steadier.

Clips:
* ``bikes.mp4`` from ``$WHENPRO_REAL_TRACES/sample-videos`` (default
  ``<repo>/../shared/real_traces``): 640x272 H.264, 250 frames, cuts at 30, 76, 137,
  187, 242 (checked by eye and by both detectors); skipped with a note when absent.
* a synthetic 640x360 MPEG-4 clip written here with OpenCV (fixed seed): 10 scenes of
  smooth textured backgrounds with a moving disc, cuts known by construction.

Usage: ``python benchmarks/keyframes.py [--reps 5]``. The baseline needs PySceneDetect,
which depends on ``opencv-python`` (clashes with ``opencv-python-headless``); install it
with ``pip install --no-deps scenedetect click tqdm``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from whenpro_core.media.keyframes import keyframes  # noqa: E402

BIKES_CUTS = [30, 76, 137, 187, 242]
TOLERANCE = 3


def synthetic_clip(path: Path, seed: int = 1) -> list[int]:
    """Write a 640x360, 25 fps clip of 10 scenes (24-40 frames each) and return its cuts."""
    import cv2
    import numpy as np

    rng = np.random.default_rng(seed)
    w, h = 640, 360
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25.0, (w, h))
    cuts, pos = [], 0
    for scene in range(10):
        n = int(rng.integers(24, 41))
        low = rng.uniform(0, 255, (9, 16, 3)).astype(np.float32)
        tint = rng.uniform(0.3, 1.0, 3).astype(np.float32)
        bg = cv2.resize(low * tint, (w, h), interpolation=cv2.INTER_CUBIC)
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        for i in range(n):
            frame = np.clip(bg + rng.normal(0, 6, (h, w, 3)).astype(np.float32), 0, 255).astype(np.uint8)
            cx = int(60 + (w - 120) * i / max(1, n - 1))
            cv2.circle(frame, (cx, h // 2), 40, colour, -1)
            writer.write(frame)
        if scene:
            cuts.append(pos)
        pos += n
    writer.release()
    return cuts


def score(found: list[int], truth: list[int]) -> tuple[int, int]:
    """(true cuts matched within TOLERANCE frames, detected cuts matching none)."""
    hits = sum(any(abs(f - t) <= TOLERANCE for f in found) for t in truth)
    false = sum(not any(abs(f - t) <= TOLERANCE for t in truth) for f in found)
    return hits, false


def run_whenpro(path: Path, stride: int) -> tuple[int, list[int]]:
    """Full keyframe extraction (8 JPEGs included), cache off."""
    result = keyframes(path, max_frames=8, stride=stride, use_cache=False)
    return result.scan.frames, [c.frame for c in result.scan.cuts]


def run_scenedetect(path: Path) -> tuple[int, list[int]]:
    """PySceneDetect's documented API with its default ContentDetector."""
    from scenedetect import ContentDetector, SceneManager, open_video

    video = open_video(str(path), backend="opencv")
    manager = SceneManager()
    manager.add_detector(ContentDetector())
    frames = manager.detect_scenes(video, show_progress=False)
    scenes = manager.get_scene_list()
    return frames, [s[0].frame_num for s in scenes[1:]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions per method and clip (median is shown)")
    args = parser.parse_args()

    try:
        import scenedetect  # noqa: F401

        baseline = f"PySceneDetect {scenedetect.__version__} ContentDetector (defaults)"
    except ImportError:
        baseline = None
        print(
            "PySceneDetect is not installed, so there is no baseline to compare with. Install it with:\n"
            "    pip install --no-deps scenedetect click tqdm\n"
            "(--no-deps: it requires opencv-python, which clashes with opencv-python-headless)\n"
        )

    real = Path(os.environ.get("WHENPRO_REAL_TRACES") or REPO.parent / "shared" / "real_traces")
    clips: list[tuple[str, Path, list[int]]] = []
    bikes = real / "sample-videos" / "bikes.mp4"
    if bikes.is_file():
        clips.append(("bikes.mp4 640x272 h264", bikes, BIKES_CUTS))
    else:
        print(f"note: {bikes} not present; benchmarking the synthetic clip only\n")
    tmp = tempfile.TemporaryDirectory()
    synth = Path(tmp.name) / "synthetic.mp4"
    clips.append(("synthetic 640x360 mpeg4", synth, synthetic_clip(synth)))

    methods: dict[str, object] = {
        "whenpro (stride 1, exact)": lambda p: run_whenpro(p, 1),
        "whenpro (stride 2)": lambda p: run_whenpro(p, 2),
    }
    if baseline:
        methods[baseline] = run_scenedetect

    print(f"{'clip':24} {'method':48} {'frames':>6} {'fps':>6} {'cpu ms/f':>8} {'cuts':>4} {'recall':>6} {'false':>5}")
    for label, path, truth in clips:
        for fn in methods.values():  # warm up: page cache, codec init
            fn(path)
        fps: dict[str, list[float]] = {m: [] for m in methods}
        cpu: dict[str, list[float]] = {m: [] for m in methods}
        outcome: dict[str, tuple[int, list[int]]] = {}
        for _ in range(args.reps):
            for name, fn in methods.items():
                wall0, cpu0 = time.perf_counter(), time.process_time()
                frames, cuts = fn(path)
                fps[name].append(frames / (time.perf_counter() - wall0))
                cpu[name].append((time.process_time() - cpu0) * 1000 / frames)
                outcome[name] = (frames, cuts)
        med_fps = {m: statistics.median(v) for m, v in fps.items()}
        med_cpu = {m: statistics.median(v) for m, v in cpu.items()}
        for name in methods:
            frames, cuts = outcome[name]
            hits, false = score(cuts, truth)
            print(
                f"{label:24} {name:48} {frames:6d} {med_fps[name]:6.0f} {med_cpu[name]:8.3f} {len(cuts):4d} "
                f"{hits:3d}/{len(truth):<2d} {false:5d}"
            )
        if baseline:
            for name in list(methods)[:2]:
                print(
                    f"{'':24} {name} vs PySceneDetect: {med_fps[name] / med_fps[baseline]:.2f}x frames/s, "
                    f"{med_cpu[baseline] / med_cpu[name]:.2f}x less CPU per frame"
                )
        print()
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
