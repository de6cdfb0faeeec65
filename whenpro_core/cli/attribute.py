"""``whenpro attribute``: load the trace, run a protocol (or the counterfactual search),
print the verdict (a grid, or JSON) and keep it beside the trace."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from whenpro_core.attribution.protocols import protocol_name
from whenpro_core.attribution.report import verdict_record
from whenpro_core.attribution.request import (
    AttributionRequest,
    offline_verdict,
    request_from_options,
    run_request,
    with_configured_model,
)
from whenpro_core.attribution.run import nothing_to_attribute
from whenpro_core.attribution.verdicts import load_verdicts, same_verdict, save_verdict
from whenpro_core.cli import output
from whenpro_core.errors import ConfigError, WhenproError, errors_located_in
from whenpro_core.library.opening import load_one
from whenpro_core.safety.inert_output import inert
from whenpro_core.safety.textsafe import clean
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import Attribution, Outcome, Trace
from whenpro_core.trace.score import score_prediction
from whenpro_core.trace.taxonomy import Taxonomy, taxonomy_for
from whenpro_core.views.traceview import shown_id

if TYPE_CHECKING:
    from whenpro_core.config import Settings


@dataclass(frozen=True)
class AttributeOptions:
    """The options of one ``whenpro attribute``, as typed (built once by the command, then
    passed whole). ``protocol`` (``None``: all-at-once with a model, else heuristic),
    ``model`` (``provider:model``), ``with_gold``, ``preset`` and ``template`` (a Jinja2 file)
    make the request; ``as_json``, ``save`` and ``labels`` say how the verdict is shown and
    kept; ``no_cache`` skips cached model answers; ``base_url``, ``timeout_s``,
    ``max_retries`` and ``images`` (``on``/``off``) override the environment and config.toml
    (``None``: not given); ``dry_run`` prints the requests and calls nothing. The
    counterfactual search reads ``executor`` (``builtin``, ``cmd:...``, ``simulate[...]``),
    ``rank`` (``heuristic`` or an LLM protocol tried first), ``max_replays`` and
    ``budget_usd`` (``None``: no cap)."""

    protocol: str | None = None
    model: str | None = None
    with_gold: bool = True
    as_json: bool = False
    save: bool = True
    no_cache: bool = False
    base_url: str | None = None
    timeout_s: float | None = None
    max_retries: int | None = None
    images: str | None = None
    executor: str = "builtin"
    rank: str = "heuristic"
    max_replays: int = 8
    budget_usd: float | None = None
    dry_run: bool = False
    preset: str | None = None
    template: str | None = None
    labels: bool = False

    def settings_flags(self, *, images: bool = True) -> dict[str, str | float | int | None]:
        """The flags that override the settings (:func:`whenpro_core.config.load_settings`;
        ``None``: not given); ``images=False`` leaves ``--images`` out (the counterfactual
        search sends no images)."""
        flags: dict[str, str | float | int | None] = {
            "base_url": self.base_url,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
        }
        return {**flags, "images": self.images} if images else flags


def attribute_command(ref: str, options: AttributeOptions) -> None:
    """Load the trace, run the protocol, print the verdict, optionally save it.
    The settings flags of ``options`` (base_url, timeout_s, max_retries, images; ``None`` =
    not given) override the environment and config.toml. ``dry_run``: print the requests the
    protocol would send first (:mod:`whenpro_core.attribution.dry_run`) and call nothing.
    ``labels``: also print the trace's ground truth and the per-axis match (hidden by
    default, like the TUI, so an annotator or a judge's operator is not shown the label)."""
    o = options
    as_json, labels, settings_flags = o.as_json, o.labels, o.settings_flags()
    request = request_from_options(
        protocol=o.protocol, model=o.model, preset=o.preset, with_gold=o.with_gold, use_cache=not o.no_cache
    )
    if o.template:
        from whenpro_core.attribution.template import load_template

        request = replace(request, template=load_template(o.template))
    trace = load_one(ref)
    if o.dry_run:
        _dry_run(trace, request, as_json, settings_flags)
        return
    err = output.stderr_console()  # long lines stay whole in logs
    if request.protocol == "heuristic":  # offline: run in this thread so Ctrl-C stops it at once
        _warn_offline(err)
        verdict = offline_verdict(trace, request)
    else:
        import asyncio  # start-up: the offline heuristic needs no event loop

        from whenpro_core.config import load_settings

        settings = load_settings(**settings_flags)
        run = run_request(trace, with_configured_model(request, settings), settings=settings)
        if not as_json and sys.stderr.isatty():
            ident = shown_id(trace.id, labels)
            shown = Text(inert(f"{request.protocol} attribution of {ident} …"))  # the id is untrusted; no markup
            with output.live(output.live_console().status(shown)):
                verdict = asyncio.run(run)
        else:
            verdict = asyncio.run(run)
    _show_and_save(trace, verdict, as_json=as_json, labels=labels, save=o.save, err=err)


def _warn_offline(err: Console) -> None:
    """Warn of a broken config before the offline heuristic runs (it needs none)."""
    from whenpro_core.settings_inputs import settings_given

    if settings_given():  # start-up: with no config.toml nor settings variable, nothing to check
        from whenpro_core.config import warn_offline

        warn_offline(lambda line: err.print(line, markup=False, highlight=False, soft_wrap=True))


def _show_and_save(
    trace: Trace, verdict: Attribution, *, as_json: bool, labels: bool, save: bool, err: Console
) -> None:
    """Print ``verdict`` (JSON or the grid; the ground truth only with ``labels``) and, with
    ``save``, keep it beside the trace."""
    if as_json:
        sys.stdout.write(jsonio.dumps(verdict_record(trace, verdict, labels=labels)).decode() + "\n")
    else:
        output.stdout_console().print(verdict_grid(trace, verdict, taxonomy_for(trace.source.root), labels=labels))
    if save and verdict.step is not None:
        sys.stdout.flush()
        _save(trace, verdict, err)


def verdict_grid(trace: Trace, verdict: Attribution, taxonomy: Taxonomy, *, labels: bool = True) -> Table:
    """The verdict as a grid: agent, step, mode with its name, reason, confidence, calls,
    tokens, cost, seconds; the ground truth and the ✓/✗ marks only when ``labels`` is true."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold cyan", no_wrap=True)
    grid.add_column(overflow="fold")
    gt = trace.ground_truth if labels else None
    scored = score_prediction(trace, verdict) if gt else None
    grid.add_row("trace", Text(clean(shown_id(trace.id, labels))))
    used = (
        verdict.protocol if verdict.model in (None, "", verdict.protocol) else f"{verdict.protocol} · {verdict.model}"
    )  # the heuristic is its own model
    grid.add_row("protocol", Text(clean(used) + ("" if verdict.with_gold else " · without gold answer")))
    grid.add_row("agent", Text(clean(verdict.agent) or "—") + _mark(scored.agent if scored else None))
    grid.add_row("step", Text(clean(verdict.step) or "—") + _mark(scored.step if scored else None))
    grid.add_row("mode", Text(clean(taxonomy.name(verdict.mode))) + _mark(scored.mode if scored else None))
    grid.add_row("reason", Text(clean(verdict.reason) or "—"))
    if verdict.confidence is not None:
        grid.add_row("confidence", f"{verdict.confidence:.2f}")
    _add_cost_rows(grid, verdict)
    if gt:
        who = gt.agent or ", ".join(gt.agents) or "—"
        grid.add_row("ground truth", Text(clean(f"agent {who}, step {gt.step or '—'}, mode {taxonomy.name(gt.mode)}")))
    for w in dict.fromkeys(verdict.warnings):
        grid.add_row("warning", Text(clean(w), style="yellow"))
    return grid


def _mark(ok: bool | None) -> Text:
    """The ✓/✗ after an axis that was scored against the ground truth (nothing when not)."""
    if ok is None:
        return Text("")
    return Text("  ✓ matches ground truth", style="green") if ok else Text("  ✗ differs", style="red")


def _add_cost_rows(grid: Table, verdict: Attribution) -> None:
    """The ``cost`` row, and a ``spent`` row when the cache answered some calls."""
    u = verdict.usage
    grid.add_row(
        "cost",
        Text(
            f"{u.calls} calls · {u.input_tokens:,} in / {u.output_tokens:,} out"
            f" ({u.cached_tokens:,} cached) tokens · ${u.cost_usd:.4f} · {u.seconds:.2f} s"
        ),
    )
    if verdict.spent.calls != u.calls:
        s = verdict.spent
        grid.add_row(
            "spent",
            Text(
                f"{s.calls} new calls · ${s.cost_usd:.4f} (the other "
                f"{u.calls - s.calls} answers came from the response cache)"
            ),
        )


def _dry_run(
    trace: Trace, request: AttributionRequest, as_json: bool, settings_flags: dict[str, str | float | int | None]
) -> None:
    """Print the requests ``request`` would send first (text, or JSON); no call."""
    import json

    from whenpro_core.attribution.dry_run import need_model, preview, preview_text
    from whenpro_core.config import load_settings

    settings = load_settings(**{k: v for k, v in settings_flags.items() if v is not None})
    name = request.protocol
    doc = preview(
        trace,
        name,
        need_model(request.model, settings, name) if name != "heuristic" else "heuristic",
        settings,
        with_gold=request.with_gold,
        template=request.template,
    )
    sys.stdout.write((json.dumps(doc, ensure_ascii=False) if as_json else preview_text(doc)) + "\n")


def _save(trace: Trace, verdict: Attribution, err: Console) -> None:
    """Save the verdict in the verdicts folder (:mod:`whenpro_core.attribution.verdicts`),
    unless the same verdict is saved already
    (:func:`~whenpro_core.attribution.verdicts.same_verdict`: a rerun that changes
    nothing adds nothing, as in the TUI); a verdict that cannot be saved was shown
    already, so only warn (one line on stderr, exit status unchanged)."""
    if _saved_already(trace, verdict):
        return
    try:
        save_verdict(trace, verdict)
    except WhenproError as exc:
        err.print(
            f"whenpro: warning: verdict not saved: {exc.one_line()} (use --no-save to skip saving)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        return


def _saved_already(trace: Trace, verdict: Attribution) -> bool:
    """Is the same verdict saved for ``trace`` (an unreadable file: no, save tells why)?"""
    try:
        return any(same_verdict(saved, verdict) for saved in load_verdicts(trace))
    except OSError:
        return False


def counterfactual_command(ref: str, options: AttributeOptions) -> None:
    """``whenpro attribute --protocol counterfactual``: rank the steps, correct each in turn
    (the reference policy on a built-in system, else the model asked to fix the step),
    replay the rest through ``executor``, stop at the earliest step whose correction
    succeeds; print one line per replay on stderr, then the verdict."""
    from whenpro_core.attribution.counterfactual import (
        LLMFixCorrector,
        ReferenceCorrector,
        attribute_counterfactual,
        heuristic_ranking,
        replayable_offline,
    )
    from whenpro_core.config import load_settings
    from whenpro_core.injection.registry import get_executor

    o = options
    model, no_cache, as_json, labels = o.model, o.no_cache, o.as_json, o.labels
    trace = load_one(ref)
    if trace.outcome == Outcome.success:  # as every protocol: no decisive error, no replay
        verdict = nothing_to_attribute(trace, "counterfactual", None, with_gold=True)
        _show_and_save(trace, verdict, as_json=as_json, labels=labels, save=False, err=output.stderr_console())
        return
    settings = load_settings(**o.settings_flags(images=False))
    builtin = replayable_offline(trace)
    if not builtin and (model or settings.model or "heuristic").strip().lower() == "heuristic":
        raise ConfigError(
            f"{shown_id(trace.id, labels)}: no environment to replay and no model to fix steps with "
            "(a trace of whenpro run "
            "carries its environment; a built dataset keeps it in provenance.json at the dataset's root, "
            "not found above this file)",
            expected="the trace inside its built dataset folder (with provenance.json), or --model provider:model",
        )
    corrector = (
        ReferenceCorrector()
        if builtin and not model
        else LLMFixCorrector(model or settings.model or "", settings=settings, use_cache=not no_cache)
    )
    runner = get_executor(o.executor, model=model, settings=settings, use_cache=not no_cache)
    ranking = heuristic_ranking(trace)
    ranked_by = None
    if o.rank.strip().lower() != "heuristic":
        ranked_by = _llm_verdict(trace, o.rank, model, settings, no_cache)
        first = trace.step_by_coord(ranked_by.step) if ranked_by.step else None
        ranking = [i for i in [first.index if first is not None else None, *ranking] if i is not None]
    err = output.stderr_console()

    def show(t: Any) -> None:
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

    with errors_located_in(ref):  # a JSON path inside the trace names its file
        verdict, _run = attribute_counterfactual(
            trace, runner, corrector, ranking=ranking, max_replays=o.max_replays, budget_usd=o.budget_usd, on_try=show
        )
    if ranked_by is not None:  # the ranking's calls count too
        verdict.usage = verdict.usage.add(ranked_by.usage)
        verdict.reason = f"{verdict.reason} Ranked by {ranked_by.protocol} first (step {ranked_by.step})."
    _show_and_save(trace, verdict, as_json=as_json, labels=labels, save=o.save, err=err)


def _llm_verdict(trace: Trace, protocol: str, model: str | None, settings: Settings, no_cache: bool) -> Attribution:
    """The verdict of an LLM protocol, whose step the counterfactual search tries first."""
    import asyncio

    request = AttributionRequest(protocol_name(protocol), model or settings.model, True, use_cache=not no_cache)
    return asyncio.run(run_request(trace, request, settings=settings))
