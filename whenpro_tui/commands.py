"""Command palette providers: every key binding of the current screen (and of the
focused pane and the app) is also a palette command, named by its description and
showing its keys. The help screen lists the same table (:func:`collect_bindings`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from textual.actions import parse
from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode
from textual.screen import Screen


@dataclass(frozen=True)
class KeyAction:
    """One action and every key bound to it: ``keys`` for display (``"j / ↓"``),
    ``description``, the ``action`` string and the ``node`` it runs on (``None`` for a
    dialog's key listed in help before the dialog exists, :func:`dialog_bindings`)."""

    keys: str
    description: str
    action: str
    node: DOMNode | None
    group: str


def _binding_chain(screen: Screen):
    """``(node, binding)`` pairs in precedence order: focused pane, screen, app. A key
    bound on a pane hides the same key further out, unless the outer binding has
    ``priority`` (Textual runs priority bindings first: the picker's enter starts, the
    focused list's enter never runs), which then hides the pane's; on one node every
    binding of a key is kept (escape: cancel work, else close). Keeps bindings a
    ``check_action`` hides from the footer (such as ``[``/``]`` on a single trace): help
    and palette list every key, except the hidden twin of a key shown on the same node
    (``q`` Back or Quit)."""
    chain = getattr(screen, "_modal_binding_chain", None)
    if chain is None:  # older/newer Textual: fall back to what the footer sees
        for active in screen.active_bindings.values():
            yield active.node, active.binding
        return
    priority: dict[str, DOMNode] = {}  # key -> the outermost node binding it with priority
    for node, bindings in reversed(chain):
        for key, binding in bindings:
            if binding.priority:
                priority.setdefault(key, node)
    seen: set[str] = set()
    for node, bindings in chain:
        keys = set()
        for key, binding in bindings:
            if key in seen or priority.get(key, node) is not node:
                continue
            keys.add(key)
            if not _hidden_twin(node, bindings, key, binding):
                yield node, binding
        seen |= keys


def _hidden_twin(node: DOMNode, bindings, key: str, binding) -> bool:
    """Is ``binding`` disabled while another binding of ``key`` on ``node`` is enabled?"""
    twins = bindings.key_to_bindings.get(key, ())
    return (
        len(twins) > 1
        and not _enabled(node, binding)
        and any(_enabled(node, other) for other in twins if other is not binding)
    )


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


def dialog_bindings(app: App, dialog: type[Screen], group: str) -> list[KeyAction]:
    """The described keys of a ``dialog`` class (its ``BINDINGS``), one entry per action
    with its keys merged, as the help screen of the screen that opens it lists them
    (``group``: the dialog's title there). Inside the open dialog the palette and its own
    help list the same keys from the live bindings (:func:`collect_bindings`)."""
    merged: dict[str, tuple[list[str], Binding]] = {}
    for binding in Binding.make_bindings(dialog.BINDINGS):
        if not binding.description:
            continue
        keys, _ = merged.setdefault(binding.action, ([], binding))
        label = binding.key_display or app.get_key_display(binding)
        if label not in keys:
            keys.append(label)
    return [KeyAction(" / ".join(keys), b.description, b.action, None, group) for keys, b in merged.values()]


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
