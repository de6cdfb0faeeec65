"""``whenpro keyframes`` and ``whenpro models``: a video's keyframes, the LLM configuration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from whenpro_core.cli import output


def keyframes(video: Path, **options: Any) -> None:
    """``whenpro keyframes`` (:func:`whenpro_core.media.export.run_keyframes_command`)."""
    from whenpro_core.media.export import run_keyframes_command

    run_keyframes_command(video, **options)


def models(model: str | None, *, base_url: str | None, as_json: bool) -> None:
    """Print the LLM configuration (default model, providers, defaults, prices) as text or JSON."""
    from whenpro_core.config import load_settings
    from whenpro_core.llm.describe import format_models, models_info

    info = models_info(load_settings(base_url=base_url), model)
    output.echo(json.dumps(info, indent=2) if as_json else format_models(info))
