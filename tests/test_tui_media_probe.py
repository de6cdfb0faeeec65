"""``--images auto`` asks the terminal which image renderer it has (textual-image's
probes). The Kitty graphics probe is an APC sequence (``ESC _ G ... ESC \\``), which tmux
and GNU screen take as "set the pane title": under them it must never be sent. Each
test runs :func:`whenpro_tui.imaging.prepare` in a fresh interpreter on a real
pseudo-terminal and looks at every byte it wrote there."""

from __future__ import annotations

import sys

import pytest

from tests.test_cli_view import run_in_pty

KITTY_PROBE = b"\x1b_G"
SIXEL_PROBE = b"\x1b[c"  # Primary Device Attributes: answered by tmux and screen themselves
CHOOSE = "from whenpro_tui import imaging; print('renderer=' + imaging.prepare({mode!r}))"


def prepare_in_terminal(mode: str, env: dict[str, str]) -> tuple[str, bytes]:
    """``imaging.prepare(mode)`` in a child on a pseudo-terminal that never answers the
    probes; returns the renderer chosen and everything the child wrote to the terminal."""
    code, seen = run_in_pty([sys.executable, "-c", CHOOSE.format(mode=mode)], env=env)
    assert code == 0, seen[-500:]
    text = seen.decode(errors="replace")
    return text.rsplit("renderer=", 1)[1].split()[0], seen


@pytest.mark.parametrize(
    "env",
    [
        {"TMUX": "/tmp/tmux-1000/default,1234,0", "TERM": "tmux-256color"},
        {"TMUX": "/tmp/tmux-1000/default,1234,0", "TERM": "xterm-256color"},  # a user's TERM override
        {"STY": "1234.pts-0.host", "TERM": "screen"},
    ],
    ids=["tmux", "tmux-xterm-term", "screen"],
)
def test_auto_never_sends_the_kitty_probe_inside_a_multiplexer(env: dict[str, str]) -> None:
    renderer, seen = prepare_in_terminal("auto", env)
    assert KITTY_PROBE not in seen, seen
    assert SIXEL_PROBE in seen  # Sixel is still asked for: tmux answers it itself
    assert renderer == "halfcell"  # this terminal answers nothing


def test_auto_asks_for_kitty_graphics_in_a_plain_terminal() -> None:
    """The control case: the capture sees the Kitty probe where it is safe to send."""
    renderer, seen = prepare_in_terminal("auto", {"TMUX": "", "STY": "", "TERM": "xterm-256color"})
    assert KITTY_PROBE in seen and SIXEL_PROBE in seen
    assert renderer == "halfcell"


def test_a_renderer_the_user_names_is_used_without_probes_in_tmux() -> None:
    renderer, seen = prepare_in_terminal("kitty", {"TMUX": "/tmp/tmux-1000/default,1234,0", "TERM": "tmux"})
    assert renderer == "kitty"
    assert KITTY_PROBE not in seen and SIXEL_PROBE not in seen
