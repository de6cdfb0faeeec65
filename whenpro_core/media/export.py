"""The work behind ``whenpro keyframes VIDEO``: keyframe JPEGs + ``index.json`` in a
folder, and a Rich table of what was picked.

Files are named ``kf_<index>_t<seconds>s.jpg`` (``kf_003_t0005.480s.jpg``), in time
order. An existing non-empty output folder is left alone unless ``force`` is given
(docs/architecture.md, 'Files whenpro writes': never overwrite user data without ``--force``); with ``force`` the
previous ``kf_*.jpg`` files and ``index.json`` there are replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from whenpro_core.errors import ConfigError, MediaError
from whenpro_core.media.keyframes import (
    KeyframeResult,
)
from whenpro_core.storage.fsutil import atomic_write_bytes

if TYPE_CHECKING:
    pass

INDEX_NAME = "index.json"


def keyframe_filename(index: int, time_s: float) -> str:
    """``kf_<index:03d>_t<seconds:08.3f>s.jpg``: sorts by index, shows the timestamp."""
    return f"kf_{index:03d}_t{time_s:08.3f}s.jpg"


def default_out_dir(video: Path) -> Path:
    """``./<video stem>_keyframes`` in the current folder."""
    return Path.cwd() / f"{video.stem}_keyframes"


def write_keyframes(result: KeyframeResult, out_dir: Path, *, force: bool = False) -> list[Path]:
    """Write ``result``'s JPEGs and ``index.json`` (keyframes with their file names,
    all cuts, frame count, duration, parameters, source sha256) into ``out_dir``.

    Raises:
        ConfigError: ``out_dir`` exists, is not empty and ``force`` is False; or it is
            a file.
        MediaError: the folder cannot be written.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError("output path exists and is not a folder", path=out_dir, expected="a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise ConfigError(
            "output folder is not empty",
            path=out_dir,
            expected="an empty or new folder, or --force to replace its keyframes",
        )
    try:
        if force and out_dir.is_dir():
            for old in out_dir.glob("kf_*.jpg"):
                old.unlink()
        files = []
        entries: list[dict[str, Any]] = []
        for i, (kf, jpeg) in enumerate(zip(result.keyframes, result.images, strict=False)):
            name = keyframe_filename(i, kf.time_s)
            files.append(atomic_write_bytes(out_dir / name, jpeg))
            entries.append(
                {
                    "file": name,
                    "frame": kf.frame,
                    "time_s": kf.time_s,
                    "kind": kf.kind,
                    "cut": kf.cut,
                    "score": kf.score,
                }
            )
        index = result.to_index() | {"keyframes": entries}
        atomic_write_bytes(out_dir / INDEX_NAME, orjson.dumps(index, option=orjson.OPT_INDENT_2) + b"\n")
    except OSError as exc:
        raise MediaError(f"cannot write keyframes: {exc.strerror or exc}", path=out_dir) from None
    return files
