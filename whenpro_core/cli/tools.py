"""``whenpro keyframes`` and ``whenpro models``: a video's keyframes, the LLM configuration."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from whenpro_core.cli import output
from whenpro_core.errors import ConfigError
from whenpro_core.media.export import INDEX_NAME, default_out_dir, write_keyframes
from whenpro_core.media.keyframes import (
    DEFAULT_MAX_FRAMES,
    DEFAULT_MIN_SCENE_LEN,
    DEFAULT_THRESHOLD,
    KeyframeResult,
)
from whenpro_core.media.keyframes import keyframes as extract_keyframes
from whenpro_core.media.video import DEFAULT_MAX_SIDE


def models(model: str | None, *, base_url: str | None, as_json: bool, probe: bool = False) -> None:
    """Print the LLM configuration (default model, providers, defaults, prices) as text or
    JSON; with ``probe``, what the model's server reports (models, context window,
    structured output) instead."""
    from whenpro_core.config import load_settings
    from whenpro_core.llm.describe import format_models, format_probe, models_info, probe_info

    settings = load_settings(base_url=base_url)
    if probe:
        found = probe_info(settings, model)
        output.echo(json.dumps(found, indent=2) if as_json else format_probe(found))
        return
    info = models_info(settings, model)
    output.echo(json.dumps(info, indent=2) if as_json else format_models(info))


def keyframes(
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
    out_dir = out if out is not None else default_out_dir(video)
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:  # fail before decoding
        raise ConfigError(
            "output folder is not empty",
            path=out_dir,
            expected="an empty or new folder, or --force to replace its keyframes",
        )
    err = output.live_console()  # the bar renders only its constant label and counts
    extract = functools.partial(
        extract_keyframes,
        video,
        max_frames=max_frames,
        threshold=threshold,
        min_scene_len=min_scene_len,
        stride=stride,
        max_side=max_side,
        use_cache=use_cache,
    )
    if err.is_terminal:
        bar = Progress(transient=True, console=err)
        with output.live(bar):
            task = bar.add_task("decoding", total=None)
            result = extract(progress=lambda done, hint: bar.update(task, completed=done, total=hint))
    else:
        result = extract()
    files = write_keyframes(result, out_dir, force=force)
    print_keyframes(result, files, out_dir)
    return result


def print_keyframes(result: KeyframeResult, files: list[Path], out_dir: Path, console: Console | None = None) -> None:
    """Print the keyframe table (#, frame, time, cut/uniform, score, file) and a summary."""
    console = console or output.stdout_console()
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
    for i, (kf, path) in enumerate(zip(result.keyframes, files, strict=True)):
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
