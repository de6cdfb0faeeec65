"""``whenpro models``: the resolved LLM configuration, as data and as text.

Shows the config file, the default model and how it resolves, every provider's base URL
and whether a key is set (never the key), the call defaults and the price table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from whenpro_core.config import Settings
from whenpro_core.errors import ConfigError
from whenpro_core.llm.endpoints import resolve_endpoint
from whenpro_core.llm.models import PROVIDERS, parse_model, reads_images
from whenpro_core.safety.redact import public_url
from whenpro_core.storage import paths

_API_NAMES = {"chat": "chat completions", "responses": "responses", "messages": "messages"}


def models_info(settings: Settings, model: str | None = None) -> dict[str, Any]:
    """The configuration as a JSON-ready dict (keys shown only as ``"set"``/``"not set"``).

    Raises:
        ConfigError: the default (or given) model name is malformed, or a base URL is.
    """
    name = model or settings.model
    spec = parse_model(name, api=settings.api)
    providers = []
    for provider in PROVIDERS:
        pspec = parse_model(f"{provider}:x", api=settings.api)
        assert pspec is not None
        ep = resolve_endpoint(pspec, settings)
        if ep.api_key is not None:
            key = "set"
        else:
            key = "not set" if ep.key_required else "not needed"
        providers.append(
            {
                "provider": provider,
                "api": _API_NAMES[pspec.api],
                "base_url": public_url(ep.base_url),
                "base_url_source": ep.base_url_source,
                "key": key,
            }
        )
    conf = paths.config_file()
    return {
        "config_file": str(conf),
        "config_file_exists": conf.is_file(),
        "cache": {"enabled": settings.cache, "dir": str(paths.llm_cache_dir())},
        "model": name,
        "model_provider": spec.provider if spec else None,
        "model_api": _API_NAMES[spec.api] if spec else None,
        "model_reads_images": reads_images(spec, settings.images, settings.vision_models) if spec else None,
        "is_llm": spec is not None,
        "defaults": {
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
            "reasoning_effort": settings.reasoning_effort,
            "timeout_s": settings.timeout_s,
            "max_retries": settings.max_retries,
            "backoff_base_s": settings.backoff_base_s,
            "backoff_max_s": settings.backoff_max_s,
            "retry_after_max_s": settings.retry_after_max_s,
            "concurrency": settings.concurrency,
        },
        "providers": providers,
        "prices": {k: v.model_dump() for k, v in sorted(settings.price_table().items())},
    }


def probe_info(settings: Settings, model: str | None = None) -> dict[str, Any]:
    """What the model's server says it can do (``whenpro models --probe``): its models,
    context window and structured-output form, as a JSON-ready dict. A ``local:`` model's
    server is started for the probe; OpenAI and Anthropic are not probed.

    Raises:
        ConfigError: a bad model name, ``heuristic``, or no base URL.
    """
    from whenpro_core.llm.backend import served_at
    from whenpro_core.llm.capabilities import probe_structured

    name = model or settings.model
    spec = parse_model(name, api=settings.api)
    if spec is None:
        raise ConfigError("'heuristic' has no server to probe", expected="--model provider:model")
    if spec.provider not in ("openai-compatible", "local"):
        return {"model": spec.name, "probed": False, "why": f"{spec.provider} is not an OpenAI-compatible server"}
    base_url, api_key, server = served_at(spec, settings)
    model_id = server.models[0] if spec.provider == "local" and server and server.models else spec.model
    info = probe_structured(base_url, api_key, model_id)
    return {"model": spec.name, "probed": True, "base_url": public_url(base_url), **info.as_dict()}


def format_probe(info: dict[str, Any]) -> str:
    """:func:`probe_info` as aligned plain text."""
    if not info["probed"]:
        return f"model         {info['model']}  (not probed: {info['why']})"
    if not info["reachable"]:
        return f"server        {info['base_url']}  (no answer: is it running?)"
    kind = f"  ({info['server']})" if info["server"] else ""
    window = (
        f"{info['context_window']:,} tokens (from {info['context_source']})"
        if info["context_window"]
        else "not reported (set context_window in config.toml or WHENPRO_CONTEXT_WINDOW)"
    )
    refused = f" ({', '.join(info['rejected'])} refused)" if info["rejected"] else ""
    return "\n".join(
        [
            f"server        {info['base_url']}{kind}",
            f"models        {', '.join(info['models']) or '(none listed)'}",
            f"context       {window}",
            f"structured    {info['structured_output']}{refused}",
        ]
    )


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:g}"


def format_models(info: dict[str, Any]) -> str:
    """:func:`models_info` as aligned plain text."""
    d = info["defaults"]
    lines = [
        f"config file   {info['config_file']}" + ("" if info["config_file_exists"] else " (not found)"),
        f"cache         {'on' if info['cache']['enabled'] else 'off'}  {info['cache']['dir']}",
    ]
    if info["is_llm"]:
        images = (
            "images sent" if info["model_reads_images"] else 'text only: images = "on" or vision_models to send images'
        )
        lines.append(f"model         {info['model']}  ({info['model_provider']}, {info['model_api']} API; {images})")
    else:
        lines.append(f"model         {info['model']}  (no LLM: offline heuristic)")
    temp = "provider default" if d["temperature"] is None else f"{d['temperature']:g}"
    lines.append(
        f"defaults      temperature {temp}, max tokens {d['max_tokens']}, reasoning effort "
        f"{d['reasoning_effort'] or '-'}, timeout {d['timeout_s']:g} s, concurrency {d['concurrency']} "
        "calls in flight per model (bench --concurrency N raises it to N)"
    )
    lines.append(
        f"retries       {d['max_retries']} (backoff {d['backoff_base_s']:g}..{d['backoff_max_s']:g} s + jitter, "
        f"Retry-After capped at {d['retry_after_max_s']:g} s)"
    )
    lines.append("")
    rows = [("provider", "API", "base URL", "key")]
    for p in info["providers"]:
        url = p["base_url"] or "(none: set a base URL)"
        if p["base_url_source"] == "started for the run":
            url = "(a llama.cpp server started for the run)"
        elif p["base_url_source"] not in ("default", "unset"):
            url += f"  [{p['base_url_source']}]"
        rows.append((p["provider"], p["api"], url, p["key"]))
    lines += _table(rows)
    lines.append("")
    lines.append("prices, USD per 1M tokens")
    prow = [("model", "input", "output", "cached input", "cache write")]
    for name, p in info["prices"].items():
        prow.append((name, _num(p["input"]), _num(p["output"]), _num(p["cached_input"]), _num(p["cache_write"])))
    lines += _table(prow)
    return "\n".join(lines)


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)).rstrip() for r in rows]
