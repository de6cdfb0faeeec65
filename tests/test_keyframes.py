"""Video keyframes: exact cuts on synthetic clips, real cuts on bikes.mp4, timestamps
from CAP_PROP_POS_MSEC (variable frame rate), bad files, cancellation, the cache."""

from __future__ import annotations

import fractions
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from tests.videoclips import NOISE_SCENES, SOLID_SCENES, scene_frames, split_frame, write_clip, write_frames
from whenpro_core.errors import ConfigError, MediaError
from whenpro_core.media import (
    KeyframesCancelled,
    decode_image,
    detect_cuts,
    frames_at,
    image_size,
    keyframes,
)

#: Cuts of bikes.mp4 as PySceneDetect's ContentDetector and whenpro both see them
#: (ffmpeg scene>0.3 fires at 1.2 s, 5.5 s, 7.5 s, 9.7 s per its SOURCE.md; the cut at
#: frame 76 is a hard cut between two shots that ffmpeg's score ranks lower).
BIKES_CUTS = [30, 76, 137, 187, 242]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WHENPRO_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def solid_clip(tmp_path) -> tuple[Path, list[int]]:
    path = tmp_path / "solid.mp4"
    return path, write_clip(path, SOLID_SCENES)


@pytest.fixture
def noise_clip(tmp_path) -> tuple[Path, list[int]]:
    path = tmp_path / "noise.mp4"
    return path, write_clip(path, NOISE_SCENES)


def test_solid_colour_cuts_are_found_exactly(solid_clip):
    path, cuts = solid_clip
    scan = detect_cuts(path)
    assert [c.frame for c in scan.cuts] == cuts == [20, 45, 75, 90]
    assert [c.time_s for c in scan.cuts] == [0.8, 1.8, 3.0, 3.6]  # frame / 25 fps
    assert all(c.cut and c.score > 0.9 for c in scan.cuts)
    assert scan.frames == sum(n for n, _ in SOLID_SCENES)
    assert (scan.width, scan.height) == (192, 108)
    assert scan.duration_s == pytest.approx(scan.frames / 25)


@pytest.mark.parametrize("fourcc,ext", [("mp4v", "mp4"), ("MJPG", "avi")])
def test_noise_pattern_cuts_with_motion_are_found_exactly(tmp_path, fourcc, ext):
    path = tmp_path / f"noise.{ext}"
    cuts = write_clip(path, NOISE_SCENES, fourcc=fourcc)
    assert [c.frame for c in detect_cuts(path).cuts] == cuts == [18, 45, 66, 96]


def test_keyframes_are_the_cuts_plus_uniform_fill(noise_clip):
    path, cuts = noise_clip
    result = keyframes(path, max_frames=8, max_side=96)
    frames = [k.frame for k in result.keyframes]
    assert frames == sorted(frames) and len(frames) == 8
    assert [k.frame for k in result.keyframes if k.cut] == cuts
    uniform = [k for k in result.keyframes if not k.cut]
    assert len(uniform) == 4 and uniform[0].frame == 0
    # the fill spreads out: no two keyframes closer than 5 frames in this 112-frame clip
    assert min(b - a for a, b in zip(frames, frames[1:], strict=False)) >= 5
    for kf, jpeg in zip(result.keyframes, result.images, strict=False):
        assert image_size(jpeg) == (96, 54)
        assert kf.time_s == pytest.approx(kf.frame / 25)
    # a keyframe image shows its scene: the cut frame at 18 starts the green scene
    img = decode_image(result.images[frames.index(18)]).astype(float)
    b, g, r = img.reshape(-1, 3).mean(axis=0)
    assert g > b and g > r


def test_fewer_slots_than_cuts_keeps_the_strongest_cuts(tmp_path):
    blue, green, red = (200, 40, 40), (40, 200, 40), (40, 40, 200)
    # Bhattacharyya distances of the three cuts: sqrt(1 - sqrt(3/4)) = 0.37,
    # sqrt(1 - sqrt(1/4)) = 0.71 and 1.0
    looks = [[(blue, 1.0)], [(blue, 0.75), (green, 0.25)], [(green, 1.0)], [(red, 1.0)]]
    frames = [split_frame(look) for look in looks for _ in range(15)]
    path = tmp_path / "graded.mp4"
    write_frames(path, frames, size=(192, 108))
    scan = detect_cuts(path)
    assert [c.frame for c in scan.cuts] == [15, 30, 45]
    assert [round(c.score, 2) for c in scan.cuts] == pytest.approx([0.37, 0.71, 1.0], abs=0.03)
    result = keyframes(path, max_frames=2)
    assert [(k.frame, k.cut) for k in result.keyframes] == [(30, True), (45, True)]
    three = keyframes(path, max_frames=3)
    assert [k.frame for k in three.keyframes] == [15, 30, 45]
    with pytest.raises(ConfigError):
        keyframes(path, max_frames=0)


def test_min_scene_length_suppresses_the_second_edge_of_a_flash(tmp_path):
    scenes = [(30, ("solid", (200, 40, 40))), (1, ("solid", (255, 255, 255))), (30, ("solid", (200, 40, 40)))]
    path = tmp_path / "flash.mp4"
    write_clip(path, scenes)
    assert [c.frame for c in detect_cuts(path, min_scene_len=10).cuts] == [30]
    assert [c.frame for c in detect_cuts(path, min_scene_len=1).cuts] == [30, 31]


def test_stride_trades_exactness_for_speed(noise_clip):
    path, cuts = noise_clip
    found = [c.frame for c in detect_cuts(path, stride=2).cuts]
    assert len(found) == len(cuts)
    assert all(0 <= f - c <= 1 for f, c in zip(found, cuts, strict=False))


@pytest.mark.real_traces
def test_bikes_keyframes_land_on_its_cuts(real_traces):
    bikes = real_traces / "sample-videos" / "bikes.mp4"
    scan = detect_cuts(bikes)
    assert scan.frames == 250 and (scan.width, scan.height) == (640, 272)
    assert [c.frame for c in scan.cuts] == BIKES_CUTS
    # ffmpeg's scene filter times from SOURCE.md are among them
    for t in (1.2, 5.5, 7.5, 9.7):
        assert min(abs(c.time_s - t) for c in scan.cuts) <= 0.05
    result = keyframes(bikes, max_frames=8)
    cut_frames = [k.frame for k in result.keyframes if k.cut]
    assert len(cut_frames) == len(BIKES_CUTS)
    for truth in BIKES_CUTS:
        assert min(abs(f - truth) for f in cut_frames) <= 3
    assert result.scan.warnings == []


def _write_vfr(path: Path, times: list[float], colours: list[tuple[int, int, int]]) -> None:
    """An H.264 file whose frames sit at the given irregular times (PyAV sets each
    frame's pts; OpenCV's VideoWriter can only write constant frame rate)."""
    av = pytest.importorskip("av", reason="PyAV (dev extra) is needed to write a variable-frame-rate file")
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=1000, options={"bf": "0"})
        stream.width, stream.height, stream.pix_fmt = 128, 96, "yuv420p"
        stream.time_base = fractions.Fraction(1, 1000)
        for t, colour in zip(times, colours, strict=False):
            img = np.empty((96, 128, 3), np.uint8)
            img[:] = colour
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            frame.pts, frame.time_base = round(t * 1000), stream.time_base
            container.mux(stream.encode(frame))
        container.mux(stream.encode())


def test_variable_frame_rate_timestamps_come_from_pos_msec(tmp_path):
    # 12 frames per scene at irregular gaps; scenes start at frames 12 and 24
    times, t = [], 0.0
    for i in range(36):
        times.append(round(t, 3))
        t += (0.04, 0.1, 0.5)[i % 3]
    colours = [(220, 30, 30)] * 12 + [(30, 220, 30)] * 12 + [(30, 30, 220)] * 12
    path = tmp_path / "vfr.mp4"
    _write_vfr(path, times, colours)
    scan = detect_cuts(path)
    assert [c.frame for c in scan.cuts] == [12, 24]
    assert [c.time_s for c in scan.cuts] == pytest.approx([times[12], times[24]], abs=0.002)
    # index / nominal fps would be wrong here: the container's average rate is ~5.6 fps
    nominal = scan.frames / scan.duration_s
    assert abs(12 / nominal - times[12]) > 0.1
    result = keyframes(path, max_frames=6)
    by_frame = {k.frame: k.time_s for k in result.keyframes}
    for frame, time_s in by_frame.items():
        assert time_s == pytest.approx(times[frame], abs=0.002)
    grabs = frames_at(path, [times[5], times[20], 999.0])
    assert [(g.frame, round(g.time_s, 3)) for g in grabs] == [(5, times[5]), (20, times[20])]


def test_frames_at_returns_the_frame_at_each_time(solid_clip):
    path, _ = solid_clip
    grabs = frames_at(path, [1.8, 0.0, 3.59, 0.8], max_side=64)
    assert [g.frame for g in grabs] == [0, 20, 45, 90]  # 3.59 s is within half a frame of 3.6
    assert image_size(grabs[1].jpeg) == (64, 36)


def test_truncated_mp4_is_a_media_error(tmp_path, noise_clip):
    path, _ = noise_clip
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # no moov atom left
    with pytest.raises(MediaError, match="cannot open video"):
        keyframes(cut)


def test_truncated_avi_keeps_what_decodes_and_warns(tmp_path):
    path = tmp_path / "full.avi"
    write_clip(path, NOISE_SCENES, fourcc="MJPG")
    cut = tmp_path / "cut.avi"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    result = keyframes(cut, max_frames=4)
    assert 0 < result.scan.frames < 112
    assert [c.frame for c in result.scan.cuts] == [c for c in [18, 45, 66, 96] if c < result.scan.frames]
    assert any("truncated" in w for w in result.scan.warnings)


def test_not_a_video_missing_and_folder_are_media_errors(tmp_path):
    text = tmp_path / "notes.mp4"
    text.write_text("just text")
    for bad, message in (
        (text, "cannot open video"),
        (tmp_path / "nope.mp4", "not found"),
        (tmp_path, "not a regular file"),
    ):
        with pytest.raises(MediaError, match=message) as exc:
            keyframes(bad)
        assert str(bad) in exc.value.one_line()


def test_cancel_with_event_and_callable(noise_clip):
    path, _ = noise_clip
    event = threading.Event()
    event.set()
    with pytest.raises(KeyframesCancelled):
        keyframes(path, cancelled=event, use_cache=False)
    seen: list[tuple[int, int | None]] = []

    def progress(done: int, hint: int | None) -> None:
        seen.append((done, hint))

    with pytest.raises(KeyframesCancelled):
        keyframes(path, cancelled=lambda: len(seen) >= 3, progress=progress, use_cache=False)
    assert [d for d, _ in seen] == [16, 32, 48]
    assert all(h == 112 for _, h in seen)
    seen.clear()
    keyframes(path, progress=progress, use_cache=False)
    assert seen[-1] == (112, 112) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_second_call_reads_the_cache_without_decoding(tmp_path, noise_clip):
    path, _ = noise_clip
    first = keyframes(path, max_frames=6)
    assert first.cache_hit is False and first.sha256
    assert (tmp_path / "cache" / "media").is_dir()
    decoded: list[int] = []
    second = keyframes(path, max_frames=6, progress=lambda done, hint: decoded.append(done))
    assert second.cache_hit is True
    assert decoded == []  # nothing was decoded: the progress callback never ran
    assert second.keyframes == first.keyframes and second.images == first.images
    assert second.scan.cuts == first.scan.cuts and second.scan.frames == first.scan.frames
    # the key is the content, not the name: a copy hits, other parameters miss
    copy = tmp_path / "renamed.mp4"
    shutil.copyfile(path, copy)
    assert keyframes(copy, max_frames=6).cache_hit is True
    assert keyframes(path, max_frames=5).cache_hit is False
    # an edited file misses
    other = tmp_path / "edited.mp4"
    write_clip(other, NOISE_SCENES, seed=7)
    assert keyframes(other, max_frames=6).cache_hit is False
    assert keyframes(path, max_frames=6, use_cache=False).cache_hit is False


def test_scene_frames_helper_is_deterministic():
    a = np.stack(list(scene_frames(NOISE_SCENES[:1], seed=3)))
    b = np.stack(list(scene_frames(NOISE_SCENES[:1], seed=3)))
    assert np.array_equal(a, b)
