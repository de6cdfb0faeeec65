"""whenpro_core.media.preview: which media a viewer shows on a step, thumbnails and
full-size images with their sizes, frames taken from a trace's video, keyframes of a
video file, and clear errors for bad media — on the real Who&When Pro sample traces,
the generated video sample and small made-up cases."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

import pytest

from tests.conftest import REAL_TRACES, SAMPLES, tiny_png
from whenpro_core.errors import MediaError
from whenpro_core.formats import load_trace
from whenpro_core.media.preview import (
    byte_size,
    error_line,
    format_time,
    item_label,
    jpeg_size,
    keyframe_caption,
    load_image,
    step_media,
    task_step_index,
    video_keyframes,
)
from whenpro_core.trace.model import MediaRef, Source, Step, Task, Trace

SAMPLES_REAL = REAL_TRACES / "who-when-pro-samples"


def real(name: str) -> Trace:
    path = SAMPLES_REAL / "data" / "traces" / name
    if not path.is_file():
        pytest.skip(f"real traces not present at {path} (set WHENPRO_REAL_TRACES)")
    return load_trace(str(path))


def png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` × ``height`` (a decompression bomb when huge)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )


def folder_trace(folder: Path, refs: list[MediaRef]) -> Trace:
    """A one-step trace living in ``folder`` whose step carries ``refs``."""
    return Trace(
        id="t",
        steps=[Step(index=0, coord="0", kind="user", media=refs)],
        source=Source(format="native", path=str(folder / "trace.json"), root=str(folder)),
    )


def test_real_mmsearch_car_task_image_shows_on_the_task_step() -> None:
    trace = real("mmsearch_car.json")
    assert task_step_index(trace) == 0
    first = step_media(trace, 0)
    # query_0.jpg (the task's) and turn_img_0.jpg (the step's) are the same bytes: shown once, as the task's
    assert [i.label for i in first.images] == ["task: query #1"]
    assert [i.origin for i in first.images] == ["task"]
    obs = step_media(trace, 2)
    assert [i.label for i in obs.images] == [f"observation #{k}" for k in range(1, 6)]
    assert step_media(trace, 1).empty and step_media(trace, 6).empty


def test_real_task_image_resolves_against_the_dataset_root() -> None:
    trace = real("mmsearch_car.json")
    preview = load_image(trace.task.images[0], trace, max_side=128)
    assert (preview.width, preview.height, preview.format) == (900, 532, "JPEG")
    assert preview.size_text() == f"900×532 · {byte_size(preview.nbytes)}"
    assert max(jpeg_size(preview.jpeg)) == 128
    again = load_image(trace.task.images[0], trace, max_side=128)
    assert again.cache_hit and again.jpeg == preview.jpeg
    full = load_image(trace.task.images[0], trace, max_side=600, thumbnail=False)
    assert jpeg_size(full.jpeg) == (600, 355) and not full.cache_hit


def test_real_lvbench_frames_are_in_time_order_with_timestamps() -> None:
    trace = real("lvbench_camel.json")
    media = step_media(trace, 3)
    assert not media.images and not media.videos
    assert [i.ref.time_s for i in media.frames] == [0, 11, 22, 33, 44, 55, 66, 77, 88, 100]
    preview = load_image(media.frames[1].ref, trace, max_side=64)
    assert preview.width > preview.height > 0


def test_sample_bar_chart_task_image_is_not_repeated() -> None:
    trace = load_trace(str(SAMPLES / "bar_chart" / "trace.json"))
    media = step_media(trace, 0)
    assert [(i.label, i.origin) for i in media.images] == [("chart", "step")]


def test_sample_video_task_video_and_frames() -> None:
    trace = load_trace(str(SAMPLES / "video_scene_qa" / "trace.json"))
    assert task_step_index(trace) == 1
    assert [i.label for i in step_media(trace, 1).videos] == ["task: clip"]
    frames = step_media(trace, 3).frames
    assert [format_time(f.ref.time_s) for f in frames][:2] == ["0.48 s", "1.48 s"]


def test_keyframes_of_the_sample_video_land_on_its_cuts() -> None:
    trace = load_trace(str(SAMPLES / "video_scene_qa" / "trace.json"))
    video = step_media(trace, 1).videos[0].ref
    result = video_keyframes(video, trace, max_frames=8)
    cuts = [kf.time_s for kf in result.keyframes if kf.cut]
    assert cuts == pytest.approx([1.6, 3.2, 4.8], abs=0.02)
    assert [keyframe_caption(kf) for kf in result.keyframes if kf.cut] == ["1.60 s ✂", "3.20 s ✂", "4.80 s ✂"]
    assert len(result.images) == len(result.keyframes) == 8 and not result.cache_hit
    assert video_keyframes(video, trace, max_frames=8).cache_hit


def test_frame_without_image_is_taken_from_the_trace_video() -> None:
    trace = load_trace(str(SAMPLES / "video_scene_qa" / "trace.json"))
    preview = load_image(MediaRef(kind="frame", time_s=2.0), trace, max_side=64)
    assert (preview.width, preview.height) == (320, 180)
    with pytest.raises(MediaError, match="ends before"):
        load_image(MediaRef(kind="frame", time_s=99.0), trace, max_side=64)
    bare = folder_trace(SAMPLES, [])
    with pytest.raises(MediaError, match="no image data"):
        load_image(MediaRef(kind="frame", time_s=1.0), bare, max_side=64)


def test_bad_media_are_media_errors(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "secret.png").write_bytes(base64.b64decode(tiny_png()))
    (data / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 50)
    (data / "bomb.png").write_bytes(png_header(30_000, 30_000))
    (data / "big.png").write_bytes(png_header(8_000, 8_000))
    trace = folder_trace(data, [])
    cases = {
        "../secret.png": "refused",
        str(tmp_path / "secret.png"): "refused",
        "missing.png": "not found",
        "corrupt.png": "not a decodable image",
        "bomb.png": "decompression bomb",
        "big.png": "too large",
    }
    for path, expected in cases.items():
        with pytest.raises(MediaError, match=expected):
            load_image(MediaRef(kind="image", path=path), trace, max_side=64)
    with pytest.raises(MediaError, match="not valid base64"):
        load_image(MediaRef(kind="image", data="!!!not base64!!!"), trace, max_side=64)
    with pytest.raises(MediaError, match="not an image"):
        load_image(MediaRef(kind="video", path="clip.mp4"), trace, max_side=64)
    with pytest.raises(MediaError, match="inline video"):
        video_keyframes(MediaRef(kind="video", data=tiny_png()), trace)
    with pytest.raises(MediaError, match="not found"):
        video_keyframes(MediaRef(kind="video", path="nope.mp4"), trace)


def test_labels_and_error_lines_are_safe_one_liners() -> None:
    ref = MediaRef(kind="image", path="a/b/\x1b[2Jevil.png")
    assert item_label(ref) == "␛[2Jevil.png"
    assert item_label(MediaRef(kind="image", label="x" * 100), "task").startswith("task: xxx")
    assert len(item_label(MediaRef(kind="image", label="x" * 100))) == 60
    line = error_line("obs", MediaError("media file not found", path="a\nb\x1b"))
    assert line.startswith("✗ obs: ") and "\n" not in line and "\x1b" not in line
    assert error_line("x", ValueError("boom")) == "✗ x: ValueError: boom"


def test_small_formatters() -> None:
    assert [byte_size(n) for n in (812, 62_000, 3_500_000)] == ["812 B", "61 KB", "3.3 MB"]
    assert [format_time(t) for t in (None, 1.6, 65.2)] == ["?", "1.60 s", "1:05.2"]


def test_task_step_without_user_step_is_step_zero() -> None:
    video = MediaRef(kind="video", path="clip.mp4")
    trace = Trace(
        id="t", task=Task(images=[video]), steps=[Step(index=0, kind="system"), Step(index=1, kind="assistant")]
    )
    assert task_step_index(trace) == 0
    assert [i.label for i in step_media(trace, 0).videos] == ["task: clip.mp4"]
    assert step_media(trace, 1).empty
    assert task_step_index(Trace(id="e")) is None
