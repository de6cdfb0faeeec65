"""Attribution protocol names: the protocols whenpro runs, the presets that reproduce a
published harness, aliases, and the checks that turn a user's ``--protocol`` /
``--preset`` into a canonical name (a leaf: the protocols and presets themselves import
it; :mod:`whenpro_core.attribution.run` dispatches on the names)."""

from __future__ import annotations

from whenpro_core.errors import ConfigError

#: Protocol names, the offline default first.
PROTOCOLS = ("heuristic", "all-at-once", "step-by-step", "binary-search", "hybrid", "counterfactual")

#: Protocols that reproduce a published harness (``--preset``): the preset's name, then
#: the protocol it runs. Accepted wherever a protocol name is, not offered in menus.
PRESET_PROTOCOLS = {"whowhen-pro": "whowhen-pro:all-at-once"}
#: Presets with several protocols: preset -> {whenpro protocol: the preset's protocol}.
PRESET_CHOICES = {
    "whowhen-pro": {"all-at-once": "whowhen-pro:all-at-once"},
    "whowhen": {
        "all-at-once": "whowhen:all-at-once",
        "step-by-step": "whowhen:step-by-step",
        "binary-search": "whowhen:binary-search",
    },
}
#: Every preset protocol name.
PRESET_NAMES = frozenset(name for choices in PRESET_CHOICES.values() for name in choices.values())

_ALIASES = {
    "aao": "all-at-once",
    "all_at_once": "all-at-once",
    "sbs": "step-by-step",
    "step_by_step": "step-by-step",
    "binary": "binary-search",
    "bs": "binary-search",
    "binary_search": "binary-search",
    "cf": "counterfactual",
}


def protocol_name(name: str) -> str:
    """The canonical protocol name for ``name`` (aliases accepted); ConfigError when
    unknown, listing the choices."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in PROTOCOLS and key not in PRESET_NAMES:
        raise ConfigError(f"unknown protocol {name!r}", expected=", ".join(PROTOCOLS))
    return key


def preset_protocol(preset: str, protocol: str | None) -> str:
    """The protocol a ``--preset`` runs (``protocol``, all-at-once by default, in the
    preset's version); ConfigError for an unknown preset, or a ``--protocol`` the preset's
    harness does not have (whowhen-pro: all-at-once only; whowhen: all-at-once,
    step-by-step, binary-search)."""
    key = preset.strip().lower()
    if key not in PRESET_CHOICES:
        raise ConfigError(f"unknown preset {preset!r}", expected=", ".join(PRESET_CHOICES))
    choices = PRESET_CHOICES[key]
    name = protocol_name(protocol) if protocol else "all-at-once"
    if name in choices.values():
        return name
    if name not in choices:
        raise ConfigError(
            f"--preset {key} has no {name} protocol", expected="no --protocol, or --protocol " + " / ".join(choices)
        )
    return choices[name]
