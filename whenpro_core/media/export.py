"""The work behind ``whenpro keyframes VIDEO``: keyframe JPEGs + ``index.json`` in a
folder, and a Rich table of what was picked.

Files are named ``kf_<index>_t<seconds>s.jpg`` (``kf_003_t0005.480s.jpg``), in time
order. An existing non-empty output folder is left alone unless ``force`` is given
(DESIGN §9: never overwrite user data without ``--force``); with ``force`` the
previous ``kf_*.jpg`` files and ``index.json`` there are replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from whenpro_core.errors import ConfigError, MediaError
from whenpro_core.media.keyframes import (
    DEFAULT_MAX_FRAMES,
    DEFAULT_MIN_SCENE_LEN,
    DEFAULT_THRESHOLD,
    KeyframeResult,
    keyframes,
)
from whenpro_core.media.video import DEFAULT_MAX_SIDE
from whenpro_core.storage.fsutil import atomic_write_bytes

if TYPE_CHECKING:
    from rich.console import JustifyMethod

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
        for i, (kf, jpeg) in enumerate(zip(result.keyframes, result.images)):
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


def run_keyframes_command(
    video: Path,
    *,
    max_frames: int = DEFAULT_MAX_FRAMES,
    out: Path | None = None,
    force: bool = False,
    threshold: float = DEFAULT_THRESHOLD,
    min_scene_len: int = DEFAULT_MIN_SCENE_LEN,
    stride: int = 1,
    max_side: int = DEFAULT_MAX_SIDE,
    use_cache: bool = True,
) -> KeyframeResult:
    """Extract keyframes of ``video``, write them to ``out`` (default
    :func:`default_out_dir`) and print a table to stdout (a progress bar on stderr when
    it is a terminal). Raises MediaError / ConfigError as the functions it calls."""
    from rich.console import Console

    out_dir = out if out is not None else default_out_dir(video)
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:  # fail before decoding
        raise ConfigError(
            "output folder is not empty",
            path=out_dir,
            expected="an empty or new folder, or --force to replace its keyframes",
        )
    err = Console(stderr=True, soft_wrap=True)  # long lines stay whole in logs
    kwargs: dict[str, Any] = dict(
        max_frames=max_frames,
        threshold=threshold,
        min_scene_len=min_scene_len,
        stride=stride,
        max_side=max_side,
        use_cache=use_cache,
    )
    if err.is_terminal:
        from rich.progress import Progress

        with Progress(transient=True, console=err) as bar:
            task = bar.add_task("decoding", total=None)
            result = keyframes(
                video, progress=lambda done, hint: bar.update(task, completed=done, total=hint), **kwargs
            )
    else:
        result = keyframes(video, **kwargs)
    files = write_keyframes(result, out_dir, force=force)
    print_keyframes(result, files, out_dir)
    return result


def print_keyframes(result: KeyframeResult, files: list[Path], out_dir: Path, console: Any = None) -> None:
    """Print the keyframe table (#, frame, time, cut/uniform, score, file) and a summary."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    scan = result.scan
    table = Table(title=f"Keyframes of {escape(Path(result.video).name)}", title_justify="left")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("#", "right"),
        ("frame", "right"),
        ("time", "right"),
        ("kind", "left"),
        ("score", "right"),
        ("file", "left"),
    )
    for col, just in columns:
        table.add_column(col, justify=just)
    for i, (kf, path) in enumerate(zip(result.keyframes, files)):
        table.add_row(
            str(i),
            str(kf.frame),
            f"{kf.time_s:.3f}s",
            "[bold]cut[/]" if kf.cut else "uniform",
            f"{kf.score:.3f}",
            escape(path.name),
        )
    console.print(table)
    source = "cache hit, nothing decoded" if result.cache_hit else f"{scan.fps:.0f} frames/s"
    console.print(
        f"{scan.frames} frames, {scan.duration_s:.2f}s, {scan.width}x{scan.height}; "
        f"{len(scan.cuts)} cuts; {source}; wrote {len(files)} JPEGs + {INDEX_NAME} to "
        f"{escape(str(out_dir))}",
        highlight=False,
    )
    for w in scan.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
