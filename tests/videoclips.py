"""Synthetic test videos with known cut frames, written with ``cv2.VideoWriter``.

A clip is a list of scenes; each scene has a length in frames and a look. Every scene
start after the first is a hard cut, so the expected cut frames are the running sums
of the scene lengths. Looks differ in colour distribution (what an HSV histogram sees):

* ``("solid", (b, g, r))`` — one flat colour.
* ``("noise", (b, g, r))`` — per-frame Gaussian noise (σ = 18) around a base colour,
  with a white square moving across the frame (motion inside the shot).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

Scene = tuple[int, tuple[str, tuple[int, int, int]]]


def scene_frames(scenes: list[Scene], size: tuple[int, int] = (192, 108), seed: int = 0):
    """Yield BGR frames for ``scenes`` (``size`` is width, height)."""
    rng = np.random.default_rng(seed)
    w, h = size
    for n, (look, colour) in scenes:
        for i in range(n):
            if look == "solid":
                frame = np.empty((h, w, 3), np.uint8)
                frame[:] = colour
            elif look == "noise":
                base = np.array(colour, np.float32)
                noisy = base + rng.normal(0.0, 18.0, (h, w, 3)).astype(np.float32)
                frame = np.clip(noisy, 0, 255).astype(np.uint8)
                x = int((w - 24) * i / max(1, n - 1))
                frame[h // 3 : h // 3 + 24, x : x + 24] = 255
            else:
                raise ValueError(look)
            yield frame


def cut_frames(scenes: list[Scene]) -> list[int]:
    """Expected cut frames: the first frame of every scene but the first."""
    out, pos = [], 0
    for n, _ in scenes[:-1]:
        pos += n
        out.append(pos)
    return out


def write_frames(path: Path, frames, *, size: tuple[int, int], fps: float = 25.0, fourcc: str = "mp4v") -> None:
    """Write BGR ``frames`` (each ``size`` = width, height) to ``path``."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), fps, size)
    assert writer.isOpened(), f"OpenCV cannot write {fourcc} to {path}"
    for frame in frames:
        writer.write(frame)
    writer.release()


def write_clip(
    path: Path,
    scenes: list[Scene],
    *,
    size: tuple[int, int] = (192, 108),
    fps: float = 25.0,
    fourcc: str = "mp4v",
    seed: int = 0,
) -> list[int]:
    """Write ``scenes`` to ``path`` and return the expected cut frames."""
    write_frames(path, scene_frames(scenes, size, seed), size=size, fps=fps, fourcc=fourcc)
    return cut_frames(scenes)


def split_frame(parts: list[tuple[tuple[int, int, int], float]], size: tuple[int, int] = (192, 108)) -> np.ndarray:
    """A frame of vertical colour bands: ``parts`` is ``[(bgr, width_fraction), ...]``."""
    w, h = size
    frame = np.zeros((h, w, 3), np.uint8)
    x = 0
    for colour, frac in parts:
        x2 = min(w, x + round(frac * w))
        frame[:, x:x2] = colour
        x = x2
    return frame


SOLID_SCENES: list[Scene] = [
    (20, ("solid", (200, 40, 40))),
    (25, ("solid", (40, 200, 40))),
    (30, ("solid", (40, 40, 200))),
    (15, ("solid", (30, 200, 220))),
    (22, ("solid", (220, 220, 220))),
]

NOISE_SCENES: list[Scene] = [
    (18, ("noise", (160, 60, 40))),
    (27, ("noise", (50, 140, 70))),
    (21, ("noise", (60, 60, 170))),
    (30, ("noise", (40, 170, 190))),
    (16, ("noise", (150, 90, 160))),
]
