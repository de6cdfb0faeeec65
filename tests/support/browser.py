"""Headless Chromium for tests that look at pages (``whenpro view --serve``, HTML
exports): the system's Chromium (Debian package ``chromium``) driven by Playwright for
Python through ``executable_path`` — never ``playwright install`` (its downloads are
not reachable from CI). Tests using :func:`browser` skip with a reason when Playwright
or Chromium is absent; ``.ci/run`` installs both.

``$WHENPRO_CHROMIUM`` names another Chromium-family executable."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

#: Executables tried in order on ``$PATH`` (Debian, other distributions, Chrome).
CANDIDATES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
ENV = "WHENPRO_CHROMIUM"


def find_chromium() -> str | None:
    """The path of a Chromium executable (``$WHENPRO_CHROMIUM`` first), or ``None``."""
    named = os.environ.get(ENV)
    if named:
        return shutil.which(named)
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture
def chromium_path() -> str:
    """The system Chromium; skips the test when there is none."""
    path = find_chromium()
    if path is None:
        pytest.skip(f"no Chromium found ({', '.join(CANDIDATES)} or ${ENV}); Debian: apt-get install chromium")
    return path


@pytest.fixture
def browser(chromium_path: str) -> Iterator[Any]:
    """A headless Chromium (``playwright.sync_api.Browser``), closed after the test;
    skips when Playwright for Python is not installed. Use it from sync tests only
    (Playwright's sync API refuses to run inside an asyncio loop)."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="Playwright for Python is absent (pip install -e '.[dev]')"
    )
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=chromium_path, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()
