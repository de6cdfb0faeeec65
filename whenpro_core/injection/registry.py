"""Generators and executors by name: ``--generator`` and ``--executor`` values (and
installed ``whenpro.executors`` plugins) turned into the objects that make an injected
step (:mod:`whenpro_core.injection.generate`) and continue a run after it
(:mod:`whenpro_core.injection.executors`). The one module that knows every
implementation, so that the base modules do not import their own implementations."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.injection.cmd_executor import CommandExecutor
from whenpro_core.injection.executors import BuiltinExecutor, Executor
from whenpro_core.injection.generate import Generator, OfflineGenerator, TextGenerator
from whenpro_core.injection.llm_generate import LLMGenerator
from whenpro_core.injection.simulate import SimulateExecutor

#: Entry-point group for executor plugins.
ENTRY_POINT_GROUP = "whenpro.executors"


def get_generator(spec: str, *, model: str | None = None, settings: Any = None, use_cache: bool = True) -> Generator:
    """The generator for a ``--generator`` value: ``offline``, ``text:CONTENT``,
    ``text:@FILE``, ``llm`` (with ``model``, else the configured model) or
    ``llm:PROVIDER:MODEL``. ``settings`` and ``use_cache`` apply to ``llm``.

    Raises ConfigError for an unknown spec, an unreadable or empty text, or an ``llm``
    generator without a usable model (no model, no API key or base URL)."""
    spec = (spec or "offline").strip()
    if spec == "offline":
        return OfflineGenerator()
    if spec.startswith("text:"):
        body = spec[5:]
        if body.startswith("@"):
            path = Path(body[1:])
            try:
                body = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(
                    f"cannot read the replacement text: {exc}", path=path, expected="a UTF-8 text file"
                ) from None
        if not body.strip():
            raise ConfigError("empty replacement text", expected="--generator text:'the new step content'")
        return TextGenerator(body)
    if spec == "llm" or spec.startswith("llm:"):
        return LLMGenerator(spec[4:] or model or "", settings=settings, use_cache=use_cache)
    raise ConfigError(f"unknown generator {spec!r}", expected="offline, text:CONTENT, text:@FILE or llm")


def plugin_names() -> list[str]:
    """Names of executor plugins installed in this environment."""
    return sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)})


def _load_plugin(name: str, arg: str | None) -> Executor | None:
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name != name:
            continue
        try:
            factory: Any = ep.load()
            executor: Executor = factory(arg)
        except WhenproError:
            raise
        except Exception as exc:  # a broken plugin must not crash whenpro
            raise ConfigError(
                f"executor plugin {name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}"
            ) from None
        if not callable(getattr(executor, "continue_run", None)):
            raise ConfigError(
                f"executor plugin {name!r} ({ep.value}) returned {type(executor).__name__}",
                expected="an object with continue_run(ctx) and live_tools(trace)",
            )
        return executor
    return None


def get_executor(
    spec: str,
    *,
    message_timeout: float = 60.0,
    model: str | None = None,
    settings: Any = None,
    max_steps: int | None = None,
    max_calls: int | None = None,
    use_cache: bool = True,
) -> Executor:
    """The executor for an ``--executor`` value: ``builtin``, ``cmd:COMMAND``,
    ``simulate`` (with ``model``, else the configured model) or
    ``simulate:PROVIDER:MODEL``, or an installed plugin ``NAME[:ARG]``. ``settings``,
    ``max_steps``, ``max_calls`` and ``use_cache`` apply to ``simulate``.

    Raises ConfigError for an unknown name (listing what is available) or a
    ``simulate`` executor without a usable model (no model, key or base URL)."""
    spec = (spec or "builtin").strip()
    if spec == "builtin":
        return BuiltinExecutor()
    if spec.startswith("cmd:"):
        return CommandExecutor.from_spec(spec[4:], message_timeout=message_timeout)
    if spec == "simulate" or spec.startswith("simulate:"):
        return SimulateExecutor(
            spec[9:] or model or "", settings=settings, max_steps=max_steps, max_calls=max_calls, use_cache=use_cache
        )
    name, _, arg = spec.partition(":")
    executor = _load_plugin(name, arg or None)
    if executor is not None:
        return executor
    plugins = plugin_names()
    raise ConfigError(
        f"unknown executor {spec!r}",
        expected="builtin, cmd:COMMAND, simulate"
        + (", " + ", ".join(plugins) if plugins else " or an installed whenpro.executors plugin"),
    )
