"""What ``whenpro attribute`` does, apart from argument parsing."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from rich.console import Console

from whenpro_core import jsonio
from whenpro_core.attribution.report import print_verdict, verdict_record
from whenpro_core.attribution.run import attribute, nothing_to_attribute, preset_protocol, protocol_name
from whenpro_core.attribution.template import PromptTemplate, load_template
from whenpro_core.attribution.verdicts import save_verdict
from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.model import Outcome
from whenpro_core.opening import load_one
from whenpro_core.taxonomy import taxonomy_for


def attribute_command(
    ref: str,
    *,
    protocol: str | None,
    model: str | None,
    with_gold: bool,
    as_json: bool,
    save: bool,
    no_cache: bool,
    settings_flags: dict | None = None,
    dry_run: bool = False,
    preset: str | None = None,
    template: str | None = None,
    labels: bool = False,
) -> None:
    """Load the trace, run the protocol, print the verdict, optionally save it.
    ``settings_flags`` (base_url, timeout_s, max_retries, images; ``None`` = not given)
    override the environment and config.toml. ``dry_run``: print the requests the
    protocol would send first (:mod:`whenpro_core.attribution.dry_run`) and call nothing.
    ``labels``: also print the trace's ground truth and the per-axis match (hidden by
    default, like the TUI, so an annotator or a judge's operator is not shown the label)."""
    if model and model.strip().lower() == "heuristic":
        model = None
    name = (
        preset_protocol(preset, protocol)
        if preset
        else protocol_name(protocol or ("all-at-once" if model else "heuristic"))
    )
    if name == "heuristic" and model:
        raise ConfigError(
            "--protocol heuristic and --model do not go together", expected="no --model: heuristic uses no model"
        )
    prompt = load_template(template) if template else None
    trace = load_one(ref)
    if dry_run:
        _dry_run(trace, name, model, with_gold, as_json, settings_flags, prompt)
        return
    judge = None
    if name != "heuristic":
        from whenpro_core.attribution.llm_judge import make_judge
        from whenpro_core.config import load_settings

        settings = load_settings(**(settings_flags or {}))
        if (model or settings.model or "heuristic").strip().lower() == "heuristic":
            raise ConfigError(
                f"protocol {name} needs a model",
                expected="--model provider:model, or model in config.toml / "
                "WHENPRO_MODEL (or --protocol heuristic offline)",
            )
        judge = make_judge(model, settings=settings, use_cache=not no_cache)

    async def run():
        try:
            return await attribute(trace, name, judge=judge, with_gold=with_gold, template=prompt)
        finally:
            if judge is not None:
                await judge.aclose()

    err = Console(stderr=True, soft_wrap=True)  # long lines stay whole in logs
    if judge is None:  # offline: run in this thread so Ctrl-C stops it at once
        from whenpro_core.config import warn_offline

        warn_offline(lambda line: err.print(line, markup=False, highlight=False, soft_wrap=True))
        from whenpro_core.attribution.heuristic import attribute_heuristic

        verdict = (
            nothing_to_attribute(trace, name, None, with_gold)
            if trace.outcome == Outcome.success
            else attribute_heuristic(trace, with_gold=with_gold)
        )
    elif not as_json and sys.stderr.isatty():
        with err.status(f"{name} attribution of {trace.id} …"):
            verdict = asyncio.run(run())
    else:
        verdict = asyncio.run(run())
    _show_and_save(trace, verdict, as_json=as_json, labels=labels, save=save, err=err)


def _show_and_save(trace, verdict, *, as_json: bool, labels: bool, save: bool, err: Console) -> None:
    """Print ``verdict`` (:func:`_show`) and, with ``save``, keep it beside the trace."""
    _show(trace, verdict, as_json=as_json, labels=labels)
    if save and verdict.step is not None:
        sys.stdout.flush()
        _save(trace, verdict, err)


def _show(trace, verdict, *, as_json: bool, labels: bool) -> None:
    """Print the verdict (JSON or a Rich grid); the ground truth only with ``labels``."""
    if as_json:
        sys.stdout.write(jsonio.dumps(verdict_record(trace, verdict, labels=labels)).decode() + "\n")
    else:
        print_verdict(trace, verdict, taxonomy_for(trace.source.root), labels=labels)


def _dry_run(
    trace,
    name: str,
    model: str | None,
    with_gold: bool,
    as_json: bool,
    settings_flags: dict | None,
    template: PromptTemplate | None,
) -> None:
    import json

    from whenpro_core.attribution.dry_run import need_model, preview, preview_text
    from whenpro_core.config import load_settings

    settings = load_settings(**{k: v for k, v in (settings_flags or {}).items() if v is not None})
    doc = preview(
        trace,
        name,
        need_model(model, settings, name) if name != "heuristic" else "heuristic",
        settings,
        with_gold=with_gold,
        template=template,
    )
    sys.stdout.write((json.dumps(doc, ensure_ascii=False) if as_json else preview_text(doc)) + "\n")


def _save(trace, verdict, err: Console) -> None:
    """Save the verdict beside the trace; a verdict that cannot be saved was shown
    already, so only warn (one line on stderr, exit status unchanged)."""
    try:
        path = save_verdict(trace, verdict)
    except WhenproError as exc:
        err.print(
            f"warning: verdict not saved: {exc.one_line()} (use --no-save to skip saving)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        return
    if path is not None and trace.source.path and Path(trace.source.path).resolve().parent != path.parent:
        err.print(f"verdict saved to {path} (the trace's folder is not writable)", highlight=False)


def counterfactual_command(
    ref: str,
    *,
    model: str | None,
    executor: str,
    rank: str,
    max_replays: int,
    budget_usd: float | None,
    as_json: bool,
    save: bool,
    no_cache: bool,
    settings_flags: dict | None = None,
    labels: bool = False,
) -> None:
    """``whenpro attribute --protocol counterfactual``: rank the steps, correct each in turn
    (the reference policy on a built-in system, else the model asked to fix the step),
    replay the rest through ``executor``, stop at the earliest step whose correction
    succeeds; print one line per replay on stderr, then the verdict."""
    from whenpro_core.attribution.counterfactual import (
        LLMFixCorrector,
        ReferenceCorrector,
        attribute_counterfactual,
        heuristic_ranking,
    )
    from whenpro_core.config import load_settings
    from whenpro_core.injection.executors import get_executor

    trace = load_one(ref)
    if trace.outcome == Outcome.success:  # as every protocol: no decisive error, no replay
        verdict = nothing_to_attribute(trace, "counterfactual", None, with_gold=True)
        _show_and_save(trace, verdict, as_json=as_json, labels=labels, save=False, err=Console(stderr=True))
        return
    settings = load_settings(**(settings_flags or {}))
    builtin = with_build_env(trace)
    if not builtin and (model or settings.model or "heuristic").strip().lower() == "heuristic":
        raise ConfigError(
            f"{trace.id}: no environment to replay and no model to fix steps with (a trace of whenpro run "
            "carries its environment; a built dataset keeps it in provenance.json at the dataset's root, "
            "not found above this file)",
            expected="the trace inside its built dataset folder (with provenance.json), or --model provider:model",
        )
    corrector = (
        ReferenceCorrector()
        if builtin and not model
        else LLMFixCorrector(model or settings.model or "", settings=settings, use_cache=not no_cache)
    )
    runner = get_executor(executor, model=model, settings=settings, use_cache=not no_cache)
    ranking = heuristic_ranking(trace)
    ranked_by = None
    if rank.strip().lower() != "heuristic":
        ranked_by = _llm_verdict(trace, rank, model, settings, no_cache)
        first = trace.step_by_coord(ranked_by.step) if ranked_by.step else None
        ranking = [i for i in [first.index if first is not None else None, *ranking] if i is not None]
    err = Console(stderr=True, soft_wrap=True)

    def show(t) -> None:
        head = f"step {t.coord} ({t.agent}): " + (
            "needs no correction (no replay)" if t.outcome == "unchanged" else f"corrected and replayed: {t.outcome}"
        )
        err.print(
            head
            + (f", final answer {t.final_answer!r}" if t.final_answer is not None else "")
            + f" · {t.calls} calls · ${t.cost_usd:.4f}",
            markup=False,
            highlight=False,
        )

    verdict, _run = attribute_counterfactual(
        trace, runner, corrector, ranking=ranking, max_replays=max_replays, budget_usd=budget_usd, on_try=show
    )
    if ranked_by is not None:  # the ranking's calls count too
        verdict.usage = verdict.usage.add(ranked_by.usage)
        verdict.reason = f"{verdict.reason} Ranked by {ranked_by.protocol} first (step {ranked_by.step})."
    _show_and_save(trace, verdict, as_json=as_json, labels=labels, save=save, err=err)


def with_build_env(trace) -> bool:
    """Whether ``trace`` is a built-in system's run the counterfactual can replay: it
    carries its ``env`` block, or its built dataset's ``provenance.json`` holds it (then
    the block is set on the trace in memory; the file is not changed). Only the env block
    is taken from the provenance, never the injection record or markers (the label)."""
    from whenpro_core.envs import env_for_trace
    from whenpro_core.formats.build_meta import provenance_env

    if env_for_trace(trace) is not None:
        return True
    env = provenance_env(trace)
    if env is None:
        return False
    trace.extras["env"] = env
    return env_for_trace(trace) is not None


def _llm_verdict(trace, protocol: str, model: str | None, settings, no_cache: bool):
    """The verdict of an LLM protocol, whose step the counterfactual search tries first."""
    from whenpro_core.attribution.llm_judge import make_judge

    judge = make_judge(model, settings=settings, use_cache=not no_cache)

    async def run():
        try:
            return await attribute(trace, protocol_name(protocol), judge=judge)
        finally:
            await judge.aclose()

    return asyncio.run(run())
