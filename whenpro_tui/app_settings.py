"""The app-wide settings screens and widgets read and set: labels shown (``t``), the
image renderer (``--images``) and whether verdicts are saved (``--save/--no-save``).

They live on :class:`~whenpro_tui.app.WhenproApp`; screens reach them through these
functions rather than importing the app (the app imports the screens). An app without
them (a test harness) reads as the defaults: labels hidden, images off, verdicts saved.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from textual.app import App


class AppSettings(Protocol):
    """The settings attributes of :class:`~whenpro_tui.app.WhenproApp`."""

    show_labels: bool
    images: str
    save_verdicts: bool


def labels_shown(app: App[Any]) -> bool:
    """Are ground-truth labels shown?"""
    return bool(getattr(app, "show_labels", False))


def set_labels(app: App[Any], show: bool) -> None:
    """Show or hide ground-truth labels on every screen (screens watch ``show_labels``)."""
    cast(AppSettings, app).show_labels = show


def images_setting(app: App[Any]) -> str:
    """The ``--images`` setting (``auto``, ``kitty``, ``sixel``, ``halfcell``, ``off``)."""
    return str(getattr(app, "images", "off"))


def saves_verdicts(app: App[Any]) -> bool:
    """Are verdicts saved next to their trace (``--no-save``: False)?"""
    return bool(getattr(app, "save_verdicts", True))
