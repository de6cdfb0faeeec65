"""``v`` on the library screen: validation mode for a dataset built by ``whenpro build``
(a folder with a ``manifest.json``). A mixin of
:class:`whenpro_tui.screens.library.LibraryScreen`; the key is hidden for other
datasets. The App opens the validation screen (:class:`~whenpro_tui.messages.OpenValidation`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from whenpro_tui.messages import OpenValidation

if TYPE_CHECKING:
    from textual.screen import Screen

    _ScreenPart = Screen[Any]  # the type checker sees the host screen
else:
    _ScreenPart = object  # at run time a plain mixin


class LibraryValidation(_ScreenPart):
    """Opens the validation screen from the library (see module docstring)."""

    target: str
    #: the answer of :meth:`built_root`, once looked up (the folder does not change)
    _built_checked = False
    _built_root: Path | None = None

    def built_root(self) -> Path | None:
        """The dataset folder when it holds a build manifest, else ``None``."""
        if not self._built_checked:
            path = Path(self.target)
            self._built_root = path if path.is_dir() and (path / "manifest.json").is_file() else None
            self._built_checked = True
        return self._built_root

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "validate":
            return self.built_root() is not None
        return super().check_action(action, parameters)

    def action_validate(self) -> None:
        root = self.built_root()
        if root is None:
            self.notify(
                "Not a dataset built by whenpro build (no manifest.json here).", severity="warning", markup=False
            )
            return
        self.app.post_message(OpenValidation(root))
