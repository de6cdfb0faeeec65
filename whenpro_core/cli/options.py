"""What several commands' options share: number parsers that refuse nan and infinity,
the choice enums, help texts, and the error for two options that contradict each other."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

from whenpro_core.errors import ConfigError


def finite(low: float, *, above: bool = False, what: str = "a number") -> Callable[[str], float]:
    """A typer ``parser`` for a finite float of at least ``low`` (more than ``low`` when
    ``above``): nan and ±inf are refused, which ``min=`` alone lets through (inf)."""

    def parse(text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or value < low or (above and value == low):
            raise ValueError(f"expected {what} {'above' if above else 'of at least'} {low:g}")
        return value

    return parse


#: Seconds that must be more than 0; seconds where 0 means "never"; money.
SECONDS = finite(0, above=True, what="seconds")
SECONDS_OR_0 = finite(0, what="seconds")
AMOUNT = finite(0, what="an amount")


def use_base_url(url: str | None) -> None:
    """``--base-url`` of a command whose model is opened in many places (live judging,
    ``build``, ``run``): it becomes ``WHENPRO_BASE_URL`` for this process and what it starts
    (a flag overrides the environment, as everywhere). ConfigError when it is not http(s)."""
    if url is None:
        return
    if not url.startswith(("http://", "https://")):
        from whenpro_core.safety.redact import public_url

        raise ConfigError(f"--base-url is not an http(s) URL: '{public_url(url)}'", expected="http://host:port/v1")
    os.environ["WHENPRO_BASE_URL"] = url


def not_together(first: str, second: str, expected: str = "one of them") -> None:
    """Raise the one-line error for two options that contradict each other."""
    raise ConfigError(f"{first} and {second} do not go together", expected=expected)


class ImagesMode(StrEnum):
    """How the TUI draws images (phase 2): pick automatically, force a protocol, or off."""

    auto = "auto"
    kitty = "kitty"
    sixel = "sixel"
    halfcell = "halfcell"
    off = "off"


class ReportRules(StrEnum):
    """Which aggregation rules ``report`` prints: whenpro's own, and the official
    benchmarks' (``official``) or the original Who&When script's (``whowhen``) too."""

    whenpro = "whenpro"
    official = "official"
    whowhen = "whowhen"
    trail = "trail"


class ReportMetric(StrEnum):
    """Extra metrics ``report`` can print next to whenpro's."""

    whowhen_substring = "whowhen-substring"


class JudgeImages(StrEnum):
    """Whether the judge is sent the trace's images (overrides ``images`` in config.toml)."""

    on = "on"
    off = "off"


#: Largest ``--tolerance`` (k of the ±k step accuracy): no trace has a million steps, and
#: a larger integer does not fit the results file's JSON (it was written, then not read back).
MAX_TOLERANCE = 1_000_000

PRESET_HELP = (
    "Reproduce a published protocol: whowhen-pro (the official Who&When Pro all-at-once request: "
    "transcript, images, settings and call as the official harness builds them, the answer read by "
    "a re-implementation of its parser; the wording is whenpro's unless --official-harness) or "
    "whowhen (the original Who&When all-at-once, step-by-step and binary-search requests, pick one "
    "with --protocol, answers read by the original script's first-match rules; whenpro's wording). "
    "Scores as published: report --rules official / whowhen. See docs/attribution.md."
)
OFFICIAL_HARNESS_HELP = (
    "--preset whowhen-pro: word the request with the official harness's own prompt code, read at "
    "run time from PATH (a checkout holding whowhen_eval/) or from the installed whowhen_eval "
    "('installed'), so the request is byte-identical to the harness's."
)
BASE_URL_HELP = (
    "Base URL of the model's provider, e.g. an OpenAI-compatible server (Ollama, llama.cpp, vLLM, "
    "LM Studio: http://127.0.0.1:PORT/v1); with local:MODEL a llama.cpp server already serving it."
)
JUDGE_IMAGES_HELP = (
    "Send the trace's images to the judge (default: OpenAI and Anthropic models, and "
    "openai-compatible models listed in vision_models in config.toml)."
)


VERDICTS_DIR_HELP = (
    "Folder of saved verdicts (default: whenpro's user data folder, or the verdicts_dir setting / "
    "WHENPRO_VERDICTS_DIR); nothing is written beside the trace."
)


def apply_verdicts_dir(directory: Path | None) -> None:
    """``--verdicts-dir``: keep verdicts in ``directory`` (see
    :func:`whenpro_core.attribution.verdicts.use_verdicts_dir`); ``None`` changes nothing."""
    if directory is not None:
        from whenpro_core.attribution.verdicts import use_verdicts_dir  # only when the option is given

        use_verdicts_dir(directory)
