"""Command palette providers: every key binding of the current screen (and of the
focused pane and the app) is also a palette command, named by its description and
showing its keys. The help screen lists the same table (:func:`collect_bindings`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from textual.actions import parse
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode
from textual.screen import Screen


@dataclass(frozen=True)
class KeyAction:
    """One action and every key bound to it: ``keys`` for display (``"j / ↓"``),
    ``description``, the ``action`` string and the ``node`` it runs on."""

    keys: str
    description: str
    action: str
    node: DOMNode
    group: str


def _binding_chain(screen: Screen):
    """``(node, binding)`` pairs in precedence order: focused pane, screen, app. A key
    bound on a pane hides the same key further out; on one node every binding of a
    key is kept (escape: cancel work, else close). Keeps bindings a ``check_action``
    hides from the footer (such as ``[``/``]`` on a single trace): help and palette
    list every key, except the hidden twin of a key shown on the same node (``q``
    Back or Quit)."""
    chain = getattr(screen, "_modal_binding_chain", None)
    if chain is None:  # older/newer Textual: fall back to what the footer sees
        for active in screen.active_bindings.values():
            yield active.node, active.binding
        return
    seen: set[str] = set()
    for node, bindings in chain:
        keys = set()
        for key, binding in bindings:
            if key in seen:
                continue
            keys.add(key)
            twins = bindings.key_to_bindings.get(key, ())
            if (
                len(twins) > 1
                and not _enabled(node, binding)
                and any(_enabled(node, other) for other in twins if other is not binding)
            ):
                continue
            yield node, binding
        seen |= keys


def _enabled(node: DOMNode, binding) -> bool:
    """Does ``check_action`` let ``binding`` run now (it shows in the footer)?"""

    _, name, params = parse(binding.action)
    check = getattr(node, "check_action", None)
    return check is None or check(name, params) is not False


def collect_bindings(screen: Screen) -> list[KeyAction]:
    """The actions reachable by key on ``screen``, one entry per action (keys merged),
    in binding order: focused pane and screen first, then the app."""
    app = screen.app
    merged: dict[tuple[int, str], list] = {}
    for node, binding in _binding_chain(screen):
        if not binding.description:
            continue
        slot = merged.setdefault((id(node), binding.action), [[], binding, node])
        label = binding.key_display or app.get_key_display(binding)
        if label not in slot[0]:
            slot[0].append(label)
    out = []
    for keys, binding, node in merged.values():
        group = "app" if node is app else ("screen" if node is screen else type(node).__name__)
        out.append(KeyAction(" / ".join(keys), binding.description, binding.action, node, group))
    return out


class BindingsProvider(Provider):
    """Palette commands for the bindings of the screen the palette was opened on."""

    def _actions(self) -> list[KeyAction]:
        return [a for a in collect_bindings(self.screen) if a.action != "command_palette"]

    def _runner(self, item: KeyAction):
        return partial(self.app.run_action, item.action, item.node)

    async def discover(self) -> Hits:
        for item in self._actions():
            yield DiscoveryHit(item.description, self._runner(item), help=f"key: {item.keys}")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for item in self._actions():
            text = f"{item.description} ({item.keys})"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), self._runner(item), help=f"key: {item.keys}")
