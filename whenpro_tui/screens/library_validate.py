"""``v`` on the library screen: validation mode for a dataset built by ``whenpro build``
(a folder with a ``manifest.json``). A mixin of
:class:`whenpro_tui.screens.library.LibraryScreen`; the key is hidden for other
datasets."""

from __future__ import annotations

from pathlib import Path


class LibraryValidation:
    """Opens :class:`~whenpro_tui.screens.validation.ValidationScreen` from the library."""

    target: str

    def built_root(self) -> Path | None:
        """The dataset folder when it holds a build manifest, else ``None``."""
        cached = getattr(self, "_built_root", False)
        if cached is False:
            path = Path(self.target)
            cached = path if path.is_dir() and (path / "manifest.json").is_file() else None
            self._built_root = cached
        return cached

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "validate":
            return self.built_root() is not None
        return super().check_action(action, parameters)  # type: ignore[misc]

    def action_validate(self) -> None:
        from whenpro_tui.screens.validation import ValidationScreen

        root = self.built_root()
        if root is None:
            self.notify(
                "Not a dataset built by whenpro build (no manifest.json here).",  # type: ignore
                severity="warning",
                markup=False,
            )
            return
        self.app.push_screen(ValidationScreen(root))  # type: ignore[attr-defined]
