"""Setting up live judging for ``whenpro watch``/``serve`` and the TUI's live views: the
judge factory (which protocol may judge live, the final pass, a model's judge) and the
OTLP receiver over a live store. Printing lives in :mod:`whenpro_core.cli.watch`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whenpro_core.attribution.llm_judge import make_judge
from whenpro_core.attribution.protocols import preset_protocol, protocol_name
from whenpro_core.config import warn_offline
from whenpro_core.errors import ConfigError
from whenpro_core.live.builders import LINE_FORMATS
from whenpro_core.live.judge_live import Budget, LiveJudge
from whenpro_core.live.otlp_server import DEFAULT_MAX_BODY, OtlpReceiver, parse_address
from whenpro_core.live.replay_pass import COUNTERFACTUAL
from whenpro_core.live.store import LiveStore
from whenpro_core.storage.paths import live_dir

if TYPE_CHECKING:  # the LLM judge type only
    from whenpro_core.attribution.llm_judge import LLMJudge


def final_protocol(preset: str | None) -> str:
    """The final pass's protocol: all-at-once. ConfigError for any ``--preset`` (an
    unknown one is named as such): a preset rebuilds its published harness's request from
    the dataset's own documents (Who&When ``history`` entries, Who&When Pro release rows),
    and a followed run arrives as :data:`~whenpro_core.live.builders.LINE_FORMATS` lines,
    never as such a document, so no preset can apply to ``watch``; said before anything
    is followed."""
    if preset is None:
        return "all-at-once"
    preset_protocol(preset, "all-at-once")  # an unknown preset: its own one-line error
    key = preset.strip().lower()
    dataset = "Who&When Pro" if key == "whowhen-pro" else "Who&When"
    raise ConfigError(
        f"--preset {key} cannot apply to watch: it rebuilds the published request from a {dataset} dataset "
        f"file, and a followed run arrives as {'/'.join(LINE_FORMATS)} lines",
        expected=f"watch without --preset, or whenpro attribute/bench --preset {key} on the dataset's files",
    )


def judge_factory(
    protocol: str | None,
    model: str | None,
    *,
    budget: Budget,
    final_pass: bool,
    with_gold: bool,
    no_cache: bool,
    preset: str | None = None,
) -> tuple[Callable[[str], LiveJudge], LLMJudge | None]:
    if model and model.strip().lower() == "heuristic":
        model = None
    name = protocol_name(protocol or ("step-by-step" if model else "heuristic"))
    final_name = final_protocol(preset)
    replay_model = None
    if name == COUNTERFACTUAL:  # judged live as without it; searched when the run ends
        name, final_pass, final_name, replay_model = ("step-by-step" if model else "heuristic"), True, name, model
    if name not in ("heuristic", "step-by-step"):
        raise ConfigError(
            f"protocol {name} cannot judge live",
            expected="--protocol heuristic, step-by-step or counterfactual (--final-pass adds all-at-once)",
        )
    if name == "heuristic" and model and not final_pass:
        raise ConfigError(
            "--protocol heuristic and --model do not go together",
            expected="no --model (heuristic uses none), or --final-pass to use "
            "the model for the final all-at-once pass",
        )
    judge = None
    if model or name == "step-by-step":
        judge = make_judge(model, use_cache=not no_cache)
    else:  # the offline heuristic: no settings needed, but a broken config is said
        warn_offline(lambda line: print(line, file=sys.stderr))

    def make(_trace_id: str = "") -> LiveJudge:
        return LiveJudge(
            name,
            judge=judge,
            budget=budget,
            with_gold=with_gold,
            final_pass=final_pass,
            final_protocol=final_name,
            replay_model=replay_model,
        )

    make("")  # validate the settings now (ConfigError -> exit 2 before anything runs)
    return make, judge


def open_receiver(
    address: str | None,
    store_dir: Path | None,
    *,
    allow_remote: bool,
    token: str | None = None,
    max_traces: int = 64,
    max_body: int | None = None,
    fsync: bool = False,
) -> Any:
    """An :class:`~whenpro_core.live.otlp_server.OtlpReceiver` (not yet started) over a
    :class:`~whenpro_core.live.store.LiveStore` in ``store_dir`` (default: the user data
    folder's ``live/``); ``fsync``: fsync each export before acknowledging it; ``token``:
    the bearer token exports must carry (generated off loopback when ``None``)."""
    host, port = parse_address(address)
    folder = Path(store_dir) if store_dir is not None else live_dir()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder", expected="--store DIR, a folder for the traces")
    store = LiveStore(folder, max_traces=max_traces, fsync=fsync)
    return OtlpReceiver(
        store, host, port, allow_remote=allow_remote, token=token, max_body=max_body or DEFAULT_MAX_BODY
    )
