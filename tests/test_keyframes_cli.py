"""``whenpro keyframes VIDEO [--max N] [--out DIR]`` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.videoclips import NOISE_SCENES, write_clip
from whenpro_core.cli import app
from whenpro_core.media import image_size

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WHENPRO_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def clip(tmp_path) -> Path:
    path = tmp_path / "clip.mp4"
    write_clip(path, NOISE_SCENES)
    return path


def test_keyframes_writes_jpegs_index_and_prints_a_table(tmp_path, clip):
    out = tmp_path / "kf"
    result = CliRunner().invoke(app, ["keyframes", str(clip), "--max", "6", "--out", str(out)])
    assert result.exit_code == 0, result.output
    index = json.loads((out / "index.json").read_text())
    names = sorted(p.name for p in out.glob("*.jpg"))
    assert names == [k["file"] for k in index["keyframes"]] and len(names) == 6
    assert [k["frame"] for k in index["keyframes"] if k["cut"]] == [18, 45, 66, 96]
    assert index["frames"] == 112 and index["sha256"] and index["params"]["max_frames"] == 6
    assert [c["frame"] for c in index["cuts"]] == [18, 45, 66, 96]
    first_cut = next(k for k in index["keyframes"] if k["cut"])
    assert first_cut["file"] == "kf_001_t0000.720s.jpg"  # index 1, 18 / 25 fps = 0.72 s
    assert image_size((out / first_cut["file"]).read_bytes()) == (192, 108)
    for word in ("frame", "time", "kind", "score", "cut", "uniform", "0.720s", "kf_001_t0000.720s.jpg"):
        assert word in result.stdout
    assert "112 frames" in result.stdout and "4 cuts" in result.stdout


def test_existing_output_needs_force_and_second_run_hits_the_cache(tmp_path, clip):
    out = tmp_path / "kf"
    runner = CliRunner()
    assert runner.invoke(app, ["keyframes", str(clip), "--out", str(out), "--max", "5"]).exit_code == 0
    again = runner.invoke(app, ["keyframes", str(clip), "--out", str(out), "--max", "4"])
    assert again.exit_code == 2
    assert "output folder is not empty" in again.stderr and "--force" in again.stderr
    assert len(list(out.glob("*.jpg"))) == 5  # untouched
    forced = runner.invoke(app, ["keyframes", str(clip), "--out", str(out), "--max", "5", "--force"])
    assert forced.exit_code == 0 and "cache hit" in forced.stdout
    assert len(list(out.glob("*.jpg"))) == 5


def test_bad_video_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"junk" * 100)
    result = CliRunner().invoke(app, ["keyframes", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("whenpro: error: ") and "bad.mp4" in lines[0]
    assert not (tmp_path / "o").exists()


def test_truncated_video_in_a_real_process_prints_exactly_one_line(tmp_path, clip):
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(clip.read_bytes()[: clip.stat().st_size // 2])
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCV_")}
    proc = subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", "keyframes", str(cut), "--out", str(tmp_path / "o")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    # no FFmpeg "moov atom not found" or OpenCV warnings around the one error line
    assert proc.stderr.strip().splitlines() == [
        f"whenpro: error: {cut}: cannot open video (not a video, truncated, or unsupported codec) "
        "(expected a video FFmpeg can decode (mp4, mkv, webm, avi, mov))"
    ]
    assert proc.stdout == ""


def test_import_of_media_is_cheap():
    code = (
        "import sys, whenpro_core.media, whenpro_core.media.keyframes, whenpro_core.media.export;"
        "print(sorted(m for m in ('cv2', 'numpy', 'PIL', 'diskcache', 'textual') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.real_traces
def test_keyframes_of_bikes_from_the_command_line(tmp_path, real_traces):
    out = tmp_path / "bikes"
    result = CliRunner().invoke(app, ["keyframes", str(real_traces / "sample-videos" / "bikes.mp4"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    index = json.loads((out / "index.json").read_text())
    assert [k["frame"] for k in index["keyframes"] if k["cut"]] == [30, 76, 137, 187, 242]
    assert len(index["keyframes"]) == 8


def test_a_keyframes_folder_beside_traces_is_not_a_bad_file(tmp_path, clip):
    """A folder walk (``whenpro ls``) passes over the keyframes' ``index.json`` (it is not a
    trace, nor a broken one); named by itself it says what it is."""
    data = tmp_path / "data"
    sample = REPO / "sample_traces" / "team_text" / "trace.json"
    (data / "run").mkdir(parents=True)
    (data / "run" / "trace.json").write_bytes(sample.read_bytes())
    runner = CliRunner()
    assert runner.invoke(app, ["keyframes", str(clip), "--max", "3", "--out", str(data / "kf")]).exit_code == 0
    listing = runner.invoke(app, ["ls", str(data)])
    assert listing.exit_code == 0, listing.output
    assert "index.json" not in listing.output and "trace.json" in listing.output
    named = runner.invoke(app, ["info", str(data / "kf" / "index.json")])
    assert named.exit_code == 2 and "the index of a whenpro keyframes folder, not a trace" in named.stderr
