"""The committed sample video trace (sample_traces/video_scene_qa) and its generator."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from whenpro_core.formats.registry import load_trace
from whenpro_core.media import decode_image, detect_cuts, frames_at, jpeg_for_ref, keyframes, resolve_for_trace

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_traces" / "video_scene_qa"


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_sample_is_small():
    assert (SAMPLE / "clip.mp4").stat().st_size < 300_000
    assert sum(len(b) for b in _files(SAMPLE).values()) < 600_000


def test_sample_trace_is_a_failed_video_qa_run_with_a_p1_decisive_error():
    trace = load_trace(SAMPLE / "trace.json")
    assert trace.framework == "whenpro-video" and trace.modality.value == "video"
    assert trace.outcome.value == "failure" and trace.final_answer == "A" and trace.task.answer == "C"
    assert [s.coord for s in trace.steps] == [None, None, "0", "1", "2", "3"]
    assert [s.kind for s in trace.steps] == ["system", "user", "assistant", "tool", "assistant", "final_answer"]
    gt = trace.ground_truth
    assert (gt.agent, gt.step, gt.mode) == ("agent", "2", "P.1")
    decisive = trace.step_by_coord(gt.step)
    assert decisive is trace.steps[gt.step_index] and "circle" in decisive.content
    assert trace.steps[2].tool_calls[0].name == "frame_select"
    video = trace.task.images[0]
    assert (video.kind, video.path) == ("video", "clip.mp4")


def test_sample_media_resolve_inside_the_folder_and_match_the_video():
    trace = load_trace(SAMPLE / "trace.json")
    clip = resolve_for_trace(trace.task.images[0], trace)
    assert clip == (SAMPLE / "clip.mp4").resolve()
    frames = trace.steps[3].media
    assert len(frames) == 6 and all(f.kind == "frame" for f in frames)
    regrabbed = frames_at(clip, [f.time_s for f in frames], max_side=320, quality=80)
    for ref, grab in zip(frames, regrabbed, strict=False):
        assert ref.index == grab.frame
        assert (SAMPLE / ref.path).read_bytes() == grab.jpeg
        assert jpeg_for_ref(ref, trace.source.path, trace.source.root)[:3] == b"\xff\xd8\xff"
    # the frame the agent misread (3.5 s, just after the second cut) is the white-triangle scene:
    # a bright shape on a dark background
    img = decode_image((SAMPLE / frames[3].path).read_bytes())
    assert img.mean() < 60 and img.max() > 230


def test_sample_clip_cuts_are_the_documented_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("WHENPRO_CACHE_DIR", str(tmp_path / "cache"))
    trace = load_trace(SAMPLE / "trace.json")
    documented = trace.extras["video_context"]["cut_frames"]
    assert documented == [40, 80, 120]
    assert [c.frame for c in detect_cuts(SAMPLE / "clip.mp4").cuts] == documented
    assert [k.frame for k in keyframes(SAMPLE / "clip.mp4", max_frames=4).keyframes] == [0, 40, 80, 120]


def test_generator_is_deterministic(tmp_path):
    out = tmp_path / "again"
    proc = subprocess.run(
        [sys.executable, str(REPO / "sample_traces" / "make_video_sample.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    again, sample = _files(out), _files(SAMPLE)
    assert sorted(again) == sorted(sample)
    assert {k: v for k, v in again.items() if k != "clip.mp4"} == {k: v for k, v in sample.items() if k != "clip.mp4"}
    # the coded frames are byte-identical; the container also names the FFmpeg build that
    # muxed it (``Lavf62.12.101``), which changes with the installed OpenCV wheel
    assert _packets(out / "clip.mp4") == _packets(SAMPLE / "clip.mp4")


def _packets(path: Path) -> list[tuple[int | None, bool, bytes]]:
    """The video stream's coded packets (timestamp, key frame, bytes), in file order."""
    import av

    with av.open(str(path)) as container:
        return [(p.pts, p.is_keyframe, bytes(p)) for p in container.demux(video=0) if p.size]
